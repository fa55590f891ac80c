"""Guided BFS: the shortest violation among runs that use only a given set of action labels.

A scenario (a list of labelled actions, e.g. a known bug report or a failing Hypothesis run)
restricts the transition relation to those labels; BFS over that sub-model is small, and its
counterexample is the shortest run built from them. Used to shorten Hypothesis failures and to
reach deep, known bugs (Ongaro's single-server change bug needs 6 servers and ~20 steps, far
beyond unguided BFS) while keeping the result a real, replayable trace of the full model.
"""

from __future__ import annotations

from harness.model import Action, Model
from harness.result import Violation
from harness.trace import Outcome


def violates(model: Model, outcome: Outcome | None, state: tuple) -> list[str]:
    """The properties `state` violates (restricted to `outcome`'s if given)."""
    if outcome is None:
        return model.violated(state)
    if outcome.kind == "invariant":
        return [] if model.holds(outcome.property, state) else [outcome.property]
    return ["Deadlock"] if not model.successors(state) and not model.quiescent(state) else []


def shortest_over_labels(model: Model, init: tuple, labels: list[Action], outcome: Outcome | None = None,
                         max_states: int = 500_000) -> Violation | None:
    labels = list(dict.fromkeys(labels))
    parent: dict = {init: None}
    frontier = [init]
    while frontier and len(parent) < max_states:
        nxt = []
        for s in frontier:
            for a in labels:
                t = model.apply(s, a)
                if t is None or t in parent:
                    continue
                parent[t] = (s, a)
                bad = violates(model, outcome, t)
                if bad:
                    states, actions, node = [t], [], t
                    while parent[node] is not None:
                        node, how = parent[node]
                        states.append(node)
                        actions.append(how)
                    return Violation(outcome or Outcome("invariant", bad[0]), states[::-1], [None] + actions[::-1])
                nxt.append(t)
        frontier = nxt
    return None


def replay_scenario(model: Model, init: tuple, labels: list[Action], outcome: Outcome | None = None) -> Violation | None:
    """Apply the labels in order; the prefix up to the first violation, or None."""
    states, actions, s = [init], [None], init
    for a in labels:
        t = model.apply(s, a)
        if t is None:
            return None
        s = t
        states.append(t)
        actions.append(a)
        bad = violates(model, outcome, t)
        if bad:
            return Violation(outcome or Outcome("invariant", bad[0]), states, actions)
    return None


def minimize(model: Model, v: Violation) -> Violation:
    """Delta debugging over the action labels: drop chunks of steps while the same property still
    fails. The result is 1-minimal (no single step can be removed), not necessarily shortest."""
    best = v
    acts = list(v.actions[1:])
    chunk = max(len(acts) // 2, 1)
    while chunk >= 1:
        i, changed = 0, False
        while i < len(acts):
            got = replay_scenario(model, v.states[0], acts[:i] + acts[i + chunk:], v.outcome)
            if got is not None:
                best, acts, changed = got, list(got.actions[1:]), True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return best


def search(model: Model, labels: list[Action], max_states: int = 300_000) -> Violation | None:
    """The shortest violation over the labels if the restricted BFS finishes within `max_states`;
    otherwise the scenario itself, run in order and minimised (noted on the result)."""
    init = model.init_states()[0]
    v = shortest_over_labels(model, init, labels, max_states=max_states)
    if v is not None:
        v.note = "shortest among runs made of the scenario's actions"
        return v
    v = replay_scenario(model, init, labels)
    if v is None:
        return None
    v = minimize(model, v)
    v.note = "the scenario, minimised (1-minimal; the restricted BFS was too large to finish)"
    return v
