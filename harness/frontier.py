"""BFS levels beyond a memory budget, on disk (`bfs.explore(frontier_memory=...)`, `check --frontier-memory`).

A level is written in chunks of states, MessagePack files in a work folder this module creates (a fresh
`harness-frontier-*` folder under the parent given, never one that existed) and removes at the end of the
search, on an error and on an interrupt (also when the CLI's last resort ends a process whose main thread
did not stop in time: `interrupt.own_folder`). A level being built keeps at most one chunk in memory, and one
being expanded reads one chunk at a time and removes its file once read, so BFS holds the visited set plus a
window of about two chunks; the budget sets the chunk's size from the memory of a decoded state (which
shares nothing, unlike the states a level is built of: sizing on those let the chunks read back take twice
the budget).
Files are the harness's own, read back with `Model.decode_trusted`'s decoder: data only, never code.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import msgpack

from harness import interrupt
from harness.errors import BadInput
from harness.itf import fast_decoder

SAMPLE = 512  # states measured to size the chunks


def deep_size(state: tuple) -> int:
    """Bytes a state holds on its own, as it is when decoded: a decoded state shares no part with another,
    while states in a level being built share unchanged parts with their parents (so hold less)."""
    total, stack = 0, [state]
    while stack:
        x = stack.pop()
        total += sys.getsizeof(x)
        if isinstance(x, tuple):
            stack.extend(x)
    return total


class FrontierFiles:
    """The work folder of one search and the chunk size; `level()` starts a level. A context manager: the
    folder is removed on leaving it, however the search ended."""

    def __init__(self, model, memory: int, parent: str | None = None, batch: int = 1) -> None:
        parent = parent if parent is not None else tempfile.gettempdir()
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
            raise BadInput(f"--frontier-dir {parent}: not a writable folder")
        self.memory, self.batch = memory, batch
        self.chunk: int | None = None  # states per chunk, a multiple of `batch`, set on the first SAMPLE states
        self.decode = fast_decoder(model.schema)
        self.folder = tempfile.mkdtemp(prefix="harness-frontier-", dir=parent)  # new, ours alone
        interrupt.own_folder(self.folder)  # removed by the CLI's last resort too, if a signal ends the process
        self.files = 0
        self.spilled = 0  # states written, over the whole search
        self.bytes_written = 0

    def __enter__(self) -> "FrontierFiles":
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        interrupt.forget_folder(self.folder)

    def level(self) -> "Level":
        return Level(self)

    def size_chunks(self, sample: list) -> int:
        """Two chunks (one read, one written) within the budget; at least one batch of parents."""
        per_state = max(1, sum(map(deep_size, sample)) // len(sample))
        chunk = self.memory // (2 * per_state) // self.batch * self.batch
        self.chunk = max(self.batch, chunk)
        return self.chunk

    def write(self, states: list) -> str:
        self.files += 1
        path = os.path.join(self.folder, f"chunk-{self.files:08d}.msgpack")
        blob = msgpack.packb(states)
        with open(path, "xb") as fh:  # never over another file
            fh.write(blob)
        self.spilled += len(states)
        self.bytes_written += len(blob)
        return path

    def read(self, path: str) -> list:
        with open(path, "rb") as fh:
            return list(map(self.decode, msgpack.unpackb(fh.read(), use_list=False)))


class Level:
    """One BFS level as the search uses a list: `append`, `len`, `level[i]` (and `level[i] = s`, a kept state
    replaced under a view) and `level[a:b]` in order. Full chunks go to disk; the rest stays in memory."""

    def __init__(self, files: FrontierFiles) -> None:
        self.files = files
        self.chunks: list[str] = []  # files, in order; removed once read in order
        self.on_disk = 0  # states in the files
        self.tail: list = []  # the states after them
        self.replaced: dict[int, tuple] = {}  # position on disk -> the state that replaced it
        self._cached: tuple[int, list] = (-1, [])

    def append(self, state: tuple) -> None:
        tail = self.tail
        tail.append(state)
        chunk = self.files.chunk
        if chunk is None and len(tail) >= SAMPLE:
            chunk = self.files.size_chunks(tail[:SAMPLE])
        if chunk is not None and len(tail) >= chunk:
            self.chunks.append(self.files.write(tail[:chunk]))
            self.on_disk += chunk
            self.tail = tail[chunk:]

    def __len__(self) -> int:
        return self.on_disk + len(self.tail)

    def _chunk(self, index: int) -> list:
        if self._cached[0] != index:
            states = self.files.read(self.chunks[index])
            base = index * self.files.chunk
            for pos, s in self.replaced.items():
                if base <= pos < base + len(states):
                    states[pos - base] = s
            self._cached = (index, states)
        return self._cached[1]

    def _drop(self, index: int) -> None:
        """Remove the file of chunk `index`, read for the last time (none before the first chunk)."""
        if index >= 0 and self.chunks[index] is not None:
            os.remove(self.chunks[index])
            self.chunks[index] = None

    def __getitem__(self, key):
        on_disk = self.on_disk
        if isinstance(key, slice):  # reading the level in order, a batch at a time (never across a chunk)
            start, stop = key.start, min(key.stop, len(self))
            if start >= on_disk:
                self._drop(len(self.chunks) - 1)  # past the files: the last one is read
                return self.tail[start - on_disk:stop - on_disk]
            chunk = self.files.chunk
            index = start // chunk
            self._drop(index - 1)  # the previous chunk is read
            lo = start - index * chunk
            return self._chunk(index)[lo:lo + stop - start]
        if key >= on_disk:
            return self.tail[key - on_disk]
        if key in self.replaced:
            return self.replaced[key]
        return self._chunk(key // self.files.chunk)[key % self.files.chunk]

    def __setitem__(self, key: int, state: tuple) -> None:
        if key >= self.on_disk:
            self.tail[key - self.on_disk] = state
        else:
            self.replaced[key] = state
            if self._cached[0] == key // self.files.chunk:
                self._cached[1][key % self.files.chunk] = state
