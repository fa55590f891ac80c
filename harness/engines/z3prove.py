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

from harness.bitset import members
from harness.engines.z3bmc import Unrolling, solve, symbolic_form, value_of
from harness.errors import BadInput
from harness.itf import counted
from harness.model import Model
from harness.symbolic import state_fields


def _value(m: z3.ModelRef, x, n: int):
    """A model's value of x, broker sets (bit-vectors of N+1 bits) as member lists; other bit-vectors
    (replication's epochs and offsets) as numbers."""
    v = value_of(m, x)
    return members(v) if z3.is_bv(x) and x.size() == n + 1 else v


def _show(sym, m, s: dict) -> dict:
    """A model's values of the symbolic state's fields; a field that packs one broker set per broker
    (`sym.PACKED`: N+1 slots of N+1 bits, slot b for broker b) as {broker: members}."""
    n = s["n"]
    shown = {}
    for k in dict.fromkeys([*sym.MATCHED, *(["live"] if "live" in s else [])]):
        v = _value(m, s[k], n)
        if k in getattr(sym, "PACKED", ()):
            v = {str(b): members(value_of(m, s[k]) >> (b * (n + 1)) & ((1 << (n + 1)) - 1)) for b in range(1, n + 1)}
        shown[k] = v
    return shown


def _reachable_cti(sym, cfg, n: int, rule, prop, depth: int):
    """BMC from init: the smallest k <= depth such that a state reachable in k steps steps by `rule`
    into a state violating `prop`; (k, pre, post, params) from that run, or None."""
    unroll = Unrolling(sym, cfg, n, lambda s: sym.init(s, cfg), bounded=False)
    for k in range(depth + 1):
        unroll.ensure(k)
        s, t = unroll.states[k], sym.make_state(f"cti{k}_", n)
        rel, params = rule(s, t, cfg)
        unroll.solver.push()
        unroll.solver.add(rel, sym.type_ok(t), z3.Not(prop(t)))
        if solve(unroll.solver) == z3.sat:
            m = unroll.solver.model()
            return k, _show(sym, m, s), _show(sym, m, t), {str(x): _value(m, x, n) for x in params}
        unroll.solver.pop()
    return None


def prove(model: Model, properties: list[str] | None = None, max_brokers: int = 8, reach_depth: int = 6,
          timeout_ms: int = 60_000) -> dict:
    spec, cfg = model.spec, model.config
    sym = symbolic_form(model)
    names = properties or list(spec.z3_invariants)
    unknown = [p for p in names if p not in spec.z3_invariants]
    if unknown:
        raise BadInput(f"no Z3 form for property {unknown[0]!r} (have: {', '.join(spec.z3_invariants)})")
    mutation = cfg.mutation
    started = time.monotonic()
    checks, ctis = [], []
    # a relation sized by its config proves at the config's broker count only (replication)
    counts = sym.broker_counts(cfg, max_brokers) if hasattr(sym, "broker_counts") else range(1, max_brokers + 1)
    for n in counts:
        s, t = sym.make_state("s_", n), sym.make_state("t_", n)
        inv = z3.And(sym.type_ok(s), *[spec.z3_invariants[p](s) for p in names])
        for p in names:
            solver = z3.Solver()
            solver.set("timeout", timeout_ms)
            solver.add(sym.type_ok(s), sym.init(s, cfg), z3.Not(spec.z3_invariants[p](s)))
            verdict = solve(solver)
            checks.append({"brokers": n, "rule": "init", "property": p, "result": str(verdict)})
        for rule_name, rule in sym.RULES.items():
            rel, params = rule(s, t, cfg)
            for p in names:
                solver = z3.Solver()
                solver.set("timeout", timeout_ms)
                solver.add(inv, sym.type_ok(t), rel, z3.Not(spec.z3_invariants[p](t)))
                verdict = solve(solver)
                entry = {"brokers": n, "rule": rule_name, "property": p,
                         "result": {"unsat": "proved", "sat": "CTI"}.get(str(verdict), "unknown")}
                checks.append(entry)
                if verdict != z3.sat:
                    continue
                seen = next((c for c in ctis if c["rule"] == rule_name and c["property"] == p), None)
                if seen is not None and seen["reachable_depth"] is not None:
                    continue  # one reachable CTI per rule and property is enough
                m = solver.model()
                cti = {"brokers": n, "rule": rule_name, "property": p, "pre": _show(sym, m, s), "post": _show(sym, m, t),
                       "params": {str(x): _value(m, x, n) for x in params}, "reachable_depth": None,
                       "reachability": f"unreachable within {counted(reach_depth, 'step')}: the property is too weak to be inductive"}
                # Prefer a CTI whose pre-state is reachable: a real violation, shown as the run reaching it.
                # A relation too large for BMC from Init (replication) judges its CTI's pre-state itself.
                judge = getattr(sym, "reachability", None)
                if judge is not None:
                    cti["reachable_depth"], cti["reachability"] = judge(model, cti["pre"])
                found = None if judge else _reachable_cti(sym, cfg, n, rule, spec.z3_invariants[p], reach_depth)
                if found is not None:
                    k, cti["pre"], cti["post"], cti["params"] = found
                    cti["reachable_depth"] = k
                    cti["reachability"] = f"reachable in {counted(k, 'step')}: real violation"
                if seen is None:
                    ctis.append(cti)
                elif seen["reachable_depth"] is None and (found is not None or cti["reachable_depth"] is not None):
                    ctis[ctis.index(seen)] = cti
    for cti in ctis:  # as the model's state reads: the spec's field names (harness.symbolic.STATE_FIELDS)
        cti["fields"] = {"pre": state_fields(sym, cti["pre"], spec.schema), "post": state_fields(sym, cti["post"], spec.schema)}
    proved = all(c["result"] == "proved" or c["rule"] == "init" and c["result"] == "unsat" for c in checks)
    return {"spec": spec.name, "mutation": mutation, "properties": names, "max_brokers": max_brokers,
            "proved": proved, "seconds": round(time.monotonic() - started, 2), "checks": len(checks),
            "failed": [c for c in checks if c["result"] not in ("proved", "unsat")], "ctis": ctis}


def cti_itf(result: dict, cti: dict) -> dict:
    """A CTI as a two-state ITF trace over the symbolic state, each variable under the name of the state
    field it stands for (`cti["fields"]`; sets as #set, epochs as integers). It is not a run of the model
    (its pre-state is any state satisfying the invariants), so it is for reading, not for `replay`."""
    def itf(v):
        return {"#set": v} if isinstance(v, list) else v
    pre, post = cti["fields"]["pre"], cti["fields"]["post"]
    states = [{"#meta": {"index": i}, **{k: itf(v) for k, v in st.items()}} for i, st in enumerate((pre, post))]
    meta = {"format": "ITF", "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "description": f"counterexample to induction: {cti['rule']} breaks {cti['property']}",
            "spec": result["spec"], "mutation": result["mutation"], "kind": "cti", "rule": cti["rule"],
            "property": cti["property"], "brokers": cti["brokers"], "params": cti["params"],
            "reachability": cti["reachability"], "reachable_depth": cti["reachable_depth"]}
    return {"#meta": meta, "vars": list(pre), "states": states}
