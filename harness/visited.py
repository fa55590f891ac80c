"""The BFS visited set: every state seen, numbered in the order it was first seen, with its parent's number.

Both tables answer one question for a whole batch of successors at once (`classify`): for each key, the
number of the visited state with that key, or, for a key not seen yet, the position of its first
occurrence in the batch. The search then walks the batch in order, which keeps its results exactly
those of a state-at-a-time search (the same first finder, the same counts where it stops).

`FingerprintTable` holds 64-bit fingerprints in numpy arrays: an open-addressing index of 32-bit state
numbers (linear probing, at most half full, doubled when full) over append-only arrays of fingerprints
and parent numbers (grown by a quarter). That is 12 bytes per state plus 8 to 16 of index: at most
32 bytes per visited state, against about 100 for a dict of Python ints, and probing runs in numpy over a
batch rather than once per successor in the interpreter. `ExactTable` is the same over a dict, for
`--exact`, whose keys are whole states.
"""

from __future__ import annotations

import numpy as np

NO_PARENT = -1
MAX_LOAD = 0.5  # linear probing stays short below half full
GROWTH = 1.25  # of the fingerprint and parent arrays
REINDEX_CHUNK = 1 << 16
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of key * 2^64/phi pick the slot


class FingerprintTable:
    def __init__(self, capacity: int = 1 << 16) -> None:
        self._bits = max(10, int(capacity / MAX_LOAD - 1).bit_length())
        self._index = np.full(1 << self._bits, -1, np.int32)
        self._keys = np.empty(capacity, np.int64)
        self._parents = np.empty(capacity, np.int32)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        return self._index.nbytes + self._keys.nbytes + self._parents.nbytes

    def key(self, number: int) -> int:
        return int(self._keys[number])

    def parent(self, number: int) -> int:
        return int(self._parents[number])

    def set_parent(self, number: int, parent: int) -> None:
        self._parents[number] = parent

    def _home(self, keys: np.ndarray) -> np.ndarray:
        return ((keys.view(np.uint64) * _MULTIPLIER) >> np.uint64(64 - self._bits)).astype(np.int64)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """The number of each key's state, or -1."""
        found = np.full(len(keys), -1, np.int64)
        slot = self._home(keys)
        todo = np.arange(len(keys))
        mask = (1 << self._bits) - 1
        while len(todo):
            number = self._index[slot]
            occupied = number >= 0
            hit = occupied & (self._keys[np.where(occupied, number, 0)] == keys[todo])
            found[todo[hit]] = number[hit]
            go_on = occupied & ~hit
            todo, slot = todo[go_on], (slot[go_on] + 1) & mask
        return found

    def _place(self, numbers: np.ndarray) -> None:
        """Index the states with these numbers (their keys distinct and not yet indexed)."""
        slot = self._home(self._keys[numbers])
        mask = (1 << self._bits) - 1
        while len(numbers):
            free = self._index[slot] < 0
            # Of the keys that reach one free slot, one takes it (the last written); the others probe on.
            self._index[slot[free]] = numbers[free]
            rest = self._index[slot] != numbers
            numbers, slot = numbers[rest], (slot[rest] + 1) & mask

    def classify(self, keys: list) -> tuple[np.ndarray, np.ndarray]:
        """For each key: the number of its visited state (-1 if none) and, for a key not visited, the position
        of its first occurrence in `keys` (itself for a first one; -1 for a visited key)."""
        keys = np.array(keys, np.int64)
        known = self.find(keys)
        fresh = np.flatnonzero(known < 0)
        _, first_of_value, inverse = np.unique(keys[fresh], return_index=True, return_inverse=True)
        first = np.full(len(keys), -1, np.int64)
        first[fresh] = fresh[first_of_value[inverse]]
        return known, first

    def add(self, keys: list, parents) -> None:
        """Number the states with these keys (distinct, not visited yet), in order, from len(self)."""
        n = len(keys)
        if not n:
            return
        end = self._size + n
        if end > len(self._keys):
            capacity = max(end, int(len(self._keys) * GROWTH) + 1)
            self._keys = np.resize(self._keys, capacity)
            self._parents = np.resize(self._parents, capacity)
        self._keys[self._size:end] = keys
        self._parents[self._size:end] = parents
        if end > MAX_LOAD * len(self._index):
            while end > MAX_LOAD * (1 << self._bits):
                self._bits += 1
            self._index = np.full(1 << self._bits, -1, np.int32)
            for start in range(0, end, REINDEX_CHUNK):  # in chunks: a rehash's temporaries stay small
                self._place(np.arange(start, min(start + REINDEX_CHUNK, end)))
        else:
            self._place(np.arange(self._size, end))
        self._size = end


class ExactTable:
    """The same over whole states (or views) as dict keys, for `--exact`."""

    def __init__(self) -> None:
        self._number: dict = {}
        self._keys: list = []
        self._parents: list[int] = []

    def __len__(self) -> int:
        return len(self._keys)

    nbytes = None  # not measured: it is the states themselves

    def key(self, number: int):
        return self._keys[number]

    def parent(self, number: int) -> int:
        return self._parents[number]

    def set_parent(self, number: int, parent: int) -> None:
        self._parents[number] = parent

    def classify(self, keys: list) -> tuple[np.ndarray, np.ndarray]:
        get = self._number.get
        known = [get(k, -1) for k in keys]
        first_at: dict = {}
        first = [-1 if n >= 0 else first_at.setdefault(k, j) for j, (k, n) in enumerate(zip(keys, known))]
        return np.array(known, np.int64), np.array(first, np.int64)

    def add(self, keys: list, parents: list) -> None:
        for k in keys:
            self._number[k] = len(self._keys)
            self._keys.append(k)
        self._parents.extend(int(p) for p in parents)
