"""A folder for checkpoints: on a local disk (or a mount every executor shares), or on a filesystem Spark
users share without a mount (S3, GCS, HDFS), through pyarrow's filesystem layer.

Only what the checkpoint needs, named by paths relative to the folder ("frontier/3/part-0-ab12cd34.parquet"):
files appear whole or not at all, listings, sizes, deletions. Two ways to publish a file whole:
* where a rename is atomic (a local disk, HDFS), write a temporary name and rename it;
* on an object store (S3, GCS), write the final key: an object becomes visible only when its upload
  completes, and both stores list and read their new objects at once (strong consistency), which the
  tasks of a Spark job rely on when they wait for one another's files.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.fs as pafs

from harness.errors import BadInput
from harness.files import check_writable_dir, path_problem, publishing, temporary_name

_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
# Hadoop's names for S3 (Spark users write s3a://) are the same buckets and keys.
_ALIASES = {"s3a": "s3", "s3n": "s3"}
_RENAMES = ("local", "hdfs")  # pyarrow filesystems whose rename is atomic
GCS_RETRY_SECONDS = 30  # a GCS request that keeps failing fails the run then, not after GCS's default 15 minutes


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


class Store:
    """A folder (`location`: a local path or a URI) and the files under it."""

    def __init__(self, location: str) -> None:
        if problem := path_problem(location):
            raise BadInput(f"--checkpoint {location!r}: {problem}")
        m = _URI.match(location)
        scheme = m.group(1).lower() if m else "file"
        if scheme == "file":
            self.local: Path | None = Path(location[len("file://"):] if m else location).resolve()
            self.fs, self.root = pafs.LocalFileSystem(), self.local.as_posix()
            self.location = str(self.local)
        else:
            self.local = None
            uri = _ALIASES.get(scheme, scheme) + location[len(scheme):]
            bucket_and_key = location[len(scheme) + 3:].split("?", 1)[0].strip("/")
            if scheme in ("s3", "s3a", "s3n", "gs", "gcs") and "/" not in bucket_and_key:
                raise BadInput(f"--checkpoint {location}: give a folder inside the bucket ({scheme}://bucket/folder)")
            if scheme in ("gs", "gcs") and "retry_limit_seconds=" not in uri:  # GCS retries for 15 minutes by default
                uri += ("&" if "?" in uri else "?") + f"retry_limit_seconds={GCS_RETRY_SECONDS}"
            try:
                self.fs, root = pafs.FileSystem.from_uri(uri)
            except (pa.ArrowInvalid, OSError, ValueError) as exc:  # unknown scheme, no libhdfs, malformed
                hint = " (pyarrow's HDFS client needs JAVA_HOME, libhdfs and Hadoop's CLASSPATH)" if "hdfs" in scheme else ""
                raise BadInput(f"--checkpoint {location}: {_first_line(exc)}{hint}") from None
            self.root = root.rstrip("/")
            self.location = location
        self.renames = self.fs.type_name in _RENAMES

    def __str__(self) -> str:
        return self.location

    def where(self, rel: str = "") -> str:
        """A file's name for messages: its local path or its URI."""
        return self.location if not rel else f"{self.location.split('?', 1)[0].rstrip('/')}/{rel}"

    def _abs(self, rel: str) -> str:
        return f"{self.root}/{rel}" if rel else self.root

    # -- what is there --------------------------------------------------------------------------------
    def kind(self, rel: str = "") -> str:
        """'file', 'dir' or 'none'."""
        t = self.fs.get_file_info(self._abs(rel)).type
        return "file" if t == pafs.FileType.File else "dir" if t == pafs.FileType.Directory else "none"

    def exists(self, rel: str) -> bool:
        return self.fs.get_file_info(self._abs(rel)).type == pafs.FileType.File

    def size(self, rel: str) -> int:
        return self.fs.get_file_info(self._abs(rel)).size

    def files(self, rel: str = "", recursive: bool = True) -> list[str]:
        """The files under `rel` (every depth, or its own), relative to the folder, sorted."""
        infos = self.fs.get_file_info(pafs.FileSelector(self._abs(rel), recursive=recursive, allow_not_found=True))
        skip = len(self.root) + 1
        return sorted(i.path[skip:] for i in infos if i.type == pafs.FileType.File)

    def empty(self) -> bool:
        """Nothing in the folder, not even an empty subfolder."""
        return not self.fs.get_file_info(pafs.FileSelector(self.root, recursive=False, allow_not_found=True))

    # -- reading --------------------------------------------------------------------------------------
    def open(self, rel: str):
        """A random-access file (parquet, Arrow IPC)."""
        return self.fs.open_input_file(self._abs(rel))

    def read_bytes(self, rel: str) -> bytes:
        with self.fs.open_input_stream(self._abs(rel)) as f:
            return f.read()

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode()

    def sha256(self, rel: str) -> str:
        h = hashlib.sha256()
        with self.fs.open_input_stream(self._abs(rel)) as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        return h.hexdigest()

    # -- writing --------------------------------------------------------------------------------------
    def write(self, rel: str, write: Callable[[pa.NativeFile], object]) -> None:
        """Publish `rel` whole: `write(stream)` fills it."""
        target = self._abs(rel)
        tmp = temporary_name(target) if self.renames else None
        with publishing(self.where(rel), lambda: tmp and self.fs.delete_file(tmp)):
            if tmp is None:
                with self.fs.open_output_stream(target) as out:  # an upload cut short publishes nothing
                    write(out)
                return
            self.fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
            with self.fs.open_output_stream(tmp) as out:
                write(out)
            self.fs.move(tmp, target)

    def write_text(self, rel: str, text: str) -> None:
        data = text.encode()
        self.write(rel, lambda out: out.write(data))

    def delete(self, rel: str) -> None:
        """Remove a file, or a folder with everything in it; nothing if absent."""
        kind = self.kind(rel)
        if kind == "dir":
            self.fs.delete_dir(self._abs(rel))
        elif kind == "file":
            self.fs.delete_file(self._abs(rel))

    def make(self) -> None:
        """Create the folder itself (object stores have no folders: their first file makes one)."""
        if self.renames:
            self.fs.create_dir(self.root, recursive=True)

    def _probe(self) -> None:
        """Create and remove a file (named as a temporary file, so that a probe cut short is cleared)."""
        probe = self._abs(temporary_name(f"probe-{os.urandom(4).hex()}.json"))
        self.make()
        with self.fs.open_output_stream(probe) as out:
            out.write(b"{}")
        self.fs.delete_file(probe)

    def check_writable(self, option: str = "--checkpoint") -> None:
        """Refuse (exit 2, one line) a folder that cannot be written, before any work is done."""
        if self.local is not None:
            check_writable_dir(self.local, option)
            return
        # Reachable and readable now; written first by the marker, once the folder is known to be empty or ours
        # (a probe object here would leave pyarrow's folder marker in a user's folder).
        try:
            kind = self.kind()
        except OSError as exc:
            raise BadInput(f"{option} {self}: cannot be used ({_first_line(exc)})") from None
        if kind == "file":
            raise BadInput(f"{option} {self}: exists and is not a folder")

    def writable(self) -> bool:
        """Whether this process can create and remove a file in the folder (the executors' probe)."""
        try:
            self._probe()
            return True
        except OSError:
            return False
