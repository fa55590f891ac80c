"""stdout and stderr when their reader is gone (`harness list | head -1`, `harness list >&-`, a log collector
that died).

stdout carries the result. When its reader has left, before the start or half way, the command ends as a
process killed by SIGPIPE does: exit 141, nothing printed about it (there is nobody to read it), no
traceback and no "Exception ignored" at the interpreter's exit. A stdout closed before the start is the same
case: fd 1 is taken by a pipe without a reader, so that the first write fails as it would on a left pipe and
no file the process opens later can land on fd 1.

stderr carries progress and diagnostics, not the result: when its reader has left, they are dropped and the
command ends with its own exit code (a refusal still exits 2, an incomplete search 3), so that a verdict never
depends on whether anyone reads the log. A stderr closed before the start is given /dev/null.

Python ignores SIGPIPE, so a write to a pipe without a reader raises BrokenPipeError rather than killing
the process; `install` and `delivering_result` are what every entry point (harness/cli.py, ci/nightly.py)
wraps itself in.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import sys
from typing import Iterator, NoReturn

EXIT_STDOUT_GONE = 128 + signal.SIGPIPE  # 141, as a shell reports a process killed by SIGPIPE


class _Diagnostics:
    """stderr as a stream whose writes never fail for a reader that left: from then on it writes to /dev/null."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._drop()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def _drop(self) -> None:
        _onto(self._stream.fileno(), os.open(os.devnull, os.O_WRONLY))
        with contextlib.suppress(OSError):  # what the stream still holds goes to /dev/null too
            self._stream.flush()

    def __getattr__(self, name: str):  # fileno, isatty, encoding, ...: the stream's own
        return getattr(self._stream, name)


def _onto(fd: int, new: int) -> None:
    """Put the open descriptor `new` on `fd` (closing what was there) and close `new` itself."""
    if new != fd:
        os.dup2(new, fd)
        os.close(new)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _pipe_without_reader(fd: int) -> None:
    read_end, write_end = os.pipe()  # either end may itself be `fd` (the lowest free descriptor)
    if read_end != fd:
        os.close(read_end)
    _onto(fd, write_end)


class _WholeWrites(io.BufferedWriter):
    """stdout's buffer. CPython's BufferedWriter, when the reader leaves in the middle of a large write (one
    past its buffer, written straight through), returns the short count and drops the error, and
    TextIOWrapper ignores the count: the rest of the result would be lost without a word, exit 0. Writing
    the rest raises the error."""

    def write(self, data) -> int:
        data = memoryview(data).cast("B")
        written = super().write(data)
        while written < len(data):
            written += super().write(data[written:])
        return written


def install() -> None:
    """Give a closed stdout or stderr its stand-in, make stdout's writes whole or failed, and stderr drop what
    its reader no longer takes. The first thing an entry point does (before any file is opened, which could
    otherwise get fd 1 or 2). Streams redirected by the caller (a test running the CLI in its process) are
    left as they are."""
    if sys.stdout is sys.__stdout__:  # None if fd 1 was closed at the start
        if not _is_open(1):
            _pipe_without_reader(1)
        was = sys.stdout
        if was is not None:
            was.flush()
        sys.stdout = io.TextIOWrapper(_WholeWrites(io.FileIO(1, "w", closefd=False)),
                                      encoding=was.encoding if was else None, errors=was.errors if was else None,
                                      line_buffering=bool(was and was.line_buffering),
                                      write_through=bool(was and was.write_through))
    if sys.stderr is sys.__stderr__:
        if not _is_open(2):
            _onto(2, os.open(os.devnull, os.O_WRONLY))
            sys.stderr = open(2, "w", closefd=False)  # Python started with sys.stderr None
        sys.stderr = _Diagnostics(sys.stderr)


def stdout_gone() -> bool:
    """Whether stdout is a pipe (or socket) whose reader has left: tells a BrokenPipeError of stdout from one
    of a socket or a child's pipe, which is a fault of its own."""
    poller = select.poll()
    poller.register(1, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def exit_stdout_gone() -> NoReturn:
    _onto(1, os.open(os.devnull, os.O_WRONLY))  # what stdout still holds is flushed at exit: to nowhere
    sys.exit(EXIT_STDOUT_GONE)


@contextlib.contextmanager
def delivering_result() -> Iterator[None]:
    """Around an entry point: stdout is flushed before the process exits (not by the interpreter at its
    shutdown, which could only print "Exception ignored" and exit 120), and a BrokenPipeError of stdout, at
    a print or at that flush, is exit 141."""
    try:
        try:
            yield
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        if not stdout_gone():
            raise
        exit_stdout_gone()
