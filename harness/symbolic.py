"""Helpers for writing a spec's symbolic (Z3) form: broker sets as bit-vectors of width N+1 (bit b =
broker b, bit 0 unused), as `harness.bitset` holds them concretely."""

from __future__ import annotations

import z3


def all_mask(n: int):
    """Brokers 1..n."""
    return z3.BitVecVal(((1 << (n + 1)) - 1) & ~1, n + 1)


def one_hot(x):
    """x is exactly one broker."""
    return z3.And(x != 0, x & (x - 1) == 0)


def within(x, y):
    """x is a subset of y."""
    return x & ~y == 0


def count(x):
    """|x| as an integer."""
    return z3.Sum([z3.If(z3.Extract(i, i, x) == 1, 1, 0) for i in range(1, x.size())])


def zmin(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = z3.If(x < out, x, out)
    return out


def zmax(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = z3.If(x > out, x, out)
    return out


def const(x, v):
    """A Z3 literal of x's sort with Python value v."""
    if z3.is_bool(x):
        return z3.BoolVal(bool(v))
    return z3.BitVecVal(v, x.size()) if z3.is_bv(x) else z3.IntVal(v)
