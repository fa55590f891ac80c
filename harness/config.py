"""Configs: the frozen `Config` dataclass a spec's config extends, its field kinds (`param`, `budget`,
`ids`, `variant`) with their bounds, and how values are checked and parsed (a preset, `--set KEY=VALUE`,
a trace's #meta) before a config object exists. `Spec.config`/`Spec.config_from_dict` (harness.model)
resolve a config with these; `config_digest` is what a trace records of it. harness.model re-exports the
names specs use, so a spec imports everything from one place.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Iterable

from harness.errors import BadInput
from harness.itf import shown

NO_MUTATION = "none"


@dataclass(frozen=True)
class Config:
    """Base of every spec's config. Subclasses add fields, all with defaults."""

    mutation: str = NO_MUTATION


def distinct_ids(group: Iterable[int], n: int) -> bool:
    """A config's id list is non-empty, without repeats, within 1..n (brokers, servers)."""
    group = tuple(group)
    return bool(group) and len(set(group)) == len(group) and all(1 <= i <= n for i in group)


def variant(default: Any, doc: str, choices: tuple | None = None) -> Any:
    """A config field that selects a named protocol variant (a real alternative protocol)."""
    if choices is None:
        choices = (False, True) if isinstance(default, bool) else (default,)
    return field(default=default, metadata={"variant": tuple(choices), "doc": doc})


Bounds = tuple[int, int]  # inclusive (least, most)


def param(default: Any, doc: str, *, lo: int | None = None, hi: int | None = None, length: Bounds | None = None,
          item_length: Bounds | None = None) -> Any:
    """A documented config constant (bounds, sizes, initial assignment, ...) with its allowed values.

    `lo`..`hi` (inclusive) bound every int of the value: the value itself, or each int in a tuple (of
    tuples); `length=(least, most)` bounds a tuple's length and `item_length` the length of each inner
    tuple of a tuple of tuples. They are required wherever the default holds them (an int, a tuple), so
    no int a spec reads is unbounded. They are static bounds, checked on every config (presets, `--set`,
    a trace's config) before the config object exists, so no value can make `bind` or `init` allocate or
    loop absurdly; relations between fields (ids within 1..brokers) are the spec's `validate()`.
    """
    metadata: dict[str, Any] = {"doc": doc}
    if _ints_in(default):
        if lo is None or hi is None or not lo <= hi:
            raise TypeError(f"param {doc!r}: an int-valued param needs lo <= hi")
        metadata["range"] = (lo, hi)
    if isinstance(default, tuple):
        if length is None:
            raise TypeError(f"param {doc!r}: a tuple param needs length=(least, most)")
        metadata["length"] = tuple(length)
        if any(isinstance(v, tuple) for v in default):
            if item_length is None:
                raise TypeError(f"param {doc!r}: a tuple of tuples needs item_length=(least, most)")
            metadata["item_length"] = tuple(item_length)
    problem = _out_of_bounds(default, metadata)
    if problem:
        raise TypeError(f"param {doc!r}: its default {problem}")
    return field(default=default, metadata=metadata)


MAX_BUDGET = 1000


def budget(default: int, doc: str, *, least: int = 0) -> Any:
    """A config bound on how often something may happen in one run (records, faults, elections, ...),
    in `least`..MAX_BUDGET: far beyond what a search can exhaust, and cheap to hold, since a budget only
    counts down in the state (a spec whose action table grows with a bound declares a smaller one)."""
    return param(default, doc, lo=least, hi=MAX_BUDGET)


def ids(default: tuple, doc: str, *, most: int, lists: int | None = None) -> Any:
    """A config list of broker/server ids, each in 1..`most`, 1 to `most` of them (which ids exist and
    whether they repeat is the spec's `validate()`); with `lists`, a list of 1 to `lists` such lists."""
    if lists is None:
        return param(default, doc, lo=1, hi=most, length=(1, most))
    return param(default, doc, lo=1, hi=most, length=(1, lists), item_length=(1, most))


def _ints_in(value: Any) -> bool:
    if isinstance(value, tuple):
        return any(_ints_in(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)


# Bounds of a field that declares none (variants, specs outside this repository): ints a state could
# hold, and lists no bigger than a person would type.
FALLBACK_RANGE = (-(2**61 - 2), 2**61 - 2)
FALLBACK_LENGTH = (0, 1024)
MAX_VALUE_CHARS = 100_000  # a longer --set value is refused unparsed (the longest legal one, kip642 targets, has ~15,000)
_INT_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)  # int() also takes "1_000", " 1", "\u0661" and other digit sets


def _show(value: Any) -> str:
    """A config value for an error message: one line, at most 40 characters, cheap on huge values."""
    return shown(value, 40)


def range_text(f: dataclasses.Field | None) -> str:
    """What a config field allows, for messages and `list`: `1..8`, `1 to 64 lists of 1 to 8 ints in 1..8`."""
    metadata = f.metadata if f is not None else {}
    lo, hi = metadata.get("range", FALLBACK_RANGE)
    text = f"{lo}..{hi}"
    if "length" in metadata:
        text = f"ints in {text}"
        if "item_length" in metadata:
            text = "lists of {} to {} {}".format(*metadata["item_length"], text)
        text = "{} to {} {}".format(*metadata["length"], text)
    return text


def _allowed(f: dataclasses.Field | None, annotation: Any) -> str:
    return "" if annotation in (bool, str) else f" (allowed: {range_text(f)})"


def _out_of_bounds(value: Any, metadata: dict, depth: int = 0) -> str | None:
    """Why a type-checked value breaks its field's bounds (None if it does not)."""
    if isinstance(value, tuple):
        least, most = metadata.get("length" if depth == 0 else "item_length", FALLBACK_LENGTH)
        if not least <= len(value) <= most:
            return f"has {len(value):,} items" if depth == 0 else f"has a list of {len(value):,} items"
        for v in value:
            problem = _out_of_bounds(v, metadata, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        lo, hi = metadata.get("range", FALLBACK_RANGE)
        if not lo <= value <= hi:
            return "is out of range" if depth == 0 else f"holds {_show(value)}, out of range"
    return None


def _check_value(name: str, value: Any, annotation: Any, f: dataclasses.Field | None = None) -> Any:
    """Check a config value against its annotation (normalising lists to tuples), then its field's bounds."""
    if isinstance(value, (list, tuple)) and len(value) > 64 * FALLBACK_LENGTH[1]:  # beyond any bound: do not walk it
        raise BadInput(f"config key {name!r}: a list of {len(value):,} items is far too long{_allowed(f, annotation)}")
    checked = _typed(value, annotation)
    if checked is _WRONG_TYPE:
        raise BadInput(f"config key {name!r}: {_show(value)} is not a valid {_type_name(annotation)}{_allowed(f, annotation)}")
    problem = _out_of_bounds(checked, f.metadata if f is not None else {})
    if problem:
        raise BadInput(f"config key {name!r}: {_show(value)} {problem}{_allowed(f, annotation)}")
    return checked


_WRONG_TYPE = object()


def _typed(value: Any, annotation: Any) -> Any:
    """`value` as the annotation's type (lists become tuples), or _WRONG_TYPE."""
    if annotation is bool:
        return value if isinstance(value, bool) else _WRONG_TYPE
    if annotation is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else _WRONG_TYPE
    if annotation is str:
        return value if isinstance(value, str) else _WRONG_TYPE
    if typing.get_origin(annotation) is tuple and isinstance(value, (list, tuple)):
        args = typing.get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis:
            items = tuple(_typed(v, args[0]) for v in value)
        elif len(args) == len(value):
            items = tuple(_typed(v, a) for v, a in zip(value, args))
        else:
            return _WRONG_TYPE
        return _WRONG_TYPE if any(v is _WRONG_TYPE for v in items) else items
    return _WRONG_TYPE


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) if typing.get_origin(annotation) is None else str(annotation).replace("typing.", "")


def parse_setting(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise BadInput(f"--set/--variant expects key=value, got {_show(text)}")
    key, _, value = text.partition("=")
    return key.strip(), value.strip()


def _parse_text(name: str, text: str, annotation: Any, f: dataclasses.Field | None = None) -> Any:
    """Parse a command-line value for a config field: ints, booleans, strings, JSON for tuples; then
    check it like any config value (type and bounds)."""
    allowed = _allowed(f, annotation)
    if len(text) > MAX_VALUE_CHARS:
        raise BadInput(f"config key {name!r}: a value of {len(text):,} characters is too long "
                       f"(at most {MAX_VALUE_CHARS:,}){allowed}")
    if annotation is bool:
        lowered = text.lower()
        if lowered in ("true", "on", "yes", "1"):
            return True
        if lowered in ("false", "off", "no", "0"):
            return False
        raise BadInput(f"config key {name!r}: {_show(text)} is not a boolean (true/false)")
    if annotation is int:
        if not _INT_TEXT.fullmatch(text):
            raise BadInput(f"config key {name!r}: {_show(text)} is not an int{allowed}")
        try:
            value = int(text)
        except ValueError:  # more than 4300 digits
            raise BadInput(f"config key {name!r}: {_show(text)} is out of range{allowed}") from None
        return _check_value(name, value, annotation, f)
    if annotation is str:
        return text
    try:
        value = json.loads(text if text.startswith("[") else f"[{text}]")
    except (ValueError, RecursionError):  # not JSON, an int of over 4300 digits, nesting deeper than the stack
        raise BadInput(f"config key {name!r}: {_show(text)} is not a valid {_type_name(annotation)} "
                       f"(use JSON, e.g. [1,2,3]){allowed}") from None
    return _check_value(name, value, annotation, f)


def config_to_dict(cfg: Config) -> dict:
    """The fully resolved config as JSON-ready data (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


def config_digest(cfg: Config) -> str:
    """A short digest of the resolved config: a trace records it to detect edited configs. It covers the
    fields that differ from their defaults only, so a field added with a default (a parameter, a variant)
    leaves the digests of the traces written before as they were."""
    blob = json.dumps(without_defaults(type(cfg), config_to_dict(cfg)), sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def without_defaults(config_class: type, values: dict) -> dict:
    """`values` (JSON-ready, as `config_to_dict` gives) without the fields of `config_class` at their defaults;
    compared as JSON, so that True is not 1. Keys the class does not have are kept."""
    defaults = {f.name: f.default for f in dataclasses.fields(config_class) if f.default is not dataclasses.MISSING}
    return {k: v for k, v in values.items() if k not in defaults or json.dumps(v) != json.dumps(defaults[k])}


def preset_of(cfg: Config) -> str | None:
    return getattr(cfg, "_preset", None)
