"""Running a check with any engine: write counterexamples, build the summary, pick the exit code."""

from __future__ import annotations

from pathlib import Path

from harness.model import Model, config_to_dict, preset_of, variant_of
from harness.present import violation_json
from harness.result import CheckResult
from harness.trace import trace_filename, write_trace


def write_counterexamples(model: Model, result: CheckResult, out: Path, seed: int | None) -> None:
    for v in result.violations:
        path = out / trace_filename(model, v.outcome, result.engine)
        extra = {"note": v.note} if v.note else None
        write_trace(path, model, v.states, v.actions, v.outcome, result.engine, seed, v.loop, extra)
        v.trace_path = str(path)


def summary(model: Model, result: CheckResult) -> dict:
    """The one JSON object printed by --json."""
    cfg = model.config
    return {
        "spec": model.name,
        # the same keys, with the same meaning, as a trace's #meta: the preset's name, then every value
        "preset": preset_of(cfg),
        "config": config_to_dict(cfg),
        "variant": variant_of(model.spec, cfg),
        "mutation": cfg.mutation,
        "engine": result.engine,
        "outcome": result.outcome,
        "complete": result.complete,
        "stopped_by": result.stopped_by,
        "stats": result.stats,
        "coverage": result.coverage,
        # with statement and reason; `expected`: a failure the spec declares (check's exit code is 1 either way)
        "violations": [dict(violation_json(model, v), expected=(d := expectation(model, v)) is not None,
                            **({"declaration": d} if d else {})) for v in result.violations],
        "expected": bool(result.violations) and all(expectation(model, v) for v in result.violations),
        "warnings": result.warnings,
    }


def expectation(model: Model, violation) -> dict | None:
    """The spec's declaration that makes this violation expected (`Spec.declared_failure`), or None."""
    return model.spec.declared_failure(model.config, violation.outcome.kind, violation.outcome.property)


def trace_commands(path: str) -> list[str]:
    """The commands that replay, show and explore a written trace (the gate's and the nightly's failures
    end with them)."""
    return [f"python -m harness {command} {path}" for command in ("replay", "show", "explore")]


def exit_code(result: CheckResult) -> int:
    """1: a violation; 3: no violation, but a limit stopped the search before it was complete; 0: holds."""
    if result.violations:
        return 1
    return 0 if result.complete else 3
