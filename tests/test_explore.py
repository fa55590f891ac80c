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
        assert page.locator(".broker").count() == 3
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
    assert entries and len(re.findall(r'class="record epoch-\d config"', html)) == entries
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
    kind = {"kraft": "replicated_log", "replication": "replicated_log", "kip642": "quorum"}.get(spec_name, "assignment")
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
