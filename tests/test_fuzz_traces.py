"""Fuzzing `replay` and `show` with malformed ITF traces (issue "Nothing lost, nothing misreported").

Every input is either refused -- exit 2, nothing on stdout, exactly one line `error: ...` on stderr that
names the file -- or read as a trace: then `replay` exits 0 (it reproduces) or 1 (it diverges) and `show`
prints it. Never a traceback, never a hang. The CLI runs in this process (harness.cli.main with sys.argv
patched) for speed; a few subprocess runs check the same end to end.

FUZZ_PROFILE=short (default, part of `make test`, deterministic) or long (the nightly job: over 10,000
traces, a new random sample each run). FUZZ_REPORT=PATH writes the counts as JSON.
"""

import fcntl
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from functools import cache
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import harness.cli
from harness.itf import MAX_INT_DIGITS, one_line
from harness.trace import MAX_NESTING, MAX_STRING_CHARS, MAX_TRACE_BYTES, read_trace
from tests.conftest import ROOT

PROFILE = os.environ.get("FUZZ_PROFILE", "short")
if PROFILE not in ("short", "long"):
    raise ValueError(f"FUZZ_PROFILE must be 'short' or 'long', not {PROFILE!r}")
EXAMPLES_PER_UNIT = {"short": 1, "long": 40}[PROFILE]  # the long profile tries 40 times as many traces
HANG_SECONDS = 60  # one CLI run on this busy 2-core machine takes well under a second


def fuzz(examples: int):
    """Hypothesis settings for a test worth `examples` traces in the short profile."""
    return settings(max_examples=examples * EXAMPLES_PER_UNIT, derandomize=PROFILE == "short", database=None,
                    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                          HealthCheck.large_base_example])


# ---------------------------------------------------------------------------------- counts
COUNTS = Counter()  # traces, refused, replays, diverges, tracebacks, hangs
COUNTED = ("traces", "refused", "accepted", "replays", "diverges", "tracebacks", "hangs", "closed_stream_runs")


@pytest.fixture(scope="module", autouse=True)
def fuzz_report(request):
    """Print the counts after the module, and add them to FUZZ_REPORT for the nightly report. Under
    pytest-xdist each worker runs part of the module: each prints its own line (on stderr, the stream
    xdist shows) and the file sums them."""
    started = time.time()
    yield
    COUNTS["accepted"] = COUNTS["replays"] + COUNTS["diverges"]
    mine = {"started": started, "ended": time.time(), **{k: COUNTS[k] for k in COUNTED}}
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    with request.config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
        print(f"\nfuzzed traces{f' ({worker})' if worker else ''}, profile {PROFILE}: "
              + ", ".join(f"{k} {mine[k]}" for k in COUNTED) + f", {mine['ended'] - started:.1f} s", file=sys.stderr)
    if os.environ.get("FUZZ_REPORT"):
        add_to_report(Path(os.environ["FUZZ_REPORT"]), mine)


def add_to_report(path: Path, mine: dict) -> None:
    """Sum `mine` into the JSON report at `path`, under a lock; a report of an earlier run is replaced."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"pid {os.getpid()}")
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        try:
            report = json.loads(f.read())
        except ValueError:
            report = {}
        if report.get("run") != run:
            report = {"run": run, "profile": PROFILE, "started": mine["started"], "ended": mine["ended"]}
        report.update({k: report.get(k, 0) + mine[k] for k in COUNTED})
        report["started"], report["ended"] = min(report["started"], mine["started"]), max(report["ended"], mine["ended"])
        report["seconds"] = round(report["ended"] - report["started"], 1)  # wall time, across workers
        f.seek(0)
        f.truncate()
        f.write(json.dumps(report, indent=1) + "\n")


# ------------------------------------------------------------------------- running the CLI
class Hang(Exception):
    """A CLI run took longer than HANG_SECONDS."""


def _hang(signum, frame):
    raise Hang(f"a CLI run took over {HANG_SECONDS} s")


def run_cli(*args: str) -> tuple[int, str, str]:
    """`python -m harness ARGS` in this process: (exit code, stdout, stderr). An exception escaping
    main() would be a traceback for the user: it is counted and fails the test."""
    stdout, stderr = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _hang)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    try:
        with mock.patch.object(sys, "argv", ["harness", *args]), redirect_stdout(stdout), redirect_stderr(stderr):
            harness.cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    except Hang:
        COUNTS["hangs"] += 1
        raise
    except BaseException:
        COUNTS["tracebacks"] += 1
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return code, stdout.getvalue(), stderr.getvalue()


def assert_refused(result: tuple[int, str, str], path) -> None:
    code, out, err = result
    assert code == 2 and out == "", result
    assert err.startswith("error: ") and err.endswith("\n") and len(err.splitlines()) == 1, err
    assert "Traceback" not in err and len(err) < 1000, err
    assert one_line(str(path)) in err, err  # it names the file


def meaning(trace) -> tuple:
    """What a trace says, whatever its bytes: two files with the same meaning replay alike."""
    return trace.spec.name, trace.model.config, trace.states, trace.actions, trace.outcome, trace.loop


def check_trace_file(path: Path, same_as: tuple | None = None) -> str:
    """Replay and show one file; assert the contract; return "refused", "replays" or "diverges". A file
    that reads as a trace meaning `same_as` (an unchanged committed trace) must replay."""
    return check_results(path, *replay_and_show(path), same_as)


def replay_and_show(path: Path) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    return run_cli("replay", str(path)), run_cli("show", str(path))


def check_results(path: Path, replayed: tuple[int, str, str], shown: tuple[int, str, str], same_as: tuple | None) -> str:
    COUNTS["traces"] += 1
    if replayed[0] == 2:
        assert_refused(replayed, path)
        assert shown == replayed  # the same file, the same one line
        verdict = "refused"
    else:
        code, out, err = replayed
        assert (code == 0 and err == "" and out.startswith("OK replays as recorded")) or \
               (code == 1 and err == "" and out.startswith("DIVERGES ")), replayed  # a verdict: stdout
        assert shown[0] == 0 and shown[2] == "" and shown[1].strip(), shown
        if same_as is not None and meaning(read_trace(path)) == same_as:
            assert code == 0, replayed
        verdict = "replays" if code == 0 else "diverges"
    COUNTS[verdict] += 1
    return verdict


# ---------------------------------------------------------------------- writing JSON trees
class Raw(str):
    """JSON text written as is: what json.dumps cannot write (huge literals, NaN, deep nesting, junk)."""


class Pairs(list):
    """An object written from (key, value) pairs, so that a key can appear twice."""


DELETE = object()  # returned by an edit to remove the node


def to_json(value, ascii_only: bool = True) -> str:
    if isinstance(value, Raw):
        return value
    if isinstance(value, dict):
        value = Pairs(value.items())
    if isinstance(value, Pairs):
        return "{" + ", ".join(f"{to_json(k, ascii_only)}: {to_json(v, ascii_only)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(to_json(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def replace_at(tree, path: tuple, edit):
    """`tree` with the node at `path` replaced by edit(node), or removed if that is DELETE; only the
    containers on the path are copied, so a large trace costs little to edit."""
    if not path:
        new = edit(tree)
        return Raw("") if new is DELETE else new
    copy = tree.copy()
    new = replace_at(tree[path[0]], path[1:], edit)
    if new is DELETE:
        del copy[path[0]]
    else:
        copy[path[0]] = new
    return copy


# --------------------------------------------------------------------------- the material
COMMITTED = sorted((ROOT / "counterexamples").glob("*.itf.json"))


@cache
def committed(path: Path) -> tuple[dict, tuple]:
    """A committed trace as a JSON tree, and its meaning."""
    return json.loads(path.read_text()), meaning(read_trace(path))


@cache
def string_positions(path: Path) -> list[tuple[tuple, bool]]:
    """Every (path, is_key) where a committed trace holds a string."""
    found = []

    def walk(node, at):
        if isinstance(node, dict):
            for k, v in node.items():
                found.append(((*at, k), True))
                walk(v, (*at, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, (*at, i))
        elif isinstance(node, str):
            found.append((at, False))

    walk(committed(path)[0], ())
    return found


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def write(workdir: Path, content: str | bytes) -> Path:
    path = workdir / "trace.itf.json"
    path.write_bytes(content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content)
    return path


# ---------------------------------------------------------------------------- strategies
ODD_STRINGS = ["", "\ud800", "\udfff", "a\ud83d", "a\x00b", "\x1b[31mred", "two\nlines", "tab\there", "\u2028",
               "\u202eevil", "\x85", "\ufeff", "[bold]", "[/]", "[red", "[/bold]", ":smile:", "#meta", "#bigint",
               "#map", "#set", "#tup", "ITF", "none", "invariant", "liveness", "example", "kraft", "kip642", "ci"]
strings = st.one_of(st.text(max_size=12), st.sampled_from(ODD_STRINGS),
                    st.sampled_from([MAX_STRING_CHARS, MAX_STRING_CHARS + 1, 100_000]).map(lambda n: "x" * n))
many_digits = st.sampled_from([MAX_INT_DIGITS, MAX_INT_DIGITS + 1, 4300, 4301, 100_000]).map(lambda n: "9" * n)
depths = st.sampled_from([MAX_NESTING - 2, MAX_NESTING + 1, 1000, 200_000])
leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70),
    st.sampled_from([-2, -1, 0, 1, 7, 2**53, 2**61 - 2, 2**61 - 1, 2**64]),
    many_digits.map(Raw), many_digits.map(lambda d: Raw("-" + d)),  # integer literals of many digits
    st.one_of(many_digits, st.sampled_from(["1_0", " 1", "+1", "\u0661", "", "0x10", "1.0", "-"])).map(
        lambda s: {"#bigint": s}),
    st.sampled_from(["1.5", "1e400", "-0.0", "1E2", "NaN", "Infinity", "-Infinity", "01", "tru", "[", "}"]).map(Raw),
    depths.map(lambda n: Raw("[" * n + "]" * n)), depths.map(lambda n: Raw('{"a": ' * n + "1" + "}" * n)),
    strings,
)
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(strings, inner, max_size=4)
                           | inner.map(lambda v: {"#map": [[1, v]]}) | inner.map(lambda v: {"#set": [v]})
                           | inner.map(lambda v: {"#tup": [v]}), max_leaves=8)


@st.composite
def node_paths(draw, tree) -> tuple:
    """A path to a node, walking down from the root and stopping at each level with chance 1/4: every
    level is reached, the upper ones (top-level keys, #meta, states) most often."""
    path, node = (), tree
    while isinstance(node, (dict, list)) and node and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
        path, node = (*path, key), node[key]
    return path


def _as_other_container(node):
    if isinstance(node, dict):
        return [[k, v] for k, v in node.items()]
    if isinstance(node, list):
        return {str(i): v for i, v in enumerate(node)}
    return [node]


@st.composite
def tree_edits(draw, tree):
    """One random edit of a JSON tree: (path, edit function)."""
    path = draw(node_paths(tree))
    node = tree
    for key in path:
        node = node[key]
    keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
    kind = draw(st.sampled_from(["delete", "retype", "add", "swap", "duplicate", "other_container", "reorder"]))
    if kind == "delete":
        return path, lambda old: DELETE
    if kind == "retype":
        value = draw(json_values)
        return path, lambda old: value
    if kind == "add":
        key, value = draw(strings), draw(json_values)
        return path, lambda old: {**old, key: value} if isinstance(old, dict) else \
            [*old, value] if isinstance(old, list) else [old, value]
    if kind == "swap" and len(keys) >= 2:
        a, b = draw(st.sampled_from(keys)), draw(st.sampled_from(keys))
        swapped = node.copy()
        swapped[a], swapped[b] = node[b], node[a]
        return path, lambda old: swapped
    if kind == "duplicate" and isinstance(node, dict) and keys:
        key = draw(st.sampled_from(keys))
        value = node[key] if draw(st.booleans()) else draw(json_values)
        return path, lambda old: Pairs([*old.items(), (key, value)])
    if kind == "reorder" and isinstance(node, dict):
        order = draw(st.permutations(keys))
        return path, lambda old: {k: old[k] for k in order}  # the same trace: it must still replay
    return path, _as_other_container


@st.composite
def text_edits(draw, text: str) -> bytes:
    """One edit of the file's bytes: truncation, invalid UTF-8, BOM, NUL, a flipped byte, re-indentation."""
    data = text.encode()
    at = draw(st.integers(0, len(data)))
    kind = draw(st.sampled_from(["truncate", "insert", "flip", "bom", "reindent"]))
    if kind == "truncate":
        return data[:at]
    if kind == "insert":
        junk = draw(st.sampled_from([b"\xff", b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\x00", b"\xef\xbb\xbf",
                                     b"\\", b'"', b",", b"[", b"}", b"\n"]))
        return data[:at] + junk + data[at:]
    if kind == "flip" and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
    if kind == "bom":  # RFC 8259 lets a reader ignore it: the trace still replays
        return b"\xef\xbb\xbf" + data
    return json.dumps(json.loads(text), indent=draw(st.sampled_from([None, 0, 4]))).encode()


# -------------------------------------------------------------------------------- fuzzing
@fuzz(80)
@given(st.sampled_from(COMMITTED), st.data())
def test_one_edit_of_a_committed_trace(workdir, source, data):
    """A real trace with one edit anywhere in its JSON tree: deleted, retyped, added, swapped or
    duplicated entries, objects turned into lists and back, reordered keys."""
    tree, original = committed(source)
    path, edit = data.draw(tree_edits(tree))
    check_trace_file(write(workdir, to_json(replace_at(tree, path, edit))), same_as=original)


@fuzz(40)
@given(st.sampled_from(COMMITTED), st.data())
def test_one_byte_edit_of_a_committed_trace(workdir, source, data):
    """A real trace cut at a random byte, with invalid UTF-8, a NUL or a stray byte inserted, one byte
    changed, a byte-order mark, or other indentation (the last two still replay)."""
    _, original = committed(source)
    check_trace_file(write(workdir, data.draw(text_edits(source.read_text()))), same_as=original)


STRUCTURE_EDITS = {
    "no states": (("states",), lambda node: []),
    "state without #meta": (("states", 0, "#meta"), lambda node: DELETE),
    "extra top-level key": ((), lambda node: {**node, "params": []}),
    "extra #meta key": (("#meta",), lambda node: {**node, "kind": "trace"}),
    "extra state #meta key": (("states", 0, "#meta"), lambda node: {**node, "time": 0}),
    "nested #meta": (("states", 0), lambda node: {k: ({**v, "#meta": {}} if isinstance(v, dict) else v)
                                                  for k, v in node.items()}),
    "action on the initial state": (("states", 0, "#meta"), lambda node: {**node, "action": {"rule": "x", "params": {}}}),
    "action without params": (("states", -1, "#meta", "action"), lambda node: {"rule": node["rule"]}),
    "action with extra key": (("states", -1, "#meta", "action"), lambda node: {**node, "x": 1}),
    "outcome with extra key": (("#meta", "outcome"), lambda node: {**node, "x": 1}),
    "states as a map": (("states",), lambda node: {"#map": [[i, s] for i, s in enumerate(node)]}),
    "vars as a map": (("vars",), _as_other_container),
    "#meta as a list": (("#meta",), _as_other_container),
    "wrong length": (("#meta",), lambda node: {**node, "length": node["length"] + 1}),
    "other mutation": (("#meta",), lambda node: {**node, "mutation": "[red]x"}),
    "other variant": (("#meta",), lambda node: {**node, "variant": {"x": True}}),
}


@fuzz(20)
@given(st.sampled_from(COMMITTED), st.sampled_from(sorted(STRUCTURE_EDITS)), st.data())
def test_structure_of_a_trace(workdir, source, edit_name, data):
    """Named structural edits (missing and extra keys at each ITF level, lists for maps, empty states),
    then a wrong index or loop at a random state."""
    tree, original = committed(source)
    path, edit = STRUCTURE_EDITS[edit_name]
    if path[:2] == ("states", -1):
        path = ("states", len(tree["states"]) - 1, *path[2:])
    check_trace_file(write(workdir, to_json(replace_at(tree, path, edit))), same_as=original)
    state = data.draw(st.integers(0, len(tree["states"]) - 1))
    index = data.draw(st.one_of(st.integers(-3, len(tree["states"]) + 3), json_values))
    check_trace_file(write(workdir, to_json(replace_at(tree, ("states", state, "#meta", "index"), lambda n: index))),
                     same_as=original)
    loop = data.draw(st.one_of(st.integers(-3, len(tree["states"]) + 3), json_values))
    check_trace_file(write(workdir, to_json({**tree, "loop": loop})), same_as=original)


@fuzz(40)
@given(st.sampled_from(COMMITTED), st.data())
def test_hostile_values_anywhere(workdir, source, data):
    """A node of a real trace replaced by a hostile value: huge integers and #bigints, floats, NaN, long
    strings, deep nesting, control characters, lone surrogates (escaped, or encoded as invalid UTF-8)."""
    tree, original = committed(source)
    path = data.draw(node_paths(tree))
    value = data.draw(json_values)
    doc = replace_at(tree, path, lambda node: value)
    check_trace_file(write(workdir, to_json(doc, ascii_only=data.draw(st.booleans()))), same_as=original)


MARKUP = ["[bold]", "[/bold]", "[/]", "[red", "[bold red]x[/]", "[link=https://example.com]x[/link]", ":smile:",
          ":red_circle:", "[#ff0000]", "[on red]", "[@click=app.bell]x[/]"]


@fuzz(40)
@given(st.sampled_from(COMMITTED), st.sampled_from(MARKUP), st.data())
def test_markup_is_printed_as_it_is(workdir, source, marker, data):
    """Rich markup or an emoji code in any string of a real trace (a key or a value) is data: the output is
    that for a plain string of the same shape (Q for each non-space), character for character, with the
    marker in its place."""
    tree, original = committed(source)
    path, is_key = data.draw(st.sampled_from(string_positions(source)))
    neutral = re.sub(r"\S", "Q", marker)  # the same spaces: a table cell wraps them alike

    def planted(text):
        if is_key:
            return to_json(replace_at(tree, path[:-1], lambda node: {text if k == path[-1] else k: v
                                                                      for k, v in node.items()}))
        return to_json(replace_at(tree, path, lambda node: text))

    trace_path = write(workdir, planted(marker))
    marked = replay_and_show(trace_path)
    verdict = check_results(trace_path, *marked, original)
    plain = replay_and_show(write(workdir, planted(neutral)))
    assert check_results(trace_path, *plain, original) == verdict
    for (code, *texts), (plain_code, *plain_texts) in zip(marked, plain):
        assert code == plain_code
        for text, plain_text in zip(texts, plain_texts):  # a message may cut the marker short: compare by character
            assert len(text) == len(plain_text) and all(a == b or (a in marker and b == "Q")
                                                        for a, b in zip(text, plain_text)), (text, plain_text)


@fuzz(30)
@given(st.one_of(st.binary(max_size=300), json_values.map(to_json),
                 st.dictionaries(st.sampled_from(["#meta", "vars", "states", "loop"]), json_values).map(to_json)))
def test_anything_at_all(workdir, content):
    """Random bytes, random JSON, random objects with the top-level keys of a trace."""
    assert check_trace_file(write(workdir, content)) == "refused"


# ------------------------------------------------------------------------ limits, one by one
SMALL = ROOT / "counterexamples" / "example-ci-hwm_ignores_isr-CommittedOnIsr.itf.json"
LIMITS = {  # name: (where, a value at the limit: still a trace, a value just past it, words of the message)
    "nesting": (("#meta", "why"), Raw("[" * (MAX_NESTING - 2) + "]" * (MAX_NESTING - 2)),
                Raw("[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1)), f"nesting deeper than {MAX_NESTING} levels (limit)"),
    "integer literal": (("#meta", "seed"), Raw("9" * MAX_INT_DIGITS), Raw("9" * (MAX_INT_DIGITS + 1)),
                        f"more than {MAX_INT_DIGITS} (limit)"),
    "bigint": (("states", 0, "hwm"), {"#bigint": "0" * MAX_INT_DIGITS}, {"#bigint": "0" * (MAX_INT_DIGITS + 1)},
               f"at most {MAX_INT_DIGITS} digits"),
    "string": (("#meta", "why"), "x" * MAX_STRING_CHARS, "x" * (MAX_STRING_CHARS + 1), f"more than {MAX_STRING_CHARS} (limit)"),
}


@pytest.mark.parametrize("limit", sorted(LIMITS))
def test_each_limit_is_exact_and_named(workdir, limit):
    """At the limit a trace still replays (the nesting case is no trace, but is refused for its type, not
    its depth); one past it, the message names the file and the limit."""
    tree, original = committed(SMALL)
    where, at_limit, past_limit, words = LIMITS[limit]
    path = write(workdir, to_json(replace_at(tree, where, lambda n: at_limit)))
    assert check_trace_file(path, same_as=original) == ("refused" if limit == "nesting" else "replays")
    assert words not in run_cli("replay", str(path))[2]
    path = write(workdir, to_json(replace_at(tree, where, lambda n: past_limit)))
    assert check_trace_file(path) == "refused"
    assert words in run_cli("replay", str(path))[2]


def test_size_limit_is_checked_before_reading(workdir):
    """A file over MAX_TRACE_BYTES is refused from its size alone (a sparse file: nothing is read)."""
    path = workdir / "huge.itf.json"
    with open(path, "wb") as f:
        f.truncate(MAX_TRACE_BYTES + 1)
    assert check_trace_file(path) == "refused"
    assert f"larger than {MAX_TRACE_BYTES:,} (limit)" in run_cli("replay", str(path))[2]


# ------------------------------------------------------------------------------ special files
def special_files(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo.itf.json"
    os.mkfifo(fifo)
    (tmp_path / "to-zero.itf.json").symlink_to("/dev/zero")
    (tmp_path / "dangling.itf.json").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop.itf.json").symlink_to(tmp_path / "loop.itf.json")
    (tmp_path / "empty.itf.json").write_bytes(b"")
    return {"fifo": fifo, "/dev/zero": Path("/dev/zero"), "/dev/null": Path("/dev/null"), "directory": tmp_path,
            "missing": tmp_path / "missing.itf.json", "symlink to /dev/zero": tmp_path / "to-zero.itf.json",
            "dangling symlink": tmp_path / "dangling.itf.json", "symlink loop": tmp_path / "loop.itf.json",
            "empty": tmp_path / "empty.itf.json"}


def test_special_files_are_refused_without_reading_them(tmp_path):
    for name, path in special_files(tmp_path).items():
        assert check_trace_file(path) == "refused", name


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_refused(tmp_path):
    path = tmp_path / "secret.itf.json"
    path.write_text(SMALL.read_text())
    path.chmod(0)
    assert check_trace_file(path) == "refused"


def run_harness(*args: str) -> subprocess.CompletedProcess:
    """`python -m harness ARGS` in a new process, as a user runs it; a hang fails the test."""
    try:
        return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        COUNTS["hangs"] += 1
        raise


@pytest.mark.parametrize("name", ["fifo", "/dev/zero", "directory", "missing", "deep nesting", "huge integer",
                                  "lone surrogate", "markup"])
def test_end_to_end(tmp_path, name):
    """The same contract in a real process: exit 2, one line on stderr, no traceback, no hang."""
    tree, _ = committed(SMALL)
    files = special_files(tmp_path)
    edits = {"deep nesting": (("states", 0, "hwm"), Raw("[" * 100_000 + "]" * 100_000)),
             "huge integer": (("states", 0, "hwm"), Raw("9" * 5000)),
             "lone surrogate": (("#meta", "engine"), "\udc80"),
             "markup": (("states", 1, "#meta", "action", "rule"), "[/bold]")}
    if name in edits:
        path, value = edits[name]
        files[name] = write(tmp_path, to_json(replace_at(tree, path, lambda n: value)))
    for command in ("replay", "show"):
        p = run_harness(command, str(files[name]))
        if name == "markup":  # an action that does not exist: replay diverges, show prints it, both as written
            expected_code, printed = (1, p.stdout) if command == "replay" else (0, p.stdout)
            assert p.returncode == expected_code and "Traceback" not in p.stderr and "[/bold]()" in printed, p
            continue
        assert_refused((p.returncode, p.stdout, p.stderr), files[name])


# ------------------------------------------------------------------------- hostile environments
def _gone_reader() -> int:
    """The write end of a pipe whose reader has already left (`harness show T | head` after head exited)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


@fuzz(3)
@given(st.sampled_from(COMMITTED), st.data())
def test_an_edited_trace_into_closed_streams(workdir, source, data):
    """The same edited traces, read by a real process whose stdout reader has left, or whose stderr is
    closed: a command with a result for stdout ends 141 when its reader is gone, any other ends with the
    code it has with both streams open (a refusal 2: its one line goes to stderr; a divergence 1), and a
    closed stderr changes no exit code; never a traceback, never a hang."""
    tree, _ = committed(source)
    tree_path, edit = data.draw(tree_edits(tree))
    path = write(workdir, to_json(replace_at(tree, tree_path, edit)))
    command = data.draw(st.sampled_from(["replay", "show"]))
    expected, printed, _ = run_cli(command, str(path))
    COUNTS["closed_stream_runs"] += 2
    argv = [sys.executable, "-m", "harness", command, str(path)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = _gone_reader()
    try:
        p = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, cwd=ROOT, env=env, timeout=HANG_SECONDS)
    finally:
        os.close(out)
    gone = 141 if printed and expected != 2 else expected  # a result for stdout: its reader left first
    assert p.returncode == gone, (expected, p.returncode, p.stderr[-300:])
    assert b"Traceback" not in p.stderr, p.stderr[-300:]
    err = _gone_reader()
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=err, cwd=ROOT, env=env, timeout=HANG_SECONDS)
    finally:
        os.close(err)
    assert p.returncode == expected, (expected, p.returncode)
