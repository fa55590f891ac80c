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
* The checksum is not a secret: a manifest edited and re-summed must still agree with what a resume can
  recompute from the data files. Its fields are checked for type (MANIFEST_SCHEMA); it must list the
  parents of every depth up to its level and that level's frontier, and nothing else; each listed file's
  own tag (job, kind, level, name) must match its place; its counts must match the files' row counts
  (read from the parquet footers) and one another (`_check_totals`). Only a forger who rewrites the data
  files consistently as well gets past this: the checksum is not a signature.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from typing import Callable

import jsonschema
import pyarrow as pa
import pyarrow.parquet as pq

from harness.errors import BadInput
from harness.itf import MAX_SHOWN_CHARS, one_line, shown
from harness.store import Store

FORMAT = "kraft-harness-spark-checkpoint/4"  # 4: parts per task, any task count on resume
MARKER = "checkpoint.json"
MANIFEST = "state.json"
LOG = "spark.log"
PROGRESS = "progress.json"  # the level the job has reached, for the driver's progress lines; not a commit
KINDS = {"frontier": "parquet", "parents": "parquet", "exchange": "arrow", "winners": "arrow", "transfer": "arrow",
         "reports": "json"}
TRANSIENT = ("exchange", "winners", "transfer", "reports")  # never committed: written and read within one level
_COMMITTED = r"(frontier|parents)/(0|[1-9]\d*)/(part-\d+-[0-9a-f]{8})\.parquet"  # kind, level (as `path` spells it), name
_COMMITTED_FILE = re.compile(_COMMITTED)
_DATA_FILE = re.compile(_COMMITTED + r"|(exchange|winners|transfer)/\d+/from-\d+-to-\d+-[0-9a-f]{8}\.arrow"
                        r"|(reports)/\d+/part-\d+-[0-9a-f]{8}\.json")
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
    _check_tag(src, found, job, kind, level, name)
    return table


def _check_tag(src: str, found, job: str, kind: str, level: int, name: str) -> None:
    """Refuse a data file whose own tag (`found`, from its metadata) is not that of the place it sits in."""
    if found != _tag(job, kind, level, name):
        raise CheckpointRefused(f"corrupt checkpoint: {src} does not belong there (it says {one_line(str(found), 200)})")


# ------------------------------------------------------------------------------------ the manifest

_COUNT = {"type": "integer", "minimum": 0}
_LIST_OF_COUNTS = {"type": "array", "items": _COUNT}


def _pair(first: dict, second: dict) -> dict:
    return {"type": "array", "prefixItems": [first, second], "minItems": 2, "maxItems": 2}


def _closed(required: list[str], properties: dict) -> dict:
    return {"type": "object", "required": required, "additionalProperties": False, "properties": properties}


# The body of state.json. `totals` are the search's figures (harness/engines/spark/worker.py's `merge`).
MANIFEST_SCHEMA = _closed(["identity", "level", "totals", "files"], {
    "identity": {"type": "object"},
    "level": _COUNT,  # the depth whose frontier is committed
    "totals": _closed(["distinct", "generated", "frontier", "states_per_depth", "gen_by_action", "new_by_action",
                       "violations", "spark_levels", "driver_levels"], {
        "distinct": _COUNT, "generated": _COUNT, "frontier": _COUNT,
        "states_per_depth": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        "gen_by_action": _LIST_OF_COUNTS, "new_by_action": _LIST_OF_COUNTS,
        # property -> [depth, fingerprint of its first violating state]
        "violations": {"type": "object", "additionalProperties": _pair(
            _COUNT, {"type": "integer", "minimum": -2**63, "maximum": 2**63 - 1})},
        "spark_levels": _COUNT, "driver_levels": _COUNT,
        "task_seconds": {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}}},
        "task_expanded": _LIST_OF_COUNTS,
    }),
    # committed file -> [size, SHA-256]
    "files": {"type": "object", "propertyNames": {"pattern": f"^{_COMMITTED}$"},
              "additionalProperties": _pair(_COUNT, {"type": "string", "pattern": "^[0-9a-f]{64}$"})},
})
# JSON Schema's "integer" admits 4.0; a level or a count read as a float would fail later, in Python
_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=(
    jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool))))
MANIFEST_VALIDATOR = _Validator(MANIFEST_SCHEMA)
MAX_MANIFEST_BYTES = 64 * 2**20  # a commit lists (levels + 1) x tasks files, about 120 bytes each


def _check_totals(level: int, totals: dict, rows: dict) -> str | None:
    """What is wrong with `totals` at `level`, given the rows of each committed (kind, depth): None if nothing.
    parents/k holds one row per state new at depth k, the frontier one per state of depth `level`."""
    per_depth, frontier = totals["states_per_depth"], totals["frontier"]
    first = per_depth[0] if per_depth else 0  # the initial states, which no action generated
    if len(per_depth) != level + (frontier > 0):  # a search stopped by an empty frontier counted no states there
        return f"states at {len(per_depth)} depths for a search at level {level} with a frontier of {frontier}"
    for k in range(level + 1):
        expected = per_depth[k] if k < len(per_depth) else 0
        if rows.get(("parents", k), 0) != expected:
            return f"{expected} states at depth {k}, but its parents files hold {rows.get(('parents', k), 0)}"
    if rows.get(("frontier", level), 0) != frontier:
        return f"a frontier of {frontier} states, but the frontier files of level {level} hold {rows.get(('frontier', level), 0)}"
    if totals["distinct"] != sum(per_depth):
        return f"{totals['distinct']} distinct states, but {sum(per_depth)} by depth"
    gen, new = totals["gen_by_action"], totals["new_by_action"]
    if len(gen) != len(new) or any(n > g for g, n in zip(gen, new)):
        return "new states by action that do not fit the states generated by action"
    if sum(new) != totals["distinct"] - first:
        return f"{sum(new)} new states by action, but {totals['distinct'] - first} states were new after the initial ones"
    if sum(gen) != totals["generated"] - first:
        return f"{sum(gen)} successors by action, but {totals['generated'] - first} generated after the initial states"
    if totals["spark_levels"] + totals["driver_levels"] != level:
        return f"{totals['spark_levels'] + totals['driver_levels']} levels expanded, but the search is at level {level}"
    late = next((p for p, (depth, _) in totals["violations"].items() if depth > level), None)
    if late is not None:
        return f"a violation of {shown(late)} at depth {totals['violations'][late][0]}, beyond level {level}"
    return None


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
    def open(self, resume: bool, hold: bool = False, check: Callable[[int, dict], None] | None = None) -> dict | None:
        """Make DIR usable for this job: the saved progress when resuming, None for a fresh start.
        Refuses (BadInput) whenever that would touch data the harness does not own or trust. With `hold`
        (the driver), a local DIR is locked before anything in it changes, until `release`. `check(level,
        totals)`, the engine's own checks of a resumed commit, may refuse it before anything is removed."""
        held = self._lock is not None  # a lock this call did not take outlives its refusal
        try:
            return self._open(resume, hold, check)
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

    def _open(self, resume: bool, hold: bool, check: Callable[[int, dict], None] | None) -> dict | None:
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
            return self._verify(check)
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
        """The body of state.json, checked against its own checksum, its schema and this job's identity."""
        manifest = self.folder.where(MANIFEST)
        if not self.folder.exists(MANIFEST):
            raise CheckpointRefused(f"--resume: {self.where} has no completed level to resume from (drop --resume)")
        if self.folder.size(MANIFEST) > MAX_MANIFEST_BYTES:
            raise CheckpointRefused(f"corrupt checkpoint: {manifest} is larger than any manifest the harness writes")
        try:
            doc = json.loads(self.folder.read_text(MANIFEST))
        except (OSError, ValueError, RecursionError) as exc:
            raise CheckpointRefused(f"corrupt checkpoint: {manifest}: {one_line(str(exc), 120)}") from None
        body = doc.get("body") if isinstance(doc, dict) else None
        if isinstance(doc, dict) and "format" in doc and doc["format"] != FORMAT:
            raise CheckpointRefused(f"corrupt checkpoint: {manifest} is of format {shown(doc['format'])}, not {FORMAT} "
                                    "(another version of the harness)")
        if not isinstance(body, dict) or doc.get("sha256") != _body_digest(body):
            raise CheckpointRefused(f"corrupt checkpoint: {manifest} was changed or damaged (its checksum does not match)")
        error = jsonschema.exceptions.best_match(MANIFEST_VALIDATOR.iter_errors(body))
        if error is not None:
            where = "/".join(one_line(str(part), MAX_SHOWN_CHARS) for part in error.absolute_path) or "top level"
            raise CheckpointRefused(f"corrupt checkpoint: {manifest}: {where}: {one_line(error.message, 120)}")
        if body["identity"] != self.identity:
            raise CheckpointRefused(f"corrupt checkpoint: {manifest} belongs to another job than its marker")
        return body

    def adopt(self) -> dict:
        """Take over the commits of a directory another process has just verified (`open` with resume):
        the last level and totals, without hashing every file again."""
        body = self._manifest()
        self.hashes = dict(body["files"])
        return {"level": body["level"], "totals": body["totals"]}

    def _verify(self, check: Callable[[int, dict], None] | None) -> dict:
        """Read state.json and check every file it lists, and its counts against the files; refuse on any difference."""
        store = self.folder
        body = self._manifest()
        level, files = body["level"], body["files"]
        manifest = store.where(MANIFEST)
        listed: dict = {}  # (kind, depth) -> [(relative path, name)]
        for rel in files:
            kind, k, name = _COMMITTED_FILE.fullmatch(rel).groups()
            listed.setdefault((kind, int(k)), []).append((rel, name))
        # every depth's parents and the level's frontier (lazily: a forged level may be huge), and nothing else
        missing = next((("parents", k) for k in range(level + 1) if ("parents", k) not in listed), None)
        if missing is None and ("frontier", level) not in listed:
            missing = ("frontier", level)
        if missing is not None:
            raise CheckpointRefused(f"corrupt checkpoint: {manifest} lists no {missing[0]} file of depth {missing[1]}, "
                                    f"which a checkpoint of level {level} needs")
        beyond = next((rel for (kind, k), entries in listed.items() for rel, _ in entries
                       if k > level or (kind == "frontier" and k != level)), None)
        if beyond is not None:
            raise CheckpointRefused(f"corrupt checkpoint: {manifest} lists {beyond}, which is not part of a checkpoint "
                                    f"of level {level}")
        for rel, (size, digest) in files.items():
            f = store.where(rel)
            if not store.exists(rel):
                raise CheckpointRefused(f"corrupt checkpoint: {f} is missing")
            if store.size(rel) != size:
                raise CheckpointRefused(f"corrupt checkpoint: {f} has {store.size(rel)} bytes, {size} were written")
            if store.sha256(rel) != digest:
                raise CheckpointRefused(f"corrupt checkpoint: {f} was changed since it was written (checksum)")
        rows = {place: sum(self._rows(rel, *place, name) for rel, name in entries) for place, entries in listed.items()}
        wrong = _check_totals(level, body["totals"], rows)
        if wrong is not None:
            raise CheckpointRefused(f"corrupt checkpoint: {manifest} records {wrong}")
        entries = store.files()
        for entry in entries:
            if entry in (MARKER, MANIFEST, LOG, PROGRESS) or entry in files or self._leftover(entry, level):
                continue
            raise CheckpointRefused(f"corrupt checkpoint: {store.where(entry)} is not part of the checkpoint of level {level}")
        if check is not None:
            check(level, body["totals"])
        for entry in entries:
            if entry not in files and self._leftover(entry, level):
                store.delete(entry)
        self.hashes = dict(files)
        return {"level": level, "totals": body["totals"]}

    def _rows(self, rel: str, kind: str, level: int, name: str) -> int:
        """The rows of a committed file, from its parquet footer, which must carry its own place's tag."""
        try:
            with self.folder.open(rel) as source:
                meta = pq.read_metadata(source)
            tag = json.loads((meta.metadata or {}).get(_TAG, b"null"))
        except (OSError, ValueError, pa.ArrowInvalid) as exc:
            raise CheckpointRefused(f"corrupt checkpoint: {self.folder.where(rel)}: {one_line(str(exc), 120)}") from None
        _check_tag(self.folder.where(rel), tag, self.job, kind, level, name)
        return meta.num_rows

    @staticmethod
    def _leftover(entry: str, level: int) -> bool:
        """A file a run stopped at `level` may leave behind: temporary files, a level's exchange, the
        parents of the levels it went on to expand, and frontiers not yet dropped or never committed."""
        if _TEMP_FILE.fullmatch(os.path.basename(entry)):
            return True
        m = _DATA_FILE.fullmatch(entry)
        if m is None:
            return False
        if m.group(4) or m.group(5):  # exchange, winners, transfer, reports
            return True
        kind, k = m.group(1), int(m.group(2))
        return k > level or (kind == "frontier" and k != level)
