"""ITF traces: write and read the Informal Trace Format of Apalache and Quint.

A trace file is self-contained: its `#meta` names the spec, the fully resolved config (and its
digest), the variant and mutation, the engine and seed, the harness version and the outcome (the
violated property, or none); each state's own `#meta` carries the action (rule and parameters)
that produced it. Reading validates the structure with a JSON Schema and then decodes every value
through the spec's typed schema; nothing in the file is ever executed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from harness import __version__
from harness.errors import BadInput
from harness.model import Action, Model, Spec, config_digest, config_to_dict, preset_of, variant_of

FORMAT = "ITF"
FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"

TRACE_SCHEMA = {
    "type": "object",
    "required": ["#meta", "vars", "states"],
    "properties": {
        "#meta": {
            "type": "object",
            "required": ["format", "spec", "config", "config_digest", "outcome", "harness_version"],
            "properties": {
                "format": {"const": FORMAT},
                "spec": {"type": "string"},
                "config": {"type": "object"},
                "config_digest": {"type": "string"},
                "preset": {"type": ["string", "null"]},
                "mutation": {"type": "string"},
                "variant": {"type": "object"},
                "engine": {"type": "string"},
                "seed": {"type": ["integer", "null"]},
                "harness_version": {"type": "string"},
                "outcome": {
                    "type": "object",
                    "required": ["kind"],
                    "properties": {
                        "kind": {"enum": ["none", "invariant", "deadlock", "liveness"]},
                        "property": {"type": ["string", "null"]},
                    },
                },
            },
        },
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
                        "properties": {"index": {"type": "integer"}, "action": {"type": "object"}},
                    }
                },
            },
        },
        "loop": {"type": "integer", "minimum": 0},
    },
}


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
        "outcome": outcome.to_json(),
        "engine": engine,
        "seed": seed,
        "harness_version": __version__,
        "length": len(states) - 1,
    }
    if extra:
        meta.update(extra)
    itf_states = []
    for i, (state, action) in enumerate(zip(states, actions)):
        state_meta: dict[str, Any] = {"index": i}
        if action is not None:
            state_meta["action"] = action.to_json()
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
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(trace_document(model, states, actions, outcome, engine, seed, loop, extra)))
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
    """Load and fully validate a trace; BadInput (exit 2) if it is malformed or foreign."""
    from harness.registry import load_spec  # the registry imports specs; keep trace.py light

    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read trace {str(p)!r}: {exc.strerror if isinstance(exc, OSError) else exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{p}: not JSON (truncated or corrupt?): {exc.msg} at line {exc.lineno}") from None
    if isinstance(doc, dict) and isinstance(doc.get("#meta"), dict) and doc["#meta"].get("kind") == "cti":
        raise BadInput(f"{p}: a counterexample to induction (two symbolic states), not a run of the model; "
                       "`check --engine z3` gives a replayable trace")
    try:
        jsonschema.validate(doc, TRACE_SCHEMA)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(x) for x in exc.absolute_path) or "top level"
        raise BadInput(f"{p}: not an ITF trace of this harness ({where}: {exc.message[:120]})") from None
    meta = doc["#meta"]
    spec = load_spec(meta["spec"])
    if doc["vars"] != list(spec.schema.fields):
        raise BadInput(f"{p}: its variables {doc['vars']} are not those of spec {spec.name!r}: a trace of another spec or version")
    try:
        cfg = spec.config_from_dict(meta["config"], preset=meta.get("preset"))
    except BadInput as exc:
        raise BadInput(f"{p}: recorded config does not fit spec {spec.name!r}: {exc}") from None
    if config_digest(cfg) != meta["config_digest"]:
        raise BadInput(f"{p}: the recorded config was changed after the trace was written (digest mismatch)")
    model = spec.bind(cfg)
    states, actions = [], []
    for i, raw in enumerate(doc["states"]):
        if raw["#meta"]["index"] != i:
            raise BadInput(f"{p}: state {i} has index {raw['#meta']['index']}")
        states.append(model.from_itf(raw, f"state {i}"))
        if i == 0:
            actions.append(None)
        elif "action" not in raw["#meta"]:
            raise BadInput(f"{p}: state {i} does not record the action that produced it")
        else:
            actions.append(Action.from_json(raw["#meta"]["action"]))
    outcome = Outcome(meta["outcome"]["kind"], meta["outcome"].get("property"))
    loop = doc.get("loop")
    if loop is not None and loop >= len(states):
        raise BadInput(f"{p}: loop index {loop} is past the last state")
    if outcome.kind == "invariant" and outcome.property not in spec.invariants:
        raise BadInput(f"{p}: spec {spec.name!r} has no invariant {outcome.property!r}")
    if outcome.kind == "liveness" and outcome.property not in spec.liveness:
        raise BadInput(f"{p}: spec {spec.name!r} has no liveness property {outcome.property!r}")
    return Trace(str(p), meta, spec, model, states, actions, outcome, loop)
