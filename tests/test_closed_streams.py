"""stdout and stderr whose reader is gone (harness/streams.py), with real pipes: every command that prints its
result exits 141 when stdout's reader left before the start, half way (`| head -1`), or stdout was closed
(`>&-`), with nothing on stderr (no traceback, no "Exception ignored"); a closed stderr drops the diagnostics
and the command keeps its own exit code."""

import fcntl
import os
import subprocess
import sys

import pytest

from conftest import ROOT, run_cli

ENV = dict(os.environ, PYTHONPATH=str(ROOT))
CORPUS = ROOT / "counterexamples"
KRAFT = CORPUS / "kraft-small-expand_below_hwm-LeaderCandidateCompleteness.itf.json"
LIVENESS = CORPUS / "kraft-leaderless-ReassignmentCompletes.itf.json"  # diff: two lassos of one config
LIVENESS_OTHER = CORPUS / "kraft-leaderless-CompletesUnlessTargetGone.itf.json"
PIPE_SIZE = 4096  # the smallest a pipe can be made: outputs longer than this cannot all fit before the reader leaves
SIGPIPE_EXIT = 141


def command(args, tmp_path) -> list[str]:
    return [sys.executable, "-m", "harness", *[str(a).replace("{tmp}", str(tmp_path)) for a in args]]


def gone_reader() -> int:
    """The write end of a pipe whose reader has already left."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


def run(argv, stdout, stderr=subprocess.PIPE, preexec_fn=None):
    """`argv` with these descriptors (closed here after the start); its exit code and whatever it printed."""
    p = subprocess.run(argv, stdout=stdout, stderr=stderr, cwd=ROOT, env=ENV, timeout=300, preexec_fn=preexec_fn)
    for fd in (stdout, stderr):
        if isinstance(fd, int) and fd >= 0:
            os.close(fd)
    return p.returncode, p.stdout, p.stderr


# Every command that prints its result on stdout, in a form that runs in moments.
PRINTING = {
    "list": ["list"],
    "list --json": ["list", "--json"],
    "describe": ["describe", "kraft"],
    "check": ["check", "example", "--config", "tiny", "--mutation", "hwm_ignores_isr", "--out", "{tmp}"],
    "check --json": ["check", "example", "--config", "tiny", "--out", "{tmp}", "--json"],
    "replay": ["replay", KRAFT],
    "show": ["show", KRAFT],
    "diff": ["diff", LIVENESS, LIVENESS_OTHER],
    "graph": ["graph", "example", "--config", "tiny", "--out", "{tmp}"],
    "graph --out -": ["graph", "example", "--config", "tiny", "--out", "-"],
    "prove": ["prove", "kraft", "--config", "tiny", "--brokers", "2", "--depth", "2", "--out", "{tmp}"],
    "explore": ["explore", KRAFT, "--port", "0"],  # its URL line: the server never starts serving
    "--help": ["--help"],
    "--version": ["--version"],
    "check --help": ["check", "--help"],
}


@pytest.mark.parametrize("name", PRINTING)
def test_a_reader_gone_before_the_start_is_exit_141_and_nothing_said(name, tmp_path):
    code, _, err = run(command(PRINTING[name], tmp_path), stdout=gone_reader())
    assert (code, err) == (SIGPIPE_EXIT, b"")


# Outputs several times PIPE_SIZE: the command is still writing when the reader leaves after its first line.
LONG = {
    "list": ["list"],
    "describe": ["describe", "kraft"],
    "show": ["show", KRAFT],
    "graph --out -": ["graph", "kraft", "--config", "tiny", "--out", "-"],
}


@pytest.mark.parametrize("name", LONG)
def test_a_reader_leaving_after_one_line_is_exit_141_and_nothing_said(name, tmp_path):
    """As `harness ... | head -1`."""
    argv = command(LONG[name], tmp_path)
    read_end, write_end = os.pipe()
    assert fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_SIZE) == PIPE_SIZE
    p = subprocess.Popen(argv, stdout=write_end, stderr=subprocess.PIPE, cwd=ROOT, env=ENV)
    os.close(write_end)
    with open(read_end, "rb", buffering=0) as reader:  # unbuffered: one line read, no more
        first = reader.readline()
    err = p.communicate(timeout=300)[1]
    assert (p.returncode, err) == (SIGPIPE_EXIT, b"")
    code, whole, _ = run_cli(*argv[3:])
    assert code == 0 and whole.startswith(first.decode()) and len(whole) > len(first) + PIPE_SIZE  # the premise


@pytest.mark.parametrize("name", ["list", "replay", "graph --out -", "--version"])
def test_a_stdout_closed_before_the_start_is_exit_141(name, tmp_path):
    """`harness ... >&-`: fd 1 is not open at all (Python starts with sys.stdout None)."""
    code, _, err = run(command(PRINTING[name], tmp_path), stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert (code, err) == (SIGPIPE_EXIT, b"")


def test_a_closed_stderr_keeps_the_commands_own_exit_code(tmp_path):
    """stderr holds diagnostics, not the result: a refusal still exits 2 (its line lost), a search stopped by a
    limit 3 with its summary on stdout, a violation 1; corpus, which prints only on stderr, 0."""
    refused = ["check", "nosuchspec"]
    stopped = ["check", "example", "--config", "tiny", "--max-states", "5", "--out", "{tmp}"]
    violated = PRINTING["check"]
    for args, expected in ((refused, 2), (stopped, 3), (violated, 1), (["corpus", "--spec", "example", "--out", "{tmp}/corpus"], 0)):
        code, out, _ = run(command(args, tmp_path), stdout=subprocess.PIPE, stderr=gone_reader())
        assert code == expected, args
        assert out.startswith(b"example") if args[0] == "check" and expected != 2 else out == b"", args
    code, out, _ = run(command(refused, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       preexec_fn=lambda: os.close(2))  # `2>&-`
    assert (code, out) == (2, b"")  # the refusal's line is not printed on stdout instead
    # graph --out - --json: the graph on stdout, its summary on the stderr nobody reads
    code, out, _ = run(command(["graph", "example", "--config", "tiny", "--out", "-", "--json"], tmp_path),
                       stdout=subprocess.PIPE, stderr=gone_reader())
    assert code == 0 and out.startswith(b"digraph")


def test_both_closed_a_result_is_141_and_a_refusal_2(tmp_path):
    assert run(command(["list"], tmp_path), stdout=gone_reader(), stderr=gone_reader())[0] == SIGPIPE_EXIT
    assert run(command(["check", "nosuchspec"], tmp_path), stdout=gone_reader(), stderr=gone_reader())[0] == 2


@pytest.mark.parametrize("job, bad_flag", [("nightly.py", "--date=yesterday"), ("gate.py", "--no-such-flag")])
def test_the_ci_jobs_help_into_a_gone_reader_is_141_and_a_refusal_into_a_closed_stderr_2(job, bad_flag):
    script = [sys.executable, str(ROOT / "ci" / job)]
    assert run(script + ["--help"], stdout=gone_reader()) == (SIGPIPE_EXIT, None, b"")
    assert run(script + [bad_flag], stdout=subprocess.PIPE, stderr=gone_reader())[:2] == (2, b"")
