"""Spark on a real standalone cluster started from the installed pyspark on 127.0.0.1: a job that gets no
executor gives up after --executor-wait (exit 2) or at --time-limit (exit 3), executors without the
harness's environment are named in one line (exit 2), with one worker or two the search is BFS's, and a
worker killed mid-run costs nothing but time. Also: spark-submit gives the harness's own exit codes.

These start JVMs for a minute or more: marked `cluster`, they run in the nightly (and by hand with
`pytest -m cluster`), not in `make test`."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyspark
import pytest

from conftest import ROOT, run_cli

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(tmp_path: Path, name: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "SPARK_HOME": str(SPARK_CLASS.parent.parent), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_WORKER_DIR": str(tmp_path / f"{name}-work")}
    log = open(tmp_path / f"{name}.log", "wb")
    return subprocess.Popen([str(SPARK_CLASS), *args], stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def wait_for(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def alive_workers(webui: int) -> int:
    """Workers the master counts as alive (its web UI's JSON)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=5) as r:
            return int(json.load(r).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture
def master(tmp_path):
    port, webui = free_port(), free_port()
    procs = [start(tmp_path, "master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                   "--port", str(port), "--webui-port", str(webui))]
    wait_for(lambda: listening(port), 60, "the master never listened")

    def add_worker() -> subprocess.Popen:
        procs.append(start(tmp_path, f"worker{len(procs)}", "org.apache.spark.deploy.worker.Worker",
                           f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                           "--webui-port", str(free_port())))
        return procs[-1]

    add_worker.alive = lambda: alive_workers(webui)
    yield f"spark://127.0.0.1:{port}", add_worker
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()


def spark_args(tmp_path, master, spec="example", config="ci", *extra):
    return [sys.executable, "-m", "harness", "check", spec, "--config", config, "--engine", "spark",
            "--master", master, "--every-level-on-spark", "--checkpoint", str(tmp_path / f"ck{time.monotonic_ns()}"),
            "--out", str(tmp_path / "traces"), "--json", "--quiet", *extra]


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def spark_check(tmp_path, master, *extra, env=None, spec="example", config="ci"):
    p = subprocess.run(spark_args(tmp_path, master, spec, config, *extra), capture_output=True, text=True,
                       timeout=300, cwd=ROOT, env={**ENV, **(env or {})})
    return p.returncode, p.stdout, p.stderr


def bfs_stats(tmp_path, spec, config):
    code, out, err = run_cli("check", spec, "--config", config, "--json", "--out", tmp_path / "bfs")
    assert code == 0, err
    return json.loads(out)


def same_search(spark_result: dict, bfs_result: dict) -> bool:
    """Counts per depth and successors generated per rule: what does not depend on the order of a search."""
    s, b = spark_result["stats"], bfs_result["stats"]
    return (s["distinct"] == b["distinct"] and s["states_per_depth"] == b["states_per_depth"]
            and {k: v["generated"] for k, v in spark_result["coverage"].items()}
            == {k: v["generated"] for k, v in bfs_result["coverage"].items()})


@pytest.mark.cluster
def test_a_standalone_cluster_without_and_with_executors(tmp_path, master):
    url, add_worker = master
    code, out, err = spark_check(tmp_path, url, "--executor-wait", "3")
    assert code == 2 and "no Spark executor registered" in err and len(err.strip().splitlines()) == 1, err
    code, out, err = spark_check(tmp_path, url, "--executor-wait", "600", "--time-limit", "4")
    stats = json.loads(out)["stats"]
    assert code == 3 and len(stats["states_per_depth"]) == 1 and "time-limit" in out, (out, err)  # the initial states

    add_worker()
    # An executor whose Python lacks the harness's dependencies (the system interpreter has no numpy).
    code, out, err = spark_check(tmp_path, url, env={"PYSPARK_PYTHON": "/usr/bin/python3"})
    assert code == 2 and "cannot import" in err and "numpy" in err and len(err.strip().splitlines()) == 1, err

    code, out, err = spark_check(tmp_path, url)
    assert code == 0, err
    expected = run_cli("check", "example", "--config", "ci", "--json", "--out", tmp_path / "bfs")
    assert json.loads(out)["stats"]["distinct"] == json.loads(expected[1])["stats"]["distinct"]


@pytest.mark.cluster
def test_two_workers_give_bfs_results_and_a_worker_killed_mid_run_costs_only_time(tmp_path, master):
    url, add_worker = master
    add_worker()
    doomed = add_worker()
    wait_for(lambda: add_worker.alive() == 2, 120, "two workers never registered")

    code, out, err = spark_check(tmp_path, url, spec="kip642", config="tiny")
    assert code == 0, err
    result = json.loads(out)
    assert result["stats"]["tasks"] == 2 and same_search(result, bfs_stats(tmp_path, "kip642", "tiny"))

    # kraft, every level committed; a worker (its executor and Python workers with it) is SIGKILLed once
    # three levels have been committed by a job of two tasks
    args = spark_args(tmp_path, url, "kraft", "leaderless", "--checkpoint-every", "0")
    ck = Path(args[args.index("--checkpoint") + 1])
    p = subprocess.Popen(args, cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def committed_spark_levels() -> int:
        try:
            return json.loads((ck / "state.json").read_text())["body"]["totals"]["spark_levels"]
        except (OSError, ValueError, KeyError):
            return 0

    wait_for(lambda: committed_spark_levels() >= 3 or p.poll() is not None, 240, "no Spark level was committed")
    assert p.poll() is None, "the run ended before the kill"
    os.killpg(doomed.pid, signal.SIGKILL)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    result = json.loads(out)
    assert result["stats"]["spark_jobs"] >= 2 and result["stats"]["tasks"] == 1  # re-run on the slot left
    assert same_search(result, bfs_stats(tmp_path, "kraft", "leaderless"))


@pytest.mark.cluster
def test_spark_submit_gives_the_harness_exit_codes(tmp_path):
    """0 / 1 / 2 / 3 as under `python -m harness`, whether the run ends before Spark is up or on Spark."""
    submit = SPARK_CLASS.parent / "spark-submit"
    env = {**ENV, "PYSPARK_PYTHON": sys.executable, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    cases = [(["example"], 0), (["example", "--mutation", "hwm_ignores_isr"], 1), (["nosuch"], 2),
             (["kraft", "--config", "tiny", "--every-level-on-spark", "--max-depth", "3"], 3),
             (["kraft", "--config", "tiny", "--every-level-on-spark"], 0)]
    for k, (args, expected) in enumerate(cases):
        p = subprocess.run([str(submit), "--master", "local[2]", "harness/__main__.py", "check", *args, "--engine",
                            "spark", "--master", "", "--checkpoint", str(tmp_path / f"ck{k}"), "--out",
                            str(tmp_path / "traces"), "--quiet"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == expected, (args, p.stdout[-1000:], p.stderr[-1000:])
