"""Spark on a real standalone cluster started from the installed pyspark on 127.0.0.1: a job that gets no
executor gives up after --executor-wait (exit 2) or at --time-limit (exit 3), executors without the
harness's environment are named in one line (exit 2), and with a worker the search is BFS's."""

import json
import os
import socket
import subprocess
import sys
import time
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


@pytest.fixture
def master(tmp_path):
    port = free_port()
    procs = [start(tmp_path, "master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                   "--port", str(port), "--webui-port", str(free_port()))]
    wait_for(lambda: listening(port), 60, "the master never listened")

    def add_worker():
        procs.append(start(tmp_path, f"worker{len(procs)}", "org.apache.spark.deploy.worker.Worker",
                           f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                           "--webui-port", str(free_port())))

    yield f"spark://127.0.0.1:{port}", add_worker
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()


def spark_check(tmp_path, master, *extra, env=None):
    args = [sys.executable, "-m", "harness", "check", "example", "--config", "ci", "--engine", "spark",
            "--master", master, "--every-level-on-spark", "--checkpoint", str(tmp_path / f"ck{time.monotonic_ns()}"),
            "--out", str(tmp_path / "traces"), "--json", "--quiet", *extra]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    return p.returncode, p.stdout, p.stderr


@pytest.mark.slow
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
