"""Exhaustive exploration with PySpark: fingerprint-owned shards, one exchange per BFS level.

Design (measurements in docs/ARCHITECTURE.md):

* Shard p owns the states whose mixed fingerprint is p modulo P (`owner`, one explicit function).
* Strictly level-synchronous: level k of shard p is processed by one task, `process_shard`,
  which deduplicates its incoming candidates (np.unique, then against its sorted visited array),
  records parents of the new states, checks invariants on them, expands them, and emits one block
  of children per destination shard. One `partitionBy` per level moves the blocks; each
  destination writes its next frontier as parquet. Counterexamples are therefore shortest.
* Every file a task writes depends only on the previous level's files, so a retried or re-run
  task writes the same bytes: a run killed at any moment resumes (`--resume`) from the last
  completed level and ends with exactly the results of an uninterrupted run.
* Levels with small frontiers run in the driver (the same `process_shard`), while the
  SparkSession starts in a background thread; shallow bugs are found before Spark is up.
* Determinism: among duplicate candidates the smallest (parent, action) wins; among violations
  of a property at its first level, the smallest fingerprint. Neither depends on P.

The checkpoint directory, its layout and its integrity checks are `harness.checkpoint`'s. Executors
must see it (local mode: always; a cluster: a shared path).
"""

from __future__ import annotations

import hashlib
import json
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
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq

from harness import checkpoint as ck
from harness import interrupt
from harness.errors import BadInput
from harness.model import Model, config_digest, config_to_dict, mix64, preset_of
from harness.speed import cycle_collector_paused
from harness.result import CheckResult
from harness.trace import Outcome

SMALL_LEVEL = 20_000  # frontiers below this many candidates are expanded in the driver
INIT_ACTION = -1

# `tie`: under a spec's view, `Model.tie` (of the states with one view the smallest is kept, as in BFS); else 0
_FRONTIER_SCHEMA = pa.schema([("fp", pa.int64()), ("parent", pa.int64()), ("action", pa.int32()), ("tie", pa.int64()),
                              ("state", pa.binary())])
_PARENT_SCHEMA = pa.schema([("fp", pa.int64()), ("parent", pa.int64()), ("action", pa.int32())])
_VISITED_SCHEMA = pa.schema([("fp", pa.int64())])


def owner(fp: int, shards: int) -> int:
    return mix64(fp) % shards


# --------------------------------------------------------------------------- the shard worker

_MODELS: dict[str, Model] = {}


def _model(job: dict) -> Model:
    """Rebuild the model in this process (executors get the job as plain JSON-like data, not a serialised model)."""
    key = json.dumps([job["spec"], job["config"], job["preset"]], sort_keys=True)
    m = _MODELS.get(key)
    if m is None:
        from harness.registry import load_spec

        spec = load_spec(job["spec"])
        m = spec.bind(spec.config_from_dict(job["config"], preset=job["preset"]))
        m.check_deadlock = job["check_deadlock"]
        _MODELS[key] = m
    return m


@cycle_collector_paused()
def process_shard(job: dict, level: int, shard: int) -> list[tuple[int, tuple]]:
    """Dedupe, record, check and expand shard `shard`'s candidates of `level`; return child blocks."""
    model = _model(job)
    shards = job["shards"]
    table = ck.read_table(job["dir"], job["id"], "frontier", level, shard)
    fps = table.column("fp").to_numpy() if table.num_rows else np.empty(0, np.int64)
    parents = table.column("parent").to_numpy() if table.num_rows else np.empty(0, np.int64)
    actions = table.column("action").to_numpy() if table.num_rows else np.empty(0, np.int32)
    ties = table.column("tie").to_numpy() if table.num_rows else np.empty(0, np.int64)
    blobs = table.column("state").to_pylist() if table.num_rows else []
    # deterministic dedupe: per fingerprint keep the smallest (tie, parent, action); tie is 0 without a view
    order = np.lexsort((actions, parents, ties, fps))
    fps, parents, actions = fps[order], parents[order], actions[order]
    first = np.ones(len(fps), bool)
    first[1:] = fps[1:] != fps[:-1]
    visited = (ck.read_table(job["dir"], job["id"], "visited", level - 1, shard).column("fp").to_numpy()
               if level > 0 else np.empty(0, np.int64))
    pos = np.searchsorted(visited, fps)
    seen = (pos < len(visited)) & (visited[np.minimum(pos, max(len(visited) - 1, 0))] == fps) if len(visited) else np.zeros(len(fps), bool)
    new = first & ~seen
    new_idx = order[new]
    new_fps, new_parents, new_actions = fps[new], parents[new], actions[new]
    ck.write_table(job["dir"], job["id"], "visited", level, shard,
                   pa.table({"fp": np.union1d(visited, new_fps).astype(np.int64)}, schema=_VISITED_SCHEMA))
    ck.write_table(job["dir"], job["id"], "parents", level, shard,
                   pa.table({"fp": new_fps, "parent": new_parents, "action": new_actions}, schema=_PARENT_SCHEMA))
    n_actions = len(model.actions)
    gen_by_action = [0] * n_actions
    new_by_action = [0] * n_actions
    violations: dict[str, int] = {}
    children: dict[int, list] = {}  # fp -> [tie, parent, action, encoding]: duplicates collapse here
    cfg = model.config
    invariants = list(model.spec.invariants.items())
    generated = 0
    fingerprint = model.fingerprint  # of the spec's view, if it has one
    viewed = model.view is not None
    tie_of = model.tie
    for i, fp, a in zip(new_idx.tolist(), new_fps.tolist(), new_actions.tolist()):
        state = model.decode_trusted(blobs[i])
        if a >= 0:
            new_by_action[a] += 1
        for name, inv in invariants:
            if not inv(cfg, state) and (name not in violations or fp < violations[name]):
                violations[name] = fp
        successors = model.successors(state)
        if not successors and model.check_deadlock and not model.quiescent(state):
            if "Deadlock" not in violations or fp < violations["Deadlock"]:
                violations["Deadlock"] = fp
        generated += len(successors)
        for index, t in successors:
            gen_by_action[index] += 1
            tf = fingerprint(t)
            tie = tie_of(t) if viewed else 0
            known = children.get(tf)
            if known is None:
                children[tf] = [tie, fp, index, model.encode(t)]
            elif (tie, fp, index) < (known[0], known[1], known[2]):
                if tie != known[0]:
                    known[3] = model.encode(t)
                known[0], known[1], known[2] = tie, fp, index  # the smallest (tie, parent, action), as the owner keeps
    out: dict[int, tuple[list, list, list, list, list]] = {}
    for tf, (tie, parent, index, blob) in children.items():
        block = out.get(o := owner(tf, shards))
        if block is None:
            block = out[o] = ([], [], [], [], [])
        block[0].append(tf)
        block[1].append(parent)
        block[2].append(index)
        block[3].append(tie)
        block[4].append(blob)
    stats = {"new": int(len(new_fps)), "generated": generated, "gen_by_action": gen_by_action,
             "new_by_action": new_by_action, "violations": violations,
             "children": sum(len(b[0]) for b in out.values())}
    ck.write_json(job["dir"], job["id"], "stats", level, shard, stats)
    return sorted(out.items())


def write_frontier(job: dict, level: int, shard: int, blocks) -> int:
    """Concatenate the blocks sent to `shard` into its frontier file for `level`."""
    cols: tuple[list, list, list, list, list] = ([], [], [], [], [])
    for block in blocks:
        for c, values in zip(cols, block):
            c.extend(values)
    table = pa.table({"fp": pa.array(cols[0], pa.int64()), "parent": pa.array(cols[1], pa.int64()),
                      "action": pa.array(cols[2], pa.int32()), "tie": pa.array(cols[3], pa.int64()),
                      "state": pa.array(cols[4], pa.binary())},
                     schema=_FRONTIER_SCHEMA)
    ck.write_table(job["dir"], job["id"], "frontier", level, shard, table)
    return table.num_rows


# ------------------------------------------------------------------------------- the session


_LOCAL_MASTER = re.compile(r"local(\[(\*|[1-9]\d{0,3})(,[1-9]\d{0,3})?\])?|local-cluster\[\d{1,3},\d{1,3},\d{1,7}\]")


def default_shards(master: str | None) -> int:
    """Shards when --partitions is not given: the master's own parallelism where its URL says it
    (local[N], local-cluster[W,C,M]: W x C), else this machine's cores."""
    m = re.fullmatch(r"local\[(\d+)(?:,\d+)?\]", master or "")
    if m:
        return int(m.group(1))
    m = re.fullmatch(r"local-cluster\[(\d+),(\d+),\d+\]", master or "")
    if m:
        return int(m.group(1)) * int(m.group(2))
    return 1 if master == "local" else (os.cpu_count() or 2)


def check_checkpoint_path(checkpoint: str | None) -> None:
    """A checkpoint is a POSIX folder that the driver and every executor see (a local path, or a shared
    mount): a URI of another filesystem (s3a://, hdfs://, gs://) would silently become a local folder of
    that name, which executors elsewhere never see. Refused in one line."""
    if checkpoint and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", checkpoint) and not checkpoint.startswith("file://"):
        scheme = checkpoint.split("://", 1)[0]
        raise BadInput(f"--checkpoint {checkpoint}: a {scheme}:// URI is not supported; give a POSIX path that the "
                       "driver and every executor can read and write (a shared mount on a cluster)")


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


def start_session(master: str | None, log_file: Path):
    """A SparkContext whose JVM writes its own output (log4j, executor stack traces) to `log_file`,
    so that the terminal gets the harness's one-line messages only."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    root = logging.getLogger()
    if not root.handlers:  # Py4J logs through the root logger (a Ctrl-C in a call, with its traceback)
        root.addHandler(logging.FileHandler(log_file))
    conf = SparkConf().setAppName("kafka-reassignment-harness")
    if master:  # under spark-submit the master comes from spark-submit
        conf.setMaster(master)
    conf.set("spark.ui.showConsoleProgress", "false").set("spark.python.worker.reuse", "true")
    active = SparkContext._active_spark_context  # one per process: a later search reuses it
    if active is not None:
        return active
    gateway = None
    if "PYSPARK_GATEWAY_PORT" not in os.environ and SparkContext._gateway is None:  # else the JVM is running
        with open(log_file, "ab") as log:  # the child keeps its own copy of the descriptor
            gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
    sc = SparkContext(conf=conf, gateway=gateway)
    sc.setLogLevel("ERROR")
    if not sc.master.startswith("local"):
        _ship_code(sc)
    return sc


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
    root = Path(__file__).resolve().parents[2]
    return [(f, f.relative_to(root)) for pkg in ("harness", "specs", "invariants") for f in sorted((root / pkg).rglob("*.py"))]


def _ship_code(sc) -> None:
    """On a cluster, executors import harness/specs/invariants from a zip the driver adds."""
    tmp = Path(tempfile.mkdtemp()) / "harness-code.zip"
    with zipfile.ZipFile(tmp, "w") as z:
        for f, rel in _code_files():
            z.write(f, rel)
    sc.addPyFile(str(tmp))


# ---------------------------------------------------------------------------------- executors

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


def probe_executors(sc, checkpoint: Path) -> None:
    """One small task per executor slot: each reports its host, its Python, the modules it cannot import
    and whether it can write the checkpoint directory. BadInput (exit 2) naming what is missing where."""
    if sc.master.startswith("local"):
        return
    directory, modules = str(checkpoint), NEEDED_MODULES

    def report(_):  # defined here so that it is shipped by value: it must run where the harness is missing
        import importlib.util
        import os as os_
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
        writable = os_.path.isdir(directory) and os_.access(directory, os_.W_OK | os_.X_OK)
        return [(socket.gethostname(), sys_.executable, tuple(missing), writable)]

    slots = max(sc.defaultParallelism, 1)
    try:
        reports = set(sc.parallelize(range(slots), slots).mapPartitions(report).collect())
    except Exception as exc:  # noqa: BLE001 - the executor's own error, in one line
        lines = [ln.strip() for ln in str(exc).splitlines() if "Error" in ln and ":" in ln]
        raise BadInput(f"the Spark executors cannot run the probe task: {(lines or [type(exc).__name__])[-1][:200]}") from None
    for host, python, missing, writable in sorted(reports):
        if missing:
            raise BadInput(f"executor on {host} ({python}) cannot import {', '.join(missing)}: give executors the "
                           f"harness's environment (README, 'On a cluster': spark.archives with a packed venv)")
        if not writable:
            raise BadInput(f"executor on {host} cannot write the checkpoint directory {directory}: it must be a path "
                           f"every executor and the driver share (--checkpoint)")


# ---------------------------------------------------------------------------------- the driver


def code_digest() -> str:
    """A digest of the harness, spec and invariant sources: a checkpoint written by other code
    would resume into another model's states, so it is part of the job's identity."""
    h = hashlib.sha256()
    for f, rel in _code_files():
        h.update(str(rel).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def explore(model: Model, *, master: str | None = "local[*]", partitions: int | None = None,
            checkpoint: str | None = None, resume: bool = False, max_depth: int | None = None,
            time_limit: float | None = None, keep_going: bool = False, check_deadlock: bool = True,
            progress=None, spark_levels_only: bool = False, session_factory=None,
            executor_wait: float = EXECUTOR_WAIT) -> CheckResult:
    """Exhaustive BFS in shards. `spark_levels_only` forces every level through Spark (tests);
    `session_factory(master, log_file)` replaces `start_session` (tests that must not start a JVM)."""
    if master:
        check_master(master)
    check_checkpoint_path(checkpoint)
    if checkpoint and checkpoint.startswith("file://"):
        checkpoint = checkpoint[len("file://"):]
    started = time.monotonic()
    cfg = model.config
    shards = partitions or default_shards(master)
    digest = config_digest(cfg)
    deadlock = check_deadlock and model.check_deadlock
    identity = {"spec": model.name, "digest": digest, "shards": shards, "check_deadlock": deadlock, "code": code_digest()}
    # The default directory names the whole job, so a changed model or shard count gets a new one.
    directory = Path(checkpoint or f"checkpoints/{model.name}-{preset_of(cfg) or 'custom'}-{ck.job_id(identity)}")
    store = ck.Checkpoint(directory, identity)
    store.check_writable()
    saved = store.open(resume)
    job = {"spec": model.name, "config": config_to_dict(cfg), "preset": preset_of(cfg), "shards": shards,
           "dir": str(directory.resolve()), "id": store.job, "check_deadlock": deadlock}
    if saved is None:
        init = model.init_states()
        blocks: dict[int, list] = {}
        for s in init:
            fp = model.fingerprint(s)
            tie = model.tie(s) if model.view is not None else 0
            blocks.setdefault(owner(fp, shards), []).append(([fp], [0], [INIT_ACTION], [tie], [model.encode(s)]))
        for p in range(shards):
            write_frontier(job, 0, p, blocks.get(p, []))
        level, totals = 0, {"distinct": 0, "generated": len(init), "states_per_depth": [],
                            "gen_by_action": [0] * len(model.actions), "new_by_action": [0] * len(model.actions),
                            "violations": {}, "spark_levels": 0, "driver_levels": 0}
        store.commit(0, totals, _level_files(job, "frontier", 0), keep=lambda rel: False)
    else:
        interrupt.note(f"the checkpoint of level {saved['level']} is kept: add --resume to continue")
        level, totals = saved["level"], saved["totals"]

    session: dict = {}
    log_file = directory / ck.LOG

    def boot():
        t = time.monotonic()
        try:
            session["spark"] = (session_factory or start_session)(master, log_file)
            session["start_seconds"] = time.monotonic() - t
            session["ui"] = getattr(session["spark"], "uiWebUrl", None)  # shown with the progress
        except Exception as exc:  # reported when Spark is first needed
            session["error"] = exc

    def cancel_jobs():
        if "spark" in session:
            session["spark"].cancelAllJobs()

    booter = threading.Thread(target=boot, daemon=True)
    booter.start()
    stopped_by = None
    resumed_at = level
    try:
        with interrupt.cancelling(cancel_jobs):
            while True:
                if totals["violations"] and not keep_going:
                    stopped_by = "violation"
                    break
                frontier = sum(pq.read_metadata(f).num_rows for f in _level_files(job, "frontier", level))
                if frontier == 0:
                    break
                if max_depth is not None and level > max_depth:
                    stopped_by = "max-depth"
                    break
                if time_limit is not None and time.monotonic() - started > time_limit:
                    stopped_by = "time-limit"
                    break
                if frontier < SMALL_LEVEL and not spark_levels_only:
                    by_owner: dict[int, list] = {}
                    for p in range(shards):
                        for o, block in process_shard(job, level, p):
                            by_owner.setdefault(o, []).append(block)
                    for p in range(shards):
                        write_frontier(job, level + 1, p, by_owner.get(p, []))
                    totals["driver_levels"] += 1
                else:
                    t_wait = time.monotonic()
                    booter.join()
                    session["waited"] = session.get("waited", 0.0) + time.monotonic() - t_wait
                    if "error" in session:
                        first = (str(session["error"]).strip().splitlines() or [type(session["error"]).__name__])[0]
                        raise BadInput(f"cannot start Spark ({master or 'from spark-submit'}): {first[:160]} "
                                       f"(Spark's output: {log_file})")
                    if "probed" not in session:
                        deadline = None if time_limit is None else started + time_limit
                        if not wait_for_executors(session["spark"], executor_wait, deadline):
                            stopped_by = "time-limit"
                            break
                        probe_executors(session["spark"], directory)
                        session["probed"] = True
                    t_level = time.monotonic()
                    _spark_level(session["spark"], job, level, shards, log_file)
                    totals["spark_levels"] += 1
                    session["level_seconds"] = session.get("level_seconds", 0.0) + time.monotonic() - t_level
                _merge_stats(job, level, shards, totals)
                level += 1
                store.commit(level, totals, _level_files(job, "frontier", level) + _level_files(job, "visited", level - 1)
                             + _level_files(job, "parents", level - 1), keep=lambda rel: rel.startswith("parents/"))
                interrupt.note(f"the checkpoint of level {level} is kept: add --resume to continue")
                _drop_consumed(job, level - 1)
                if progress:
                    progress({"distinct": totals["distinct"], "generated": totals["generated"], "depth": level,
                              "queue": frontier, "elapsed": time.monotonic() - started, "spark_ui": session.get("ui")})
    except interrupt.Interrupted:
        if "spark" in session:
            stop_session(session["spark"])
        raise
    elapsed = time.monotonic() - started
    result = CheckResult("spark", complete=stopped_by is None, stopped_by=stopped_by)
    for prop, (depth, fp) in sorted(totals["violations"].items(), key=lambda kv: (kv[1][0], kv[0])):
        result.violations.append(_reconstruct(model, job, depth, fp, prop))
    result.stats = {"distinct": totals["distinct"], "generated": totals["generated"],
                    "depth": len(totals["states_per_depth"]) - 1, "states_per_depth": totals["states_per_depth"],
                    "seconds": round(elapsed, 3), "shards": shards, "spark_levels": totals["spark_levels"],
                    "driver_levels": totals["driver_levels"], "resumed_at_level": resumed_at if resume else None,
                    "checkpoint": str(directory), "master": master,
                    "session_start_seconds": round(session.get("start_seconds", 0.0), 2),
                    "waited_for_session_seconds": round(session.get("waited", 0.0), 2),
                    "seconds_without_session_wait": round(elapsed - session.get("waited", 0.0), 3),
                    "spark_level_seconds": round(session.get("level_seconds", 0.0), 2),
                    "states_per_second": round(totals["distinct"] / elapsed) if elapsed else None}
    result.record_coverage(model.rule_names, model.action_rule, totals["gen_by_action"], totals["new_by_action"])
    return result


def _level_files(job: dict, kind: str, level: int) -> list[Path]:
    return [ck.path(job["dir"], kind, level, p) for p in range(job["shards"])]


def _spark_level(sc, job: dict, level: int, shards: int, log_file: Path) -> None:
    """One level on the cluster: expand every shard, exchange one block per destination, write frontiers."""
    before = interrupt.received()
    try:
        children = sc.parallelize(range(shards), shards).flatMap(lambda p: process_shard(job, level, p))
        children.partitionBy(shards, lambda o: o).mapPartitionsWithIndex(
            lambda p, it: [write_frontier(job, level + 1, p, (block for _, block in it))]).collect()
    except Exception as exc:  # a task failed (corrupt checkpoint files, lost executors), or Py4J after a signal
        if interrupt.received() != before:
            interrupt.reraise()
        text = str(exc)
        cause = re.search(r"harness\.errors\.BadInput: (.*)", text)  # our own refusal, raised in a task
        first = cause.group(1) if cause else next(
            (line for line in text.splitlines() if "Error" in line or "error" in line), text[:200])
        raise BadInput(f"Spark level {level} failed: {first.strip()[:300]} (Spark's output: {log_file})") from None
    # shards that received nothing still need an (empty) frontier file
    for p in range(shards):
        if not ck.path(job["dir"], "frontier", level + 1, p).exists():
            write_frontier(job, level + 1, p, [])


def _merge_stats(job: dict, level: int, shards: int, totals: dict) -> None:
    new = 0
    for p in range(shards):
        st = ck.read_json(job["dir"], job["id"], "stats", level, p)
        new += st["new"]
        totals["generated"] += st["generated"]
        for i, n in enumerate(st["gen_by_action"]):
            totals["gen_by_action"][i] += n
        for i, n in enumerate(st["new_by_action"]):
            totals["new_by_action"][i] += n
        for prop, fp in st["violations"].items():
            old = totals["violations"].get(prop)
            if old is None or (old[0] == level and fp < old[1]):
                totals["violations"][prop] = [level, fp]
    totals["distinct"] += new
    if new:
        totals["states_per_depth"].append(new)


def _drop_consumed(job: dict, level: int) -> None:
    """After level `level` is committed, its frontier and stats and the visited sets before it are not needed."""
    for kind, k in (("frontier", level), ("stats", level), ("visited", level - 1)):
        old = ck.path(job["dir"], kind, k)
        if k >= 0 and old.exists():
            shutil.rmtree(old)


def _reconstruct(model: Model, job: dict, depth: int, fp: int, prop: str):
    from harness.engines.bfs import reconstruct

    chain = [fp]
    for level in range(depth, 0, -1):
        parent = None
        for p in range(job["shards"]):
            table = ck.read_table(job["dir"], job["id"], "parents", level, p)
            hit = table.filter(pa.compute.equal(table.column("fp"), chain[-1]))
            if hit.num_rows:
                parent = hit.column("parent")[0].as_py()
                break
        if parent is None:
            raise BadInput(f"corrupt checkpoint: no parent record for a state of level {level}")
        chain.append(parent)
    v = reconstruct(model, chain[::-1], model.fingerprint)
    v.outcome = Outcome("deadlock" if prop == "Deadlock" else "invariant", prop)
    return v
