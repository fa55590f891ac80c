"""A real KRaft cluster on 127.0.0.1, for trace validation (`conform kraft --cluster`, issue 40).

Each node is its own JVM (`java -cp <Kafka's jars> kafka.Kafka server.properties`) with the combined
broker+controller roles; storage is formatted with Kafka's own StorageTool. The harness creates the work
folder (one per run; it refuses an existing one), picks free ports on 127.0.0.1, and keeps each node's
log (`node-<id>/server.log`) and data (`node-<id>/data`, whose `__cluster_metadata-0` is what gets
validated) for the user. `Cluster` is a context manager: every JVM it started is killed on every way out
(success, failure, BadInput, a signal), and each child also dies with the harness (PR_SET_PDEATHSIG), so
none outlives a harness killed by SIGKILL.
"""

from __future__ import annotations

import base64
import ctypes
import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

from harness.errors import BadInput
from harness.kafka import classpath

NODES = (1, 2, 3)
OWNER_MARK = ".harness-cluster"  # names a work folder as the harness's (it never reuses a folder without it)
START_TIMEOUT = 120.0  # seconds for the cluster to answer with every broker unfenced (a loaded 2-core machine)
JVM_OPTIONS = ("-Xmx384m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")

# Short timeouts, so that faults show within seconds: a killed broker is fenced after the session timeout.
NODE_SETTINGS = {
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "replica.lag.time.max.ms": "10000",
    "auto.create.topics.enable": "false",
    "auto.leader.rebalance.enable": "false",  # a preferred-leader election has no step in the kraft model
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "group.initial.rebalance.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "log.flush.interval.messages": "1",  # acked records are on disk: a kill -9 loses none (the model's flushed length)
}

LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
"""


def free_port() -> int:
    """A port nobody listens on at 127.0.0.1 now (the OS's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kafka_uuid() -> str:
    """A cluster id in Kafka's form (a UUID in URL-safe base64, unpadded). Never one that starts with '-', as
    Kafka's `Uuid.randomUuid` avoids too: the storage tool's argument parser reads it as an option (one id in 64
    made `format -t -...` fail)."""
    while (text := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return text


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG (1) = SIGKILL: the node dies when the harness does, however it dies
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def make_workdir(path: Path) -> Path:
    """Create the run's work folder; a folder that exists is the user's (or another run's): refused."""
    try:
        path.mkdir(parents=True)
    except FileExistsError:
        raise BadInput(f"{path} exists: the cluster needs a new folder (the harness never reuses one)") from None
    except OSError as exc:
        raise BadInput(f"cannot create {path}: {exc.strerror}") from None
    (path / OWNER_MARK).write_text("created by the harness for a KRaft cluster run\n")
    return path


class Node:
    def __init__(self, node_id: int, folder: Path, broker_port: int, controller_port: int) -> None:
        self.id = node_id
        self.folder = folder
        self.broker_port = broker_port
        self.controller_port = controller_port
        self.process: subprocess.Popen | None = None

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def metadata_log(self) -> Path:
        return self.data / "__cluster_metadata-0"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class Cluster:
    """Three KRaft nodes (ids 1, 2, 3) of one Kafka version, in `workdir` (created here): each a broker and,
    if in `controllers` (default: all three, the combined mode), a controller too."""

    def __init__(self, version: str, workdir: Path, start_timeout: float = START_TIMEOUT,
                 controllers: tuple[int, ...] = NODES) -> None:
        self.version = version
        self.controllers = controllers
        self.jars = classpath(version)
        self.workdir = Path(workdir)
        self.start_timeout = start_timeout
        self.nodes: dict[int, Node] = {}
        self.started: list[subprocess.Popen] = []  # every JVM this cluster started, for stop()
        self.start_seconds: float | None = None
        self.admin = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "Cluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.broker_port}" for n in self.nodes.values())

    def start(self) -> None:
        make_workdir(self.workdir)
        (self.workdir / "log4j2.properties").write_text(LOG4J2)
        for node_id in NODES:
            folder = self.workdir / f"node-{node_id}"
            folder.mkdir()
            self.nodes[node_id] = Node(node_id, folder, free_port(), free_port())
        voters = ",".join(f"{n.id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values()
                          if n.id in self.controllers)
        cluster_id = kafka_uuid()
        began = time.monotonic()
        for node in self.nodes.values():
            controller = node.id in self.controllers
            settings = dict(NODE_SETTINGS, **{
                "process.roles": "broker,controller" if controller else "broker",
                "node.id": str(node.id),
                "controller.quorum.voters": voters,
                "listeners": f"PLAINTEXT://127.0.0.1:{node.broker_port}"
                             + (f",CONTROLLER://127.0.0.1:{node.controller_port}" if controller else ""),
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.broker_port}",
                "log.dirs": str(node.data),
            })
            (node.folder / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        self._format(cluster_id)
        for node in self.nodes.values():
            self.launch(node.id)
        self.wait_until_ready(began)
        self.start_seconds = time.monotonic() - began

    def _java(self, node: Node, main: str, *args: str) -> list[str]:
        return ["java", *JVM_OPTIONS, f"-Dkafka.logs.dir={node.folder}",
                f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
                "-cp", os.pathsep.join(self.jars), main, *args]

    def _format(self, cluster_id: str) -> None:
        """`kafka-storage format` of every node at once, with Kafka's StorageTool from the same jars."""
        formatting = []
        for node in self.nodes.values():
            cmd = self._java(node, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c",
                             str(node.folder / "server.properties"))
            with open(node.folder / "format.log", "wb") as log:
                process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True, preexec_fn=_die_with_parent)
            self.started.append(process)
            formatting.append((node, process))
        for node, process in formatting:
            if process.wait() != 0:
                raise BadInput(f"formatting node {node.id}'s storage failed (exit {process.returncode}): "
                               f"see {node.folder / 'format.log'}")

    def launch(self, node_id: int) -> None:
        """Start (or restart) one node's JVM; its console output is appended to node-<id>/console.log."""
        node = self.nodes[node_id]
        if node.running():
            raise RuntimeError(f"node {node_id} is already running")
        cmd = self._java(node, "kafka.Kafka", str(node.folder / "server.properties"))
        with open(node.folder / "console.log", "ab") as log:
            # a new session: a Ctrl-C at the terminal reaches the harness, which stops the nodes itself
            node.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True, preexec_fn=_die_with_parent)
        self.started.append(node.process)

    def wait_until_ready(self, began: float) -> None:
        from harness.cluster.admin import Admin  # the in-process JVM starts only once the nodes are launched
        deadline = began + self.start_timeout
        while True:
            dead = [n for n in self.nodes.values() if not n.running()]
            if dead:
                raise BadInput(f"Kafka node {dead[0].id} exited while starting (exit {dead[0].process.returncode}): "
                               f"see {dead[0].folder / 'server.log'}")
            if time.monotonic() > deadline:
                raise BadInput(f"the KRaft cluster did not start within {self.start_timeout:g} s: "
                               f"see the nodes' server.log under {self.workdir}")
            if self.admin is None:
                self.admin = Admin(self.version, self.bootstrap)
            if self.admin.unfenced_brokers() == set(NODES):
                return
            time.sleep(0.5)

    def stop(self) -> None:
        """Kill every JVM this cluster started and wait for each to be gone (the logs and data stay).
        A kill, not a controlled shutdown: the metadata log is complete (KRaft flushes before it commits),
        and three nodes stopping together would wait on each other's quorum."""
        self.stop_processes()
        admin = self.admin
        if admin is not None:
            self.admin = None
            admin.close()
        for process in self.started:
            process.wait()

    def stop_processes(self) -> None:
        """SIGKILL every JVM this cluster started (safe from another thread: the interrupt watcher)."""
        for process in list(self.started):
            if process.poll() is None:
                process.kill()

    # ------------------------------------------------------------------ faults

    def kill(self, node_id: int) -> None:
        """kill -9: the node stops at once, without a controlled shutdown."""
        process = self.nodes[node_id].process
        process.kill()
        process.wait()

    def shut_down(self, node_id: int, timeout: float = 60.0) -> None:
        """A controlled shutdown (SIGTERM: Kafka leaves its leaderships and ISRs first, then stops)."""
        process = self.nodes[node_id].process
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise BadInput(f"node {node_id} did not finish its controlled shutdown within {timeout:.0f} s") from None
