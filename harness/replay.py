"""Replay a trace against the model (harness/present.py shows it).

Replay re-executes the recorded actions from the model's initial states: each step's action must be
enabled and yield exactly the recorded next state; at the end the recorded outcome must reproduce
(the violated invariant fails on the last state and on no earlier one; a deadlock has no
successor; a lasso's loop closes and its goal never holds on the cycle). On divergence it names the
first bad step and the differing variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.changes import by_path, changes
from harness.itf import counted
from harness.model import Model
from harness.trace import Trace, earlier_violations


@dataclass
class ReplayReport:
    ok: bool
    steps: int
    message: str
    bad_step: int | None = None
    differences: dict[str, tuple[str, str]] = field(default_factory=dict)  # var -> (recorded, replayed)

    def to_json(self) -> dict:
        return {"reproduces": self.ok, "steps": self.steps, "message": self.message, "bad_step": self.bad_step,
                "differences": {k: {"recorded": a, "replayed": b} for k, (a, b) in self.differences.items()}}


def diff_states(model: Model, a: tuple, b: tuple) -> dict[str, tuple[str, str]]:
    """The differences between two states (recorded, replayed), as `show` prints changes (harness/changes.py):
    `brokers[2].log`, an element of a list (`brokers[2].inbox[1]`), a map entry one side lacks as absent."""
    return by_path(changes(model.schema, a, b))


def replay(trace: Trace) -> ReplayReport:
    model, states, actions = trace.model, trace.states, trace.actions
    inits = model.init_states()
    if states[0] not in inits:
        nearest = min(inits, key=lambda s: len(diff_states(model, states[0], s)))
        return ReplayReport(False, 0, "step 0: the recorded first state is not an initial state of the model",
                            0, diff_states(model, states[0], nearest))
    for i in range(1, len(states)):
        action = actions[i]
        if action not in model.action_index:
            return ReplayReport(False, i, f"step {i}: action {action} does not exist in this model", i)
        nxt = model.apply(states[i - 1], action)
        if nxt is None:
            return ReplayReport(False, i, f"step {i}: action {action} is not enabled in the recorded state {i - 1}", i)
        if nxt != states[i]:
            return ReplayReport(False, i, f"step {i}: action {action} yields a different state than recorded", i,
                                diff_states(model, states[i], nxt))
    last = len(states) - 1
    outcome = trace.outcome
    if outcome.kind in ("none", "invariant"):
        passes = trace.meta["outcome"].get("passes", {})  # violations a `--continue` run recorded on its way
        if passes != earlier_violations(model, states, outcome):
            for i, s in enumerate(states):
                if i == last and outcome.kind == "invariant":
                    break  # the recorded violation, possibly beside others
                unexpected = [p for p in model.violated(s) if passes.get(p, last + 1) > i]
                if unexpected:
                    return ReplayReport(False, i, f"step {i}: invariant {unexpected[0]} fails earlier than recorded", i)
            name, i = next(((p, i) for p, i in passes.items() if model.holds(p, states[i])), (None, last))
            what = f"the recorded violation of {name} on the way" if name else "the recorded violations on the way"
            return ReplayReport(False, i, f"step {i}: {what} does not reproduce", i)
        if outcome.kind == "invariant" and model.holds(outcome.property, states[last]):
            return ReplayReport(False, last, f"the recorded violation of {outcome.property} does not reproduce: it holds at the last state", last)
    elif outcome.kind == "deadlock":
        if model.successors(states[last]) or model.quiescent(states[last]):
            return ReplayReport(False, last, "the recorded deadlock does not reproduce: the last state can still move", last)
    elif outcome.kind == "liveness":
        report = _check_lasso(trace)
        if report is not None:
            return report
    what = "no violation" if outcome.kind == "none" else f"{outcome.kind} of {outcome.property or 'deadlock freedom'}"
    return ReplayReport(True, last, f"replays as recorded: {counted(last, 'step')}, {what}")


def _check_lasso(trace: Trace) -> ReplayReport | None:
    model, states = trace.model, trace.states
    if trace.loop is None:
        return ReplayReport(False, len(states) - 1, "a liveness trace must have a loop")
    prop = model.liveness[trace.outcome.property]
    last = len(states) - 1
    # The last state closes the cycle: it equals the loop's first state (on the spec's view, if it has one).
    if model.identity(states[last]) != model.identity(states[trace.loop]):
        return ReplayReport(False, last, f"the loop does not close: state {last} differs from state {trace.loop}", last,
                            diff_states(model, states[trace.loop], states[last]))
    for i in range(trace.loop, last + 1):
        if prop.goal(model.config, states[i]):
            return ReplayReport(False, i, f"the goal of {prop.name} holds at state {i}, inside the loop", i)
    if prop.trigger is not None and not any(prop.trigger(model.config, s) for s in states[: trace.loop + 1]):
        return ReplayReport(False, trace.loop, f"the trigger of {prop.name} never holds before the loop", trace.loop)
    return None

