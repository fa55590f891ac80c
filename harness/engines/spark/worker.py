"""The task worker of a Spark search: `LevelWorker` expands the frontier states a task holds and keeps its
share of the visited set, level after level; `run_levels` is the level loop (in each task of the barrier
job, and in the driver as one task), `run_task`/`spark_task` a task's entry. Models are rebuilt once per
Python worker from the job's plain data (`_model`).
"""

from __future__ import annotations

import contextlib
import json
import operator
import time

import numpy as np
import pyarrow as pa

from harness import checkpoint as ck
from harness.engines.spark.exchange import (_PARENT_SCHEMA, Exchange, _column, _committed_files, _store, owners,
                                            states_of, states_table)
from harness.model import Model
from harness.speed import cycle_collector_paused
from harness.visited import FingerprintTable

REBALANCE_RATIO = 1.25  # a frontier is evened out when a task holds more than this times the mean ...
REBALANCE_MIN = 64  # ... and it has at least this many states

_MODELS: dict[str, Model] = {}


def _model(job: dict) -> Model:
    """Rebuild the model in this process (executors get the job as plain JSON-like data, not a serialised model)."""
    key = json.dumps([job["spec"], job["config"], job["preset"], job.get("symmetry", False)], sort_keys=True)
    m = _MODELS.get(key)
    if m is None:
        from harness.registry import load_spec

        spec = load_spec(job["spec"])
        m = spec.bind(spec.config_from_dict(job["config"], preset=job["preset"]), symmetry=job.get("symmetry", False))
        m.check_deadlock = job["check_deadlock"]
        _MODELS[key] = m
    return m


_first, _second = operator.itemgetter(0), operator.itemgetter(1)


class LevelWorker(Exchange):
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
        super().__init__(job, task, tasks)
        self.model = _model(job)
        self.visited = FingerprintTable()
        self.exchanged: list[list[int]] = []  # [level, bytes all tasks wrote for one another] per level run
        self.frontier: list[tuple[int, tuple]] = []  # (fingerprint, state) of the depth being expanded
        # The level being expanded: every successor found, the position of its parent in the frontier held,
        # and the candidates (per fingerprint, the first successor with the smallest (tie, parent, action)).
        self._found: list = []
        self._parent_of = np.empty(0, np.int64)
        self._held: list = []
        self._best = np.empty(0, np.int64)  # positions in _found of the candidates, in order found
        self._fps = np.empty(0, np.int64)  # their fingerprints
        self._sent: list[np.ndarray] = []  # per owner: positions in _best of the rows sent to it
        self.seconds = dict.fromkeys(("load", "expand", "decide", "collect", "save", "wait"), 0.0)  # this task's, waits included
        self.saved: list[int] = []  # committed levels whose frontier files are not yet dropped
        self.expanded = 0  # states this task has expanded
        self.last_save = time.monotonic()

    # -- files ---------------------------------------------------------------------------------------
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
        report.update(seconds=worker.seconds, expanded=worker.expanded, due=time.monotonic() - worker.last_save >= every,
                      stop=stop_flag(), sent=worker.take_sent())
        reports = worker.gather(level, report)
        worker.exchanged.append([level, sum(r["sent"] for r in reports)])
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
    return {"level": level, "stopped_by": stopped, "exchanged": worker.exchanged}
