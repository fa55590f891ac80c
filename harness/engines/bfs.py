"""Single-process exhaustive breadth-first search.

Level-synchronous BFS over the model's transition system. Each visited state is stored as its
64-bit fingerprint (or, with `exact`, as the full state) mapped to its parent's, so that every
counterexample is a shortest one: the chain of parents is walked back to an initial state, then
re-executed forward, picking at each step the first successor (in action-table order) with the
next fingerprint, which recovers the actions. This is TLC's method.

Invariants are evaluated on new states only. A state without successors is a deadlock unless the
spec disables deadlock checking or declares the state quiescent.
"""

from __future__ import annotations

import resource
import time
from typing import Callable

from harness.errors import BadInput
from harness.model import Model
from harness.speed import cycle_collector_paused
from harness.result import CheckResult, Violation
from harness.trace import Outcome

PROGRESS_EVERY = 4096  # expansions between clock reads


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate of a fingerprint collision: n * (g - n) / 2^64."""
    return distinct * max(generated - distinct, 0) / 2.0**64


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def representative(model: Model, state: tuple, candidate: tuple) -> bool:
    """Under a view, whether `candidate` replaces `state` as the kept state of their common view: the one
    with the smaller `Model.tie` (a hash of what the view leaves out, or of the whole state). Every engine
    keeps, of the states with one view that the first level reaching it holds, this one, so counts and
    traces do not depend on the order of the search (BFS's expansion order, Spark's shards)."""
    return model.tie(candidate) < model.tie(state)


def reconstruct(model: Model, chain: list, key: Callable) -> Violation:
    """Turn a chain of keys (init first) into states and actions by re-executing the model. Under a
    view, a step takes, of the successors with the next key, the representative the search kept."""
    init: dict = {}
    for s in model.init_states():
        k = key(s)
        if k not in init or (model.view is not None and representative(model, init[k], s)):
            init[k] = s  # the initial state with its key that the search kept
    state = init[chain[0]]
    states, actions = [state], [None]
    for nxt in chain[1:]:
        found = None
        for index, t in model.successors(state):
            if key(t) == nxt:
                if found is None or (model.view is not None and representative(model, found[1], t)):
                    found = (index, t)
                if model.view is None:
                    break
        if found is None:  # a fingerprint collision or a non-deterministic rule would land here
            raise RuntimeError(f"cannot re-execute the trace at step {len(states)}: rules must be deterministic")
        state = found[1]
        states.append(state)
        actions.append(model.actions[found[0]])
    return Violation(Outcome("none"), states, actions)


def _check_reads(model: Model, group: list, parent: tuple, child: tuple, index: int) -> None:
    for name, inv in group:
        if bool(inv(model.config, child)) != bool(inv(model.config, parent)):
            fields = ", ".join(model.spec.invariant_reads[name])
            raise BadInput(f"--check-reads: {name} changed value on {model.format_action(model.actions[index])} "
                           f"although the fields it declares in reads= ({fields}) did not change: its reads= is incomplete")


@cycle_collector_paused()
def explore(
    model: Model,
    *,
    exact: bool = False,
    max_states: int | None = None,
    max_depth: int | None = None,
    time_limit: float | None = None,
    keep_going: bool = False,
    check_deadlock: bool = True,
    progress: Callable[[dict], None] | None = None,
    check_reads: bool = False,
) -> CheckResult:
    """`check_reads` (a debugging aid for spec authors) evaluates every invariant on every state, and
    fails (BadInput) where one declared with `reads=` changes value although the fields it declares
    did not: its `reads=` is incomplete, and the normal search would have skipped a violation."""
    # The builtin hash (no Python frame per state), or the hash of the spec's view; exact: the state or its view.
    key = ((lambda s: s) if model.view is None else model.view) if exact else model.fingerprint
    cfg = model.config
    invariants = list(model.spec.invariants.items())
    always, by_reads = model.invariants_always, model.invariants_by_reads
    check_deadlock = check_deadlock and model.check_deadlock
    n_actions = len(model.actions)
    gen_by_action = [0] * n_actions
    new_by_action = [0] * n_actions
    parents: dict = {}
    found: dict[str, list] = {}  # property -> chain of keys (first = shortest)
    started = time.perf_counter()
    stopped_by = None
    generated = 0
    states_per_depth: list[int] = []

    def chain_to(k) -> list:
        chain = [k]
        while (k := parents[k]) is not None:
            chain.append(k)
        return chain[::-1]

    def record(prop: str, k) -> bool:
        """Remember the first (shortest) violation of `prop`; True if exploration should stop."""
        if prop not in found:
            found[prop] = chain_to(k)
        return not keep_going

    frontier = []
    stop = False
    viewed = model.view is not None
    tie_of = model.tie
    level_at: dict = {}  # under a view: key -> (its position in the level being built, the action that found it)
    for s in model.init_states():
        k = key(s)
        if k in parents:
            if viewed and representative(model, frontier[level_at[k][0]][1], s):
                frontier[level_at[k][0]] = (k, s)
            continue
        level_at[k] = [len(frontier), -1, None]
        parents[k] = None
        generated += 1
        frontier.append((k, s))
        for name, inv in invariants:
            if not inv(cfg, s) and record(name, k):
                stop = True
    states_per_depth.append(len(frontier))
    depth = 0
    expansions = 0
    next_clock = PROGRESS_EVERY
    while frontier and not stop:
        if max_depth is not None and depth >= max_depth:
            stopped_by = "max-depth"
            break
        next_frontier = []
        append = next_frontier.append
        level_at = {}
        level_start = expansions
        for ks, s in frontier:
            successors = model.successors(s)
            expansions += 1
            if not successors and check_deadlock and not model.quiescent(s):
                if record("Deadlock", ks):
                    stop = True
                    break
            generated += len(successors)
            for index, t in successors:
                gen_by_action[index] += 1
                kt = key(t)
                if kt in parents:
                    if viewed:  # found again in the level being built: keep the representative
                        at = level_at.get(kt)
                        if at is not None:
                            if at[2] is None:
                                at[2] = tie_of(next_frontier[at[0]][1])  # the kept state's, once
                            tie = tie_of(t)
                            if tie < at[2]:  # `representative`, with the kept state's hash cached
                                next_frontier[at[0]] = (kt, t)
                                parents[kt] = ks
                                new_by_action[at[1]] -= 1
                                new_by_action[index] += 1
                                at[1], at[2] = index, tie
                                for name, inv in invariants:
                                    if not inv(cfg, t) and record(name, kt):
                                        stop = True
                    continue
                parents[kt] = ks
                new_by_action[index] += 1
                if viewed:
                    level_at[kt] = [len(next_frontier), index, None]
                append((kt, t))
                for name, inv in always:
                    if not inv(cfg, t) and record(name, kt):
                        stop = True
                # The parent holds the others: check one only if a field it reads changed.
                for fields, group in by_reads:
                    for i in fields:
                        if t[i] is not s[i]:
                            for name, inv in group:
                                if not inv(cfg, t) and record(name, kt):
                                    stop = True
                            break
                    else:
                        if check_reads:
                            _check_reads(model, group, s, t, index)
                if stop:
                    break
            if stop:
                break
            if max_states is not None and len(parents) >= max_states:
                stopped_by, stop = "max-states", True
                break
            if expansions >= next_clock:
                next_clock = expansions + PROGRESS_EVERY
                elapsed = time.perf_counter() - started
                if progress:
                    progress({"distinct": len(parents), "generated": generated, "depth": depth + 1,
                              "queue": len(frontier) - (expansions - level_start) + len(next_frontier),
                              "elapsed": elapsed})
                if time_limit is not None and elapsed >= time_limit:
                    stopped_by, stop = "time-limit", True
                    break
        # Keep the partial level for statistics; only full levels count as explored depth.
        if next_frontier:
            states_per_depth.append(len(next_frontier))
        if stop:
            break
        frontier = next_frontier
        depth += 1 if next_frontier else 0

    if stop and stopped_by is None:
        stopped_by = "violation"
    elapsed = time.perf_counter() - started
    distinct = len(parents)
    # Complete: every reachable state (within the model's own bounds) was visited.
    result = CheckResult(engine="bfs", complete=stopped_by is None, stopped_by=stopped_by)
    for prop, chain in found.items():
        v = reconstruct(model, chain, key)
        v.outcome = Outcome("deadlock" if prop == "Deadlock" else "invariant", prop)
        result.violations.append(v)
    result.violations.sort(key=lambda v: (v.depth, v.outcome.property or ""))
    result.stats = {
        "distinct": distinct,
        "generated": generated,
        "depth": len(states_per_depth) - 1,
        "states_per_depth": states_per_depth,
        "seconds": round(elapsed, 3),
        "states_per_second": round(distinct / elapsed) if elapsed > 0 else None,
        "peak_rss_bytes": peak_rss_bytes(),
        "fingerprints": "exact" if exact else "64-bit",
    }
    if not exact:
        result.stats["collision_probability"] = collision_probability(distinct, generated)
    result.record_coverage(model.rule_names, model.action_rule, gen_by_action, new_by_action)
    return result
