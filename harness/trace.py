"""ITF traces: write and read the Informal Trace Format of Apalache and Quint.

A trace file is self-contained: its `#meta` names the spec, the fully resolved config (and its
digest), the variant and mutation, the engine and seed, the harness version and the outcome (the
violated property, or none); each state's own `#meta` carries the action (rule and parameters)
that produced it. Reading validates the structure with a JSON Schema and then decodes every value
through the spec's typed schema; nothing in the file is ever executed. The input limits below are
checked before anything is decoded (docs/ARCHITECTURE.md, "Input limits").
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, NoReturn

import jsonschema

from harness import __version__
from harness.errors import BadInput
from harness.files import write_atomic
from harness.itf import MAX_INT_DIGITS, MAX_SHOWN_CHARS, UNPRINTABLE, one_line, shown
from harness.model import Action, Model, Spec, config_digest, config_to_dict, preset_of, variant_of, without_defaults

FORMAT = "ITF"
FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"

# Input limits (docs/ARCHITECTURE.md, "Input limits"): a broken or hostile file must cost bounded time
# and memory and end in one line of BadInput, never a traceback or a hang.
MAX_TRACE_BYTES = 64 * 2**20  # the largest committed trace is 132 KB; room for traces of thousands of steps
MAX_NESTING = 64  # committed traces nest 11 deep; json.loads recurses once per level (RecursionError near 1000)
MAX_STRING_CHARS = 4096  # names, descriptions and notes: the longest committed string has 239 characters


def _closed(required: list[str], properties: dict) -> dict:
    """A JSON Schema object with these keys and no others."""
    return {"type": "object", "required": required, "additionalProperties": False, "properties": properties}


# `#meta` keys of every file the harness writes: traces and counterexamples to induction.
_COMMON_META = {"format": {"const": FORMAT}, "format-description": {"type": "string"}, "description": {"type": "string"},
                "spec": {"type": "string"}, "mutation": {"type": "string"}}
TRACE_SCHEMA = _closed(["#meta", "vars", "states"], {
    "#meta": _closed(["format", "spec", "config", "config_digest", "outcome", "harness_version"], {
        **_COMMON_META,
        "config": {"type": "object"},
        "config_digest": {"type": "string"},
        "preset": {"type": ["string", "null"]},
        "variant": {"type": "object", "additionalProperties": {"type": ["string", "boolean", "integer"]}},
        "engine": {"type": "string"},
        "seed": {"type": ["integer", "null"]},
        "harness_version": {"type": "string"},
        "length": {"type": "integer", "minimum": 0},
        "outcome": {
            "type": "object",
            "required": ["kind"],
            "additionalProperties": False,
            "properties": {
                "kind": {"enum": ["none", "invariant", "deadlock", "liveness"]},
                "property": {"type": ["string", "null"]},
                "statement": {"type": "string"},  # the property's docstring
                "reason": {"type": "string"},  # what fails, where the property says
                # other invariants the run violates before its end (a `--continue` search explores past
                # violations): property -> the first state where it fails; replay checks each
                "passes": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
            },
        },
        "why": {"type": "string"},  # the corpus's explanation of a committed trace
        "note": {"type": "string"},  # an engine's remark on a violation
        "conformance": {"type": "object"},  # `conform`: Kafka's side at the diverging step (harness/conform)
    }),
    "vars": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    "states": {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "required": ["#meta"],
            "properties": {
                "#meta": {
                    "type": "object",
                    "required": ["index"],
                    "additionalProperties": False,
                    "properties": {
                        "index": {"type": "integer"},
                        "action": {
                            "type": "object",
                            "required": ["rule", "params"],
                            "additionalProperties": False,
                            "properties": {"rule": {"type": "string"},
                                           "params": {"type": "object", "additionalProperties": {"type": "integer"}},
                                           "label": {"type": "string"}},  # for people; replay reads params
                        },
                    },
                }
            },
        },
    },
    "loop": {"type": "integer", "minimum": 0},
})
TRACE_VALIDATOR = jsonschema.validators.validator_for(TRACE_SCHEMA)(TRACE_SCHEMA)  # checked once, not per file


@dataclass
class Outcome:
    kind: str  # "none" | "invariant" | "deadlock" | "liveness"
    property: str | None = None

    def to_json(self) -> dict:
        return {"kind": self.kind, "property": self.property}


@dataclass
class Trace:
    """A decoded trace: the spec and config it was recorded against, states and actions."""

    path: str
    meta: dict
    spec: Spec
    model: Model
    states: list[tuple]
    actions: list[Action | None]  # actions[i] produced states[i]; actions[0] is None (init)
    outcome: Outcome
    loop: int | None


def outcome_document(model: Model, outcome: Outcome, last: tuple, recorded: dict | None = None) -> dict:
    """The outcome with the property's statement and, for an invariant, the reason it gives at `last`, each
    folded to one line (a docstring's line breaks would make the trace unreadable: see Input limits). What
    a trace already `recorded` is kept; older traces record neither. Traces and `show` both use this."""
    doc = {**outcome.to_json(), **(recorded or {})}
    prop = outcome.property or ("Deadlock" if outcome.kind == "deadlock" else None)
    if not doc.get("statement") and prop:
        statement = model.statement(prop)
        if statement:
            doc["statement"] = " ".join(statement.split())
    if not doc.get("reason") and outcome.kind == "invariant":
        try:
            reason = model.explain(outcome.property, last)
        except Exception:  # noqa: BLE001 - a reason is commentary: an edited trace's odd state may break it
            reason = None
        if reason:
            doc["reason"] = " ".join(reason.split())
    return doc


def earlier_violations(model: Model, states: list[tuple], outcome: Outcome) -> dict[str, int]:
    """Invariants a run violates before its recorded outcome, each with the first state where it fails.
    Only a search that goes on past a violation (`--continue`) writes such a run; a trace records them so
    that replay can tell them from a model that now fails earlier."""
    if outcome.kind not in ("none", "invariant"):
        return {}
    end = len(states) - (outcome.kind == "invariant")  # others may fail beside the recorded one at the end
    first: dict[str, int] = {}
    for i, s in enumerate(states[:end]):
        for name in model.violated(s):
            first.setdefault(name, i)
    return first


def trace_document(model: Model, states: list[tuple], actions: list[Action | None], outcome: Outcome,
                   engine: str, seed: int | None = None, loop: int | None = None, extra: dict | None = None) -> dict:
    cfg = model.config
    meta = {
        "format": FORMAT,
        "format-description": FORMAT_DESCRIPTION,
        "description": f"{model.name}: {outcome.kind}" + (f" of {outcome.property}" if outcome.property else ""),
        "spec": model.name,
        "preset": preset_of(cfg),
        "config": config_to_dict(cfg),
        "config_digest": config_digest(cfg),
        "variant": variant_of(model.spec, cfg),
        "mutation": cfg.mutation,
        "outcome": outcome_document(model, outcome, states[-1]),
        "engine": engine,
        "seed": seed,
        "harness_version": __version__,
        "length": len(states) - 1,
    }
    passes = earlier_violations(model, states, outcome)
    if passes:
        meta["outcome"]["passes"] = passes
    if extra:
        meta.update(extra)
    itf_states = []
    for i, (state, action) in enumerate(zip(states, actions)):
        state_meta: dict[str, Any] = {"index": i}
        if action is not None:
            state_meta["action"] = dict(action.to_json(), label=model.format_action(action))
        itf_states.append({"#meta": state_meta, **model.to_itf(state)})
    doc = {"#meta": meta, "vars": list(model.schema.fields), "states": itf_states}
    if loop is not None:
        doc["loop"] = loop
    return doc


def dumps(doc: dict) -> str:
    """Deterministic text: same trace, same bytes."""
    return json.dumps(doc, indent=1, ensure_ascii=True) + "\n"


def write_trace(path: Path, model: Model, states: list[tuple], actions: list[Action | None], outcome: Outcome,
                engine: str, seed: int | None = None, loop: int | None = None, extra: dict | None = None) -> Path:
    text = dumps(trace_document(model, states, actions, outcome, engine, seed, loop, extra))
    write_atomic(path, lambda p: p.write_text(text))  # an interrupt never leaves half a trace
    return path


def trace_filename(model: Model, outcome: Outcome, engine: str) -> str:
    cfg = model.config
    parts = [model.name, preset_of(cfg) or "custom"]
    preset = model.spec.presets.get(preset_of(cfg) or "", {})
    for key in model.spec.variants:  # variants chosen on top of the preset
        default = preset.get(key, model.spec.config_fields[key].default)
        if getattr(cfg, key) != default:
            parts.append(f"{key}={str(getattr(cfg, key)).lower()}")
    if cfg.mutation != "none":
        parts.append(cfg.mutation)
    parts.append(outcome.property or outcome.kind)
    if engine != "bfs":
        parts.append(engine)
    return "-".join(parts).replace("/", "_") + ".itf.json"


def read_trace(path: str | Path) -> Trace:
    """Load and fully validate a trace; BadInput (exit 2) if it is malformed or foreign, with one line
    naming the file."""
    return _read(path, lambda doc, p: _decode_trace(doc, p))


def read_shown(path: str | Path) -> "Trace | Cti":
    """What `show` reads: a trace, or a prover's counterexample to induction (`#meta.kind == "cti"`),
    within the same limits and with the same one-line refusals as `read_trace`."""
    return _read(path, lambda doc, p: _decode_cti(doc, p) if _is_cti(doc) else _decode_trace(doc, p))


def _read(path: str | Path, decode) -> Any:
    p = Path(path)
    try:
        return decode(_parse_json(_read_text(p)), str(p))
    except BadInput as exc:
        raise BadInput(f"{one_line(str(p))}: {one_line(str(exc))}") from None


_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _check_regular(st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "a special file")
        raise BadInput(f"not a trace file but {kind} (only regular files are read)")
    if st.st_size > MAX_TRACE_BYTES:
        raise BadInput(f"{st.st_size:,} bytes, larger than {MAX_TRACE_BYTES:,} (limit)")


def _read_text(p: Path) -> str:
    """The file's text. A FIFO or device is refused before it is opened (reading one could block or never
    end); it is opened non-blocking and checked again in case it was replaced in between."""
    try:
        _check_regular(os.stat(p))
        with os.fdopen(os.open(p, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
            _check_regular(os.fstat(f.fileno()))
            data = f.read(MAX_TRACE_BYTES + 1)  # bounded even if the file grows meanwhile
    except OSError as exc:
        raise BadInput(f"cannot read trace: {exc.strerror or exc}") from None
    except ValueError:  # os.stat of a path holding a NUL byte
        raise BadInput("cannot read trace: the path holds a NUL byte") from None
    if len(data) > MAX_TRACE_BYTES:
        raise BadInput(f"larger than {MAX_TRACE_BYTES:,} bytes (limit)")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark is allowed (RFC 8259 §8.1)
    except UnicodeDecodeError as exc:
        raise BadInput(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


_ESCAPE = re.compile(r"\\.", re.DOTALL)
_STRING = re.compile(r'"[^"]*"')  # once escapes are gone a string has no inner quote: linear, no backtracking
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NESTING_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _nesting(text: str) -> int:
    """The deepest nesting of arrays and objects, found without recursion. Where the text is not JSON
    this may count wrongly, but only past the first error, where json.loads stops anyway."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", _ESCAPE.sub("", text)))
    return max(accumulate(map(_NESTING_STEP.__getitem__, brackets)), default=0)


def _parse_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_INT_DIGITS:
        raise BadInput(f"an integer of {len(literal.lstrip('-')):,} digits, more than {MAX_INT_DIGITS} (limit)")
    return int(literal)


def _refuse_float(literal: str) -> NoReturn:
    raise BadInput(f"the number {shown(literal)} is not an integer (ITF numbers are integers)")


def _object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise BadInput(f"the key {shown(duplicate)} appears twice in one object")
    return obj


def _parse_json(text: str) -> Any:
    if _nesting(text) > MAX_NESTING:
        raise BadInput(f"nesting deeper than {MAX_NESTING} levels (limit)")
    try:
        doc = json.loads(text, parse_int=_parse_int, parse_float=_refuse_float, parse_constant=_refuse_float,
                         object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise BadInput(f"not JSON (truncated or corrupt?): {exc.msg} at line {exc.lineno}") from None
    _check_strings(doc, ())
    return doc


def _where(path: Any) -> str:
    """A JSON path as `states/3/#meta`, each part cut short: keys come from the file."""
    return "/".join(one_line(str(part), MAX_SHOWN_CHARS) for part in path) or "top level"


def _check_strings(value: Any, path: tuple) -> None:
    """Every string, keys included, is short and printable (see UNPRINTABLE)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_string(key, path, "key")
            _check_strings(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_strings(item, (*path, i))
    elif isinstance(value, str):
        _check_string(value, path, "string")


def _check_string(text: str, path: tuple, what: str) -> None:
    if len(text) > MAX_STRING_CHARS:
        raise BadInput(f"{_where(path)}: a {what} of {len(text):,} characters, more than {MAX_STRING_CHARS} (limit)")
    bad = UNPRINTABLE.search(text)
    if bad:
        raise BadInput(f"{_where(path)}: a {what} holding {ascii(bad.group())}: control characters, line separators, "
                       "bidi overrides and lone surrogates are refused")


def _decode_trace(doc: Any, path: str) -> Trace:
    from harness.registry import load_spec  # the registry imports specs; keep trace.py light

    if _is_cti(doc):
        raise BadInput("a counterexample to induction (two symbolic states), not a run of the model; "
                       "`check --engine z3` gives a replayable trace")
    error = jsonschema.exceptions.best_match(TRACE_VALIDATOR.iter_errors(doc))
    if error is not None:
        raise BadInput(f"not an ITF trace of this harness ({_where(error.absolute_path)}: {one_line(error.message, 120)})")
    meta = doc["#meta"]
    spec = load_spec(meta["spec"])
    if doc["vars"] != list(spec.schema.fields):
        raise BadInput(f"its variables {shown(doc['vars'])} are not those of spec {spec.name!r}: "
                       "a trace of another spec or version")
    try:
        cfg = spec.config_from_dict(meta["config"], preset=meta.get("preset"))
    except BadInput as exc:
        raise BadInput(f"recorded config does not fit spec {spec.name!r}: {exc}") from None
    if config_digest(cfg) != meta["config_digest"]:
        raise BadInput("the recorded config was changed after the trace was written (digest mismatch)")
    variants = variant_of(spec, cfg)  # a variant at its default may be absent: added since the trace was written
    if meta.get("mutation", cfg.mutation) != cfg.mutation or \
            without_defaults(spec.config_class, meta.get("variant", variants)) != without_defaults(spec.config_class, variants):
        raise BadInput("the recorded mutation or variant differs from the recorded config")
    model = spec.bind(cfg)
    states, actions = [], []
    for i, raw in enumerate(doc["states"]):
        state_meta = raw["#meta"]
        if state_meta["index"] != i:
            raise BadInput(f"state {i} has index {state_meta['index']}")
        states.append(model.from_itf({k: v for k, v in raw.items() if k != "#meta"}, f"state {i}"))
        if i == 0:
            if "action" in state_meta:
                raise BadInput("state 0 records an action, but the initial state has none")
            actions.append(None)
        elif "action" not in state_meta:
            raise BadInput(f"state {i} does not record the action that produced it")
        else:
            actions.append(Action.from_json(state_meta["action"]))
    if meta.get("length", len(states) - 1) != len(states) - 1:
        raise BadInput(f"#meta says {meta['length']} steps, but there are {len(states) - 1}")
    outcome = Outcome(meta["outcome"]["kind"], meta["outcome"].get("property"))
    loop = doc.get("loop")
    if (loop is not None) != (outcome.kind == "liveness"):
        raise BadInput("a loop belongs to a liveness trace (a lasso), and only there")
    if loop is not None and loop >= len(states):
        raise BadInput(f"loop index {loop} is past the last state")
    for name, index in meta["outcome"].get("passes", {}).items():
        if name not in spec.invariants or index >= len(states):
            raise BadInput(f"the outcome's `passes` names {shown(name)} at state {index}: no such invariant or state")
    if outcome.kind == "invariant" and outcome.property not in spec.invariants:
        raise BadInput(f"spec {spec.name!r} has no invariant {shown(outcome.property)}")
    if outcome.kind == "liveness" and outcome.property not in spec.liveness:
        raise BadInput(f"spec {spec.name!r} has no liveness property {shown(outcome.property)}")
    return Trace(path, meta, spec, model, states, actions, outcome, loop)


# ------------------------------------------------------------------------- counterexamples to induction
# `prove` writes each CTI as two ITF states over the spec's symbolic state (engines/z3prove.py `cti_itf`):
# broker sets as `#set`, epochs as integers, flags as booleans, coded fields by name. `show` reads them (as data, within the
# limits above); `replay` refuses them, since they are not runs of the model.

_CTI_INT = {"type": "integer"}
_CTI_SET = {"type": "object", "required": ["#set"], "additionalProperties": False,
            "properties": {"#set": {"type": "array", "items": _CTI_INT, "maxItems": 64}}}
_CTI_VALUE = {"oneOf": [_CTI_INT, {"type": "boolean"}, _CTI_SET, {"type": "string", "maxLength": 64}]}  # a code's name
CTI_SCHEMA = _closed(["#meta", "vars", "states"], {
    "#meta": _closed(["spec", "kind", "rule", "property", "brokers", "params", "reachability"], {
        **_COMMON_META,
        "kind": {"const": "cti"},
        "rule": {"type": "string"},
        "property": {"type": "string"},
        "brokers": {"type": "integer", "minimum": 1, "maximum": 64},
        "params": {"type": "object", "maxProperties": 64, "additionalProperties": {
            "oneOf": [_CTI_INT, {"type": "boolean"}, {"type": "array", "items": _CTI_INT, "maxItems": 64}]}},
        "reachability": {"type": "string"},
        "reachable_depth": {"type": ["integer", "null"]},
    }),
    "vars": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 64, "uniqueItems": True},
    "states": {
        "type": "array", "minItems": 2, "maxItems": 2,
        "items": {"type": "object", "required": ["#meta"],
                  "properties": {"#meta": _closed(["index"], {"index": {"type": "integer"}})},
                  "additionalProperties": _CTI_VALUE},
    },
})
CTI_VALIDATOR = jsonschema.validators.validator_for(CTI_SCHEMA)(CTI_SCHEMA)


@dataclass
class Cti:
    """A counterexample to induction: a pre-state satisfying the properties, a step of `rule` with
    `params`, and a post-state violating `property`; values as read (ints, booleans, sets as lists)."""

    path: str
    meta: dict
    spec: Spec
    vars: list[str]
    states: list[dict[str, Any]]  # pre, post: var -> value

    @property
    def rule(self) -> str:
        return self.meta["rule"]

    @property
    def property(self) -> str:
        return self.meta["property"]


def _is_cti(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("#meta"), dict) and doc["#meta"].get("kind") == "cti"


def _decode_cti(doc: Any, path: str) -> Cti:
    from harness.registry import load_spec

    error = jsonschema.exceptions.best_match(CTI_VALIDATOR.iter_errors(doc))
    if error is not None:
        raise BadInput(f"not a counterexample to induction of this harness ({_where(error.absolute_path)}: "
                       f"{one_line(error.message, 120)})")
    meta = doc["#meta"]
    spec = load_spec(meta["spec"])
    if meta["property"] not in spec.invariants:
        raise BadInput(f"spec {spec.name!r} has no property {shown(meta['property'])}")
    if meta.get("mutation", "none") not in ("none", *spec.mutations):
        raise BadInput(f"spec {spec.name!r} has no mutation {shown(meta['mutation'])}")
    states = []
    for i, raw in enumerate(doc["states"]):
        if raw["#meta"]["index"] != i:
            raise BadInput(f"state {i} has index {raw['#meta']['index']}")
        values = {k: v for k, v in raw.items() if k != "#meta"}
        if values.keys() != set(doc["vars"]):
            raise BadInput(f"state {i}: its variables {shown(list(values))} are not {shown(doc['vars'])}")
        states.append({k: values[k]["#set"] if isinstance(values[k], dict) else values[k] for k in doc["vars"]})
    return Cti(path, meta, spec, list(doc["vars"]), states)
