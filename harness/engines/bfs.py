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
from operator import itemgetter
from typing import Callable

import numpy as np

from harness.errors import BadInput
from harness.frontier import FrontierFiles
from harness.model import VIEW_KEEP, Model
from harness.speed import cycle_collector_paused
from harness.result import CheckResult, Violation
from harness.trace import Outcome
from harness.visited import NO_PARENT, ExactTable, FingerprintTable

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
    traces do not depend on the order of the search (BFS's expansion order, Spark's shards); BFS with
    `view_keep="first"` keeps the first found instead, as TLC."""
    return model.tie(candidate) < model.tie(state)


def reconstruct(model: Model, chain: list, key: Callable, view_keep: str = "tie") -> Violation:
    """Turn a chain of keys (init first) into states and actions by re-executing the model. Under a
    view, a step takes, of the successors with the next key, the representative the search kept."""
    by_tie = model.view is not None and view_keep == "tie"
    expand = model.successors_in_tlc_order() if view_keep == "first" else model.successors
    init: dict = {}
    for s in model.init_states():
        k = key(s)
        if k not in init or (by_tie and representative(model, init[k], s)):
            init[k] = s  # the initial state with its key that the search kept
    state = init[chain[0]]
    states, actions = [state], [None]
    for nxt in chain[1:]:
        found = None
        for index, t in expand(state):
            if key(t) == nxt:
                if found is None or (by_tie and representative(model, found[1], t)):
                    found = (index, t)
                if not by_tie:
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


# The frontier is expanded a batch of states at a time and their successors looked up in the visited set at
# once: enough for numpy's per-call cost to vanish, few enough that a stopped search has generated little
# past its stopping point.
BATCH_PARENTS = 512


def explore(model: Model, *, frontier_memory: int | None = None, frontier_dir: str | None = None,
            **options) -> CheckResult:
    """The search (options: `search`'s). With `frontier_memory` (bytes), levels are written to disk in chunks
    sized to hold about that much of the frontier in memory (harness/frontier.py), in a folder made under
    `frontier_dir` (default: the system's temporary folder) and removed at the end; counts and traces are the
    same as without it."""
    if frontier_memory is None:
        return search(model, None, **options)
    with FrontierFiles(model, frontier_memory, frontier_dir, BATCH_PARENTS) as files:
        result = search(model, files, **options)
    result.stats["frontier_spilled_states"] = files.spilled
    result.stats["frontier_bytes_written"] = files.bytes_written
    return result


@cycle_collector_paused()
def search(
    model: Model,
    files: FrontierFiles | None,
    *,
    exact: bool = False,
    max_states: int | None = None,
    max_depth: int | None = None,
    time_limit: float | None = None,
    keep_going: bool = False,
    check_deadlock: bool = True,
    progress: Callable[[dict], None] | None = None,
    check_reads: bool = False,
    view_keep: str = "tie",
) -> CheckResult:
    """`check_reads` (a debugging aid for spec authors) evaluates every invariant on every state, and
    fails (BadInput) where one declared with `reads=` changes value although the fields it declares
    did not: its `reads=` is incomplete, and the normal search would have skipped a violation.
    `view_keep` (one of VIEW_KEEP) says which state of a view the search keeps. `files`: where levels go
    beyond the memory budget (None: every level is a list in memory)."""
    if view_keep not in VIEW_KEEP:
        raise BadInput(f"view_keep must be one of {', '.join(VIEW_KEEP)}, not {view_keep!r}")
    # The builtin hash (no Python frame per state), or the hash of the spec's view; exact: the state or its view.
    key = ((lambda s: s) if model.view is None else model.view) if exact else model.fingerprint
    # The keys of a batch of states, in C where it can be (no Python frame per state).
    if exact:
        keys_of = (lambda states: list(states)) if model.view is None else (lambda states: list(map(model.view, states)))
    else:
        keys_of = model.fingerprints
    second = itemgetter(1)
    visited = ExactTable() if exact else FingerprintTable()
    cfg = model.config
    invariants = list(model.spec.invariants.items())
    always, by_reads = model.invariants_always, model.invariants_by_reads
    check_deadlock = check_deadlock and model.check_deadlock
    n_actions = len(model.actions)
    gen_by_action = [0] * n_actions
    new_by_action = [0] * n_actions
    found: dict[str, list] = {}  # property -> chain of keys (first = shortest)
    started = time.perf_counter()
    stopped_by = None
    generated = 0
    states_per_depth: list[int] = []
    # The batch being walked: its successors' keys, the position in the batch of each state it numbers
    # (added to `visited` when the walk ends), each successor's parent, and parents changed under a view.
    keys: list = []
    numbered: list[int] = []
    parent_of: np.ndarray = np.empty(0, np.int64)
    reparented: dict[int, int] = {}

    def chain_to(number: int) -> list:
        chain = []
        while number != NO_PARENT:
            if number >= len(visited):  # numbered in the batch being walked
                j = numbered[number - len(visited)]
                chain.append(keys[j])
                number = reparented.get(number, int(parent_of[j]))
            else:
                chain.append(visited.key(number))
                number = visited.parent(number)
        return chain[::-1]

    def record(prop: str, number: int) -> bool:
        """Remember the first (shortest) violation of `prop`; True if exploration should stop."""
        if prop not in found:
            found[prop] = chain_to(number)
        return not keep_going

    # Keeping the first state found is the search without a view on the view's keys: a successor found
    # again in its level is dropped (the expansion order is TLC's).
    viewed = model.view is not None and view_keep == "tie"
    expand = model.successors_in_tlc_order() if view_keep == "first" else model.successors
    tie_part = model.tie_part  # what `Model.tie` hashes
    # A level is a list of states, in the order found: the state at position i has number base + i.
    frontier: list = []
    stop = False
    position: dict = {}
    for s in model.init_states():
        k = key(s)
        if k in position:
            if viewed and representative(model, frontier[position[k]], s):
                frontier[position[k]] = s
            continue
        position[k] = len(frontier)
        frontier.append(s)
    visited.add(list(position), [NO_PARENT] * len(position))
    generated += len(frontier)
    for number, s in enumerate(frontier):
        for name, inv in invariants:
            if not inv(cfg, s) and record(name, number):
                stop = True
    states_per_depth.append(len(frontier))
    frontier_base = 0  # the number of the frontier's first state
    depth = 0
    expansions = 0
    next_clock = PROGRESS_EVERY
    while frontier and not stop:
        if max_depth is not None and depth >= max_depth:
            stopped_by = "max-depth"
            break
        next_frontier = [] if files is None else files.level()
        append = next_frontier.append
        # Under a view, per position of the level: the action that found the kept state and its `Model.tie`
        # (computed once, when another state with its view turns up).
        level_action: list[int] = []
        level_tie: list = []
        level_base = len(visited)  # the number of the level's first state
        level_start = expansions
        for at in range(0, len(frontier), BATCH_PARENTS):
            # Expand a batch of the frontier, then look its successors up at once.
            parents = frontier[at:at + BATCH_PARENTS]
            successors, offsets = [], [0]
            for s in parents:
                successors += expand(s)
                offsets.append(len(successors))
            keys = keys_of(map(second, successors))
            known, first = visited.classify(keys)
            parent_of = np.repeat(np.arange(frontier_base + at, frontier_base + at + len(parents)), np.diff(offsets))
            if viewed:  # the new states, and those found again in the level being built
                walk = np.flatnonzero((known < 0) | (known >= level_base))
                known, first = known.tolist(), first.tolist()
            else:  # the new states
                walk = np.flatnonzero(first == np.arange(len(keys)))
            cuts = np.searchsorted(walk, offsets).tolist()  # each parent's successors in `walk`
            walk = walk.tolist()
            numbered, reparented = [], {}
            number_at: dict = {}  # under a view: position in the batch -> number, for the states numbered here
            generated_upto = 0  # the successors generated by the parents walked (to where a stop fell)
            ks = frontier_base + at - 1
            for s, lo, hi, w_lo, w_hi in zip(parents, offsets, offsets[1:], cuts, cuts[1:]):
                ks += 1
                expansions += 1
                if lo == hi and check_deadlock and not model.quiescent(s):
                    if record("Deadlock", ks):
                        stop = True
                        break
                generated += hi - lo
                for j in walk[w_lo:w_hi]:
                    index, t = successors[j]
                    if viewed:
                        kept = known[j]
                        if kept < 0:
                            kept = number_at.get(first[j])
                        if kept is not None:  # found again in the level being built: keep the representative
                            pos = kept - level_base
                            part, kept_part = tie_part(t), tie_part(next_frontier[pos])
                            # Equal parts, equal ties: the kept state stays. Most states found again in their
                            # level are the kept one reached by another path, its part equal (often the same
                            # objects), which compares faster than it hashes.
                            if part == kept_part:
                                continue
                            if level_tie[pos] is None:
                                level_tie[pos] = hash(kept_part)  # the kept state's `Model.tie`, once
                            tie = hash(part)
                            if tie < level_tie[pos]:  # `representative`, with the kept state's hash cached
                                next_frontier[pos] = t
                                if kept >= len(visited):
                                    reparented[kept] = ks
                                else:
                                    visited.set_parent(kept, ks)
                                new_by_action[level_action[pos]] -= 1
                                new_by_action[index] += 1
                                level_action[pos], level_tie[pos] = index, tie
                                for name, inv in invariants:
                                    if not inv(cfg, t) and record(name, kept):
                                        stop = True
                            if stop:
                                hi = j + 1
                                break
                            continue
                    number = level_base + len(next_frontier)  # it is new
                    if viewed:
                        number_at[j] = number
                        level_action.append(index)
                        level_tie.append(None)
                    numbered.append(j)
                    new_by_action[index] += 1
                    append(t)
                    for name, inv in always:
                        if not inv(cfg, t) and record(name, number):
                            stop = True
                    # The parent holds the others: check one only if a field it reads changed.
                    for fields, group in by_reads:
                        for i in fields:
                            if t[i] is not s[i]:
                                for name, inv in group:
                                    if not inv(cfg, t) and record(name, number):
                                        stop = True
                                break
                        else:
                            if check_reads:
                                _check_reads(model, group, s, t, index)
                    if stop:
                        hi = j + 1  # a state-at-a-time search generates no further
                        break
                generated_upto = hi
                if stop:
                    break
                if max_states is not None and len(visited) + len(numbered) >= max_states:
                    stopped_by, stop = "max-states", True
                    break
                if expansions >= next_clock:
                    next_clock = expansions + PROGRESS_EVERY
                    elapsed = time.perf_counter() - started
                    if progress:
                        progress({"distinct": len(visited) + len(numbered), "generated": generated,
                                  "depth": depth + 1, "queue": len(frontier) - (expansions - level_start)
                                  + len(next_frontier), "elapsed": elapsed})
                    if time_limit is not None and elapsed >= time_limit:
                        stopped_by, stop = "time-limit", True
                        break
            if generated_upto:  # per action, the successors generated up to where the walk stopped
                actions_generated = np.bincount(next(zip(*successors[:generated_upto])), minlength=n_actions)
                gen_by_action = (np.asarray(gen_by_action) + actions_generated).tolist()
            new_parents = parent_of[numbered]
            for number, parent in reparented.items():
                new_parents[number - len(visited)] = parent
            visited.add([keys[j] for j in numbered], new_parents)
            keys, numbered = [], []
            if stop:
                break
        # Keep the partial level for statistics; only full levels count as explored depth.
        if next_frontier:
            states_per_depth.append(len(next_frontier))
        if stop:
            break
        frontier, frontier_base = next_frontier, level_base
        depth += 1 if next_frontier else 0

    if stop and stopped_by is None:
        stopped_by = "violation"
    elapsed = time.perf_counter() - started
    distinct = len(visited)
    # Complete: every reachable state (within the model's own bounds) was visited.
    result = CheckResult(engine="bfs", complete=stopped_by is None, stopped_by=stopped_by)
    for prop, chain in found.items():
        v = reconstruct(model, chain, key, view_keep)
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
    if model.view is not None:
        result.stats["view_keep"] = view_keep
    if not exact:
        result.stats["collision_probability"] = collision_probability(distinct, generated)
        result.stats["visited_bytes_per_state"] = round(visited.nbytes / max(distinct, 1), 1)
    result.record_coverage(model.rule_names, model.action_rule, gen_by_action, new_by_action)
    return result
