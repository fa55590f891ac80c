"""What an engine returns: the outcome, its statistics and counterexamples (shared by all engines)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.model import Action
from harness.trace import Outcome


@dataclass
class Violation:
    outcome: Outcome
    states: list[tuple]
    actions: list[Action | None]  # actions[0] is None: states[0] is initial
    loop: int | None = None  # liveness lassos: index where the cycle starts
    trace_path: str | None = None
    note: str | None = None

    @property
    def depth(self) -> int:
        return len(self.states) - 1

    def to_json(self) -> dict:
        out = {"kind": self.outcome.kind, "property": self.outcome.property, "length": self.depth, "trace": self.trace_path}
        if self.loop is not None:
            out["loop"] = self.loop
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class CheckResult:
    engine: str
    complete: bool  # the whole (bounded) space was explored / the budget ran out without a bound hit
    violations: list[Violation] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    coverage: dict[str, dict[str, int]] = field(default_factory=dict)  # rule -> {"distinct", "generated"}
    warnings: list[str] = field(default_factory=list)
    stopped_by: str | None = None  # "max-states", "max-depth", "time-limit", "violation"

    @property
    def outcome(self) -> str:
        if self.violations:
            return "violation"
        return "ok" if self.complete else "incomplete"

    def record_coverage(self, rule_names: list[str], action_rule: list[int], generated: list[int],
                        discovered: list[int]) -> None:
        """Per-rule coverage from per-action counts, and a warning for every rule that never fired."""
        self.coverage = {r: {"distinct": 0, "generated": 0} for r in rule_names}
        for index, rule_index in enumerate(action_rule):
            c = self.coverage[rule_names[rule_index]]
            c["distinct"] += discovered[index]
            c["generated"] += generated[index]
        if not self.complete:  # a stopped search says nothing about rules it did not reach (the table shows 0)
            return
        for rule in self.never_fired():
            self.warnings.append(f"rule {rule} never fired in the whole state space: a modelling error, or budgets "
                                 "in this config too small to enable it")

    def never_fired(self) -> list[str]:
        return [rule for rule, c in self.coverage.items() if c.get("generated", 0) == 0]
