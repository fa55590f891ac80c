"""Spark on a real standalone cluster started from the installed pyspark on 127.0.0.1: a job that gets no
executor gives up after --executor-wait (exit 2) or at --time-limit (exit 3), executors without the
harness's environment or unable to write the checkpoint are named in one line (exit 2), with one worker or two the search is BFS's, and a
worker killed mid-run costs nothing but time. Also: spark-submit gives the harness's own exit codes.

These start JVMs for a minute or more: marked `cluster`, they run in the nightly (and by hand with
`pytest -m cluster`), not in `make test`."""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, is_loopback, listening_sockets, run_cli
from harness.standalone import SPARK_CLASS, StandaloneCluster, wait_for


@pytest.fixture
def cluster(tmp_path):
    with StandaloneCluster(tmp_path / "cluster") as c:
        yield c


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
def test_a_standalone_cluster_without_and_with_executors(tmp_path, cluster):
    url, add_worker = cluster.url, cluster.add_worker
    code, out, err = spark_check(tmp_path, url, "--executor-wait", "3")
    assert code == 2 and "no Spark executor registered" in err and len(err.strip().splitlines()) == 1, err
    code, out, err = spark_check(tmp_path, url, "--executor-wait", "600", "--time-limit", "4")
    stats = json.loads(out)["stats"]
    assert code == 3 and len(stats["states_per_depth"]) == 1 and "time-limit" in out, (out, err)  # the initial states

    add_worker()
    # An executor whose Python lacks the harness's dependencies (the system interpreter has no numpy).
    code, out, err = spark_check(tmp_path, url, env={"PYSPARK_PYTHON": "/usr/bin/python3"})
    assert code == 2 and "cannot import" in err and "numpy" in err and len(err.strip().splitlines()) == 1, err
    # An executor that cannot write the checkpoint directory: its Python may not write a byte to any file.
    no_writes = tmp_path / "python-without-writes"
    no_writes.write_text(f'#!/bin/sh\nulimit -f 0\nexec {sys.executable} "$@"\n')
    no_writes.chmod(0o755)
    code, out, err = spark_check(tmp_path, url, env={"PYSPARK_PYTHON": str(no_writes)})
    assert code == 2 and "cannot write the checkpoint directory" in err and len(err.strip().splitlines()) == 1, err

    code, out, err = spark_check(tmp_path, url)
    assert code == 0, err
    expected = run_cli("check", "example", "--config", "ci", "--json", "--out", tmp_path / "bfs")
    assert json.loads(out)["stats"]["distinct"] == json.loads(expected[1])["stats"]["distinct"]
    # Executors on this machine are started with the driver's class archive (the worker logs their command).
    from harness.engines.spark import class_archive

    [launch] = [f.read_text(errors="replace").splitlines()[0]
                for f in sorted(cluster.workdir.glob("worker*-work/app-*/*/stderr"))][-1:]
    assert launch.startswith("Spark Executor Command") and f"-XX:SharedArchiveFile={class_archive()}" in launch


@pytest.mark.cluster
def test_a_run_on_the_harness_standalone_cluster_listens_on_loopback_only(tmp_path, cluster):
    """Issue 36: the master, the worker, the executor, the driver and every Python process listen on
    127.0.0.1 only, and the master's page offers no kill link for the running application."""
    def running_apps() -> list:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{cluster.webui}/json/", timeout=5) as r:
                return json.load(r)["activeapps"]
        except (OSError, ValueError):  # the UI is not up yet
            return []

    p = subprocess.Popen(spark_args(tmp_path, cluster.url, "kraft", "tiny", "--executor-wait", "600"), cwd=ROOT,
                         env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: running_apps() or p.poll() is not None, 120, "the run never registered with the master")
    with urllib.request.urlopen(f"http://127.0.0.1:{cluster.webui}/", timeout=10) as r:
        master_page = r.read().decode()
    assert "kafka-reassignment-harness" in master_page  # the running application is listed
    assert "app/kill" not in master_page
    cluster.add_worker()  # the run waits for an executor meanwhile
    seen: dict = {}
    while p.poll() is None:
        seen.update(listening_sockets([p.pid, *(proc.pid for proc in cluster._procs)]))
        time.sleep(0.1)
    out, err = p.communicate()
    assert p.returncode == 0, err
    assert len({pid for pid, command in seen.values() if "java" in command}) == 4  # driver, master, worker, executor
    assert [address for address in seen if not is_loopback(address[0])] == []


@pytest.mark.cluster
def test_two_workers_give_bfs_results_and_a_worker_killed_mid_run_costs_only_time(tmp_path, cluster):
    url = cluster.url
    cluster.add_worker()
    doomed = cluster.add_worker()
    wait_for(lambda: cluster.alive_workers() == 2, 120, "two workers never registered")

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
    cluster.kill_worker(doomed)
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
