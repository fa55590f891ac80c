"""A Spark standalone cluster on 127.0.0.1 (every port and web UI), started from the installed pyspark: a master and workers of
one core each, as separate JVMs. For the cluster tests and `make bench`, and for trying the Spark engine
on a real cluster without installing Spark:

    with StandaloneCluster(Path("/tmp/sc"), workers=2) as cluster:
        ... python -m harness check kraft --engine spark --master {cluster.url} ...

Every process runs in its own session, so `kill_worker` takes a worker's executor and Python workers
with it, as a lost machine would.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pyspark

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() >= deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class StandaloneCluster:
    def __init__(self, workdir: Path, workers: int = 0, cores: int = 1, memory: str = "1g") -> None:
        self.workdir, self.cores, self.memory = Path(workdir), cores, memory
        self.port, self.webui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.workers: list[subprocess.Popen] = []
        self._procs: list[subprocess.Popen] = []
        self._initial = workers

    def _start(self, name: str, *args: str, **extra_env: str) -> subprocess.Popen:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # SPARK_LOCAL_IP: the web UIs bind to it (else to every address); the other ports to --host
        env = {**os.environ, "SPARK_HOME": str(SPARK_CLASS.parent.parent), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_WORKER_DIR": str(self.workdir / f"{name}-work"), **extra_env}
        with open(self.workdir / f"{name}.log", "wb") as log:
            p = subprocess.Popen([str(SPARK_CLASS), *args], stdout=log, stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
        self._procs.append(p)
        return p

    def __enter__(self) -> StandaloneCluster:
        # No kill links in the master's UI, and no REST submission server (it takes jobs without authentication).
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.webui),
                    SPARK_MASTER_OPTS=f"{os.environ.get('SPARK_MASTER_OPTS', '')} -Dspark.ui.killEnabled=false "
                                      "-Dspark.master.rest.enabled=false".strip())
        wait_for(lambda: listening(self.port), 60, "the Spark master never listened")
        for _ in range(self._initial):
            self.add_worker()
        if self._initial:
            wait_for(lambda: self.alive_workers() == self._initial, 120, "the Spark workers never registered")
        return self

    def add_worker(self) -> subprocess.Popen:
        worker = self._start(f"worker{len(self.workers) + 1}", "org.apache.spark.deploy.worker.Worker", self.url,
                             "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                             "--webui-port", str(free_port()))
        self.workers.append(worker)
        return worker

    def kill_worker(self, worker: subprocess.Popen) -> None:
        """SIGKILL a worker with everything it started (executor JVM, Python workers): a lost machine."""
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    def alive_workers(self) -> int:
        """Workers the master counts as alive (its web UI's JSON)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.webui}/json/", timeout=5) as r:
                return int(json.load(r).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def __exit__(self, *exc) -> None:
        for p in self._procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self._procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
