"""Symmetry reduction, as TLC's SYMMETRY sets: ids that no part of a config tells apart (brokers in no replica
list, target, leader or initial set) are interchangeable, so states that differ only by a permutation of them
behave alike. A spec declares, per config, the groups of interchangeable ids (`Spec.symmetry`); this module
permutes a state through its typed schema and gives the canonical form a search dedupes on.

How a state is permuted follows from its ITF types: `ById` tables are reordered, `IdSet` bitmasks and `OptId`
values renamed, records, sequences and tuples walked. Ids held in plain ints (a message's `dest`, an ordered
replica list `Seq(Int())`) are named by the spec (`id_fields`): the schema cannot tell them from counters.

The canonical form of a state is the smallest of its permuted images (under the spec's view, if any): equal
for every state of one orbit, so a search that dedupes on it keeps one state per orbit. Searches keep real
states (the representative found, not the canonical image), so traces are runs of the model as recorded.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Iterable

from harness.errors import BadInput
from harness.itf import ById, IdSet, Int, ItfType, OptId, Record, Seq, Tup

MAX_PERMUTATIONS = 5_040  # 7!: each new state is permuted this many times; beyond it a search would crawl
ID_LIMIT = 61  # ids live in 0..60 (IdSet bitmasks)

Permuter = Callable[[object, tuple], object]  # (value, mapping) -> the value with every id i renamed mapping[i]


def _permute_set(mask: int, p: tuple) -> int:
    out = 0
    while mask:
        low = mask & -mask
        out |= 1 << p[low.bit_length() - 1]
        mask ^= low
    return out


def _permute_id(v: int, p: tuple) -> int:
    return p[v]


def _permuter(t: ItfType, id_fields: frozenset, is_id: bool = False) -> Permuter | None:
    """How to permute a value of type `t`, or None where it holds no id (left as it is)."""
    if isinstance(t, IdSet):
        return _permute_set
    if isinstance(t, OptId) or (is_id and isinstance(t, Int)):
        return _permute_id
    if isinstance(t, ById):
        item = _permuter(t.item, id_fields)
        base = t.base

        def by_id(v: tuple, p: tuple) -> tuple:
            out = list(v)
            for i, x in enumerate(v):
                out[p[i + base] - base] = x if item is None else item(x, p)
            return tuple(out)
        return by_id
    if isinstance(t, Seq):
        item = _permuter(t.item, id_fields, is_id)
        return None if item is None else (lambda v, p: tuple([item(x, p) for x in v]))
    if isinstance(t, Tup):
        items = [_permuter(i, id_fields) for i in t.items]
        if not any(items):
            return None
        return lambda v, p: tuple([x if f is None else f(x, p) for f, x in zip(items, v)])
    if isinstance(t, Record):
        fields = [_permuter(ft, id_fields, name in id_fields) for name, ft in t.fields.items()]
        if not any(fields):
            return None
        make = t.cls._make
        return lambda v, p: make([x if f is None else f(x, p) for f, x in zip(fields, v)])
    return None


def _field_types(t: ItfType) -> Iterable[tuple[str, ItfType]]:
    """Every (field name, type) of every record in a schema."""
    if isinstance(t, Record):
        for name, ft in t.fields.items():
            yield name, ft
            yield from _field_types(ft)
    elif isinstance(t, (Seq, ById)):
        yield from _field_types(t.item)
    elif isinstance(t, Tup):
        for i in t.items:
            yield from _field_types(i)


def state_permuter(schema: ItfType, id_fields: Iterable[str] = ()) -> Permuter:
    """`permute(state, mapping)`: the state with every id i renamed `mapping[i]` (mapping[0] == 0, "none").
    `id_fields` names the record fields whose plain ints (or sequences of ints) are ids; a name that is no
    such field is a TypeError, so a typo cannot leave an id unpermuted."""
    id_fields = frozenset(id_fields)
    plain = {name for name, ft in _field_types(schema)
             if isinstance(ft, Int) or (isinstance(ft, Seq) and isinstance(ft.item, Int))}
    if id_fields - plain:
        raise TypeError(f"id_fields {sorted(id_fields - plain)}: not a record field of ints or of a sequence of ints")
    return _permuter(schema, id_fields) or (lambda v, p: v)


def mappings(groups: Iterable[Iterable[int]]) -> list[tuple]:
    """Every mapping (a tuple, id -> id) that permutes the ids within each group and fixes all others, the
    identity first. BadInput when there are more than MAX_PERMUTATIONS."""
    groups = [sorted(g) for g in groups if len(set(g)) > 1]
    count = math.prod(math.factorial(len(g)) for g in groups)
    if count > MAX_PERMUTATIONS:
        raise BadInput(f"symmetry: {count:,} permutations of the interchangeable ids {groups}; at most "
                       f"{MAX_PERMUTATIONS:,} (fewer spare ids)")
    out = []
    for images in itertools.product(*(itertools.permutations(g) for g in groups)):
        p = list(range(ID_LIMIT))
        for g, image in zip(groups, images):
            for i, j in zip(g, image):
                p[i] = j
        out.append(tuple(p))
    return out


def canonical_form(permute: Permuter, perms: list[tuple], view: Callable | None) -> Callable:
    """`canonical(state)`: the smallest permuted image of the state (of its view, if given): one value per orbit."""
    others = perms[1:]  # the first is the identity
    if view is None:
        return lambda s: min([s] + [permute(s, p) for p in others])
    return lambda s: min([view(s)] + [view(permute(s, p)) for p in others])


def unnamed_ids(count: int, *named: Iterable[int]) -> list[tuple[int, ...]]:
    """The ids 1..count that none of `named` (a config's replica lists, targets, leader...) contains, as one
    group: the usual `interchangeable` of a spec whose config names ids."""
    used = {i for group in named for i in group}
    return [tuple(i for i in range(1, count + 1) if i not in used)]
