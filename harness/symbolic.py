"""Helpers for writing a spec's symbolic (Z3) form: broker sets as bit-vectors of width N+1 (bit b =
broker b, bit 0 unused), as `harness.bitset` holds them concretely; and the names its variables read as.

Names: a symbolic form opts in by declaring `STATE_FIELDS`, its variable -> `StateField` (the state field it
stands for, as `show` names it, and how its value reads there). `prove`'s counterexamples to induction are
then written and printed with those names (`state_fields`), so that a reader sees `partition.isr = {1,2}`
rather than `I = {1,2}`. A variable the model's state has no field for (a derived set, an input of the
environment) is named by what it means. A form without `STATE_FIELDS` keeps its own names.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from harness.itf import Enum, Record


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


@dataclass(frozen=True)
class StateField:
    """What a symbolic variable stands for: `path`, the field as `show` names it (`partition.isr`), or for a
    variable the state has no field for, what it means; `reads`: "value" (an integer or a flag, as is),
    "broker" (a one-hot broker set read as the broker, 0 for none) or "per-broker" (one broker set per
    broker: `path` holds `{}`, replaced by each broker's number). Broker sets read as their members."""

    path: str
    reads: str = "value"


def field(path: str) -> StateField:
    """The variable is this state field (a broker set, an integer or a flag)."""
    return StateField(path)


def broker(path: str) -> StateField:
    """A one-hot variable that is this field's broker (0: none)."""
    return StateField(path, "broker")


def per_broker(path: str) -> StateField:
    """A variable packing one broker set per broker: `path` names broker b's with `{}`."""
    return StateField(path, "per-broker")


def state_fields(sym, values: dict, schema: Record | None = None) -> dict:
    """A symbolic state's values (variable -> value as `prove` reads it: broker sets as member lists, a
    per-broker variable as {broker: members}) under the names of the form's `STATE_FIELDS`; a coded field of
    `schema` (the spec's state: a status, a step) by its name, as traces write it."""
    names = getattr(sym, "STATE_FIELDS", {})
    out = {}
    for var, value in values.items():
        f = names.get(var)
        if f is None:
            out[var] = value
        elif f.reads == "per-broker":
            out.update({f.path.format(b): members for b, members in value.items()})
        elif f.reads == "broker":
            out[f.path] = value[0] if value else 0
        else:
            coded = _field_type(schema, f.path)
            named = isinstance(coded, Enum) and not isinstance(value, bool) and 0 <= value < len(coded.names)
            out[f.path] = coded.names[value] if named else value  # a code the state has no name for stays a number
    return out


def _field_type(schema: Record | None, path: str):
    """The ITF type of the field at a dotted `path` of plain records ("controller.step"), else None."""
    t = schema
    for part in path.split("."):
        if not isinstance(t, Record) or part not in t.fields:
            return None
        t = t.fields[part]
    return t
