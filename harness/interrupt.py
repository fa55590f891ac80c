"""SIGINT and SIGTERM: every engine stops within moments, and a stopped run never reports success.

`install()` (called by the CLI) turns both signals into `Interrupted`, raised in the main thread at
the next Python bytecode. That is enough for engines written in Python (BFS, graph, Hypothesis),
but not for a main thread blocked inside a C call that does not return on its own: a Z3 query, or a
Py4J call waiting for a Spark job. So the C-level signal handler also writes to a wake-up pipe
(`signal.set_wakeup_fd`), and a watcher thread calls whatever cancellation the running engine
registered with `cancelling` (Z3's `interrupt`, Spark's `cancelAllJobs`); the blocked call returns
and the Python handler raises.

Exit codes (the project's contract): 130 for SIGINT, 143 for SIGTERM (128 + the signal number, as
a shell reports a process killed by it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import threading
from typing import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal. A KeyboardInterrupt, so that libraries which let Ctrl-C through
    (Hypothesis, Py4J) let this through too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.exit_code = 128 + signum
        self.name = signal.Signals(signum).name


GRACE_SECONDS = 1.5  # after a signal, the watcher's last resort waits this long for the main thread
# (longer than the Spark engine's 1 s stop, so that the main thread normally says it, with its hint)

_cancellers: list[Callable[[], None]] = []
_received: list[int] = []  # signals seen, in order (for code that learns of an interrupt by a return value)
_installed = False
_last_resort: Callable[[Interrupted], None] | None = None
_hint: list[str] = []  # what the running engine would tell the user if stopped now
_stopping = False  # set once the interrupt is being reported: later signals change nothing
_timer: list[threading.Timer] = []
_owned_folders: list[str] = []  # work folders made by the harness and not yet removed (`own_folder`)


def _raise(signum: int, frame) -> None:
    _received.append(signum)
    if not _stopping:
        raise Interrupted(signum)


def _watch(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data:
            return
        for cancel in list(_cancellers):
            try:
                cancel()
            except Exception:  # a cancellation that fails leaves the Python handler to stop the run
                pass
        if _last_resort is not None and not _timer:
            # An exception raised by a signal handler is lost when it lands in a garbage-collector
            # callback or a __del__ (Hypothesis registers one); then nothing would stop the run.
            _timer.append(threading.Timer(GRACE_SECONDS, _last_resort, args=(Interrupted(data[-1]),)))
            _timer[0].start()


def _quiet_unraisable(default):
    def hook(unraisable) -> None:
        if not isinstance(unraisable.exc_value, Interrupted):  # the watcher's last resort handles those
            default(unraisable)
    return hook


def install(last_resort: Callable[[Interrupted], None] | None = None) -> None:
    """Route SIGINT and SIGTERM to `Interrupted` (main thread only; idempotent). `last_resort(exc)`, if
    given, is called from the watcher thread when the process is still running GRACE_SECONDS after a
    signal; it must end the process (the CLI prints its one line and calls os._exit)."""
    global _installed, _last_resort
    _last_resort = last_resort
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    sys.unraisablehook = _quiet_unraisable(sys.unraisablehook)
    for s in SIGNALS:
        signal.signal(s, _raise)
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_fd,), name="interrupt-watcher", daemon=True).start()
    _installed = True


@contextlib.contextmanager
def cancelling(cancel: Callable[[], None]) -> Iterator[None]:
    """While the block runs, a signal also calls `cancel` from another thread (to end a C call)."""
    _cancellers.append(cancel)
    try:
        yield
    finally:
        _cancellers.remove(cancel)


def stopping() -> None:
    """The interrupt is being reported: further signals only count."""
    global _stopping
    _stopping = True


def own_folder(folder: str) -> None:
    """A work folder the harness made and removes when its run ends; the last resort removes it too, since
    it ends the process without unwinding the main thread (where the folder's owner would remove it)."""
    _owned_folders.append(folder)


def forget_folder(folder: str) -> None:
    """Its owner removed it."""
    with contextlib.suppress(ValueError):
        _owned_folders.remove(folder)


def remove_owned_folders() -> None:
    """For the last resort, before it ends the process."""
    for folder in list(_owned_folders):
        shutil.rmtree(folder, ignore_errors=True)


def note(hint: str) -> None:
    """What to tell the user if a signal stops the run from now on (say, how to resume)."""
    _hint[:] = [hint]


def hint() -> str | None:
    return _hint[0] if _hint else None


def received() -> int:
    """How many signals have arrived so far (compare before and after a call)."""
    return len(_received)


def last_signal(default: int = signal.SIGINT) -> int:
    return _received[-1] if _received else default


def reraise(default: int = signal.SIGINT) -> None:
    """Raise `Interrupted` for a call that reported its interruption by a return value (Z3 answers
    `unknown` when Ctrl-C reaches its own handler instead of Python's)."""
    raise Interrupted(last_signal(default))
