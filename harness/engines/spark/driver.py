"""The driver of a Spark search (`explore`): the job's identity and checkpoint (`make_job`), the first
level, the levels it runs itself while the session starts in the background and while frontiers are
small, then the barrier jobs (`_spark_jobs`: run again after a failure, cancelled past the time limit),
the checks of a resumed checkpoint, and the counterexamples rebuilt from the parents' files.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import tempfile
import threading
import time
from pathlib import Path
from typing import NoReturn

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from harness import checkpoint as ck
from harness import interrupt
from harness.engines.spark.exchange import _PARENT_SCHEMA, _committed_files, _store, states_of, states_table
from harness.engines.spark.session import (EXECUTOR_WAIT, _code_files, _slots, check_master, probe_executors,
                                           start_session, stop_session, wait_for_executors)
from harness.engines.spark.worker import LevelWorker, _model, run_levels, spark_task, stop_reason
from harness.errors import BadInput
from harness.itf import shown
from harness.model import Model, config_digest, config_to_dict, preset_of
from harness.result import CheckResult
from harness.speed import cycle_collector_paused
from harness.store import Store
from harness.trace import Outcome

SMALL_LEVEL = 2_000  # frontiers below this many states are expanded in the driver (a Spark level costs ~20 ms)
CHECKPOINT_EVERY = 60.0  # seconds between commits (--checkpoint-every); a search's last level is always committed
INIT_ACTION = -1


def warm_up(sc, job: dict, slots: int) -> None:
    """Start the Python workers the job will use and build the model in each (a reused worker keeps it),
    while the driver still runs levels. On a cluster the probe has started them; this builds the model."""
    sc.parallelize(range(slots), slots).mapPartitions(lambda _: [_model(job).name]).collect()


def first_level(model: Model) -> tuple[list[tuple[int, tuple]], dict]:
    """The initial states (of those with one view, the smallest tie) and their violations."""
    kept: dict[int, tuple] = {}
    for s in model.init_states():
        fp = model.fingerprint(s)
        if fp not in kept or (model.view is not None and model.tie(s) < model.tie(kept[fp])):
            kept[fp] = s
    violations: dict[str, int] = {}
    for fp, s in kept.items():
        for name in model.violated(s):
            violations[name] = min(fp, violations.get(name, fp))
    return list(kept.items()), violations


def code_digest() -> str:
    """A digest of the harness, spec and invariant sources: a checkpoint written by other code
    would resume into another model's states, so it is part of the job's identity."""
    h = hashlib.sha256()
    for f, rel in _code_files():
        h.update(str(rel).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def make_job(model: Model, checkpoint: str | None, *, check_deadlock: bool = True, max_depth: int | None = None,
             keep_going: bool = False, checkpoint_every: float = CHECKPOINT_EVERY) -> tuple[dict, ck.Checkpoint]:
    """What every task is told (plain data), and the checkpoint directory of this job."""
    cfg = model.config
    deadlock = check_deadlock and model.check_deadlock
    identity = {"spec": model.name, "digest": config_digest(cfg), "check_deadlock": deadlock, "code": code_digest()}
    if model.symmetry:  # another set of states: a job of its own (without it, the identity is as before)
        identity["symmetry"] = [list(g) for g in model.symmetry]
    # The default directory names the whole job, so a changed model gets a new one.
    folder = Store(checkpoint if checkpoint is not None else f"checkpoints/{model.name}-{preset_of(cfg) or 'custom'}-{ck.job_id(identity)}")
    store = ck.Checkpoint(folder, identity)
    job = {"spec": model.name, "config": config_to_dict(cfg), "preset": preset_of(cfg), "dir": folder.location,
           "id": store.job, "identity": identity, "check_deadlock": deadlock, "max_depth": max_depth,
           "keep_going": keep_going, "attempt": secrets.token_hex(4), "checkpoint_every": checkpoint_every,
           "deadline": None}
    if model.symmetry:
        job["symmetry"] = True  # the tasks rebuild the model reduced
    return job, store


def explore(model: Model, *, master: str | None = "local[*]", partitions: int | None = None,
            checkpoint: str | None = None, resume: bool = False, max_depth: int | None = None,
            time_limit: float | None = None, keep_going: bool = False, check_deadlock: bool = True,
            progress=None, spark_levels_only: bool = False, session_factory=None,
            executor_wait: float = EXECUTOR_WAIT, checkpoint_every: float = CHECKPOINT_EVERY) -> CheckResult:
    """Exhaustive BFS by level workers. `partitions` is the number of Spark tasks (default and at most: the
    cluster's task slots); a level is committed when `checkpoint_every` seconds have passed since the last
    commit (0: every level); `spark_levels_only` sends every level to Spark (tests);
    `session_factory(master, log)` replaces `start_session` (tests that must not start a JVM)."""
    if master:
        check_master(master)
    started = time.monotonic()
    job, store = make_job(model, checkpoint, check_deadlock=check_deadlock, max_depth=max_depth, keep_going=keep_going,
                          checkpoint_every=checkpoint_every)
    store.check_writable()
    saved = store.open(resume, hold=True, check=lambda level, totals: _check_resumed(model, job, level, totals))
    # (a local DIR stays locked until the run ends)
    try:
        if saved is None:
            init, violations = first_level(model)
            tag = f"part-0-{job['attempt']}"
            ck.write_table(store.folder, store.job, "parents", 0, tag, pa.table(
                {"fp": pa.array([fp for fp, _ in init], pa.int64()), "parent": pa.array([0] * len(init), pa.int64()),
                 "action": pa.array([INIT_ACTION] * len(init), pa.int32())}, schema=_PARENT_SCHEMA))
            ck.write_table(store.folder, store.job, "frontier", 0, tag, states_table(model, init))
            level, totals = 0, {"distinct": len(init), "generated": len(init), "frontier": len(init),
                                "states_per_depth": [len(init)] if init else [], "gen_by_action": [0] * len(model.actions),
                                "new_by_action": [0] * len(model.actions),
                                "violations": {p: [0, fp] for p, fp in violations.items()},
                                "spark_levels": 0, "driver_levels": 0}
            store.commit(0, totals, _committed_files(job, -1, 0), keep=lambda rel: False)
        else:
            interrupt.note(f"the checkpoint of level {saved['level']} is kept: add --resume to continue")
            level, totals = saved["level"], saved["totals"]

        session: dict = {}
        # The JVM writes its log to a local file: in the checkpoint directory, or beside it when that is remote.
        log_file = (store.folder.local or Path(tempfile.mkdtemp(prefix="harness-spark-"))) / ck.LOG
        log = open(log_file, "ab")  # now, not by the session's start, which may outlive the search (its caller
        # may remove the folder at once: a file opened then would make it again); the start closes it

        deadline = None if time_limit is None else started + time_limit

        def boot():
            """In the background while the driver runs levels: the session, then (on a cluster) a first executor
            and the probe task, then the Python workers warmed with the model."""
            t = time.monotonic()
            try:
                with log:
                    sc = session["spark"] = (session_factory or start_session)(master, log)
                session["start_seconds"] = time.monotonic() - t
                session["ui"] = getattr(sc, "uiWebUrl", None)  # shown with the progress
                if not wait_for_executors(sc, executor_wait, deadline):
                    session["no_executor_by_time_limit"] = True
                    return
                t = time.monotonic()
                if sc.master.startswith("local"):
                    warm_up(sc, job, _slots(sc))
                else:
                    probe_executors(sc, job["dir"], job)  # which warms the workers it runs on
                session["warm_seconds"] = time.monotonic() - t
            except Exception as exc:  # reported when Spark is first needed
                session["error"] = exc

        def cancel_jobs():
            if "spark" in session:
                session["spark"].cancelAllJobs()

        def report(level: int, totals: dict) -> None:
            if progress:
                progress({"distinct": totals["distinct"], "generated": totals["generated"], "depth": level,
                          "queue": totals["frontier"], "elapsed": time.monotonic() - started, "spark_ui": session.get("ui")})

        booter = threading.Thread(target=boot, daemon=True)
        booter.start()
        stopped_by: str | None = None
        resumed_at = level
        tasks = partitions
        try:
            with interrupt.cancelling(cancel_jobs):
                # Levels run here while Spark starts, and while they are small; then one Spark job runs the rest.
                stopped_by = stop_reason(totals, level, max_depth, keep_going)
                if stopped_by is False and not spark_levels_only:
                    worker = LevelWorker(job, 0, 1)
                    worker.load(level)
                    last = [level]

                    def spark_takes_over() -> bool:  # Spark is up, and the frontier is big enough to send it
                        return len(worker.frontier) >= SMALL_LEVEL and not booter.is_alive()

                    def stop_flag() -> str | None:
                        if time_limit is not None and time.monotonic() - started > time_limit:
                            return "time-limit"
                        return "handoff" if spark_takes_over() else None

                    def commit(k: int) -> None:
                        store.commit(k, totals, _committed_files(job, last[0], k), keep=lambda rel: rel.startswith("parents/"))
                        last[0] = k
                        interrupt.note(f"the checkpoint of level {k} is kept: add --resume to continue")

                    def hand_over(done: float) -> bool:
                        """Spark came up in the first half of a level: redone there at twice the speed, the level
                        ends sooner than this process alone would end it."""
                        return done < 0.5 and spark_takes_over()

                    level, stopped_by = run_levels(worker, level, totals, commit=commit, stop_flag=stop_flag,
                                                   max_depth=max_depth, keep_going=keep_going, counter="driver_levels",
                                                   every=checkpoint_every, on_level=report, hand_over=hand_over)
                    worker.drop(level - 1)
                    del worker
                    if stopped_by == "handoff":
                        stopped_by = False
                if stopped_by is False:
                    t_wait = time.monotonic()
                    booter.join(None if deadline is None else max(deadline - t_wait, 0.0))
                    session["waited"] = time.monotonic() - t_wait
                    error = session.get("error")
                    if isinstance(error, BadInput):  # no executor in time, or executors that fail the probe
                        raise error
                    if error is not None:
                        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
                        raise BadInput(f"cannot start Spark ({master or 'from spark-submit'}): {first[:160]} "
                                       f"(Spark's output: {log_file})")
                    if booter.is_alive() or session.get("no_executor_by_time_limit"):
                        stopped_by = "time-limit"
                    else:
                        sc = session["spark"]
                        tasks = min(partitions or 1 << 30, max(_slots(sc), 1))
                        job["deadline"] = None if deadline is None else time.time() + (deadline - time.monotonic())
                        t_jobs = time.monotonic()
                        level, totals, stopped_by, tasks = _spark_jobs(sc, store, job, level, tasks, deadline, log_file,
                                                                       report, session)
                        session["level_seconds"] = time.monotonic() - t_jobs
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
                        "seconds": round(elapsed, 3), "tasks": tasks or 1, "spark_jobs": session.get("jobs", 0),
                        "spark_levels": totals["spark_levels"],
                        "driver_levels": totals["driver_levels"], "resumed_at_level": resumed_at if resume else None,
                        "checkpoint": job["dir"], "master": master, "spark_log": str(log_file),
                        "session_start_seconds": round(session.get("start_seconds", 0.0), 2),
                        "waited_for_session_seconds": round(session.get("waited", 0.0), 2),
                        "seconds_without_session_wait": round(elapsed - session.get("waited", 0.0), 3),
                        "spark_level_seconds": round(session.get("level_seconds", 0.0), 2),
                        "warm_up_seconds": round(session.get("warm_seconds", 0.0), 2),
                        "task_seconds": totals.get("task_seconds"), "task_expanded": totals.get("task_expanded"),
                        # per level run by Spark tasks: [level, bytes the tasks wrote for one another]
                        "exchanged_bytes_per_level": session.get("exchanged", []),
                        "states_per_second": round(totals["distinct"] / elapsed) if elapsed else None}
        result.record_coverage(model.rule_names, model.action_rule, totals["gen_by_action"], totals["new_by_action"])
        return result
    finally:
        store.release()


JOB_ATTEMPTS = 3  # Spark jobs in a row that may fail without committing a level before the run gives up
POLL_SECONDS = 0.25
LIMIT_GRACE = 5.0  # tasks stop at the first level boundary past the time limit; the driver cancels them after this
KILL_TIMEOUT = 2.5  # spark.python.task.killTimeout (2 s) and a margin


def _spark_jobs(sc, store: ck.Checkpoint, job: dict, level: int, tasks: int, deadline: float | None,
                log_file: Path, report, session: dict) -> tuple[int, dict, str | None, int]:
    """Run barrier jobs from the committed `level` to the end; returns the last level, the totals, why it
    stopped and the tasks of the last job. A job that fails (a lost executor) is run again from the last
    committed level, with as many tasks as the cluster then has slots; the driver follows the tasks'
    progress and cancels the job if it outlasts the time limit."""
    failures = 0
    interrupt.note(f"the checkpoint of level {level} is kept: add --resume to continue")
    while True:
        job = dict(job, tasks=tasks, attempt=secrets.token_hex(4))
        session["jobs"] = session.get("jobs", 0) + 1
        start = level
        outcome: dict = {}

        def run(job=job, start=start):
            try:
                rdd = sc.parallelize(range(tasks), tasks).barrier().mapPartitions(lambda _: spark_task(job, start))
                outcome["result"] = json.loads(rdd.collect()[0])
            except Exception as exc:  # noqa: BLE001 - classified below, in the driver's thread
                outcome["error"] = exc

        before = interrupt.received()
        runner = threading.Thread(target=run, daemon=True)
        runner.start()
        seen, kept = level, level
        while runner.is_alive():
            runner.join(POLL_SECONDS)
            reached, committed = _read_level(store.folder, ck.PROGRESS), _read_level(store.folder, ck.MANIFEST, "body")
            if committed is not None and committed[0] > kept:
                kept = committed[0]
                interrupt.note(f"the checkpoint of level {kept} is kept: add --resume to continue")
            if reached is not None and reached[0] > seen:
                seen = reached[0]
                report(*reached)
            if deadline is not None and time.monotonic() >= deadline + LIMIT_GRACE and runner.is_alive():
                sc.cancelAllJobs()
                runner.join()
                saved = store.open(resume=True)
                return saved["level"], saved["totals"], "time-limit", tasks
        if interrupt.received() != before:
            interrupt.reraise()
        if "result" in outcome:
            session.setdefault("exchanged", []).extend(outcome["result"].get("exchanged", []))
            saved = store.open(resume=True)  # verifies what the job committed, removes what it left mid-level
            return saved["level"], saved["totals"], outcome["result"]["stopped_by"], tasks
        _wait_for_killed_tasks(sc)
        saved = store.open(resume=True)
        text = str(outcome["error"])
        cause = re.search(r"harness\.errors\.\w+: (.*)", text)  # our own refusal, raised in a task
        if cause:
            raise BadInput(f"Spark level {saved['level']} failed: {cause.group(1).strip()[:300]} (Spark's output: {log_file})")
        failures = 0 if saved["level"] > level else failures + 1
        level = saved["level"]
        slots = _slots(sc)
        if failures >= JOB_ATTEMPTS or slots == 0:
            first = next((line for line in text.splitlines() if "rror" in line), text[:200])
            raise BadInput(f"Spark level {level} failed {failures} times: {first.strip()[:300]} (Spark's output: {log_file})")
        tasks = min(tasks, slots)
        interrupt.note(f"the checkpoint of level {level} is kept: add --resume to continue")


def _read_level(store: Store, file: str, inside: str | None = None) -> tuple[int, dict] | None:
    """The level and totals a task last wrote in progress.json or state.json (None if absent or mid-write)."""
    try:
        doc = json.loads(store.read_text(file))
        doc = doc[inside] if inside else doc
        return doc["level"], doc["totals"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _wait_for_killed_tasks(sc, seconds: float = 30.0) -> None:
    """After a failed job, Spark kills the attempt's other tasks; their Python workers may write a last file
    for up to spark.python.task.killTimeout (2 s). Wait for them before the checkpoint is cleaned up."""
    deadline = time.monotonic() + seconds
    while sc.statusTracker().getActiveStageIds() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(KILL_TIMEOUT)


@cycle_collector_paused()  # decoding the frontier (see LevelWorker.load)
def _check_resumed(model: Model, job: dict, level: int, totals: dict) -> None:
    """What a resume can recompute beyond the counts harness.checkpoint compares with the files: each recorded
    violation re-executes to a state that violates it, and the committed frontier's states (each checked for
    every invariant when it was found) hold their fingerprints and violate nothing the totals do not record."""
    folder = _store(job)
    manifest = folder.where(ck.MANIFEST)

    def refuse(what: str) -> NoReturn:
        raise ck.CheckpointRefused(f"corrupt checkpoint: {manifest} records {what}")

    if len(totals["gen_by_action"]) != len(model.actions):
        refuse(f"counts of {len(totals['gen_by_action'])} actions; the model has {len(model.actions)}")
    for prop, (depth, fp) in totals["violations"].items():
        if prop not in model.invariant_names and not (prop == "Deadlock" and job["check_deadlock"]):
            refuse(f"a violation of {shown(prop)}, which this search does not check")
        try:
            state = _reconstruct(model, job, depth, fp, prop).states[-1]
        except (KeyError, RuntimeError):  # not an initial state, or a chain the rules do not take
            refuse(f"a violation of {prop} at depth {depth} that no trace reaches")
        if (model.successors(state) or model.quiescent(state)) if prop == "Deadlock" else model.holds(prop, state):
            refuse(f"a violation of {prop} at depth {depth} by a state that does not violate it")
    first: dict[str, int] = {}  # property -> the smallest fingerprint of a frontier state violating it
    for name in ck.names(folder, "frontier", level):
        where = folder.where(ck.path("frontier", level, name))
        try:
            held = states_of(model, ck.read_table(folder, job["id"], "frontier", level, name))
        except ck.CheckpointRefused:
            raise
        except BadInput as exc:  # a state that does not decode
            raise ck.CheckpointRefused(f"corrupt checkpoint: {where}: {exc}") from None
        if model.fingerprints([s for _, s in held]) != [fp for fp, _ in held]:
            raise ck.CheckpointRefused(f"corrupt checkpoint: {where} holds states that do not have their fingerprints")
        for fp, s in held:
            for prop in model.violated(s):
                first[prop] = min(fp, first.get(prop, fp))
    at_level = {p for p, (depth, _) in totals["violations"].items() if depth == level and p != "Deadlock"}
    for prop in sorted(set(first) | at_level):
        recorded = totals["violations"].get(prop)
        if recorded is None or (recorded[0] == level and recorded[1] != first.get(prop)):
            refuse(f"no violation of {prop} at depth {level}, whose states violate it" if recorded is None else
                   f"a violation of {prop} at depth {level} by another state than its first")


def _reconstruct(model: Model, job: dict, depth: int, fp: int, prop: str):
    from harness.engines.bfs import reconstruct

    chain, folder = [fp], _store(job)
    for level in range(depth, 0, -1):
        parent = None
        for name in ck.names(folder, "parents", level):
            table = ck.read_table(folder, job["id"], "parents", level, name)
            hit = table.filter(pa.compute.equal(table.column("fp"), chain[-1]))
            if hit.num_rows:
                parent = hit.column("parent")[0].as_py()
                break
        if parent is None:
            raise ck.CheckpointRefused(f"corrupt checkpoint: no parent record for a state of level {level}")
        chain.append(parent)
    v = reconstruct(model, chain[::-1], model.fingerprint)
    v.outcome = Outcome("deadlock" if prop == "Deadlock" else "invariant", prop)
    return v
