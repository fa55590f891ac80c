"""A real SIGINT or SIGTERM sent to each engine mid-run: it stops within 2 seconds, says so on one
line with what it had done, and exits 130 / 143, never 0."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

# Each command runs far longer than the test waits. A progress line says a search is mid-run (`check` prints
# one every 0.1 s with PROGRESS); Spark's checkpoint says a level ran on Spark; Z3 reports no progress and
# Hypothesis's first report (1% of the nightly budget) comes late, so those two are given WARM_UP.
PROGRESS = ["--progress-every", "0.1"]
REPORTS_PROGRESS = {"bfs", "graph"}
WARM_UP = 4.0  # seconds: imports, model and solver set-up
LONG_RUNS = {
    "bfs": ["check", "kraft", "--config", "nightly"],
    "hypothesis": ["check", "kraft", "--config", "large", "--engine", "hypothesis", "--profile", "nightly"],
    "graph": ["check", "kraft", "--config", "ci", "--engine", "graph"],
    "z3": ["check", "kraft", "--config", "ci", "--engine", "z3", "--depth", "40"],
    "prove": ["prove", "kraft", "--brokers", "16", "--mutation", "completion_ignores_min_isr", "--depth", "40"],
    "spark": ["check", "kraft", "--config", "ci", "--engine", "spark", "--master", "local[2]", "--partitions", "2",
              "--every-level-on-spark", "--checkpoint-every", "0"],
}


def spark_level_started(ck):
    """True once a level has run on Spark: the next one is a Spark job too."""
    try:
        return json.loads((ck / "state.json").read_text())["body"]["totals"]["spark_levels"] >= 1
    except (OSError, ValueError, KeyError):
        return False


@pytest.mark.parametrize("engine, signum", [(e, signal.SIGINT) for e in LONG_RUNS] + [
    ("bfs", signal.SIGTERM), ("hypothesis", signal.SIGTERM), ("z3", signal.SIGTERM)])
@pytest.mark.slow
def test_a_signal_stops_every_engine_within_two_seconds(tmp_path, engine, signum):
    args = LONG_RUNS[engine] + ["--out", str(tmp_path / "out")]
    ck = tmp_path / "ck"
    if engine == "spark":
        args += ["--checkpoint", str(ck)]
    if engine in REPORTS_PROGRESS:
        args += PROGRESS
    errors = tmp_path / "stderr"
    with errors.open("w") as stderr:  # a file, not a pipe: read while the run goes on
        p = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=stderr, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if engine == "spark":
        ready = lambda: spark_level_started(ck)  # noqa: E731
    elif engine in REPORTS_PROGRESS:
        ready = lambda: "progress: " in errors.read_text()  # noqa: E731
    else:
        ready = None
        time.sleep(WARM_UP)
    deadline = time.monotonic() + 240
    while ready and not ready() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, f"{engine} ended before the signal: {errors.read_text()}"
    sent = time.monotonic()
    p.send_signal(signum)
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail(f"{engine} still running 30 s after {signum.name}")
    stopped = time.monotonic() - sent
    err = errors.read_text()
    assert p.returncode == 128 + signum, err
    said = [line for line in err.strip().splitlines() if not line.startswith(("Spark UI: ", "progress: "))]
    assert len(said) == 1 and said[0].startswith(f"interrupted by {signum.name}: no verdict"), err
    assert "Traceback" not in out + err and out == ""
    assert stopped < 2.0, f"{engine} took {stopped:.2f} s to stop"
    if engine == "spark":
        assert "add --resume" in err and spark_level_started(ck)
