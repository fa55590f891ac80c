"""Broker and server sets as bitmasks (bit i = id i): what states store, and what a Z3
bit-vector is too. Shared by specs so each protocol reads in set terms."""

from __future__ import annotations


def bit(i: int) -> int:
    return 1 << i


def mask(ids) -> int:
    """The set of `ids`."""
    m = 0
    for i in ids:
        m |= 1 << i
    return m


def members(m: int) -> list[int]:
    """The ids in set `m`, ascending."""
    return [i for i in range(m.bit_length()) if m >> i & 1]


def size(m: int) -> int:
    return m.bit_count()


def as_set(m: int) -> str:
    """A set as traces and reasons show it: {1,3}."""
    return "{" + ",".join(map(str, members(m))) + "}"


def as_list(values) -> str:
    """An ordered list (replicas, a log's epochs) as traces and reasons show it: [2,3]."""
    return "[" + ",".join(map(str, values)) + "]"
