"""`harness explore` (harness/explore): a trace and a model walk driven in headless Chromium (Debian's
package, as tests/test_nightly_report.py launches it) through Playwright; what the server refuses to serve;
the command's refusals (one line, exit 2) and its Ctrl-C (exit 130)."""

import contextlib
import ipaddress
import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from harness.explore import create_app, start_server, url_of
from harness.explore.capture import chromium_page, screenshot, serving
from harness.registry import load_spec
from harness.trace import read_trace
from specs.kip642.state import VOTER_ASSIGNMENT

CORPUS = ROOT / "counterexamples"
KRAFT = CORPUS / "kraft-small-expand_below_hwm-LeaderCandidateCompleteness.itf.json"
KIP642 = CORPUS / "kip642-ci-two_uncommitted_changes-AtMostOneUncommittedVoterChange.itf.json"
LASSO = CORPUS / "kraft-leaderless-ReassignmentCompletes.itf.json"


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_kraft_counterexample_steps_to_its_violation_in_chromium(tmp_path):
    trace = read_trace(KRAFT)
    last = len(trace.states) - 1
    with serving(create_app(traces=[trace])) as url, chromium_page() as page:
        page.goto(url)
        assert page.locator("#step-index").inner_text() == "0"
        assert page.locator("#violation").count() == 0  # the verdict belongs to the last state only
        page.keyboard.press("ArrowRight")
        page.wait_for_url("**/step/1")
        assert page.locator("#action-label").inner_text() == trace.model.format_action(trace.actions[1])
        # each parameter as its rule formats it: the target index reads as the replica list it names
        shown = dict(zip(page.locator("table.params th").all_inner_texts(), page.locator("table.params td").all_inner_texts()))
        assert shown == dict(trace.model.format_params(trace.actions[1]))
        assert shown["target"] == "[2,3]" != str(dict(trace.actions[1].params)["target"])
        page.click("#next")
        page.wait_for_url("**/step/2")
        page.keyboard.press("End")
        page.wait_for_url(f"**/step/{last}")
        assert page.locator("#step-index").inner_text() == str(last)
        assert page.locator("#violated-property").inner_text() == "LeaderCandidateCompleteness"
        page.click(".closing-statement summary")  # a long statement is folded to its first words
        assert "every leader candidate" in page.locator(".closing-statement").inner_text()
        assert page.locator(".closing-reason").inner_text().startswith("ISR member 3 lacks")
        # the fields the last action changed, highlighted: exactly the view's changes at that step
        changed = page.locator("#changes tr.changed").evaluate_all("rows => rows.map(r => r.dataset.path)")
        expected = set(trace_view_changes(trace, last))
        assert set(changed) == expected and expected
        assert page.locator("#changes tr.changed td").first.evaluate("td => getComputedStyle(td).backgroundColor") \
            == "rgb(255, 243, 176)"
        # the protocol view: three brokers with their logs, HWM and LEO marks, a leader's Maximal ISR
        assert page.locator(".broker[data-broker]").count() == 3  # beside the controller's box
        assert page.locator(".broker .mark-hwm").count() == 3
        assert page.locator("#controller-metadata .maximal-isr").count() >= 1
        assert page.locator("#controller-metadata .chip.changed").count() >= 1
        page.keyboard.press("ArrowLeft")
        page.wait_for_url(f"**/step/{last - 1}")
        assert page.locator("#violation").count() == 0
        page.goto(url.rstrip("/") + page.locator("#permalink").get_attribute("href"))  # the permalink opens the step
        assert page.locator("#step-index").inner_text() == str(last - 1)
    shot = tmp_path / "kraft.png"
    screenshot(KRAFT, shot)
    assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def trace_view_changes(trace, index):
    from harness.present import trace_view

    return trace_view(trace).steps[index].changes


def test_a_lasso_marks_its_loop(tmp_path):
    trace = read_trace(LASSO)
    assert trace.loop is not None
    with serving(create_app(traces=[trace])) as url:
        status, html = get(f"{url}trace/0/step/0")
    assert status == 200
    assert html.count('class="in-loop') + html.count(' in-loop') >= len(trace.states) - trace.loop
    assert "loop-start" in html and "repeat forever" in html


def test_a_kip642_trace_shows_voters_roles_and_configuration_entries():
    trace = read_trace(KIP642)
    with serving(create_app(traces=[trace])) as url:
        status, html = get(f"{url}trace/0/step/{len(trace.states) - 1}")
    assert status == 200 and 'class="view-quorum"' in html
    assert html.count("data-server=") == len(trace.states[0].servers)
    # every VoterAssignment entry of every log drawn apart from the records, and listed with its voters
    entries = sum(e.kind == VOTER_ASSIGNMENT for server in trace.states[-1].servers for e in server.log)
    assert entries and len(re.findall(r'class="record epoch-\d config[" ]', html)) == entries
    assert html.count("<li>offset ") == entries


def test_model_mode_three_actions_saved_and_replayed_in_chromium(tmp_path):
    spec = load_spec("kraft")
    model = spec.bind(spec.config("tiny"))
    with serving(create_app(model=model, out_dir=tmp_path)) as url, chromium_page() as page:
        page.goto(url)
        page.click("a.choose-init >> nth=0")
        page.wait_for_url("**/model?path=0")
        labels = []
        for n in range(3):
            choice = page.locator("#enabled a.action").nth(n % 2)  # not always the first: a real choice
            labels.append(choice.inner_text())
            choice.click()
            page.wait_for_url("**/model?path=0,*")
            assert page.locator("#action-label").inner_text() == labels[-1]
        assert page.locator("#history li").count() == 4
        assert page.locator("#invariants tr[data-invariant]").count() == len(model.invariant_names)
        # back, then branch: another action than the third from the state before it
        page.keyboard.press("ArrowLeft")
        page.wait_for_function("document.querySelectorAll('#history li').length == 3")
        others = [a for a in page.locator("#enabled a.action").all_inner_texts() if a != labels[2]]
        assert others, "the walk should have a choice at its second state"
        page.locator("#enabled a.action", has_text=others[0]).first.click()
        page.wait_for_function("document.querySelectorAll('#history li').length == 4")
        labels[2] = page.locator("#action-label").inner_text()
        assert labels[2] == others[0]
        page.click("#save-trace")
        saved = Path(page.locator("#saved-path").inner_text())
    assert saved.parent == tmp_path and saved.exists()
    doc = json.loads(saved.read_text())
    assert [s["#meta"]["action"]["label"] for s in doc["states"][1:]] == labels
    code, out, err = run_cli("replay", saved)
    assert code == 0, (out, err)
    assert out.startswith("OK replays as recorded: 3 steps")


def test_model_mode_refuses_actions_that_are_not_enabled_and_saves_need_the_token(tmp_path):
    spec = load_spec("example")
    model = spec.bind(spec.config("tiny"))
    with serving(create_app(model=model, out_dir=tmp_path)) as url:
        status, html = get(f"{url}model?path=0")
        assert status == 200 and 'class="view-tree"' in html  # a spec without a view: the generic tree
        enabled = {index for index, _ in model.successors(model.init_states()[0])}
        disabled = next(i for i in range(len(model.actions)) if i not in enabled)
        assert get(f"{url}model?path=0,{disabled}")[0] == 404
        assert get(f"{url}model?path=0,__import__('os')")[0] == 404
        assert get(f"{url}model?path=7")[0] == 404  # no such initial state
        request = urllib.request.Request(f"{url}model/save", data=b"path=0&token=guess", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403
    assert not list(tmp_path.iterdir())


def test_only_the_given_traces_are_served(tmp_path):
    with serving(create_app(traces=[read_trace(KRAFT)])) as url:
        assert get(f"{url}trace/0/step/0")[0] == 200
        for path in ("trace/1/step/0", "trace/0/step/999", "model", f"counterexamples/{KIP642.name}",
                     "static/../pyproject.toml", "static/%2e%2e/pyproject.toml", "static/..%2fpyproject.toml",
                     f"trace/{KRAFT}", "etc/passwd", "static/../../../../etc/passwd"):
            status, _ = get(url + path)
            assert status in (403, 404), path
        assert get(f"{url}static/explore.css")[0] == 200


def test_the_server_listens_on_loopback_only():
    server = start_server(create_app(traces=[read_trace(KRAFT)]), 0)
    try:
        assert server.socket.getsockname()[0] == "127.0.0.1"
        assert url_of(server).startswith("http://127.0.0.1:")
    finally:
        server.server_close()


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    malformed = tmp_path / "bad.itf.json"
    malformed.write_text('{"#meta": {"format": "ITF"}, "states": [')
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        cases = [("explore", "nosuchspec"), ("explore", malformed), ("explore",),
                 ("explore", KRAFT, "--port", port), ("explore", KRAFT, "--config", "tiny"),
                 ("explore", "kraft", "--config", "nosuchconfig")]
        for args in cases:
            code, out, err = run_cli(*args)
            assert code == 2, (args, err)
            assert err.count("\n") == 1 and err.startswith("error: "), (args, err)
            assert out == ""
        assert f"--port {port}" in run_cli("explore", KRAFT, "--port", port)[2]


def test_the_command_prints_its_url_serves_and_exits_130_on_ctrl_c():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "harness", "explore", str(KRAFT), "--port", "0"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("explore: http://127.0.0.1:") and line.endswith("/\n")
        status, html = get(line.split(" ", 1)[1].strip())
        assert status == 200 and "LeaderCandidateCompleteness" in html
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=20) == 130
        assert "interrupted by SIGINT" in p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize("spec_name", ["kraft", "replication", "kip642", "zk", "kip435"])
def test_every_committed_counterexample_draws_its_protocol_view_at_every_step(spec_name):
    """The spec's own view (not the fallback tree) at every state of its corpus, each step a page."""
    kind = {"kraft": "replicated_log", "replication": "replicated_log", "kip642": "quorum", "zk": "zk"}.get(spec_name,
                                                                                                  "assignment")
    for path in sorted(CORPUS.glob(f"{spec_name}-*.itf.json")):
        trace = read_trace(path)
        client = create_app(traces=[trace]).test_client()
        for index, state in enumerate(trace.states):
            drawn = trace.spec.protocol_view_fn(trace.model.config, state)
            assert drawn["kind"] == kind
            json.dumps(drawn)  # plain data
            page = client.get(f"/trace/0/step/{index}")
            assert page.status_code == 200 and f'class="view-{kind}"' in page.text, (path.name, index)


# ------------------------------------------------------------------ hostile clients (issue #36)

def raw_request(url: str, head: str, body: bytes = b"") -> bytes:
    """`head` (the request line and headers, without the blank line) and `body` sent as they are over a socket,
    as a DNS-rebinding page or a hostile client would; the whole answer."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:  # the timeout only guards against a hang
        s.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        s.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def test_only_the_bound_address_is_served_as_host(tmp_path):
    """DNS rebinding: a page of evil.example, its name made to resolve to 127.0.0.1, sends its own Host. Only
    127.0.0.1:PORT and localhost:PORT are served (bare names only when the port is 80, which browsers omit)."""
    spec = load_spec("example")
    with serving(create_app(model=spec.bind(spec.config("tiny")), out_dir=tmp_path)) as url:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}"):
            assert status_of(raw_request(url, f"GET /model?path=0 HTTP/1.1\r\nHost: {host}")) == 200, host
        for host in (f"evil.example:{port}", "evil.example", "127.0.0.1", "localhost", f"127.0.0.1:{port + 1}",
                     f"127.0.0.1.evil.example:{port}", f"[::1]:{port}", ""):
            answer = raw_request(url, f"GET /model?path=0 HTTP/1.1\r\nHost: {host}")
            assert status_of(answer) == 403 and b"token" not in answer, host
        form = b"path=0&token=x"
        answer = raw_request(url, f"POST /model/save HTTP/1.1\r\nHost: evil.example:{port}\r\n"
                                  f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(form)}", form)
        assert status_of(answer) == 403
    client = create_app(traces=[read_trace(KRAFT)]).test_client()  # werkzeug's test client: localhost, port 80
    assert client.get("/trace/0/step/0").status_code == 200
    assert client.get("/trace/0/step/0", headers={"Host": "evil.example"}).status_code == 403
    assert not list(tmp_path.iterdir())


def test_a_request_body_over_the_limit_is_refused_413(tmp_path):
    from harness.explore import MAX_BODY

    spec = load_spec("example")
    model = spec.bind(spec.config("tiny"))
    with serving(create_app(model=model, out_dir=tmp_path)) as url:
        port = url.rstrip("/").rsplit(":", 1)[1]
        token = re.search(r'name="token" value="([^"]+)"', get(f"{url}model?path=0")[1]).group(1)
        head = (f"POST /model/save HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}")
        form = f"path=0&token={token}&pad=".encode()
        oversized = form + b"a" * (MAX_BODY + 1 - len(form))
        assert status_of(raw_request(url, head.format(len(oversized)), oversized)) == 413
        assert not list(tmp_path.iterdir())
        assert status_of(raw_request(url, head.format(len(form)), form)) == 200  # the same save within the limit
    assert len(list(tmp_path.iterdir())) == 1
    assert f"{MAX_BODY // 1024} KiB" in run_cli("explore", "--help")[1]  # the limit is stated


def test_malformed_requests_cannot_stall_the_server_through_an_unread_stderr():
    """werkzeug logs a line per malformed request; with stderr a pipe nobody reads, 64 KiB of them would leave
    each answering thread blocked in the log's write. Every malformed request must still get its 400, and a
    page its 200."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "harness", "explore", str(KRAFT), "--port", "0"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # stderr never read
    try:
        url = p.stdout.readline().split(" ", 1)[1].strip()
        garbage = "x" * 8000  # each log line quotes the request line: 20 of them fill a 64 KiB pipe
        for n in range(40):
            # four words: Python's http.server answers "400 Bad request syntax" and logs the line it quotes
            assert status_of(raw_request(url, f"GET /{garbage} {n} HTTP/1.1")) == 400, n
        assert get(f"{url}trace/0/step/0")[0] == 200
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()


def listening_sockets(pid: int) -> list[str]:
    """The local addresses of process `pid`'s TCP sockets in LISTEN state, read from /proc (what `ss -ltnp`
    shows): the inodes of its socket descriptors looked up in /proc/net/tcp and tcp6."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            if (target := os.readlink(fd)).startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table, width in (("tcp", 4), ("tcp6", 16)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: TCP_LISTEN
                address, port = fields[1].split(":")
                raw = bytes.fromhex(address)
                # /proc prints each 32-bit word of the address in host (little-endian) order
                packed = b"".join(raw[i:i + 4][::-1] for i in range(0, width, 4))
                found.append(f"{ipaddress.ip_address(packed)}:{int(port, 16)}")
    return found


def test_explore_listens_on_loopback_only():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-m", "harness", "explore", str(KRAFT), "--port", "0"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = p.stdout.readline().split(" ", 1)[1].strip()
        listeners = listening_sockets(p.pid)
        assert listeners == [url.split("//")[1].rstrip("/")]
        assert all(ipaddress.ip_address(a.rsplit(":", 1)[0]).is_loopback for a in listeners)
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
    with socket.create_server(("0.0.0.0", 0)) as everywhere:  # the reading itself sees a non-loopback listener
        assert f"0.0.0.0:{everywhere.getsockname()[1]}" in listening_sockets(os.getpid())


# ------------------------------------------------------------------ reading at a glance (issue #41)

ZK_STALE = CORPUS / "zk-tiny-accept_stale_controller_epoch-NoStaleControllerAction.itf.json"
ZK = CORPUS / "zk-kafka-replace-failover-NoStrayReplicas.itf.json"
REPLICATION = CORPUS / "replication-p1-isr_join_below_hwm-LeaderCandidateCompletenessProperty.itf.json"


def top_of(page, selector: str) -> float:
    return page.locator(selector).first.bounding_box()["y"]


def test_the_protocol_picture_comes_first_above_the_fold_at_1280x800():
    """At a laptop's 1280x800 the picture starts on the first screen, before the changed fields (folded
    away on a click) and, in model mode, before the invariant panel; model mode names its variants."""
    spec = load_spec("zk")
    model = spec.bind(spec.config("tiny", (), ("controller=kafka",)))
    with chromium_page() as page:  # one browser for the five pages
        for path in (KRAFT, ZK, REPLICATION, KIP642):
            trace = read_trace(path)
            with serving(create_app(traces=[trace])) as url:
                page.goto(f"{url}trace/0/step/{len(trace.states) - 1}")
                picture = page.locator("#protocol").bounding_box()
                assert picture["y"] + 150 < 800, (path.name, picture)  # its first boxes, not only its top edge
                assert top_of(page, "#protocol") < top_of(page, "#changes"), path.name
                page.click("#changes > summary")  # collapsible
                assert not page.locator("#changes table").is_visible()
        with serving(create_app(model=model, out_dir=Path("unused"))) as url:
            page.goto(f"{url}model?path=0")
            page.locator("#enabled a.action").first.click()
            page.wait_for_url("**/model?path=0,*")
            assert top_of(page, "#protocol") + 150 < 800
            assert top_of(page, "#protocol") < top_of(page, "#changes") < top_of(page, "#invariants")
            assert page.locator("#invariants").evaluate("e => e.tagName") == "DETAILS"
            assert "controller=kafka" in page.locator("#variants").inner_text()
            assert "phase_b=subset" in page.locator("#variants").inner_text()


def test_the_entities_the_violation_names_are_highlighted_in_the_picture():
    """kraft's `ISR member 3 lacks committed offset 0 ...: its log has 0 records`: broker 3's box, and the
    record it lacks drawn at offset 0 of its log; kip642's `leader 1 ... (offset 2: ...; offset 3: ...)`:
    server 1 and those two entries of its log. Only at the violation: earlier steps point at nothing."""
    trace, kip642 = read_trace(KRAFT), read_trace(KIP642)
    last = len(trace.states) - 1
    with serving(create_app(traces=[trace, kip642])) as url, chromium_page() as page:
        page.goto(f"{url}trace/0/step/{last}")
        assert page.locator(".broker.culprit").evaluate_all("bs => bs.map(b => b.dataset.broker)") == ["3"]
        culprit = page.locator('.broker.culprit[data-broker="3"]')
        assert culprit.evaluate("b => getComputedStyle(b).borderTopColor") == "rgb(198, 40, 40)"
        assert culprit.locator('.record.missing.culprit[data-offset="0"]').count() == 1
        assert "broker 3" in page.locator("#culprit-legend").inner_text()
        page.goto(f"{url}trace/0/step/{last - 1}")
        assert page.locator(".culprit").count() == 0
        page.goto(f"{url}trace/1/step/{len(kip642.states) - 1}")
        server = page.locator('.broker.culprit[data-server="1"]')
        assert server.count() == 1 and page.locator(".broker.culprit").count() == 1
        assert server.locator(".record.culprit").evaluate_all("rs => rs.map(r => r.dataset.offset)") == ["2", "3"]


def zk_requests_sent(trace) -> tuple[int, int]:
    """Counted from the states themselves: how many controller requests and AlterPartitions were put in
    flight over the run (a request more in a broker's inbox than the state before had), and how many of the
    requests were of an older controller epoch than ZooKeeper's while in flight."""
    from collections import Counter

    sent, stale, before = 0, set(), Counter()
    for index, state in enumerate(trace.states):
        now = Counter((i, r) for i, b in enumerate(state.brokers) for r in b.inbox)
        now.update((i, ("alter", b.alter, b.leader_epoch)) for i, b in enumerate(state.brokers) if b.alter)
        sent += sum((now - before).values())
        stale |= {key for key in now if key[1][0] != "alter" and key[1].ctrl_epoch < state.zk.controller_epoch}
        before = now
    return sent, len(stale)


def test_a_zk_trace_has_a_timeline_with_an_arrow_per_request_and_stale_ones_marked():
    for path in (ZK_STALE, ZK):
        trace = read_trace(path)
        sent, stale = zk_requests_sent(trace)
        assert sent and stale, path.name  # both traces have deposed controllers' requests
        with serving(create_app(traces=[trace])) as url, chromium_page() as page:
            page.goto(f"{url}trace/0/step/{len(trace.states) - 1}")
            svg = page.locator("#timeline svg.sequence")
            assert svg.is_visible()
            arrows = svg.locator("g.arrow")
            assert arrows.count() == sent, path.name
            lanes = svg.locator(".lane-name").evaluate_all("ts => ts.map(t => t.textContent)")
            assert lanes[0] == "controller" and all(lane.startswith("broker ") for lane in lanes[1:])
            for arrow in arrows.evaluate_all("gs => gs.map(g => g.dataset)"):
                assert arrow["src"] in lanes and arrow["dst"] in lanes and "controller" in (arrow["src"], arrow["dst"])
                assert arrow["delivered"] == "" or int(arrow["delivered"]) > int(arrow["sent"])
            assert 0 < svg.locator("g.arrow.stale").count() <= sent
            assert "controller epoch" in svg.locator("g.arrow.stale title").first.text_content()
            # each step's column is a link to it, the step shown marked
            assert svg.locator("a.step-link").count() == len(trace.states)
            assert svg.locator("rect.step-column.current").count() == 1


def test_zk_is_drawn_as_a_protocol():
    """The controller's step on the phase track of its variant, ZooKeeper's znodes by path, and each broker
    with its role and its log's records."""
    trace = read_trace(ZK_STALE)
    client = create_app(traces=[trace]).test_client()
    for index, state in enumerate(trace.states):
        html = client.get(f"/trace/0/step/{index}").text
        assert 'class="view-zk"' in html
        step = re.search(r'class="phase-step current" data-step="(\w+)"', html).group(1)
        assert step == ("IDLE", "A0", "U1", "U3_OFFLINE", "U3_DELETE", "A1", "A2", "B1", "B2", "B3", "B4", "B5", "B6",
                        "B7", "B8", "RESUME")[state.controller.step]
        for znode in ("/brokers/topics/t", "/brokers/topics/t/partitions/0/state", "/admin/reassign_partitions",
                      "/controller_epoch"):
            assert f'data-znode="{znode}"' in html
        assert html.count("data-broker=") == len(state.brokers)
        assert len(re.findall(r'class="record epoch-\d', html)) == sum(len(b.log) for b in state.brokers)
        assert ('class="role role-leader"' in html) == any(b.role == 2 for b in state.brokers)


def test_a_list_changed_by_one_element_shows_that_element():
    """A request sent to a broker: one row for that request (absent before), not the whole inbox."""
    trace = read_trace(ZK_STALE)
    view_steps = __import__("harness.present", fromlist=["trace_view"]).trace_view(trace).steps
    index, path = next((s.index, c.address) for s in view_steps for c in s.edits if c.kind == "add" and ".inbox" in c.path)
    html = create_app(traces=[trace]).test_client().get(f"/trace/0/step/{index}").text
    row = re.search(rf'<tr class="changed" data-path="{re.escape(path)}">(.*?)</tr>', html, re.S)
    assert row and "(absent)" in row.group(1) and "LEADER_AND_ISR(ctrl_epoch=" in row.group(1), (index, path)


def test_element_changes_reads_shown_lists_sets_and_bags():
    from harness.explore.element_diff import element_changes, shown_elements

    assert shown_elements("[1,(a=1, b=[2,3])]") == ["1", "(a=1, b=[2,3])"]
    assert shown_elements("[]") == [] and shown_elements("3") is None and shown_elements("[1,(2]") is None
    a, b, c = "(kind=LEADER_AND_ISR, leader=1)", "(kind=STOP_REPLICA, leader=2)", "(kind=LEADER_AND_ISR, leader=3)"
    assert element_changes(f"[{a},{b}]", f"[{a},{b},{c}]") == ([], [c])
    assert element_changes(f"{{{a},{b},{c}}}", f"{{{a},{c}}}") == ([b], [])
    assert element_changes(f"[{a},{a},{b}]", f"[{a},{b}]") == ([a], [])  # a bag: one of the two left
    assert element_changes(f"[{a}]", f"[{b}]") is None  # nothing kept: before and after read better
    assert element_changes("{1,2}", "{2,3}") is None  # short: whole reads better
    assert element_changes(f"{{{a}}}", f"[{a},{b}]") is None and element_changes("3" * 50, "4" * 50) is None


def test_culprits_are_read_from_every_models_reasons():
    from harness.explore.culprits import culprits_named

    cases = {"ISR member 3 lacks committed offset 0 (epoch 1): its log has 0 records": ({3}, {0}),
             "ISR members {1,3} are not replicas [2,3]": ({1, 3}, set()),
             "broker 2 still follows although RS is [1]": ({2}, set()),
             "leader 1 of epoch 2 has uncommitted VoterAssignments beyond its HWM 2 (offset 2: voters {1,2}; "
             "offset 3: voters {1,2,3})": ({1}, {2, 3}),
             "a broker applied a request of a superseded controller": (set(), set())}
    for reason, (brokers, offsets) in cases.items():
        found = culprits_named([reason, None])
        assert (found.brokers, found.offsets) == (brokers, offsets), reason


def test_a_counterexample_to_induction_is_shown_as_its_pre_and_post_state(tmp_path):
    code, out, err = run_cli("prove", "kraft", "--mutation", "completion_ignores_min_isr", "--brokers", 2,
                             "--depth", 2, "--out", tmp_path)
    assert code == 1, err
    path = sorted(tmp_path.glob("*-cti.itf.json"))[0]
    doc = json.loads(path.read_text())
    pre, post = ({k: v for k, v in s.items() if k != "#meta"} for s in doc["states"])
    from harness.trace import read_shown

    with serving(create_app(traces=[read_shown(path)])) as url, chromium_page() as page:
        page.goto(url)
        page.wait_for_url("**/step/0")
        assert page.locator("#violated-property").inner_text() == doc["#meta"]["property"]
        assert page.locator("#cti-rule").inner_text().startswith(doc["#meta"]["rule"])
        assert page.locator("#pre-state").is_visible() and page.locator("#post-state").is_visible()
        rows = page.locator("table.cti tr[data-path]")
        assert rows.count() == len(doc["vars"])
        changed = page.locator("table.cti tr.changed").evaluate_all("rs => rs.map(r => r.dataset.path)")
        assert set(changed) == {k for k in doc["vars"] if pre[k] != post[k]} and changed
        assert "reachab" in page.locator("#violation").inner_text()
    with socket.create_server(("127.0.0.1", 0)) as taken:  # the command reads the CTI, then meets the port
        code, out, err = run_cli("explore", path, "--port", taken.getsockname()[1])
    assert code == 2 and err.startswith("error: --port "), err


def test_the_docs_show_the_explorer_screenshots_the_capture_script_takes():
    from harness.explore.capture import DOCS

    doc = (ROOT / "docs" / "explorer.md").read_text()
    for name in DOCS:
        png = ROOT / "docs" / "images" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"images/{name}" in doc
        assert png.read_bytes()[16:24] == (1280).to_bytes(4, "big") + (800).to_bytes(4, "big")  # the IHDR size
    assert "make screenshots" in doc


def test_kip642_exchanges_are_arrows_within_their_step():
    """kip642 has no network in its state: each Fetch or VoteRequest is one rule, drawn as an arrow from the
    request's sender to its receiver within that step's column."""
    trace = read_trace(CORPUS / "kip642-ongaro-change_before_epoch_commit-LeaderCompleteness.itf.json")
    exchanges = [(i, a) for i, a in enumerate(trace.actions)
                 if a is not None and a.rule in ("fetch", "handle_vote_request", "stand_against_nonvoter")]
    assert {a.rule for _, a in exchanges} >= {"fetch", "handle_vote_request"}
    html = create_app(traces=[trace]).test_client().get("/trace/0/step/0").text
    drawn = re.findall(r'<g class="arrow[^"]*" data-src="server (\d+)" data-dst="server (\d+)" data-sent="(\d+)" '
                       r'data-delivered="(\d+)"', html)
    expected = [(str(dict(a.params)["follower" if a.rule == "fetch" else "candidate"]),
                 str(dict(a.params)["leader" if a.rule == "fetch" else "voter"]), str(i), str(i)) for i, a in exchanges]
    assert sorted(drawn) == sorted(expected)
