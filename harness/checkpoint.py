"""A checkpoint directory that can neither delete a user's files nor resume from damaged data.

Layout of a checkpoint directory DIR (level k = the BFS depth whose frontier is being expanded):

    DIR/checkpoint.json             the marker: this directory belongs to the harness, and to which job
    DIR/state.json                  the manifest of the last completed level (the commit point)
    DIR/frontier/k/shard-p.parquet  candidates of level k owned by shard p (fp, parent, action, state)
    DIR/visited/k/shard-p.parquet   sorted fingerprints shard p has seen up to level k
    DIR/parents/k/shard-p.parquet   (fp, parent, action) of the states new at level k, for traces
    DIR/stats/k/shard-p.json        counts of shard p's expansion of level k (merged at commit)
    DIR/spark.log                   the JVM's and Spark's own output

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

FORMAT = "kraft-harness-spark-checkpoint/3"  # 3: marker, manifest with checksums, tagged files
MARKER = "checkpoint.json"
MANIFEST = "state.json"
LOG = "spark.log"
KINDS = {"frontier": "parquet", "visited": "parquet", "parents": "parquet", "stats": "json"}
_DATA_FILE = re.compile(r"(?:(frontier|visited|parents)/(\d+)/shard-(\d+)\.parquet|(stats)/(\d+)/shard-(\d+)\.json)")
_TEMP_FILE = re.compile(r"(?:checkpoint\.json|state\.json|shard-\d+\.(?:parquet|json))\.tmp\d+")  # write_atomic's


class CheckpointRefused(BadInput):
    """The checkpoint directory cannot be used: not the harness's, another job's, or damaged."""
_TAG = b"harness"


def job_id(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def path(directory: str | Path, kind: str, level: int, shard: int | None = None) -> Path:
    base = Path(directory) / kind / str(level)
    return base if shard is None else base / f"shard-{shard}.{KINDS[kind]}"


def _tag(job: str, kind: str, level: int, shard: int) -> dict:
    return {"job": job, "kind": kind, "level": level, "shard": shard}


# ------------------------------------------------------------------------------ tagged data files


def write_table(directory: str, job: str, kind: str, level: int, shard: int, table: pa.Table) -> None:
    tag = json.dumps(_tag(job, kind, level, shard)).encode()
    table = table.replace_schema_metadata({_TAG: tag})
    write_atomic(path(directory, kind, level, shard), lambda p: pq.write_table(table, p))


def read_table(directory: str, job: str, kind: str, level: int, shard: int) -> pa.Table:
    """A data file, checked to be the one its name says (job, kind, level, shard): a shard's file
    copied over another's, or one left by another job, is refused rather than read."""
    src = path(directory, kind, level, shard)
    try:
        table = pq.read_table(src)
    except FileNotFoundError:
        raise CheckpointRefused(f"corrupt checkpoint: {src} is missing") from None
    except (OSError, pa.ArrowInvalid) as exc:
        raise CheckpointRefused(f"corrupt checkpoint: {src}: {str(exc).splitlines()[0][:120]}") from None
    tag = (table.schema.metadata or {}).get(_TAG)
    try:
        found = json.loads(tag) if tag else None
    except ValueError:
        found = None
    if found != _tag(job, kind, level, shard):
        raise CheckpointRefused(f"corrupt checkpoint: {src} does not belong there (it says {found})")
    return table


def write_json(directory: str, job: str, kind: str, level: int, shard: int, data: dict) -> None:
    text = json.dumps({"tag": _tag(job, kind, level, shard), "data": data})
    write_atomic(path(directory, kind, level, shard), lambda p: p.write_text(text))


def read_json(directory: str, job: str, kind: str, level: int, shard: int) -> dict:
    src = path(directory, kind, level, shard)
    try:
        doc = json.loads(src.read_text())
    except FileNotFoundError:
        raise CheckpointRefused(f"corrupt checkpoint: {src} is missing") from None
    except (OSError, ValueError) as exc:
        raise CheckpointRefused(f"corrupt checkpoint: {src}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("tag") != _tag(job, kind, level, shard) or not isinstance(doc.get("data"), dict):
        raise CheckpointRefused(f"corrupt checkpoint: {src} does not belong there")
    return doc["data"]


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
            if not (entry in (MARKER, MANIFEST, LOG) or _DATA_FILE.fullmatch(entry)
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
        return (f"{identity.get('spec')}, config {identity.get('digest')}, {identity.get('shards')} shards, "
                f"code {identity.get('code')}")

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
            for entry in (MANIFEST, LOG, *KINDS):
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

    def _verify(self) -> dict:
        """Read state.json and check every file it lists; refuse on any difference."""
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
            if entry in (MARKER, MANIFEST, LOG) or entry in files or self._leftover(entry, level):
                continue
            raise CheckpointRefused(f"corrupt checkpoint: {self.dir / entry} is not part of the checkpoint of level {level}")
        for entry in self._entries():
            if entry not in files and self._leftover(entry, level):
                (self.dir / entry).unlink()
        self.hashes = dict(files)
        return {"level": level, "totals": body["totals"]}

    @staticmethod
    def _leftover(entry: str, level: int) -> bool:
        """A file a run stopped at `level` may leave behind: temporary files, the outputs of the level
        it was expanding, and inputs of the previous level it had not yet dropped."""
        if _TEMP_FILE.fullmatch(os.path.basename(entry)):
            return True
        m = _DATA_FILE.fullmatch(entry)
        if m is None:
            return False
        kind, k = m.group(1) or m.group(4), int(m.group(2) or m.group(5))
        return (kind, k) in {("frontier", level + 1), ("visited", level), ("parents", level), ("stats", level),
                             ("frontier", level - 1), ("visited", level - 2), ("stats", level - 1)}
