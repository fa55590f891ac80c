"""A checkpoint directory that can neither delete a user's files nor resume from damaged data.

DIR is a local path (or a mount the driver and every executor share) or a folder on S3, GCS or HDFS
(harness/store.py: files appear whole or not at all on each). Its layout (level k = the BFS depth whose
states are being expanded; T tasks):

    DIR/checkpoint.json                 the marker: this directory belongs to the harness, and to which job
    DIR/state.json                      the manifest of the last completed level (the commit point)
    DIR/frontier/k/part-t.parquet       the states of depth k that task t holds (fp, state)
    DIR/parents/k/part-t.parquet        (fp, parent, action) of the states new at depth k that task t owns
    DIR/exchange/k/from-s-to-t-A.arrow  candidates task s found for task t while expanding level k
    DIR/winners/k/from-t-to-s-A.arrow   which of them were new (positions in s's file)
    DIR/transfer/k/from-s-to-t-A.arrow  frontier states task s hands task t after level k, to even out the work
    DIR/reports/k/part-t-A.json         task t's counts of level k, which every task reads
    DIR/spark.log                       the JVM's and Spark's own output (a local DIR only; else a local temp folder)
    DIR/progress.json                   the level a Spark job has reached and its totals (not a commit)

The committed files are the parents of every depth up to k and the frontier of depth k: neither depends
on T, so a job resumes with any number of tasks. Exchange, winners and reports files live for one
level; they are how tasks wait for one another (a file appears, by rename, once complete), and A, a
token of the job attempt, keeps a file left by a killed attempt from being read by the next.

Integrity:
* One driver at a time: the driver holds an exclusive lock (flock) on a local DIR itself, so a
  second run given the same DIR is refused before it clears or rewrites anything (object stores and
  HDFS have no such lock; one run per folder is then the user's to keep).
* The harness writes only inside a directory it created, or found empty, and marked with
  checkpoint.json (format and job identity). It clears or reuses nothing else: a non-empty directory
  without the marker, one whose marker names another job, or a marked one holding a file outside
  the layout above is refused.
* Every data file carries its job id, level and shard (parquet schema metadata, a JSON field), and
  is written to a temporary name and renamed. state.json lists every file a resume needs with its
  size and SHA-256, and carries a SHA-256 of its own content. Resuming verifies all of it and
  refuses on a missing, extra, truncated, edited or misplaced file; the only files it tolerates
  beyond the manifest are those the interrupted level was writing, which it then removes.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from harness.errors import BadInput
from harness.store import Store

FORMAT = "kraft-harness-spark-checkpoint/4"  # 4: parts per task, any task count on resume
MARKER = "checkpoint.json"
MANIFEST = "state.json"
LOG = "spark.log"
PROGRESS = "progress.json"  # the level the job has reached, for the driver's progress lines; not a commit
KINDS = {"frontier": "parquet", "parents": "parquet", "exchange": "arrow", "winners": "arrow", "transfer": "arrow",
         "reports": "json"}
TRANSIENT = ("exchange", "winners", "transfer", "reports")  # never committed: written and read within one level
_DATA_FILE = re.compile(r"(frontier|parents)/(\d+)/part-\d+-[0-9a-f]{8}\.parquet"
                        r"|(exchange|winners|transfer)/\d+/from-\d+-to-\d+-[0-9a-f]{8}\.arrow|(reports)/\d+/part-\d+-[0-9a-f]{8}\.json")
# `temporary_name`s of Store.write and of the executors' probe of a writable DIR
_TEMP_FILE = re.compile(r"(?:checkpoint\.json|state\.json|progress\.json|probe-[0-9a-f]{8}\.json"
                        r"|(?:part|from)-[-\dtoa-f]+\.(?:parquet|arrow|json))\.tmp\d+")


class CheckpointRefused(BadInput):
    """The checkpoint directory cannot be used: not the harness's, another job's, or damaged."""


class CheckpointInUse(BadInput):
    """Another driver holds the checkpoint directory. Not a CheckpointRefused: nothing may start it afresh."""


_TAG = b"harness"


def job_id(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def path(kind: str, level: int, name: str | None = None) -> str:
    """The file `name` (part-t, from-s-to-t) of `kind` at `level`, or the level's folder, relative to DIR."""
    base = f"{kind}/{level}"
    return base if name is None else f"{base}/{name}.{KINDS[kind]}"


def names(store: Store, kind: str, level: int) -> list[str]:
    """The files of `kind` present at `level`, by name, sorted by task (whatever the task count that wrote them)."""
    suffix = f".{KINDS[kind]}"
    found = [f.rsplit("/", 1)[1][:-len(suffix)] for f in store.files(path(kind, level), recursive=False)
             if f.endswith(suffix)]
    return sorted(found, key=lambda n: [int(x) for x in re.findall(r"\d+", n)])


def _tag(job: str, kind: str, level: int, name: str) -> dict:
    return {"job": job, "kind": kind, "level": level, "name": name}


# ------------------------------------------------------------------------------ tagged data files


def write_table(store: Store, job: str, kind: str, level: int, name: str, table: pa.Table) -> None:
    """Parquet for what a resume reads; Arrow IPC (no encoding step) for what lives one level."""
    tag = json.dumps(_tag(job, kind, level, name)).encode()
    table = table.replace_schema_metadata({_TAG: tag})
    if KINDS[kind] == "parquet":
        store.write(path(kind, level, name), lambda sink: pq.write_table(table, sink))
    else:
        def write(sink) -> None:
            with pa.ipc.new_file(sink, table.schema) as out:
                out.write_table(table)
        store.write(path(kind, level, name), write)


def read_table(store: Store, job: str, kind: str, level: int, name: str) -> pa.Table:
    """A data file, checked to be the one its name says (job, kind, level, part): a task's file copied
    over another's, or one left by another job, is refused rather than read."""
    rel = path(kind, level, name)
    src = store.where(rel)
    try:
        with store.open(rel) as source:
            table = pq.read_table(source) if KINDS[kind] == "parquet" else pa.ipc.open_file(source).read_all()
    except FileNotFoundError:
        raise CheckpointRefused(f"corrupt checkpoint: {src} is missing") from None
    except (OSError, pa.ArrowInvalid) as exc:
        raise CheckpointRefused(f"corrupt checkpoint: {src}: {str(exc).splitlines()[0][:120]}") from None
    tag = (table.schema.metadata or {}).get(_TAG)
    try:
        found = json.loads(tag) if tag else None
    except ValueError:
        found = None
    if found != _tag(job, kind, level, name):
        raise CheckpointRefused(f"corrupt checkpoint: {src} does not belong there (it says {found})")
    return table


def _body_digest(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# ----------------------------------------------------------------------------------- the directory


class Checkpoint:
    """One job's checkpoint directory. `open` decides whether it may be used; `commit` records a
    completed level; `files_of(level)` names what a resume at that level needs."""

    def __init__(self, folder: Store, identity: dict) -> None:
        self.folder = folder
        self.identity = dict(identity, format=FORMAT)
        self.job = job_id(self.identity)
        self.hashes: dict[str, list] = {}  # relative path -> [size, sha256] of the committed files
        self._lock: int | None = None  # the descriptor of a local DIR the driver holds (`hold`)

    @property
    def where(self) -> str:
        return self.folder.where()

    # -- what is in the directory ----------------------------------------------------------------
    def _foreign(self) -> str | None:
        """The first file under a marked DIR that the harness would not have written."""
        for entry in self.folder.files():
            if not (entry in (MARKER, MANIFEST, LOG, PROGRESS) or _DATA_FILE.fullmatch(entry)
                    or _TEMP_FILE.fullmatch(os.path.basename(entry))):
                return entry
        return None

    def _read_marker(self) -> dict | None:
        if not self.folder.exists(MARKER):
            return None
        marker = self.folder.where(MARKER)
        try:
            data = json.loads(self.folder.read_text(MARKER))
        except (OSError, ValueError):
            raise CheckpointRefused(f"{marker} is damaged: not the harness's checkpoint marker; refusing to use {self.where}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("identity"), dict):
            raise CheckpointRefused(f"{self.where} holds a checkpoint of another harness version or tool; refusing to use it")
        return data["identity"]

    def _describe(self, identity: dict) -> str:
        return f"{identity.get('spec')}, config {identity.get('digest')}, code {identity.get('code')}"

    # -- opening ------------------------------------------------------------------------------------
    def open(self, resume: bool, hold: bool = False) -> dict | None:
        """Make DIR usable for this job: the saved progress when resuming, None for a fresh start.
        Refuses (BadInput) whenever that would touch data the harness does not own or trust. With `hold`
        (the driver), a local DIR is locked before anything in it changes, until `release`."""
        held = self._lock is not None  # a lock this call did not take outlives its refusal
        try:
            return self._open(resume, hold)
        except BaseException as exc:
            if not held:
                self.release()
            if isinstance(exc, OSError):  # a filesystem that stopped answering, a permission taken away
                raise BadInput(f"cannot use the checkpoint {self.where}: {getattr(exc, 'strerror', None) or exc}") from None
            raise

    def _hold(self) -> None:
        """Lock a local DIR (made if absent) for this process, or refuse: another driver is using it."""
        local = self.folder.local
        if local is None or self._lock is not None:
            return
        self.folder.make()
        fd = os.open(local, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise CheckpointInUse(f"{self.where} is in use by another run of the harness (which holds its lock); "
                                  "refusing to touch it") from None
        except OSError:  # a filesystem without flock (some network mounts): no lock, as on object stores
            os.close(fd)
            return
        self._lock = fd

    def release(self) -> None:
        """Give up the lock `open(hold=True)` took (closing the descriptor releases it)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _open(self, resume: bool, hold: bool) -> dict | None:
        store = self.folder
        kind = store.kind()
        if kind == "file":
            raise CheckpointRefused(f"checkpoint path {self.where} is not a directory")
        if hold and kind == "dir":  # first: another run's folder is "in use", whatever else is true of it
            self._hold()  # (a lock on the directory itself writes nothing into it)
        marker = self._read_marker() if kind == "dir" else None
        if resume:
            if marker is None:
                raise CheckpointRefused(f"--resume: there is no checkpoint in {self.where} (drop --resume to start afresh)")
            if marker != self.identity:
                raise CheckpointRefused(f"--resume: {self.where} is the checkpoint of another job ({self._describe(marker)}); "
                               f"this run is {self._describe(self.identity)}")
            return self._verify()
        if marker is None:
            if kind == "dir" and not store.empty():
                raise CheckpointRefused(f"{self.where} is not empty and is not a checkpoint of the harness; refusing to "
                               "write there (choose an empty or new directory)")
            if hold:
                self._hold()  # a new directory: made, then locked before it is marked
        elif marker != self.identity:
            raise CheckpointRefused(f"{self.where} holds the checkpoint of another job ({self._describe(marker)}); refusing "
                           "to clear it (resume that job, or choose another directory)")
        else:
            foreign = self._foreign()
            if foreign is not None:
                raise CheckpointRefused(f"{self.where} holds {foreign}, which the harness did not write; refusing to clear it")
            for entry in (MANIFEST, LOG, PROGRESS, *KINDS):
                store.delete(entry)
            for entry in store.files():
                if entry != MARKER:  # temporary files of an interrupted write
                    store.delete(entry)
        try:
            store.make()
            store.write_text(MARKER, json.dumps({"format": FORMAT, "identity": self.identity}, indent=1, sort_keys=True))
        except OSError as exc:
            raise BadInput(f"cannot write the checkpoint in {self.where}: {getattr(exc, 'strerror', None) or exc}") from None
        return None

    def check_writable(self) -> None:
        """Fail before any search if DIR cannot be created or written."""
        self.folder.check_writable("--checkpoint")

    # -- the manifest -------------------------------------------------------------------------------
    def commit(self, level: int, totals: dict, new_files: list[str], keep: Callable[[str], bool]) -> None:
        """Record that every level before `level` is complete: hash the files the level wrote (paths
        relative to DIR), keep the hashes of older files a resume still needs (`keep`), write state.json whole."""
        hashes = {rel: h for rel, h in self.hashes.items() if keep(rel)}
        for rel in new_files:
            hashes[rel] = [self.folder.size(rel), self.folder.sha256(rel)]
        body = {"identity": self.identity, "level": level, "totals": totals, "files": dict(sorted(hashes.items()))}
        doc = {"format": FORMAT, "body": body, "sha256": _body_digest(body)}
        self.folder.write_text(MANIFEST, json.dumps(doc, indent=1))
        self.hashes = body["files"]

    def _manifest(self) -> dict:
        """The body of state.json, checked against its own checksum and this job's identity."""
        manifest = self.folder.where(MANIFEST)
        if not self.folder.exists(MANIFEST):
            raise CheckpointRefused(f"--resume: {self.where} has no completed level to resume from (drop --resume)")
        try:
            doc = json.loads(self.folder.read_text(MANIFEST))
        except (OSError, ValueError) as exc:
            raise CheckpointRefused(f"corrupt checkpoint: {manifest}: {exc}") from None
        body = doc.get("body") if isinstance(doc, dict) else None
        if not isinstance(body, dict) or doc.get("format") != FORMAT or doc.get("sha256") != _body_digest(body):
            raise CheckpointRefused(f"corrupt checkpoint: {manifest} was changed or damaged (its checksum does not match)")
        if body.get("identity") != self.identity:
            raise CheckpointRefused(f"corrupt checkpoint: {manifest} belongs to another job than its marker")
        return body

    def adopt(self) -> dict:
        """Take over the commits of a directory another process has just verified (`open` with resume):
        the last level and totals, without hashing every file again."""
        body = self._manifest()
        self.hashes = dict(body["files"])
        return {"level": body["level"], "totals": body["totals"]}

    def _verify(self) -> dict:
        """Read state.json and check every file it lists; refuse on any difference."""
        store = self.folder
        body = self._manifest()
        level, files = body["level"], body["files"]
        for rel, (size, digest) in files.items():
            f = store.where(rel)
            if not store.exists(rel):
                raise CheckpointRefused(f"corrupt checkpoint: {f} is missing")
            if store.size(rel) != size:
                raise CheckpointRefused(f"corrupt checkpoint: {f} has {store.size(rel)} bytes, {size} were written")
            if store.sha256(rel) != digest:
                raise CheckpointRefused(f"corrupt checkpoint: {f} was changed since it was written (checksum)")
        entries = store.files()
        for entry in entries:
            if entry in (MARKER, MANIFEST, LOG, PROGRESS) or entry in files or self._leftover(entry, level):
                continue
            raise CheckpointRefused(f"corrupt checkpoint: {store.where(entry)} is not part of the checkpoint of level {level}")
        for entry in entries:
            if entry not in files and self._leftover(entry, level):
                store.delete(entry)
        self.hashes = dict(files)
        return {"level": level, "totals": body["totals"]}

    @staticmethod
    def _leftover(entry: str, level: int) -> bool:
        """A file a run stopped at `level` may leave behind: temporary files, a level's exchange, the
        parents of the levels it went on to expand, and frontiers not yet dropped or never committed."""
        if _TEMP_FILE.fullmatch(os.path.basename(entry)):
            return True
        m = _DATA_FILE.fullmatch(entry)
        if m is None:
            return False
        if m.group(3) or m.group(4):  # exchange, winners, reports
            return True
        kind, k = m.group(1), int(m.group(2))
        return k > level or (kind == "frontier" and k != level)
