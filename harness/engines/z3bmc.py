"""Bounded model checking with Z3, with counterexamples rebuilt as full-model traces.

A spec's symbolic form (`spec.symbolic`) is a transition relation over an abstraction of its state
(for kraft: the controller's partition metadata; the data plane is abstracted away). The relation
is unrolled from the config's initial state(s), `project`ed onto that abstraction, and Z3 is asked
for the smallest k at which some property with a Z3 form fails in s_k.

An abstract counterexample is a sequence of abstract states, not yet a run of the model: each
abstract step may need data-plane steps first (a fetch before an AlterPartition). It is
concretized by a BFS over the real model restricted to runs whose projection follows the abstract
sequence (steps that keep the projection are free; every other step must reach the next abstract
state). The first concrete state that violates the property ends the search, so the trace is the
shortest run following that abstract sequence, and `replay` reproduces it like any other.

If an abstract sequence cannot be followed (spurious: the abstraction allows more than the model,
e.g. any reassignment target), the prefix where the concrete search got stuck is blocked in the
solver and the next candidate is tried (a small CEGAR loop). Candidates are tried at every abstract
depth below the best concrete length found, so the reported trace is the shortest over all the
abstract counterexamples examined; `stats.exhaustive` says whether that covered all of them.
"""

from __future__ import annotations

import time

import z3

from harness import interrupt
from harness.errors import BadInput
from harness.itf import counted
from harness.symbolic import const
from harness.model import Model
from harness.result import CheckResult, Violation
from harness.trace import Outcome


def symbolic_form(model: Model):
    """The spec's symbolic module, or a one-line reason why there is none for this config."""
    sym, spec = model.spec.symbolic, model.spec
    if sym is None or not spec.z3_invariants:
        raise BadInput(f"spec {spec.name!r} has no symbolic (Z3) form yet")
    why = getattr(sym, "unsupported", lambda cfg: None)(model.config)
    if why:
        raise BadInput(f"no symbolic form for this config: {why}")
    # a relation whose state's size follows the config's bounds (replication: log and message slots)
    return sym.for_config(model.config) if hasattr(sym, "for_config") else sym


def solve(solver: z3.Solver):
    """`solver.check()` that a signal stops. Z3's own Ctrl-C handler is switched off: it would answer
    `unknown` ("canceled", like some timeouts), which must not read as "no counterexample". The
    signal reaches Python's handler instead, whose watcher thread interrupts Z3 (harness.interrupt)."""
    before = interrupt.received()
    solver.set("ctrl_c", False)
    with interrupt.cancelling(solver.ctx.interrupt):
        verdict = solver.check()
    if verdict == z3.unknown and interrupt.received() != before:
        interrupt.reraise()
    return verdict


def value_of(m: z3.ModelRef, x):
    v = m.evaluate(x, model_completion=True)
    if z3.is_bool(v):
        return z3.is_true(v)
    return v.as_long()


def equals(s: dict, values: dict):
    """Symbolic state s has these field values."""
    return z3.And(*[s[f] == const(s[f], v) for f, v in values.items()])


class Unrolling:
    """Paths s_0 -> s_1 -> ... of a symbolic relation, kept in one incremental solver.

    Every step picks one rule: `rule_i` (an integer) names it, so a model of the path says which
    rule fired at each step; each rule's parameters are fresh per step."""

    def __init__(self, sym, cfg, n: int, init, timeout_ms: int = 60_000, bounded: bool = True) -> None:
        self.sym, self.cfg, self.n, self.bounded = sym, cfg, n, bounded
        self.rule_names = list(sym.RULES)
        # a relation over bit-vectors only names its logic: Z3's incremental QF_BV solver bit-blasts to SAT
        # (replication at p1: about 4x faster than the general solver over the same unrolling)
        self.solver = z3.SolverFor(sym.LOGIC) if getattr(sym, "LOGIC", None) else z3.Solver()
        self.solver.set("timeout", timeout_ms)
        self.states = [sym.make_state("u0_", n)]
        self.choices: list = []
        self.solver.add(sym.type_ok(self.states[0]), init(self.states[0]))

    def extend(self) -> None:
        k = len(self.states) - 1
        s, t = self.states[k], self.sym.make_state(f"u{k + 1}_", self.n)
        which = z3.BitVec(f"rule_{k}", 8)
        steps = []
        for i, rule in enumerate(self.sym.RULES.values()):
            rel, params = rule(s, t, self.cfg)
            fresh = {p: z3.FreshConst(p.sort(), f"p{k}_{i}_") for p in params}
            steps.append(z3.And(which == i, z3.substitute(rel, *fresh.items()) if fresh else rel))
        bounds = getattr(self.sym, "bounds", None) if self.bounded else None
        self.solver.add(self.sym.type_ok(t), z3.Or(*steps), bounds(s, t, self.cfg) if bounds else True)
        self.states.append(t)
        self.choices.append(which)

    def ensure(self, k: int) -> None:
        while len(self.states) <= k:
            self.extend()

    def path(self, m: z3.ModelRef, k: int) -> tuple[list[dict], list[str]]:
        """The abstract states s_0..s_k (matched fields) and the rules taken, from a model."""
        states = [{f: value_of(m, s[f]) for f in self.sym.MATCHED} for s in self.states[:k + 1]]
        rules = [self.rule_names[value_of(m, c)] for c in self.choices[:k]]
        return states, rules


def initial_constraint(model: Model, sym):
    projections = [sym.project(model.config, s) for s in model.init_states()]

    return lambda s: z3.Or(*[equals(s, p) for p in projections])


def _follower(sym, cfg, abstract: list[dict]):
    """index_of(state, i): where a model state reached at abstract index i stands on `abstract` (i again: a
    step keeping the projection; i + 1: the next abstract state), or None off it. i = -1 asks about an
    initial state."""
    key_of = [tuple(sorted(a.items())) for a in abstract]
    k = len(abstract) - 1

    def index_of(state, i):
        p = tuple(sorted(sym.project(cfg, state).items()))
        if i >= 0 and p == key_of[i]:
            return i
        return i + 1 if i < k and p == key_of[i + 1] else None
    return index_of


def concretize(model: Model, sym, abstract: list[dict], properties: list[str], max_states: int,
               max_length: int | None = None):
    """Shortest model run (of at most `max_length` steps) whose projection follows `abstract` and
    that ends violating one of `properties`. Returns (violation or None, furthest abstract index
    reached, states explored)."""
    cfg, k = model.config, len(abstract) - 1
    index_of = _follower(sym, cfg, abstract)
    parent: dict = {}
    frontier = []
    for s in model.init_states():
        if index_of(s, -1) == 0:
            parent[(s, 0)] = None
            frontier.append((s, 0))
    reached, length = 0, 0
    while frontier and len(parent) < max_states and (max_length is None or length < max_length):
        length += 1
        nxt = []
        for node in frontier:
            state, i = node
            for action, t in model.successors(state):
                j = index_of(t, i)
                if j is None or (t, j) in parent:
                    continue
                parent[(t, j)] = (node, action)
                reached = max(reached, j)
                bad = [p for p in properties if not model.holds(p, t)] if j == k else []
                if bad:
                    states, actions, cur = [t], [], (t, j)
                    while parent[cur] is not None:
                        cur, a = parent[cur]
                        states.append(cur[0])
                        actions.append(model.describe_action(a))
                    return Violation(Outcome("invariant", bad[0]), states[::-1], [None] + actions[::-1]), reached, len(parent)
                nxt.append((t, j))
        frontier = nxt
    return None, reached, len(parent)


def outgrows(model: Model, sym, abstract: list[dict], max_states: int) -> bool:
    """Whether a model run following `abstract` (as `concretize` follows it) has a step to a state the
    relation cannot hold (`sym.fits`): the relation must grow, rather than the run be spurious."""
    cfg, k = model.config, len(abstract) - 1
    index_of = _follower(sym, cfg, abstract)
    seen = {s: 0 for s in model.init_states() if index_of(s, -1) == 0}
    frontier = list(seen.items())
    while frontier and len(seen) < max_states:
        nxt = []
        for state, i in frontier:
            for _, t in model.successors(state):
                if i == k and not sym.fits(cfg, t):
                    return True
                j = index_of(t, i)
                if j is not None and t not in seen:
                    seen[t] = j
                    nxt.append((t, j))
        frontier = nxt
    return False


def check(model: Model, depth: int, max_candidates: int = 64, max_concrete_states: int = 2_000_000,
          timeout_ms: int = 60_000) -> CheckResult:
    sym = symbolic_form(model)
    spec, cfg = model.spec, model.config
    # A relation may be sized to runs of `depth` steps (replication: message and metadata slots, number
    # width) and say where a run fills it (`saturated`); it is then widened and the level asked again.
    sym = getattr(spec.symbolic, "for_bmc", lambda cfg, depth: sym)(cfg, depth)
    saturated = (lambda s: s["rel"].saturated(s)) if hasattr(sym, "saturated") else None
    widenings = 0
    why = getattr(sym, "bmc_unsupported", lambda cfg: None)(cfg)
    if why:
        raise BadInput(f"no bounded model checking for this config: {why}")
    started = time.monotonic()
    properties = [p for p in spec.z3_invariants if p in spec.invariants]

    def unrolled(sym, levels: int) -> Unrolling:
        unroll = Unrolling(sym, cfg, sym.brokers(cfg), initial_constraint(model, sym), timeout_ms)
        for i in range(levels):  # levels done: no violation there, so a shortest run passes them clean
            unroll.ensure(i)
            unroll.solver.add(*[spec.z3_invariants[p](unroll.states[i]) for p in properties])
            if saturated:
                unroll.solver.add(z3.Not(saturated(unroll.states[i])))
        return unroll

    unroll = unrolled(sym, 0)
    solver = unroll.solver
    best: Violation | None = None
    best_abstract: list[str] = []
    candidates = spurious = concrete_states = 0
    exhaustive = True
    solver_seconds = 0.0
    depth_reached = 0
    for k in range(depth + 1):
        if best is not None and k >= best.depth:
            break  # every abstract step is at least one model step: no shorter run can come from here
        unroll.ensure(k)
        depth_reached = k
        s_k = unroll.states[k]
        bad_k = z3.Or(*[z3.Not(spec.z3_invariants[p](s_k)) for p in properties])
        while True:
            if candidates >= max_candidates:
                exhaustive = False
                break
            solver.push()
            solver.add(z3.Or(bad_k, saturated(s_k)) if saturated else bad_k)
            t0 = time.monotonic()
            verdict = solve(solver)
            solver_seconds += time.monotonic() - t0
            if verdict != z3.sat:
                solver.pop()
                if verdict == z3.unknown:
                    exhaustive = False
                elif saturated:
                    solver.add(*[spec.z3_invariants[p](s_k) for p in properties], z3.Not(saturated(s_k)))
                break
            m = solver.model()
            if saturated and z3.is_true(m.evaluate(saturated(s_k), model_completion=True)):
                solver.pop()
                prefix = unroll.path(m, k - 1)[0]
                if not outgrows(model, sym, prefix, max_concrete_states):
                    # a run of the relation only (it allows more than the model): block it, as a spurious one
                    candidates += 1
                    spurious += 1
                    solver.add(z3.Not(z3.And(*[equals(unroll.states[i], prefix[i]) for i in range(k)], saturated(s_k))))
                    continue
                sym = sym.widened({f: value_of(m, s_k[f]) for f in sym.MATCHED})
                widenings += 1
                unroll = unrolled(sym, k)
                unroll.ensure(k)
                solver, s_k = unroll.solver, unroll.states[k]
                bad_k = z3.Or(*[z3.Not(spec.z3_invariants[p](s_k)) for p in properties])
                continue
            abstract, rules = unroll.path(m, k)
            solver.pop()
            candidates += 1
            # Only runs shorter than the best one matter; blocking a prefix that could not be followed
            # within that length loses nothing shorter.
            v, reached, explored = concretize(model, sym, abstract, properties, max_concrete_states,
                                              None if best is None else best.depth - 1)
            concrete_states += explored
            if explored >= max_concrete_states:
                exhaustive = False  # the blocked prefix below may have been followable after all
            if v is None:
                spurious += 1
                stuck = min(reached + 1, k)  # the first abstract state the model could not reach
                solver.add(z3.Not(z3.And(*[equals(unroll.states[i], abstract[i]) for i in range(stuck + 1)])))
                continue
            if best is None or v.depth < best.depth:
                best, best_abstract = v, rules
            if best.depth <= k:
                break  # a model run as short as the abstract one: no level can give a shorter one
            solver.add(z3.Not(z3.And(*[equals(unroll.states[i], abstract[i]) for i in range(k + 1)])))
    # Complete: the bounded check asked for (every abstract run up to `depth`) was done; candidate budget,
    # solver timeouts or the concretization limit leave it incomplete (exit 3).
    result = CheckResult(engine="z3", complete=exhaustive, stopped_by=None if exhaustive else "budget")
    if best is not None:
        best.note = (f"BMC: abstract counterexample of {counted(len(best_abstract), 'controller step')} "
                     f"({', '.join(best_abstract)}), concretized into {counted(best.depth, 'model step')}")
        result.violations.append(best)
        result.stopped_by = "violation"
    result.stats = {"depth": depth_reached, "max_depth": depth, "properties": properties,
                    "abstract_candidates": candidates, "spurious": spurious, "exhaustive": exhaustive,
                    "widenings": widenings, "relation": getattr(sym, "size", None),
                    "abstract_length": len(best_abstract) if best else None,
                    "concrete_states_explored": concrete_states, "solver_seconds": round(solver_seconds, 2),
                    "seconds": round(time.monotonic() - started, 2)}
    if not exhaustive:
        result.warnings.append("candidate budget, solver timeout or concretization limit reached: a shorter trace may exist")
    return result
