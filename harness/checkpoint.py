"""A checkpoint directory that can neither delete a user's files nor resume from damaged data.

Layout of a checkpoint directory DIR (level k = the BFS depth whose states are being expanded; T tasks):

    DIR/checkpoint.json                 the marker: this directory belongs to the harness, and to which job
    DIR/state.json                      the manifest of the last completed level (the commit point)
    DIR/frontier/k/part-t.parquet       the states of depth k that task t holds (fp, state)
    DIR/parents/k/part-t.parquet        (fp, parent, action) of the states new at depth k that task t owns
    DIR/exchange/k/from-s-to-t-A.arrow  candidates task s found for task t while expanding level k
    DIR/winners/k/from-t-to-s-A.arrow   which of them were new (positions in s's file)
    DIR/transfer/k/from-s-to-t-A.arrow  frontier states task s hands task t after level k, to even out the work
    DIR/reports/k/part-t-A.json         task t's counts of level k, which every task reads
    DIR/spark.log                       the JVM's and Spark's own output
    DIR/progress.json                   the level a Spark job has reached and its totals (not a commit)

The committed files are the parents of every depth up to k and the frontier of depth k: neither depends
on T, so a job resumes with any number of tasks. Exchange, winners and reports files live for one
level; they are how tasks wait for one another (a file appears, by rename, once complete), and A, a
token of the job attempt, keeps a file left by a killed attempt from being read by the next.

Integrity:
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

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from harness.errors import BadInput
from harness.files import check_writable_dir, write_atomic

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
_TEMP_FILE = re.compile(r"(?:checkpoint\.json|state\.json|progress\.json|(?:part|from)-[-\dtoa-f]+\.(?:parquet|arrow|json))\.tmp\d+")  # write_atomic's


class CheckpointRefused(BadInput):
    """The checkpoint directory cannot be used: not the harness's, another job's, or damaged."""
_TAG = b"harness"


def job_id(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def path(directory: str | Path, kind: str, level: int, name: str | None = None) -> Path:
    """The file `name` (part-t, from-s-to-t) of `kind` at `level`, or the level's folder."""
    base = Path(directory) / kind / str(level)
    return base if name is None else base / f"{name}.{KINDS[kind]}"


def names(directory: str | Path, kind: str, level: int) -> list[str]:
    """The files of `kind` present at `level`, by name, sorted by task (whatever the task count that wrote them)."""
    folder = path(directory, kind, level)
    found = [f.name[:-len(KINDS[kind]) - 1] for f in folder.glob(f"*.{KINDS[kind]}")] if folder.is_dir() else []
    return sorted(found, key=lambda n: [int(x) for x in re.findall(r"\d+", n)])


def _tag(job: str, kind: str, level: int, name: str) -> dict:
    return {"job": job, "kind": kind, "level": level, "name": name}


# ------------------------------------------------------------------------------ tagged data files


def write_table(directory: str, job: str, kind: str, level: int, name: str, table: pa.Table) -> None:
    """Parquet for what a resume reads; Arrow IPC (no encoding step) for what lives one level."""
    tag = json.dumps(_tag(job, kind, level, name)).encode()
    table = table.replace_schema_metadata({_TAG: tag})
    if KINDS[kind] == "parquet":
        write_atomic(path(directory, kind, level, name), lambda p: pq.write_table(table, p))
    else:
        def write(p: Path) -> None:
            with pa.OSFile(str(p), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
                out.write_table(table)
        write_atomic(path(directory, kind, level, name), write)


def read_table(directory: str, job: str, kind: str, level: int, name: str) -> pa.Table:
    """A data file, checked to be the one its name says (job, kind, level, part): a task's file copied
    over another's, or one left by another job, is refused rather than read."""
    src = path(directory, kind, level, name)
    try:
        if KINDS[kind] == "parquet":
            table = pq.read_table(src)
        else:
            with pa.memory_map(str(src)) as source:
                table = pa.ipc.open_file(source).read_all()
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


def _sha256(file: Path) -> str:
    h = hashlib.sha256()
    with open(file, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _body_digest(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# ----------------------------------------------------------------------------------- the directory


class Checkpoint:
    """One job's checkpoint directory. `open` decides whether it may be used; `commit` records a
    completed level; `files_of(level)` names what a resume at that level needs."""

    def __init__(self, directory: str | Path, identity: dict) -> None:
        self.dir = Path(directory).resolve()  # files are named relative to it, whatever the working directory
        self.identity = dict(identity, format=FORMAT)
        self.job = job_id(self.identity)
        self.hashes: dict[str, list] = {}  # relative path -> [size, sha256] of the committed files

    # -- what is in the directory ----------------------------------------------------------------
    def _entries(self) -> list[str]:
        """Every file under DIR, relative, sorted (directories are implied by their files)."""
        out = []
        for root, dirs, files in os.walk(self.dir):
            dirs.sort()
            rel = Path(root).relative_to(self.dir)
            out += [str(rel / f) if str(rel) != "." else f for f in sorted(files)]
        return out

    def _foreign(self) -> str | None:
        """The first file under a marked DIR that the harness would not have written."""
        for entry in self._entries():
            if not (entry in (MARKER, MANIFEST, LOG, PROGRESS) or _DATA_FILE.fullmatch(entry)
                    or _TEMP_FILE.fullmatch(os.path.basename(entry))):
                return entry
        return None

    def _read_marker(self) -> dict | None:
        marker = self.dir / MARKER
        if not marker.is_file():
            return None
        try:
            data = json.loads(marker.read_text())
        except (OSError, ValueError):
            raise CheckpointRefused(f"{marker} is damaged: not the harness's checkpoint marker; refusing to use {self.dir}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("identity"), dict):
            raise CheckpointRefused(f"{self.dir} holds a checkpoint of another harness version or tool; refusing to use it")
        return data["identity"]

    def _describe(self, identity: dict) -> str:
        return f"{identity.get('spec')}, config {identity.get('digest')}, code {identity.get('code')}"

    # -- opening ------------------------------------------------------------------------------------
    def open(self, resume: bool) -> dict | None:
        """Make DIR usable for this job: the saved progress when resuming, None for a fresh start.
        Refuses (BadInput) whenever that would touch data the harness does not own or trust."""
        if self.dir.exists() and not self.dir.is_dir():
            raise CheckpointRefused(f"checkpoint path {self.dir} is not a directory")
        marker = self._read_marker() if self.dir.is_dir() else None
        if resume:
            if marker is None:
                raise CheckpointRefused(f"--resume: there is no checkpoint in {self.dir} (drop --resume to start afresh)")
            if marker != self.identity:
                raise CheckpointRefused(f"--resume: {self.dir} is the checkpoint of another job ({self._describe(marker)}); "
                               f"this run is {self._describe(self.identity)}")
            return self._verify()
        if marker is None:
            if self.dir.is_dir() and any(self.dir.iterdir()):
                raise CheckpointRefused(f"{self.dir} is not empty and is not a checkpoint of the harness; refusing to "
                               "write there (choose an empty or new directory)")
        elif marker != self.identity:
            raise CheckpointRefused(f"{self.dir} holds the checkpoint of another job ({self._describe(marker)}); refusing "
                           "to clear it (resume that job, or choose another directory)")
        else:
            foreign = self._foreign()
            if foreign is not None:
                raise CheckpointRefused(f"{self.dir} holds {foreign}, which the harness did not write; refusing to clear it")
            for entry in (MANIFEST, LOG, PROGRESS, *KINDS):
                target = self.dir / entry
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
            for entry in self._entries():
                if entry != MARKER:  # temporary files of an interrupted write
                    (self.dir / entry).unlink()
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            write_atomic(self.dir / MARKER, lambda p: p.write_text(json.dumps(
                {"format": FORMAT, "identity": self.identity}, indent=1, sort_keys=True)))
        except OSError as exc:
            raise BadInput(f"cannot write the checkpoint in {self.dir}: {exc.strerror or exc}") from None
        return None

    def check_writable(self) -> None:
        """Fail before any search if DIR cannot be created or written."""
        check_writable_dir(self.dir, "--checkpoint")

    # -- the manifest -------------------------------------------------------------------------------
    def commit(self, level: int, totals: dict, new_files: list[Path], keep: Callable[[str], bool]) -> None:
        """Record that every level before `level` is complete: hash the files the level wrote, keep
        the hashes of older files a resume still needs (`keep`), write state.json atomically."""
        hashes = {rel: h for rel, h in self.hashes.items() if keep(rel)}
        for f in new_files:
            hashes[str(f.relative_to(self.dir))] = [f.stat().st_size, _sha256(f)]
        body = {"identity": self.identity, "level": level, "totals": totals, "files": dict(sorted(hashes.items()))}
        doc = {"format": FORMAT, "body": body, "sha256": _body_digest(body)}
        write_atomic(self.dir / MANIFEST, lambda p: p.write_text(json.dumps(doc, indent=1)))
        self.hashes = body["files"]

    def _manifest(self) -> dict:
        """The body of state.json, checked against its own checksum and this job's identity."""
        manifest = self.dir / MANIFEST
        if not manifest.exists():
            raise CheckpointRefused(f"--resume: {self.dir} has no completed level to resume from (drop --resume)")
        try:
            doc = json.loads(manifest.read_text())
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
        body = self._manifest()
        level, files = body["level"], body["files"]
        for rel, (size, digest) in files.items():
            f = self.dir / rel
            if not f.is_file():
                raise CheckpointRefused(f"corrupt checkpoint: {f} is missing")
            if f.stat().st_size != size:
                raise CheckpointRefused(f"corrupt checkpoint: {f} has {f.stat().st_size} bytes, {size} were written")
            if _sha256(f) != digest:
                raise CheckpointRefused(f"corrupt checkpoint: {f} was changed since it was written (checksum)")
        for entry in self._entries():
            if entry in (MARKER, MANIFEST, LOG, PROGRESS) or entry in files or self._leftover(entry, level):
                continue
            raise CheckpointRefused(f"corrupt checkpoint: {self.dir / entry} is not part of the checkpoint of level {level}")
        for entry in self._entries():
            if entry not in files and self._leftover(entry, level):
                (self.dir / entry).unlink()
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
