"""How the tasks of a Spark search meet: who owns a fingerprint (`owners`), the Arrow tables that cross
between them (candidates' numbers, encoded states, parents), and `Exchange`, a task's side of it: files in
the checkpoint directory, each written whole and waited for by name (one task: an inbox, no files). Which
files a commit adds (`_committed_files`) is here too; the layout of the directory is harness.checkpoint's.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pyarrow as pa

from harness import checkpoint as ck
from harness.model import Model
from harness.store import Store

_FRONTIER_SCHEMA = pa.schema([("fp", pa.int64()), ("state", pa.binary())])
_PARENT_SCHEMA = pa.schema([("fp", pa.int64()), ("parent", pa.int64()), ("action", pa.int32())])

_STORES: dict[str, Store] = {}
MASK64 = (1 << 64) - 1
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def mix64(h: int) -> int:
    """SplitMix64 finaliser: spreads a fingerprint's entropy over all bits (for sharding)."""
    h &= MASK64
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & MASK64
    return h ^ (h >> 31)


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


class Exchange:
    """Task `task` of `tasks`'s side of the exchange: the files it writes for the others and reads from them,
    named by place and by the job attempt writing them. A subclass keeps `seconds`, whose "wait" counts
    the time spent waiting for other tasks' files."""

    seconds: dict[str, float]

    def __init__(self, job: dict, task: int, tasks: int) -> None:
        self.job, self.task, self.tasks = job, task, tasks
        self.store = _store(job)
        self._inbox: dict = {}  # one task: the exchange without files
        self.sent = 0  # bytes (Arrow buffers) this task wrote for other tasks since `take_sent`

    def _name(self, name: str) -> str:
        """A file's name: its place (part-t, from-s-to-t) and the token of the job attempt writing it."""
        return f"{name}-{self.job['attempt']}"

    def _write(self, kind: str, level: int, name: str, table: pa.Table) -> None:
        if self.tasks == 1 and kind in ck.TRANSIENT:
            self._inbox[kind] = table
        else:
            ck.write_table(self.store, self.job["id"], kind, level, self._name(name), table)
            if kind in ck.TRANSIENT:
                self.sent += table.nbytes

    def take_sent(self) -> int:
        sent, self.sent = self.sent, 0
        return sent

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


def _committed_files(job: dict, after: int, level: int) -> list[str]:
    """The files a commit of `level` adds, the last commit being `after`: this attempt's parents of every
    depth since, and its frontier of `level`."""
    d, mine = _store(job), f"-{job['attempt']}"
    return [ck.path(kind, k, name) for kind, levels in (("parents", range(after + 1, level + 1)), ("frontier", [level]))
            for k in levels for name in ck.names(d, kind, k) if name.endswith(mine)]
