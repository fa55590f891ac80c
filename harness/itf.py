"""ITF value types: how state fields map to the Informal Trace Format and back.

A state field is annotated with one of these (through `typing.Annotated`), or is a plain `int`,
`bool` or a nested NamedTuple. Each type converts a Python value to ITF JSON (`to_itf`), parses
ITF JSON strictly (`from_itf`, raising BadInput with the path of the first bad value), rebuilds a
value from its canonical plain JSON (`from_plain`), and validates that a value can be hashed
deterministically (`validate`).

Broker sets are bitmasks (bit b set <=> broker b is a member): compact, canonical, cheap to
hash, and the same operations work on Z3 bit-vectors.
"""

from __future__ import annotations

import re
import reprlib
import typing
from typing import Any, Iterator

from harness.bitset import members
from harness.errors import BadInput

MAX_SAFE = 2**53 - 1
MAX_STATE_INT = 2**61 - 2  # hash(int) is int mod (2**61 - 1): stay below it
# Integer literals and #bigint strings: state ints have at most 19 digits; longer ones only cost
# time (int() of n digits is quadratic) and Python refuses more than 4300 with a ValueError.
MAX_INT_DIGITS = 30
MAX_SHOWN_CHARS = 60  # a value quoted in an error message
MAX_MESSAGE_CHARS = 300  # a whole error message, or the file name in it

# Characters that would break a one-line message or the terminal: C0/C1 controls (newlines, ESC),
# Unicode line and paragraph separators, bidi overrides (they reorder what is displayed), and lone
# surrogates (they cannot be encoded for output).
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_BIGINT = re.compile(f"-?[0-9]{{1,{MAX_INT_DIGITS}}}")

class _ShortRepr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:  # repr() of a huge int is slow, and refused past 4300 digits
        return repr(x) if x.bit_length() <= 100 else f"<int of {x.bit_length():,} bits>"


_short_repr = _ShortRepr()
_short_repr.maxlevel, _short_repr.maxstring, _short_repr.maxother = 2, MAX_SHOWN_CHARS, MAX_SHOWN_CHARS


def spelled(value: Any) -> str:
    """A value as text, booleans as users type them in `--set` (true/false), everywhere the harness prints one."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def counted(n: int, noun: str) -> str:
    """`1 step`, `3 steps`: a count with its noun (regular plurals: the harness counts steps, states, runs)."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` cut to `limit` characters, with every unprintable character escaped: safe to print as one line."""
    cut = text if len(text) <= limit else text[: limit - 3] + "..."
    return UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], cut)


def shown(value: Any, limit: int = MAX_SHOWN_CHARS + 10) -> str:
    """A short single-line repr of a value read from a file or a command line, for error messages
    (repr escapes newlines and surrogates; reprlib bounds the work on huge values and huge ints)."""
    return one_line(_short_repr.repr(value), limit)


def _bad(where: str, what: str, got: Any) -> BadInput:
    return BadInput(f"{where}: expected {what}, got {shown(got)}")


def _int_from_itf(obj: Any, where: str) -> int:
    if isinstance(obj, bool):
        raise _bad(where, "an integer", obj)
    if isinstance(obj, int):
        return obj
    if (isinstance(obj, dict) and set(obj) == {"#bigint"} and isinstance(obj["#bigint"], str)
            and _BIGINT.fullmatch(obj["#bigint"])):  # int() would also take "1_0", " 1" and other digit sets
        return int(obj["#bigint"])
    bigint = isinstance(obj, dict) and "#bigint" in obj
    raise _bad(where, f"an integer{f' (#bigint: at most {MAX_INT_DIGITS} digits)' if bigint else ''}", obj)


def _int_to_itf(v: int) -> Any:
    return v if -MAX_SAFE <= v <= MAX_SAFE else {"#bigint": str(v)}


class ItfType:
    name = "value"

    def to_itf(self, v: Any) -> Any:
        raise NotImplementedError

    def from_itf(self, obj: Any, where: str) -> Any:
        raise NotImplementedError

    def from_plain(self, obj: Any, where: str) -> Any:
        return self.from_itf(obj, where)

    def validate(self, v: Any, where: str) -> None:
        raise NotImplementedError

    def show(self, v: Any) -> str:
        """Compact human rendering (for `harness show`)."""
        return str(v)


    def leaves(self, v: Any, path: str) -> Iterator[tuple[str, str]]:
        """(path, shown value) of each leaf: records and maps are opened, so diffs stay readable."""
        yield path, self.show(v)

class Int(ItfType):
    name = "int"

    def __init__(self, lo: int = 0, hi: int = MAX_STATE_INT) -> None:
        self.lo, self.hi = lo, hi

    def to_itf(self, v: int) -> Any:
        return _int_to_itf(v)

    def from_itf(self, obj: Any, where: str) -> int:
        v = _int_from_itf(obj, where)
        if not self.lo <= v <= self.hi:
            raise _bad(where, f"an integer in [{self.lo}, {self.hi}]", v)
        return v

    def validate(self, v: Any, where: str) -> None:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_STATE_INT:
            raise TypeError(f"{where}: state ints must be in [0, 2**61-2], got {v!r}")


class Bool(ItfType):
    name = "bool"

    def to_itf(self, v: bool) -> bool:
        return bool(v)

    def from_itf(self, obj: Any, where: str) -> bool:
        if isinstance(obj, bool):
            return obj
        raise _bad(where, "a boolean", obj)

    def validate(self, v: Any, where: str) -> None:
        if not isinstance(v, bool):
            raise TypeError(f"{where}: expected a bool, got {v!r}")

    def show(self, v: bool) -> str:
        return spelled(v)


class Offset(Int):
    """A log offset: a record's, a log end offset (LEO), a high watermark, a fetch offset. `base` is the
    first record's offset in the spec's convention: 0 as in Kafka, 1 where a spec follows a 1-based TLA+
    specification. Values are kept and shown as the spec has them, so that states read as its source (and
    TLC) does; every view of such a spec names the convention (harness/present.py `offset_convention`),
    and `kafka` gives Kafka's number for a view that converts. `nil` stands for no offset."""

    name = "offset"

    def __init__(self, base: int = 0, nil: int | None = None) -> None:
        super().__init__()
        self.base, self.nil = base, nil

    def kafka(self, v: int) -> int | None:
        """The offset in Kafka's convention (the first record at 0); None for `nil`."""
        return None if v == self.nil else v - self.base


class Enum(ItfType):
    """A coded field with named values (a broker status, a role, an entry kind): the state holds the
    code 0..n-1, a trace holds the name as an ITF string. Unpacking gives the codes, so a spec writes
    `OFFLINE, CRASHED = BROKER_STATUS = Enum("OFFLINE", "CRASHED")` and its rules compare ints."""

    def __init__(self, *names: str) -> None:
        if not names or len(set(names)) != len(names):
            raise TypeError("an Enum needs distinct names")
        self.names = names
        self.codes = {n: i for i, n in enumerate(names)}
        self.name = "one of " + ", ".join(names)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.names)))

    def to_itf(self, v: int) -> str:
        return self.names[v]

    def from_itf(self, obj: Any, where: str) -> int:
        if isinstance(obj, str) and obj in self.codes:
            return self.codes[obj]
        raise _bad(where, self.name, obj)

    def from_plain(self, obj: Any, where: str) -> int:
        v = _int_from_itf(obj, where)
        if not 0 <= v < len(self.names):
            raise _bad(where, f"a code in [0, {len(self.names) - 1}]", v)
        return v

    def validate(self, v: Any, where: str) -> None:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < len(self.names):
            raise TypeError(f"{where}: expected a code of {self.name}, got {v!r}")

    def show(self, v: int) -> str:
        return self.names[v] if 0 <= v < len(self.names) else str(v)


class OptId(Int):
    """An id where 0 stands for "none"; ITF shows none as -1 (Kafka's NO_LEADER)."""

    name = "id or -1"

    def to_itf(self, v: int) -> int:
        return v if v else -1

    def from_itf(self, obj: Any, where: str) -> int:
        v = _int_from_itf(obj, where)
        if v == -1:
            return 0
        if v <= 0 or v > self.hi:
            raise _bad(where, "a positive id or -1", v)
        return v

    def from_plain(self, obj: Any, where: str) -> int:
        return Int.from_itf(self, obj, where)

    def show(self, v: int) -> str:
        return str(v) if v else "none"


class IdSet(ItfType):
    """A set of small non-negative ids stored as a bitmask."""

    name = "set of ids"

    def to_itf(self, v: int) -> dict:
        return {"#set": members(v)}

    def from_itf(self, obj: Any, where: str) -> int:
        if not (isinstance(obj, dict) and set(obj) == {"#set"} and isinstance(obj["#set"], list)):
            raise _bad(where, "an ITF set {'#set': [...]}", obj)
        mask = 0
        for item in obj["#set"]:
            i = _int_from_itf(item, where)
            if not 0 <= i < 61:
                raise _bad(where, "set members in [0, 60]", i)
            mask |= 1 << i
        return mask

    def from_plain(self, obj: Any, where: str) -> int:
        return Int().from_itf(obj, where)

    def validate(self, v: Any, where: str) -> None:
        Int().validate(v, where)

    def show(self, v: int) -> str:
        return "{" + ",".join(map(str, members(v))) + "}"


class Seq(ItfType):
    """A sequence (Python tuple, ITF JSON list). `unordered`: a set or bag kept as a sorted tuple (a
    network's messages), whose positions mean nothing: changes to it are shown by multiset difference
    (harness/changes.py); the trace format is the same."""

    def __init__(self, item: "ItfType | type", unordered: bool = False) -> None:
        self.item, self.unordered = type_of_annotation(item), unordered
        self.name = f"{'bag' if unordered else 'seq'} of {self.item.name}"

    def to_itf(self, v: tuple) -> list:
        return [self.item.to_itf(x) for x in v]

    def from_itf(self, obj: Any, where: str) -> tuple:
        if not isinstance(obj, list):
            raise _bad(where, "a list", obj)
        return tuple(self.item.from_itf(x, f"{where}[{i}]") for i, x in enumerate(obj))

    def from_plain(self, obj: Any, where: str) -> tuple:
        if not isinstance(obj, list):
            raise _bad(where, "a list", obj)
        return tuple(self.item.from_plain(x, f"{where}[{i}]") for i, x in enumerate(obj))

    def validate(self, v: Any, where: str) -> None:
        if type(v) is not tuple:
            raise TypeError(f"{where}: expected a tuple, got {v!r}")
        for i, x in enumerate(v):
            self.item.validate(x, f"{where}[{i}]")

    def show(self, v: tuple) -> str:
        return "[" + ",".join(self.item.show(x) for x in v) + "]"

    def leaves(self, v: tuple, path: str) -> Iterator[tuple[str, str]]:
        """Records inside are opened (`partitions[0].isr`, `brokers[2].inbox[0].kind`) so that `--fields`
        reaches them; a sequence of plain values (a log of epochs) is one leaf, as is an empty one."""
        if not v or not isinstance(self.item, Record):
            yield path, self.show(v)
            return
        for i, x in enumerate(v):
            yield from self.item.leaves(x, f"{path}[{i}]")


class Tup(ItfType):
    """A fixed-length tuple of possibly different types (ITF `#tup`)."""

    def __init__(self, *items: ItfType) -> None:
        self.items = items
        self.name = "<<" + ", ".join(i.name for i in items) + ">>"

    def to_itf(self, v: tuple) -> dict:
        return {"#tup": [t.to_itf(x) for t, x in zip(self.items, v)]}

    def from_itf(self, obj: Any, where: str) -> tuple:
        if not (isinstance(obj, dict) and set(obj) == {"#tup"} and isinstance(obj["#tup"], list) and len(obj["#tup"]) == len(self.items)):
            raise _bad(where, f"an ITF tuple of {len(self.items)}", obj)
        return tuple(t.from_itf(x, f"{where}[{i}]") for i, (t, x) in enumerate(zip(self.items, obj["#tup"])))

    def from_plain(self, obj: Any, where: str) -> tuple:
        if not (isinstance(obj, list) and len(obj) == len(self.items)):
            raise _bad(where, f"a list of {len(self.items)}", obj)
        return tuple(t.from_plain(x, f"{where}[{i}]") for i, (t, x) in enumerate(zip(self.items, obj)))

    def validate(self, v: Any, where: str) -> None:
        if type(v) is not tuple or len(v) != len(self.items):
            raise TypeError(f"{where}: expected a tuple of {len(self.items)}, got {v!r}")
        for i, (t, x) in enumerate(zip(self.items, v)):
            t.validate(x, f"{where}[{i}]")

    def show(self, v: tuple) -> str:
        return "(" + ",".join(t.show(x) for t, x in zip(self.items, v)) + ")"


class ById(ItfType):
    """A function from ids base..base+n-1 to values: a Python tuple, an ITF `#map`."""

    def __init__(self, item: "ItfType | type", base: int = 1) -> None:
        self.item, self.base = type_of_annotation(item), base
        self.name = f"map id -> {self.item.name}"

    def to_itf(self, v: tuple) -> dict:
        return {"#map": [[i + self.base, self.item.to_itf(x)] for i, x in enumerate(v)]}

    def from_itf(self, obj: Any, where: str) -> tuple:
        if not (isinstance(obj, dict) and set(obj) == {"#map"} and isinstance(obj["#map"], list)):
            raise _bad(where, "an ITF map {'#map': [[k, v], ...]}", obj)
        pairs = obj["#map"]
        out = []
        for i, pair in enumerate(pairs):
            if not (isinstance(pair, list) and len(pair) == 2) or _int_from_itf(pair[0], where) != i + self.base:
                raise _bad(f"{where}#map[{i}]", f"the pair [{i + self.base}, value]", pair)
            out.append(self.item.from_itf(pair[1], f"{where}[{i + self.base}]"))
        return tuple(out)

    def from_plain(self, obj: Any, where: str) -> tuple:
        return Seq(self.item).from_plain(obj, where)

    def validate(self, v: Any, where: str) -> None:
        Seq(self.item).validate(v, where)

    def show(self, v: tuple) -> str:
        return "{" + ", ".join(f"{i + self.base}:{self.item.show(x)}" for i, x in enumerate(v)) + "}"

    def leaves(self, v: tuple, path: str) -> Iterator[tuple[str, str]]:
        for i, x in enumerate(v):
            yield from self.item.leaves(x, f"{path}[{i + self.base}]")


class Record(ItfType):
    """A NamedTuple: an ITF record (a JSON object keyed by field name)."""

    def __init__(self, cls: type, fields: dict[str, ItfType]) -> None:
        self.cls, self.fields = cls, fields
        self.name = cls.__name__

    def to_itf(self, v: tuple) -> dict:
        return {k: t.to_itf(x) for (k, t), x in zip(self.fields.items(), v)}

    def from_itf(self, obj: Any, where: str) -> tuple:
        if not isinstance(obj, dict):
            raise _bad(where, f"a {self.name} record", obj)
        if obj.keys() != self.fields.keys():
            missing = sorted(self.fields.keys() - obj.keys())
            extra = sorted(obj.keys() - self.fields.keys())
            raise BadInput(f"{where}: {self.name} fields differ (missing {shown(missing)}, unexpected {shown(extra)})")
        return self.cls(*(t.from_itf(obj[k], f"{where}.{k}") for k, t in self.fields.items()))

    def from_plain(self, obj: Any, where: str) -> tuple:
        if not (isinstance(obj, list) and len(obj) == len(self.fields)):
            raise _bad(where, f"a list of {len(self.fields)} fields", obj)
        return self.cls(*(t.from_plain(x, f"{where}.{k}") for (k, t), x in zip(self.fields.items(), obj)))

    def validate(self, v: Any, where: str) -> None:
        if type(v) is not self.cls:
            raise TypeError(f"{where}: expected {self.name}, got {type(v).__name__}")
        for (k, t), x in zip(self.fields.items(), v):
            t.validate(x, f"{where}.{k}")

    def show(self, v: tuple) -> str:
        """`Name(field=value, ...)`; a record whose first field is a coded `kind` is named by it, as Kafka
        names its requests (`LeaderAndIsr(ctrl_epoch=2, ...)` rather than `Request(kind=LeaderAndIsr, ...)`)."""
        items = list(zip(self.fields.items(), v))
        name = self.name
        if items and items[0][0][0] == "kind" and isinstance(items[0][0][1], Enum):
            name, items = items[0][0][1].show(items[0][1]), items[1:]
        return name + "(" + ", ".join(f"{k}={t.show(x)}" for (k, t), x in items) + ")"

    def leaves(self, v: tuple, path: str) -> Iterator[tuple[str, str]]:
        for (k, t), x in zip(self.fields.items(), v):
            yield from t.leaves(x, f"{path}.{k}" if path else k)


def type_of_annotation(annotation: Any) -> ItfType:
    """The ITF type of a state annotation: int, bool, a NamedTuple, or Annotated[..., ItfType]."""
    if isinstance(annotation, ItfType):
        return annotation
    if typing.get_origin(annotation) is typing.Annotated:
        for extra in typing.get_args(annotation)[1:]:
            if isinstance(extra, ItfType):
                return extra
    if annotation is bool:
        return Bool()
    if annotation is int:
        return Int()
    if isinstance(annotation, type) and issubclass(annotation, tuple) and hasattr(annotation, "_fields"):
        hints = typing.get_type_hints(annotation, include_extras=True)
        return Record(annotation, {f: type_of_annotation(hints[f]) for f in annotation._fields})
    raise TypeError(f"cannot map {annotation!r} to an ITF type; annotate it with Annotated[..., ItfType]")


def fast_decoder(t: ItfType):
    """A function turning the plain form of a state as nested tuples (MessagePack with
    use_list=False) back into the state, or None where the plain value already is the state's
    value; no per-value validation: for the engines' own trusted encodings (Spark frontiers).
    Traces and anything a user hands in go through `from_plain`/`from_itf`, which validate."""
    if isinstance(t, Record):
        subs = [fast_decoder(f) for f in t.fields.values()]
        cls, new = t.cls, tuple.__new__
        if all(s is None for s in subs):
            return lambda v: new(cls, v)
        return lambda v: new(cls, [x if s is None else s(x) for s, x in zip(subs, v)])
    if isinstance(t, (Seq, ById)):
        sub = fast_decoder(t.item)
        return None if sub is None else (lambda v: tuple(map(sub, v)))
    if isinstance(t, Tup):
        subs = [fast_decoder(i) for i in t.items]
        if all(s is None for s in subs):
            return None
        return lambda v: tuple(x if s is None else s(x) for s, x in zip(subs, v))
    return None  # ints and booleans decode as themselves
