"""The Spark session of a search: checking the master URL (`check_master`), starting the SparkContext
(`start_session`: its JVM's options, log and network settings, the class archive mapped) and stopping it,
shipping the harness's code to a cluster, and the executors: waiting for the first, probing what they can
import and reach (`probe_executors`), counting the task slots (`_slots`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlparse

from harness import checkpoint as ck
from harness.errors import BadInput


_LOCAL_MASTER = re.compile(r"local(\[(\*|[1-9]\d{0,3})(,[1-9]\d{0,3})?\])?|local-cluster\[\d{1,3},\d{1,3},\d{1,7}\]")


def check_master(master: str) -> None:
    """Fail fast (exit 2) on a missing Java, a malformed master URL or an unreachable standalone master."""
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        raise BadInput("Spark needs Java: no `java` on PATH and JAVA_HOME is not set")
    if master.startswith("spark://"):
        for hostport in master[len("spark://"):].split(","):
            try:
                url = urlparse(f"spark://{hostport}")
                host, port = url.hostname, url.port or 7077
            except ValueError as exc:  # port out of range, malformed IPv6 literal
                raise BadInput(f"malformed Spark master URL {master!r}: {exc}") from None
            if not host:
                raise BadInput(f"malformed Spark master URL {master!r}: no host")
            try:
                socket.create_connection((host, port), timeout=5).close()
            except (OSError, UnicodeError) as exc:
                raise BadInput(f"Spark master {master} is unreachable: {getattr(exc, 'strerror', None) or exc}") from None
    elif not (_LOCAL_MASTER.fullmatch(master) or master in ("yarn",) or master.startswith(("k8s://", "mesos://"))):
        raise BadInput(f"unknown Spark master URL {master!r} (local, local[N], local[*], spark://host:port, yarn, k8s://...)")


_SESSION_LOCK = threading.Lock()


def start_session(master: str | None, log: Path | BinaryIO, dump_classes: Path | None = None):
    """A SparkContext whose JVM writes its own output (log4j, executor stack traces) to `log`, a path or a
    file already open, so that the terminal gets the harness's one-line messages only. A start in the
    background is given the file open: opened by its path later, it could recreate a folder its caller
    has removed since. The driver's JVM maps the class archive when there is one; `dump_classes` makes it
    write one when it exits (`make_class_archive`)."""
    if isinstance(log, (str, os.PathLike)):
        with open(log, "ab") as opened:
            return start_session(master, opened, dump_classes)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    root = logging.getLogger()
    if not root.handlers:  # Py4J logs through the root logger (a Ctrl-C in a call, with its traceback)
        root.addHandler(logging.StreamHandler(open(os.dup(log.fileno()), "a", errors="backslashreplace")))
    conf = SparkConf().setAppName("kafka-reassignment-harness")
    if master:  # under spark-submit the master comes from spark-submit
        conf.setMaster(master)
    conf.set("spark.ui.showConsoleProgress", "false").set("spark.python.worker.reuse", "true")
    # A barrier job needs all its slots at once: if the cluster shrank, fail fast and let the driver retry smaller.
    conf.set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "2s")
    conf.set("spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "5")
    # The driver re-runs a failed job itself, from the last commit and with the slots left (`_spark_jobs`);
    # Spark's own retry of the stage would re-run it from where it began.
    conf.set("spark.stage.maxConsecutiveAttempts", "1")
    # Executors' JVMs only start Python workers and pass small messages: C1 and the serial collector halve
    # the CPU their start takes, which the driver's levels share on a small cluster. Executors on this
    # machine map the driver's class archive too (a JVM given a missing archive would lose the JDK's own).
    from harness.engines.spark.archive import class_archive  # here: building it starts a session

    archive = class_archive()
    executor_options = JVM_OPTIONS
    if master and _on_this_machine(master) and archive.is_file():
        executor_options += f" -XX:SharedArchiveFile={archive}"
    conf.setIfMissing("spark.executor.extraJavaOptions", executor_options)
    # One per process, which a later search reuses; the lock keeps a search from taking the context another
    # search's background start has registered but not yet built.
    with _SESSION_LOCK:
        active = SparkContext._active_spark_context
        if active is not None:
            return active
        gateway = SparkContext._gateway
        if "PYSPARK_GATEWAY_PORT" not in os.environ and gateway is None:  # else the JVM is running
            # The driver's JVM schedules one job and follows it: the C1 compiler alone and the serial collector
            # halve the CPU its start takes (5.9 -> 2.9 s on 2 cores, docs/PERFORMANCE.md), which the driver's
            # own levels share meanwhile. Executors on a cluster keep their defaults.
            options = JVM_OPTIONS
            if dump_classes is not None:
                options += f" -XX:ArchiveClassesAtExit={dump_classes}"
            elif archive.is_file():
                options += f" -XX:SharedArchiveFile={archive}"
            conf.set("spark.driver.extraJavaOptions", options)
            # The web UI binds to the JVM's SPARK_LOCAL_IP, else to every address (no setting moves it).
            local_ip = {"SPARK_LOCAL_IP": "127.0.0.1"} if master and _executors_on_loopback(master) else {}
            with _environment(local_ip):  # the child keeps its own copy of the descriptor
                gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
        if gateway is None:  # under spark-submit: a client of its JVM
            gateway = launch_gateway()
        # The JVM's own conf: spark-defaults.conf and --conf (of spark-submit or PYSPARK_SUBMIT_ARGS), which win.
        given = dict(SparkConf(_jvm=gateway.jvm).getAll())
        for key, value in network_settings(master or given.get("spark.master", ""), given,
                                           gateway.jvm.System.getenv("SPARK_LOCAL_IP")).items():
            conf.set(key, value)
        sc = SparkContext(conf=conf, gateway=gateway)
        sc.setLogLevel("ERROR")
        if not sc.master.startswith("local"):
            _ship_code(sc)
        return sc


def network_settings(master: str, given: dict[str, str], jvm_local_ip: str | None) -> dict[str, str]:
    """The network settings the harness chooses where the job's conf (`given`) has none: the UI's kill
    links off; and where every executor runs on this machine, the driver's endpoints (RPC, block manager)
    on 127.0.0.1, and the UI off if the JVM has no SPARK_LOCAL_IP to bind it to (a JVM the harness did
    not start, under spark-submit). Elsewhere remote executors must reach the driver: where it binds,
    and authentication and encryption, are the user's (README)."""
    chosen = {"spark.ui.killEnabled": "false"}
    if _executors_on_loopback(master):
        if "spark.driver.bindAddress" not in given and "spark.driver.host" not in given:  # one choice, the user's
            chosen |= {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
        if not jvm_local_ip:
            chosen["spark.ui.enabled"] = "false"
    return {key: value for key, value in chosen.items() if key not in given}


def _executors_on_loopback(master: str) -> bool:
    """Whether every executor reaches the driver over loopback: a local master, or a standalone master on
    a loopback address (only this machine's workers can register with it)."""
    if master.startswith("spark://"):
        return all(_is_loopback(urlparse(f"spark://{hostport}").hostname) for hostport in master[len("spark://"):].split(","))
    return bool(_LOCAL_MASTER.fullmatch(master))


def _is_loopback(host: str | None) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    """`values` in os.environ, for the JVM that pyspark launches (it copies os.environ), unless the user set
    them; then as before."""
    added = {key: value for key, value in values.items() if key not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def _on_this_machine(master: str) -> bool:
    """Whether a standalone master's executors run here (a cluster on the loopback address or this host)."""
    host = urlparse(master).hostname if master.startswith("spark://") else None
    return host in ("127.0.0.1", "localhost", "::1", socket.gethostname())


def stop_session(sc, seconds: float = 1.0) -> None:
    """Stop Spark within `seconds`: a graceful stop if it is quick, else the JVM is killed."""
    try:
        sc.cancelAllJobs()
    except Exception:
        pass
    stopper = threading.Thread(target=sc.stop, daemon=True)
    stopper.start()
    stopper.join(seconds)
    proc = getattr(getattr(sc, "_gateway", None), "proc", None)
    if stopper.is_alive() and proc is not None:
        proc.kill()


def _code_files() -> list[tuple[Path, Path]]:
    """(file, path relative to the repository) of every harness, spec and invariant source, sorted."""
    root = Path(__file__).resolve().parents[3]
    return [(f, f.relative_to(root)) for pkg in ("harness", "specs", "invariants") for f in sorted((root / pkg).rglob("*.py"))]


def _ship_code(sc) -> None:
    """On a cluster, executors import harness/specs/invariants from a zip the driver adds."""
    tmp = Path(tempfile.mkdtemp()) / "harness-code.zip"
    with zipfile.ZipFile(tmp, "w") as z:
        for f, rel in _code_files():
            z.write(f, rel)
    sc.addPyFile(str(tmp))


# ---------------------------------------------------------------------------------- executors

JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:CICompilerCount=1"
EXECUTOR_WAIT = 120.0  # seconds a cluster may take to give the job its first executor (--executor-wait)
NEEDED_MODULES = ("harness", "specs", "invariants", "numpy", "pyarrow", "msgpack")


def wait_for_executors(sc, wait: float, deadline: float | None) -> bool:
    """On a cluster, wait until an executor has registered. False if the time limit came first; BadInput
    (exit 2) if `wait` seconds passed without one. Local masters run their executor in the driver."""
    if sc.master.startswith("local"):
        return True
    started = time.monotonic()
    while sc._jsc.sc().getExecutorMemoryStatus().size() <= 1:  # the driver's own block manager counts one
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return False
        if now - started >= wait:
            raise BadInput(f"no Spark executor registered with {sc.master} within {wait:g} s (--executor-wait): "
                           f"are workers up, with free cores and the memory the job asks for?")
        time.sleep(0.25)
    return True


def probe_executors(sc, checkpoint: str, job: dict | None = None) -> None:
    """One small task per executor slot: each reports its host, its Python, the modules it cannot import
    and whether it can write the checkpoint directory. BadInput (exit 2) naming what is missing where. With
    `job`, a worker that has everything also builds the job's model (the warm-up, in the same task)."""
    if sc.master.startswith("local"):
        return
    location, modules, marker = checkpoint, NEEDED_MODULES, ck.MARKER  # plain values, shipped with `report`

    def report(_):  # defined here so that it is shipped by value: it must run where the harness is missing
        import importlib.util
        import socket
        import sys as sys_
        missing = []
        for name in modules:
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(name)
        writable = seen = None  # without the harness, there is nothing to look with
        if not missing:
            from harness.store import Store
            try:
                store = Store(location)
                seen = store.exists(marker)  # the marker the driver wrote: the same folder
                writable = store.writable()
            except Exception:  # noqa: BLE001 - a filesystem this executor cannot open is one it cannot write
                seen = writable = False
        if not missing and seen and writable and job is not None:  # warm this Python worker: the model built once
            from harness.engines.spark.worker import _model
            _model(job)
        return [(socket.gethostname(), sys_.executable, tuple(missing), bool(seen), bool(writable))]

    slots = max(sc.defaultParallelism, 1)
    try:
        reports = set(sc.parallelize(range(slots), slots).mapPartitions(report).collect())
    except Exception as exc:  # noqa: BLE001 - the executor's own error, in one line
        lines = [ln.strip() for ln in str(exc).splitlines() if "Error" in ln and ":" in ln]
        raise BadInput(f"the Spark executors cannot run the probe task: {(lines or [type(exc).__name__])[-1][:200]}") from None
    for host, python, missing, seen, writable in sorted(reports):
        if missing:
            raise BadInput(f"executor on {host} ({python}) cannot import {', '.join(missing)}: give executors the "
                           f"harness's environment (README, 'On a cluster': spark.archives with a packed venv)")
        if not seen:
            raise BadInput(f"executor on {host} does not see the checkpoint directory {location}: it must be a "
                           f"folder every executor and the driver share (--checkpoint: a shared mount, s3://, hdfs://)")
        if not writable:
            raise BadInput(f"executor on {host} cannot write the checkpoint directory {location} (--checkpoint)")


def _slots(sc) -> int:
    """Tasks the cluster can run at once now: a barrier job of more would wait for slots that never come."""
    jsc = sc._jsc.sc()
    try:
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))
    except Exception:  # noqa: BLE001 - a Spark without this (private) method: count executors' default share
        return max(sc.defaultParallelism, 1) if jsc.getExecutorMemoryStatus().size() > 1 or sc.master.startswith("local") else 0

