"""What an action changed, element by element: the one comparison `show`, `diff`, `check`'s inline trace
(harness/present.py) and the explorer read.

Two states of one schema are walked together: records and maps field by field, plain values whole (a log
of epochs, a replica list: short, and read best whole), and lists of records by element, so that a
broker's inbox that gains one request reads `brokers[2].inbox[1]: + LEADER_AND_ISR(...)`, not the whole
inbox before and after. Lists are matched with difflib's SequenceMatcher (the longest matching blocks, as
`diff` does); a list declared unordered (a set or bag of messages kept sorted) by multiset difference,
since its positions mean nothing. Where a list keeps its length and an element changes in place (kip435's
partitions, a log record rewritten), the change is followed into that element, field by field.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Iterable, Iterator

from harness.itf import ById, ItfType, Record, Seq

ABSENT = "(absent)"  # a map entry one side lacks (a trace of another config: a broker fewer)


@dataclass(frozen=True)
class Change:
    """One change: `set` (a value replaced: before -> after), `add` or `remove` (an element of the
    sequence at `path`, at `index`: its position after the change for `add`, before it for `remove`)."""

    path: str  # the field: `partitions[0].isr`, `brokers[2].inbox`
    kind: str  # "set" | "add" | "remove"
    before: str | None  # as shown; None for `add`
    after: str | None  # as shown; None for `remove`
    index: int | None = None  # the element's position, for add/remove

    @property
    def address(self) -> str:
        """The path `--fields` matches: an element's own (`brokers[2].inbox[1]`), else the field's."""
        return self.path if self.index is None else f"{self.path}[{self.index}]"

    def text(self) -> str:
        if self.kind == "set":
            return f"{self.path}: {self.before} -> {self.after}"
        return f"{self.address}: " + (f"+ {self.after}" if self.kind == "add" else f"- {self.before}")

    def to_json(self) -> dict:
        return {"field": self.path, "change": self.kind, "index": self.index, "before": self.before, "after": self.after}


def changes(schema: ItfType, before: Any, after: Any, path: str = "") -> list[Change]:
    """Every change from `before` to `after` (two values of `schema`), in field order."""
    return list(_walk(schema, before, after, path))


def by_path(edits: Iterable[Change]) -> dict[str, tuple[str, str]]:
    """Changes as {path: (before, after)}, as tables read them (the explorer's, replay's differences): an
    element added or removed is (absent) on the other side; one removed and one added at a position read
    as that position's before and after."""
    table: dict[str, tuple[str, str]] = {}
    for c in edits:
        before, after = table.get(c.address, (ABSENT, ABSENT))
        table[c.address] = (before if c.before is None else c.before, after if c.after is None else c.after)
    return table


def _walk(t: ItfType, a: Any, b: Any, path: str) -> Iterator[Change]:
    if a == b:
        return
    if isinstance(t, Record):
        for (name, sub), x, y in zip(t.fields.items(), a, b):
            yield from _walk(sub, x, y, f"{path}.{name}" if path else name)
    elif isinstance(t, ById):
        for i in range(max(len(a), len(b))):
            where = f"{path}[{i + t.base}]"
            if i < len(a) and i < len(b):
                yield from _walk(t.item, a[i], b[i], where)
            else:  # an entry only one side has: its leaves against (absent)
                gone = i < len(a)
                for leaf, shown in t.item.leaves(a[i] if gone else b[i], where):
                    yield Change(leaf, "set", shown if gone else ABSENT, ABSENT if gone else shown)
    elif isinstance(t, Seq) and isinstance(t.item, Record):
        yield from (_bag if t.unordered else _sequence)(t, a, b, path)
    else:
        yield Change(path, "set", t.show(a), t.show(b))


def _sequence(t: Seq, a: tuple, b: tuple, path: str) -> Iterator[Change]:
    # autojunk off: it treats elements frequent in long sequences (a log's epochs) as noise
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1 and len(a) == len(b):
            for k in range(i2 - i1):  # rewritten in place: follow the change into the element
                yield from _walk(t.item, a[i1 + k], b[j1 + k], f"{path}[{j1 + k}]")
            continue
        for i in range(i1, i2):
            yield Change(path, "remove", t.item.show(a[i]), None, i)
        for j in range(j1, j2):
            yield Change(path, "add", None, t.item.show(b[j]), j)


def _bag(t: Seq, a: tuple, b: tuple, path: str) -> Iterator[Change]:
    gone, new = Counter(a) - Counter(b), Counter(b) - Counter(a)
    for i, x in enumerate(a):
        if gone[x]:
            gone[x] -= 1
            yield Change(path, "remove", t.item.show(x), None, i)
    for j, y in enumerate(b):
        if new[y]:
            new[y] -= 1
            yield Change(path, "add", None, t.item.show(y), j)
