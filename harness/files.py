"""Writing files the way every part of the harness must: atomically, and only where it may."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.errors import BadInput


def temporary_name(name: str) -> str:
    """The name a file is written under before its rename (a checkpoint tells such leftovers by it)."""
    return f"{name}.tmp{os.getpid()}"


def reason(exc: OSError) -> str:
    """An OSError in a few words: a full disk and a file-size limit say which they are."""
    if exc.errno == errno.EFBIG:  # the process's RLIMIT_FSIZE (`ulimit -f`), or the filesystem's own maximum
        return "File too large (over the file-size limit, ulimit -f)"
    if exc.errno:  # the OS's own words (pyarrow's strerror wraps them in its own)
        return os.strerror(exc.errno)
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


@contextlib.contextmanager
def publishing(name: str, discard: Callable[[], object]) -> Iterator[None]:
    """Around the writing of file `name` through a temporary one: on any failure `discard()` removes the
    temporary file (its own OSError ignored: the folder may be gone, and then nothing of ours is left in it),
    and a write the OS refuses (a full disk, a file-size limit, a read-only folder) is BadInput naming `name`."""
    try:
        yield
    except BaseException as exc:
        with contextlib.suppress(OSError):
            discard()
        if isinstance(exc, OSError):
            raise BadInput(f"cannot write {name}: {reason(exc)}") from None
        raise


def write_atomic(target: Path, write: Callable[[Path], Any]) -> None:
    """Write to a temporary name, then rename: an interrupted or failed write never leaves a partial file
    (nor replaces a complete one), and never its temporary file."""
    tmp = target.with_name(temporary_name(target.name))
    with publishing(str(target), lambda: tmp.unlink(missing_ok=True)):
        target.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, target)


NAME_MAX = 255  # bytes in one file or folder name, on Linux's filesystems


def path_problem(text: str) -> str | None:
    """Why a path option's value cannot be meant as a path, or None. An empty value would be the current
    folder (Path('') is '.'), a blank one a folder named by spaces: both are a slip, not a choice."""
    if not text.strip():
        return "an empty or blank path (give a folder, or . for the current one)"
    if "\0" in text:  # the OS cannot name it (Python raises ValueError, not OSError)
        return "a path cannot contain a NUL character"
    # Path.exists raises (rather than answers False) for a name the OS cannot hold: ENAMETOOLONG
    longest = max((len(os.fsencode(part)) for part in Path(text).parts), default=0)
    if longest > NAME_MAX:
        return f"a name in it is {longest:,} bytes long (the filesystem allows {NAME_MAX})"
    return None


def check_writable_dir(path: str | os.PathLike, option: str) -> None:
    """Refuse (exit 2) a directory that cannot be created or written, before any work is done. Give the
    option's text, not a Path of it: Path('') is already '.'."""
    text = os.fspath(path)
    if problem := path_problem(text):
        raise BadInput(f"{option} {text!r}: {problem}")
    path = Path(text)
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if path.exists() and not path.is_dir():
        raise BadInput(f"{option} {path}: exists and is not a directory")
    if probe.exists() and not probe.is_dir():
        raise BadInput(f"{option} {path}: cannot be created under {probe}, which is a file")
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        what = "is on a read-only filesystem" if probe.is_dir() and os.statvfs(probe).f_flag & os.ST_RDONLY else \
            "is not a writable directory"
        raise BadInput(f"{option} {path}: cannot be written ({probe} {what})")
