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
        "violations": [violation_json(model, v) for v in result.violations],  # with statement and reason
        "warnings": result.warnings,
    }


def exit_code(result: CheckResult) -> int:
    """1: a violation; 3: no violation, but a limit stopped the search before it was complete; 0: holds."""
    if result.violations:
        return 1
    return 0 if result.complete else 3
