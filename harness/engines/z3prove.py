"""Inductive-invariant proofs with Z3, counterexamples to induction, and their reachability.

A spec that offers a symbolic form (`spec.symbolic`: make_state, type_ok, init, RULES, and
`spec.z3_invariants`) can be proved here without engine code knowing the protocol:

* Init: type_ok(s) and init(s) imply every chosen property;
* for each rule and property: type_ok(s), Inv(s), type_ok(t) and rule(s, t) imply P(t), where Inv is the
  conjunction of the chosen properties;
* for every broker count 1..N (bit-vectors of width N+1, epochs unbounded integers).

A failing check gives a counterexample to induction (CTI): a pre-state satisfying Inv and a post-state
violating P. The engine then decides whether the CTI's pre-state is reachable, by bounded model checking
from init over the same relation (up to `reach_depth` steps): "reachable: real violation" or
"unreachable within K steps: the property is too weak to be inductive" (strengthen it).
"""

from __future__ import annotations

import time

import z3

from harness.errors import BadInput
from harness.model import Model


def _value(m: z3.ModelRef, x, n: int):
    v = m.evaluate(x, model_completion=True)
    if z3.is_bool(v):
        return z3.is_true(v)
    if z3.is_bv_value(v):
        return [b for b in range(1, n + 1) if v.as_long() >> b & 1]
    return v.as_long() if z3.is_int_value(v) else str(v)


def _show(sym, m, s: dict) -> dict:
    n = s["n"]
    return {k: _value(m, s[k], n) for k in list(sym.MATCHED) + ["live"]}


def _reachable(sym, cfg, mutation: str, n: int, target: dict, depth: int) -> int | None:
    """BMC: the smallest k <= depth such that a state equal to `target` (set fields) is reachable."""
    states = [sym.make_state("r0_", n)]
    solver = z3.Solver()
    solver.set("timeout", 20_000)
    solver.add(sym.type_ok(states[0]), sym.init(states[0], cfg))

    def equals(s):
        w = n + 1
        return z3.And(*[s[f] == z3.BitVecVal(sum(1 << b for b in target[f]), w) for f in sym.FIELDS])

    for k in range(depth + 1):
        solver.push()
        solver.add(equals(states[k]))
        if solver.check() == z3.sat:
            return k
        solver.pop()
        s, t = states[k], sym.make_state(f"r{k + 1}_", n)
        steps = []
        for i, rule in enumerate(sym.RULES.values()):
            rel, params = rule(s, t, cfg, mutation)
            fresh = {p: z3.FreshConst(p.sort(), f"p{k}_{i}_") for p in params}
            steps.append(z3.substitute(rel, *fresh.items()) if fresh else rel)
        solver.add(sym.type_ok(t), z3.Or(*steps))
        states.append(t)
    return None


def prove(model: Model, properties: list[str] | None = None, max_brokers: int = 8, reach_depth: int = 6,
          timeout_ms: int = 60_000) -> dict:
    spec, cfg = model.spec, model.config
    sym = spec.symbolic
    if sym is None or not spec.z3_invariants:
        raise BadInput(f"spec {spec.name!r} has no symbolic (Z3) form yet")
    names = properties or list(spec.z3_invariants)
    unknown = [p for p in names if p not in spec.z3_invariants]
    if unknown:
        raise BadInput(f"no Z3 form for property {unknown[0]!r} (have: {', '.join(spec.z3_invariants)})")
    unsupported = getattr(sym, "unsupported", lambda cfg: None)(cfg)
    if unsupported:
        raise BadInput(f"no symbolic form for this config: {unsupported}")
    mutation = cfg.mutation
    started = time.monotonic()
    checks, ctis = [], []
    for n in range(1, max_brokers + 1):
        s, t = sym.make_state("s_", n), sym.make_state("t_", n)
        inv = z3.And(sym.type_ok(s), *[spec.z3_invariants[p](s) for p in names])
        for p in names:
            solver = z3.Solver()
            solver.set("timeout", timeout_ms)
            solver.add(sym.type_ok(s), sym.init(s, cfg), z3.Not(spec.z3_invariants[p](s)))
            verdict = solver.check()
            checks.append({"brokers": n, "rule": "init", "property": p, "result": str(verdict)})
        for rule_name, rule in sym.RULES.items():
            rel, params = rule(s, t, cfg, mutation)
            for p in names:
                solver = z3.Solver()
                solver.set("timeout", timeout_ms)
                solver.add(inv, sym.type_ok(t), rel, z3.Not(spec.z3_invariants[p](t)))
                verdict = solver.check()
                entry = {"brokers": n, "rule": rule_name, "property": p,
                         "result": {"unsat": "proved", "sat": "CTI"}.get(str(verdict), "unknown")}
                checks.append(entry)
                if verdict == z3.sat and not any(c["rule"] == rule_name and c["property"] == p for c in ctis):
                    m = solver.model()
                    pre, post = _show(sym, m, s), _show(sym, m, t)
                    k = _reachable(sym, cfg, mutation, n, pre, reach_depth)
                    label = (f"reachable in {k} steps: real violation" if k is not None else
                             f"unreachable within {reach_depth} steps: the property is too weak to be inductive")
                    ctis.append({"brokers": n, "rule": rule_name, "property": p, "pre": pre, "post": post,
                                 "params": {str(x): _value(m, x, n) for x in params}, "reachability": label,
                                 "reachable_depth": k})
    proved = all(c["result"] == "proved" or c["rule"] == "init" and c["result"] == "unsat" for c in checks)
    return {"spec": spec.name, "mutation": mutation, "properties": names, "max_brokers": max_brokers,
            "proved": proved, "seconds": round(time.monotonic() - started, 2), "checks": len(checks),
            "failed": [c for c in checks if c["result"] not in ("proved", "unsat")], "ctis": ctis}
