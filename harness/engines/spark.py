"""Exhaustive exploration with PySpark: long-lived level workers, one barrier job for the whole search.

Design (measurements in docs/PERFORMANCE.md, trade-offs in docs/ARCHITECTURE.md):

* One Spark barrier job of T tasks runs every level; a task is a `LevelWorker` that lives for the
  whole job and keeps its share of the visited set (the fingerprints `owners` gives it) and the
  frontier states it generated, as Python objects, from one level to the next. Tasks meet three times
  a level (`BarrierTaskContext.barrier`, `allGather`) and exchange only numbers, in Arrow files in
  the checkpoint directory: candidates' (fingerprint, tie, parent, action) to their owner, and which
  of them were new back to the sender. No state is pickled through the JVM or decoded on the way.
* Strictly level-synchronous, so counterexamples are shortest. Determinism: of the candidates for
  one fingerprint the smallest (tie, parent, action) wins; of the violations of a property at its
  first depth, the smallest fingerprint. Neither depends on T.
* Task 0 commits every level (harness.checkpoint: the parents of each depth and the frontier, which
  do not depend on T). A run killed at any moment resumes (`--resume`) from the last committed level,
  with any number of tasks, and ends with exactly the results of an uninterrupted run. A job that
  fails (a lost executor) is run again from there by the driver, with the slots the cluster still has.
* Levels run in the driver (the same worker, one task, no files exchanged) while the SparkSession
  starts in a background thread and while frontiers are small; shallow bugs are found before Spark
  is up.

The checkpoint directory, its layout and its integrity checks are `harness.checkpoint`'s. Executors
must see it (local mode: always; a cluster: a shared path).
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import json
import logging
import operator
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import NoReturn
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from harness import checkpoint as ck
from harness import interrupt
from harness.errors import BadInput
from harness.itf import shown
from harness.store import Store
from harness.model import Model, config_digest, config_to_dict, mix64, preset_of
from harness.speed import cycle_collector_paused
from harness.visited import FingerprintTable
from harness.result import CheckResult
from harness.trace import Outcome

SMALL_LEVEL = 2_000  # frontiers below this many states are expanded in the driver (a Spark level costs ~20 ms)
REBALANCE_RATIO = 1.25  # a frontier is evened out when a task holds more than this times the mean ...
REBALANCE_MIN = 64  # ... and it has at least this many states
CHECKPOINT_EVERY = 60.0  # seconds between commits (--checkpoint-every); a search's last level is always committed
INIT_ACTION = -1

_FRONTIER_SCHEMA = pa.schema([("fp", pa.int64()), ("state", pa.binary())])
_PARENT_SCHEMA = pa.schema([("fp", pa.int64()), ("parent", pa.int64()), ("action", pa.int32())])


# --------------------------------------------------------------------------- the level worker

_MODELS: dict[str, Model] = {}
_STORES: dict[str, Store] = {}
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def owners(fps: np.ndarray, tasks: int) -> np.ndarray:
    """The task that owns each fingerprint: `mix64(fp) % tasks`, over a whole array at once."""
    h = fps.astype(np.int64).view(np.uint64)
    h = (h ^ (h >> np.uint64(30))) * _MIX1
    h = (h ^ (h >> np.uint64(27))) * _MIX2
    h = h ^ (h >> np.uint64(31))
    return (h % np.uint64(tasks)).astype(np.int64)


def owner(fp: int, tasks: int) -> int:
    return mix64(fp) % tasks


def _store(job: dict) -> Store:
    """The job's checkpoint folder, opened once per process (on S3, one client for every file)."""
    store = _STORES.get(job["dir"])
    if store is None:
        store = _STORES[job["dir"]] = Store(job["dir"])
    return store


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


_first, _second = operator.itemgetter(0), operator.itemgetter(1)


def states_table(model: Model, held: list[tuple[int, tuple]]) -> pa.Table:
    """(fingerprint, state) pairs as a table of fingerprints and MessagePack states (frontiers, transfers)."""
    return pa.table({"fp": pa.array([fp for fp, _ in held], pa.int64()),
                     "state": pa.array([model.encode(t) for _, t in held], pa.binary())}, schema=_FRONTIER_SCHEMA)


def states_of(model: Model, table: pa.Table, rows: np.ndarray | None = None) -> list[tuple[int, tuple]]:
    """`states_table` read back: the (fingerprint, state) pairs of `rows` (all if None), decoded."""
    fps, blobs = _column(table, "fp", np.int64), table.column("state")
    if rows is not None:
        fps, blobs = fps[rows], blobs.take(pa.array(rows, pa.int64()))
    return list(zip(fps.tolist(), map(model.decode_trusted, blobs.to_pylist())))


def _column(table: pa.Table, name: str, dtype) -> np.ndarray:
    return table.column(name).to_numpy().astype(dtype, copy=False) if table.num_rows else np.empty(0, dtype)


class LevelWorker:
    """Task `task` of `tasks` in one job. It owns the visited states whose fingerprint `owners` gives it, and
    expands the frontier states it holds, as live objects, from one level to the next.

    A level is three steps with the other tasks in between:
      expand  every held state: check it for deadlock, generate its successors, keep per fingerprint the
              smallest (tie, parent, action) candidate, and send each candidate's numbers to its owner;
      decide  as owner, of all candidates for one fingerprint keep the smallest (tie, parent, action), drop
              the visited ones, record the parents of the new states, and tell each sender which of its won;
      collect keep the winning candidates as the next frontier and check the invariants on them.
    Only numbers cross between tasks; a state stays in the process that generated it, so it is never
    decoded on the way (a frontier is encoded for a commit, and to even out the tasks' shares). Which
    candidate wins depends on the candidates alone, so counts, parents and violations do not depend on
    the number of tasks."""

    def __init__(self, job: dict, task: int, tasks: int) -> None:
        self.job, self.task, self.tasks = job, task, tasks
        self.model = _model(job)
        self.store = _store(job)
        self.visited = FingerprintTable()
        self.frontier: list[tuple[int, tuple]] = []  # (fingerprint, state) of the depth being expanded
        # The level being expanded: every successor found, the position of its parent in the frontier held,
        # and the candidates (per fingerprint, the first successor with the smallest (tie, parent, action)).
        self._found: list = []
        self._parent_of = np.empty(0, np.int64)
        self._held: list = []
        self._best = np.empty(0, np.int64)  # positions in _found of the candidates, in order found
        self._fps = np.empty(0, np.int64)  # their fingerprints
        self._sent: list[np.ndarray] = []  # per owner: positions in _best of the rows sent to it
        self._inbox: dict = {}  # one task: the exchange without files
        self.seconds = dict.fromkeys(("load", "expand", "decide", "collect", "save", "wait"), 0.0)  # this task's, waits included
        self.saved: list[int] = []  # committed levels whose frontier files are not yet dropped
        self.expanded = 0  # states this task has expanded
        self.last_save = time.monotonic()

    # -- files ---------------------------------------------------------------------------------------
    def _name(self, name: str) -> str:
        """A file's name: its place (part-t, from-s-to-t) and the token of the job attempt writing it."""
        return f"{name}-{self.job['attempt']}"

    def _write(self, kind: str, level: int, name: str, table: pa.Table) -> None:
        if self.tasks == 1 and kind in ck.TRANSIENT:
            self._inbox[kind] = table
        else:
            ck.write_table(self.store, self.job["id"], kind, level, self._name(name), table)

    def _read(self, kind: str, level: int, name: str) -> pa.Table:
        if self.tasks == 1 and kind in ck.TRANSIENT:
            return self._inbox.pop(kind)
        return ck.read_table(self.store, self.job["id"], kind, level, self._name(name))

    def _await(self, kind: str, level: int, names: list[str]) -> None:
        """Wait until the other tasks' files have appeared (each appears whole, harness/store.py).
        A task that dies fails the barrier stage, and Spark kills the ones waiting here."""
        if self.tasks == 1:
            return
        waiting = [ck.path(kind, level, self._name(n)) for n in names]
        pause, since = 0.0005, time.perf_counter()
        while waiting:
            waiting = [f for f in waiting if not self.store.exists(f)]
            if waiting:
                time.sleep(pause)
                pause = min(pause * 2, 0.02)
        self.seconds["wait"] += time.perf_counter() - since

    def gather(self, level: int, report: dict) -> list[dict]:
        """Every task's report of `level`, in task order."""
        if self.tasks == 1:
            return [report]
        self.store.write_text(ck.path("reports", level, self._name(f"part-{self.task}")), json.dumps(report))
        names = [f"part-{t}" for t in range(self.tasks)]
        self._await("reports", level, names)
        return [json.loads(self.store.read_text(ck.path("reports", level, self._name(n)))) for n in names]

    @cycle_collector_paused()  # decoding builds ~10 tuples a state: with the collector on, 13 us a state, off 4 us
    def load(self, level: int) -> None:
        """Resume at a committed level: the visited fingerprints this task owns (from every depth's parents)
        and the committed frontier's states it owns (whatever task count wrote them)."""
        d, job = self.store, self.job["id"]
        since = time.perf_counter()
        self.saved = [level]
        for k in range(level + 1):
            for name in ck.names(d, "parents", k):
                fps = _column(ck.read_table(d, job, "parents", k, name), "fp", np.int64)
                mine = fps[owners(fps, self.tasks) == self.task]
                self.visited.add(mine, np.zeros(len(mine), np.int32))
        self.frontier = []
        for name in ck.names(d, "frontier", level):
            table = ck.read_table(d, job, "frontier", level, name)
            mine = np.flatnonzero(owners(_column(table, "fp", np.int64), self.tasks) == self.task)
            self.frontier += states_of(self.model, table, mine)
        self.seconds["load"] += time.perf_counter() - since

    def drop(self, level: int) -> None:
        """Remove what this task wrote for `level`, and frontiers older than the last committed one: every
        task has read `level`'s exchange, which happens after the commit of `level` + 1."""
        files = [ck.path("frontier", k, name) for k in self.saved[:-1] for name in ck.names(self.store, "frontier", k)]
        self.saved = self.saved[-1:]
        if self.tasks > 1:
            files.append(ck.path("reports", level, self._name(f"part-{self.task}")))
            files += [ck.path(kind, level, self._name(f"from-{self.task}-to-{o}"))
                      for kind in ("exchange", "winners", "transfer") for o in range(self.tasks)]
        for f in files:
            with contextlib.suppress(FileNotFoundError):
                self.store.delete(f)

    def save(self, level: int) -> None:
        """Write the frontier this task holds (depth `level`) for a commit."""
        self._write("frontier", level, f"part-{self.task}", states_table(self.model, self.frontier))
        self.saved.append(level)
        self.last_save = time.monotonic()

    # -- the three steps ------------------------------------------------------------------------------
    def expand(self, level: int, give_up=None) -> dict | None:
        """`give_up(done)`, asked every 1,024 states with the fraction of the frontier expanded so far, may
        abandon the level (None), leaving the worker as it was before."""
        model = self.model
        successors, quiescent = model.successors, model.quiescent
        check_deadlock = model.check_deadlock
        deadlocks: dict[str, int] = {}
        found: list = []  # (action, state) of every successor, parent by parent
        counts = []
        held = len(self.frontier)
        for i, (fp, s) in enumerate(self.frontier):
            if give_up is not None and not i & 1023 and i and give_up(i / held):
                return None
            succ = successors(s)
            if not succ and check_deadlock and not quiescent(s) and fp < deadlocks.get("Deadlock", fp + 1):
                deadlocks["Deadlock"] = fp
            found += succ
            counts.append(len(succ))
        # Per fingerprint, the smallest (tie, parent, action): one sort of the level, no Python per successor.
        n = len(found)
        states = list(map(_second, found))
        fps = np.array(model.fingerprints(states), np.int64)
        ties = (np.fromiter(map(hash, map(model.tie_part, states)), np.int64, n) if model.view is not None
                else np.zeros(n, np.int64))
        by_parent = np.repeat(np.arange(len(self.frontier)), counts)
        parents = np.array([fp for fp, _ in self.frontier], np.int64)[by_parent] if n else np.empty(0, np.int64)
        actions = np.fromiter(map(_first, found), np.int32, n)
        order = np.lexsort((actions, parents, ties, fps))
        first = np.ones(n, bool)
        first[1:] = fps[order][1:] != fps[order][:-1]
        best = np.sort(order[first])  # in the order found
        self._found, self._parent_of, self._held = states, by_parent, self.frontier
        self._fps, self._best = fps[best], best
        self.expanded += len(self.frontier)
        self.frontier = []
        to = owners(self._fps, self.tasks)
        self._sent = []
        for o in range(self.tasks):
            rows = np.flatnonzero(to == o)
            self._sent.append(rows)
            chosen = best[rows]
            self._write("exchange", level, f"from-{self.task}-to-{o}", pa.table(
                {"fp": fps[chosen], "tie": ties[chosen], "parent": parents[chosen], "action": actions[chosen]}))
        return {"generated": n, "gen_by_action": np.bincount(actions, minlength=len(model.actions)).tolist(),
                "deadlocks": deadlocks}

    def decide(self, level: int) -> dict:
        self._await("exchange", level, [f"from-{s}-to-{self.task}" for s in range(self.tasks)])
        tables = [self._read("exchange", level, f"from-{s}-to-{self.task}") for s in range(self.tasks)]
        fps = np.concatenate([_column(t, "fp", np.int64) for t in tables])
        ties = np.concatenate([_column(t, "tie", np.int64) for t in tables])
        parents = np.concatenate([_column(t, "parent", np.int64) for t in tables])
        actions = np.concatenate([_column(t, "action", np.int32) for t in tables])
        sender = np.repeat(np.arange(self.tasks), [t.num_rows for t in tables])
        position = np.concatenate([np.arange(t.num_rows) for t in tables]) if tables else np.empty(0, np.int64)
        order = np.lexsort((actions, parents, ties, fps))
        first = np.ones(len(order), bool)
        first[1:] = fps[order][1:] != fps[order][:-1]
        best = order[first]
        new = best[self.visited.find(fps[best]) < 0]
        self.visited.add(fps[new], np.zeros(len(new), np.int32))
        self._write("parents", level + 1, f"part-{self.task}",
                    pa.table({"fp": fps[new], "parent": parents[new], "action": actions[new]}, schema=_PARENT_SCHEMA))
        for s in range(self.tasks):
            self._write("winners", level, f"from-{self.task}-to-{s}",
                        pa.table({"position": np.sort(position[new[sender[new] == s]])}))
        return {"new": int(len(new)), "new_by_action": np.bincount(actions[new], minlength=len(self.model.actions)).tolist()}

    def collect(self, level: int) -> dict:
        model, cfg = self.model, self.model.config
        always, by_reads = model.invariants_always, model.invariants_by_reads
        self._await("winners", level, [f"from-{o}-to-{self.task}" for o in range(self.tasks)])
        won = np.sort(np.concatenate([self._sent[o][_column(self._read("winners", level, f"from-{o}-to-{self.task}"),
                                                               "position", np.int64)] for o in range(self.tasks)]))
        violations: dict[str, int] = {}
        states, held, rows = self._found, self._held, self._best[won]
        frontier = []
        for i, fp, p in zip(rows.tolist(), self._fps[won].tolist(), self._parent_of[rows].tolist()):
            t, s = states[i], held[p][1]
            frontier.append((fp, t))
            for name, inv in always:
                if not inv(cfg, t) and fp < violations.get(name, fp + 1):
                    violations[name] = fp
            for fields, group in by_reads:  # the parent holds the others: check one only if a field it reads changed
                for f in fields:
                    if t[f] is not s[f]:
                        for name, inv in group:
                            if not inv(cfg, t) and fp < violations.get(name, fp + 1):
                                violations[name] = fp
                        break
        self._found, self._held, self._fps = [], [], np.empty(0, np.int64)
        self.frontier = frontier
        return {"violations": violations, "held": len(frontier)}

    def rebalance(self, level: int, held: list[int]) -> None:
        """Even out the frontier when one task holds more than REBALANCE_RATIO of the mean (a frontier grows where
        its states were generated, so from one initial state it would all stay with one task): the tasks
        above their share send their last states to those below, encoded (the only states that cross)."""
        total, tasks = sum(held), self.tasks
        if tasks == 1 or total < REBALANCE_MIN or max(held) <= REBALANCE_RATIO * total / tasks:
            return
        share = [total // tasks + (t < total % tasks) for t in range(tasks)]
        give = [[t, held[t] - share[t]] for t in range(tasks) if held[t] > share[t]]
        take = [[t, share[t] - held[t]] for t in range(tasks) if held[t] < share[t]]
        moves = []  # (from, to, count), the same in every task
        while give and take:
            n = min(give[0][1], take[0][1])
            moves.append((give[0][0], take[0][0], n))
            give[0][1] -= n
            take[0][1] -= n
            give, take = [g for g in give if g[1]], [t for t in take if t[1]]
        for src, dst, n in moves:
            if src == self.task:
                sent, self.frontier = self.frontier[-n:], self.frontier[:-n]
                self._write("transfer", level, f"from-{src}-to-{dst}", states_table(self.model, sent))
        incoming = [f"from-{src}-to-{dst}" for src, dst, _ in moves if dst == self.task]
        self._await("transfer", level, incoming)
        for name in incoming:
            self.frontier += states_of(self.model, self._read("transfer", level, name))


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


def stop_reason(totals: dict, level: int, max_depth: int | None, keep_going: bool) -> str | None | bool:
    """Why a search at `level` (its frontier committed) goes no further: "violation", "max-depth", None when
    it is complete, False when it goes on. The same in the driver and in every task."""
    if totals["violations"] and not keep_going:
        return "violation"
    if totals["frontier"] == 0:
        return None
    if max_depth is not None and level >= max_depth:
        return "max-depth"
    return False


def merge(totals: dict, level: int, reports: list[dict], counter: str) -> None:
    """Add the tasks' reports of `level` to the totals (identically in every task)."""
    new = sum(r["new"] for r in reports)
    totals["generated"] += sum(r["generated"] for r in reports)
    for r in reports:
        totals["gen_by_action"] = [a + b for a, b in zip(totals["gen_by_action"], r["gen_by_action"])]
        totals["new_by_action"] = [a + b for a, b in zip(totals["new_by_action"], r["new_by_action"])]
        for depth, found in ((level, r["deadlocks"]), (level + 1, r["violations"])):
            for prop, fp in found.items():
                old = totals["violations"].get(prop)
                if old is None or (old[0] == depth and fp < old[1]):
                    totals["violations"][prop] = [depth, fp]
    totals["distinct"] += new
    totals["frontier"] = new
    totals["task_seconds"] = [{k: round(v, 3) for k, v in r["seconds"].items()} for r in reports]  # since the job began
    totals["task_expanded"] = [r["expanded"] for r in reports]
    if new:
        totals["states_per_depth"].append(new)
    totals[counter] += 1


@cycle_collector_paused()
def run_levels(worker: LevelWorker, level: int, totals: dict, *, commit, stop_flag, max_depth, keep_going,
               counter: str, every: float, on_level=None, hand_over=None) -> tuple[int, str | None]:
    """Expand levels from `level` (its frontier held by `worker`) until `stop_reason` says stop or a task's
    `stop_flag()` names a reason. A level is committed when the search stops there, or when `every`
    seconds have passed on some task's clock since it last saved (0: every level); `commit(level)` then
    records it (task 0, or the driver) once every task has saved its frontier. `hand_over(done)` (the
    driver, one task) may stop in the middle of a level: it is then committed unexpanded ("handoff").
    Returns the level reached and why it stopped (None: complete)."""
    clock = time.perf_counter
    start = committed = level  # `committed`: the level whose frontier the checkpoint holds
    stop = stop_reason(totals, level, max_depth, keep_going)
    while stop is False:
        t0 = clock()
        report = worker.expand(level, hand_over)
        if report is None:
            stop = "handoff"
            if level != committed:
                worker.save(level)
                commit(level)
            break
        t1 = clock()
        report.update(worker.decide(level))
        t2 = clock()
        if level > start:
            worker.drop(level - 1)
        report.update(worker.collect(level))
        for step, seconds in (("expand", t1 - t0), ("decide", t2 - t1), ("collect", clock() - t2)):
            worker.seconds[step] += seconds
        report.update(seconds=worker.seconds, expanded=worker.expanded, due=time.monotonic() - worker.last_save >= every, stop=stop_flag())
        reports = worker.gather(level, report)
        worker.rebalance(level, [r["held"] for r in reports])
        merge(totals, level, reports, counter)
        level += 1
        if on_level:
            on_level(level, totals)
        stop = stop_reason(totals, level, max_depth, keep_going)
        if stop is False:
            stop = next((r["stop"] for r in reports if r["stop"]), False)
        if stop is not False or any(r["due"] for r in reports):
            t3 = clock()
            worker.save(level)
            worker.seconds["save"] += clock() - t3
            commit(level)
            committed = level
    return level, stop


def spark_task(job: dict, start_level: int) -> list[str]:
    """One task of the barrier job; task 0 returns how the search ended."""
    from pyspark import BarrierTaskContext

    task = BarrierTaskContext.get().partitionId()
    ended = run_task(job, task, start_level)
    return [json.dumps(ended)] if task == 0 else []


@cycle_collector_paused()  # over the load and the levels: the first collection after the load alone would re-traverse it
def run_task(job: dict, task: int, start_level: int) -> dict:
    """Task `task` of job["tasks"]: resume from the committed level and run to the end; task 0 commits.
    Returns the level reached and why it stopped."""
    worker = LevelWorker(job, task, job["tasks"])
    worker.load(start_level)
    store = ck.Checkpoint(_store(job), job["identity"])
    saved = store.adopt()
    if saved["level"] != start_level:  # Spark retrying the stage (spark-submit's own settings): not from here
        raise RuntimeError(f"a retried stage attempt: the checkpoint is at level {saved['level']}, the job began at "
                           f"{start_level}; the driver re-runs the job from the last commit")
    totals = saved["totals"]
    last = [start_level]

    def commit(level: int) -> None:
        if task == 0:
            worker._await("frontier", level, [f"part-{t}" for t in range(worker.tasks)])
            store.commit(level, totals, _committed_files(job, last[0], level), keep=lambda rel: rel.startswith("parents/"))
        last[0] = level

    def progress(level: int, totals: dict) -> None:
        if task == 0:
            store.folder.write_text(ck.PROGRESS, json.dumps({"level": level, "totals": totals}))

    deadline = job["deadline"]
    level, stopped = run_levels(worker, start_level, totals, commit=commit, max_depth=job["max_depth"],
                                keep_going=job["keep_going"], counter="spark_levels", every=job["checkpoint_every"],
                                stop_flag=lambda: "time-limit" if deadline is not None and time.time() >= deadline else None,
                                on_level=progress)
    return {"level": level, "stopped_by": stopped}


def _committed_files(job: dict, after: int, level: int) -> list[str]:
    """The files a commit of `level` adds, the last commit being `after`: this attempt's parents of every
    depth since, and its frontier of `level`."""
    d, mine = _store(job), f"-{job['attempt']}"
    return [ck.path(kind, k, name) for kind, levels in (("parents", range(after + 1, level + 1)), ("frontier", [level]))
            for k in levels for name in ck.names(d, kind, k) if name.endswith(mine)]


# ------------------------------------------------------------------------------- the session


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


def start_session(master: str | None, log_file: Path, dump_classes: Path | None = None):
    """A SparkContext whose JVM writes its own output (log4j, executor stack traces) to `log_file`,
    so that the terminal gets the harness's one-line messages only. The driver's JVM maps the class
    archive when there is one; `dump_classes` makes it write one when it exits (`make_class_archive`)."""
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
    # A barrier job needs all its slots at once: if the cluster shrank, fail fast and let the driver retry smaller.
    conf.set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "2s")
    conf.set("spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "5")
    # The driver re-runs a failed job itself, from the last commit and with the slots left (`_spark_jobs`);
    # Spark's own retry of the stage would re-run it from where it began.
    conf.set("spark.stage.maxConsecutiveAttempts", "1")
    # Executors' JVMs only start Python workers and pass small messages: C1 and the serial collector halve
    # the CPU their start takes, which the driver's levels share on a small cluster. Executors on this
    # machine map the driver's class archive too (a JVM given a missing archive would lose the JDK's own).
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
            with open(log_file, "ab") as log, _environment(local_ip):  # the child keeps its own copy of the descriptor
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


def class_archive() -> Path:
    """Where the driver JVM's class-data-sharing archive lives: in the Python environment that holds
    pyspark (and goes with it), named after pyspark's version, the java Spark starts and the JVM options.
    A JVM that finds the archive does not match its classes ignores it (-Xshare:auto, the default)."""
    import pyspark  # its __version__: a pyspark run from a Spark distribution has no package metadata

    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    java = os.path.realpath(java or "java")
    stamp = os.stat(java).st_mtime_ns if os.path.exists(java) else 0
    key = hashlib.sha256(f"{pyspark.__version__}\0{java}\0{stamp}\0{JVM_OPTIONS}".encode()).hexdigest()[:16]
    return Path(sys.prefix) / "spark-class-archive" / f"driver-{key}.jsa"


def _on_this_machine(master: str) -> bool:
    """Whether a standalone master's executors run here (a cluster on the loopback address or this host)."""
    host = urlparse(master).hostname if master.startswith("spark://") else None
    return host in ("127.0.0.1", "localhost", "::1", socket.gethostname())


def make_class_archive() -> Path | None:
    """Build the class archive once per environment (`make` does): a fresh Python starts a session whose
    JVM runs a barrier job and, when it exits, writes the classes it loaded; the file is renamed into
    place whole. A JVM that maps it starts Spark in about half the time (docs/PERFORMANCE.md). None if
    it could not be built (the sessions then start as before)."""
    from harness.files import temporary_name

    target = class_archive()
    if target.is_file():
        return target
    tmp = target.with_name(temporary_name(target.name))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="harness-spark-") as folder:
            done = subprocess.run([sys.executable, "-c", "import sys; from harness.engines.spark import _load_classes; "
                                   "sys.exit(_load_classes(sys.argv[1], sys.argv[2]))", str(tmp), folder],
                                  capture_output=True, timeout=600)
        if done.returncode != 0 or not tmp.is_file():
            return None
        os.replace(tmp, target)
        for stale in target.parent.glob("driver-*.jsa"):  # archives of an earlier pyspark, java or options
            if stale != target and re.fullmatch(r"driver-[0-9a-f]{16}\.jsa", stale.name):
                stale.unlink(missing_ok=True)
        return target
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        tmp.unlink(missing_ok=True)


def _load_classes(archive: str, folder: str) -> int:
    """In a fresh Python: what a search does with Spark (a session, a barrier job, the slot count, the
    status tracker), then a clean stop so that the JVM exits normally and writes `archive`."""
    sc = start_session("local[2]", Path(folder) / ck.LOG, dump_classes=Path(archive))
    rdd = sc.parallelize(range(2), 2).barrier().mapPartitions(lambda part: [json.dumps(sum(part))])
    rdd.collect()
    _slots(sc)
    sc.statusTracker().getActiveStageIds()
    proc = sc._gateway.proc
    sc.stop()
    sc._gateway.shutdown()
    proc.stdin.close()  # the gateway JVM exits when its standard input closes
    return proc.wait(300)


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
            from harness.engines.spark import _model
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


# ---------------------------------------------------------------------------------- the driver


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
    # The default directory names the whole job, so a changed model gets a new one.
    folder = Store(checkpoint if checkpoint is not None else f"checkpoints/{model.name}-{preset_of(cfg) or 'custom'}-{ck.job_id(identity)}")
    store = ck.Checkpoint(folder, identity)
    job = {"spec": model.name, "config": config_to_dict(cfg), "preset": preset_of(cfg), "dir": folder.location,
           "id": store.job, "identity": identity, "check_deadlock": deadlock, "max_depth": max_depth,
           "keep_going": keep_going, "attempt": secrets.token_hex(4), "checkpoint_every": checkpoint_every,
           "deadline": None}
    return job, store


def explore(model: Model, *, master: str | None = "local[*]", partitions: int | None = None,
            checkpoint: str | None = None, resume: bool = False, max_depth: int | None = None,
            time_limit: float | None = None, keep_going: bool = False, check_deadlock: bool = True,
            progress=None, spark_levels_only: bool = False, session_factory=None,
            executor_wait: float = EXECUTOR_WAIT, checkpoint_every: float = CHECKPOINT_EVERY) -> CheckResult:
    """Exhaustive BFS by level workers. `partitions` is the number of Spark tasks (default and at most: the
    cluster's task slots); a level is committed when `checkpoint_every` seconds have passed since the last
    commit (0: every level); `spark_levels_only` sends every level to Spark (tests);
    `session_factory(master, log_file)` replaces `start_session` (tests that must not start a JVM)."""
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

        deadline = None if time_limit is None else started + time_limit

        def boot():
            """In the background while the driver runs levels: the session, then (on a cluster) a first executor
            and the probe task, then the Python workers warmed with the model."""
            t = time.monotonic()
            try:
                sc = session["spark"] = (session_factory or start_session)(master, log_file)
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


def _slots(sc) -> int:
    """Tasks the cluster can run at once now: a barrier job of more would wait for slots that never come."""
    jsc = sc._jsc.sc()
    try:
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))
    except Exception:  # noqa: BLE001 - a Spark without this (private) method: count executors' default share
        return max(sc.defaultParallelism, 1) if jsc.getExecutorMemoryStatus().size() > 1 or sc.master.startswith("local") else 0


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
