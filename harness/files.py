"""Writing files the way every part of the harness must: atomically, and only where it may."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from harness.errors import BadInput


def temporary_name(name: str) -> str:
    """The name a file is written under before its rename (a checkpoint tells such leftovers by it)."""
    return f"{name}.tmp{os.getpid()}"


def write_atomic(target: Path, write: Callable[[Path], Any]) -> None:
    """Write to a temporary name, then rename: an interrupted write never leaves a partial file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(temporary_name(target.name))
    write(tmp)
    os.replace(tmp, target)


def check_writable_dir(path: Path, option: str) -> None:
    """Refuse (exit 2) a directory that cannot be created or written, before any work is done."""
    if "\0" in str(path):  # the OS cannot name it (Python raises ValueError, not OSError)
        raise BadInput(f"{option} {str(path)!r}: a path cannot contain a NUL character")
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if path.exists() and not path.is_dir():
        raise BadInput(f"{option} {path}: exists and is not a directory")
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise BadInput(f"{option} {path}: cannot be written ({probe} is not a writable directory)")
