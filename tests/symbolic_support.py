"""Shared by the tests of the specs' symbolic (Z3) forms: a model's steps, and a symbolic state fixed to
a projection."""

from harness.symbolic import const


def reachable(model, limit: int = 4000) -> tuple[list, list]:
    """The model's states and steps (pre, rule, post) from its initial states, breadth first, up to `limit`
    states."""
    seen = dict.fromkeys(model.init_states())
    frontier, steps = list(seen), []
    while frontier and len(seen) < limit:
        nxt = []
        for s in frontier:
            for index, t in model.successors(s):
                steps.append((s, model.rule_names[model.action_rule[index]], t))
                if t not in seen:
                    seen[t] = None
                    nxt.append(t)
        frontier = nxt
    return list(seen), steps


def fix(s: dict, values: dict) -> list:
    """Constraints: symbolic state `s` has these field values."""
    return [s[f] == const(s[f], v) for f, v in values.items()]


def check_simulation(sym, cfg, n: int, steps: list, rule_of=lambda rule: rule) -> dict:
    """Every model step (pre, rule, post) that changes the projection is a step of the relation's rule
    `rule_of(rule)`, from and to the projected states. Returns the steps checked per relation rule."""
    import z3

    s_, t_ = sym.make_state("s_", n), sym.make_state("t_", n)
    solvers = {}
    for name, rule in sym.RULES.items():
        rel, _ = rule(s_, t_, cfg)
        solvers[name] = z3.Solver()
        solvers[name].add(rel, sym.type_ok(s_), sym.type_ok(t_))
    checked, done = dict.fromkeys(sym.RULES, 0), set()
    for s, rule, t in steps:
        before, after = sym.project(cfg, s), sym.project(cfg, t)
        key = (rule, tuple(before.items()), tuple(after.items()))
        if before == after or key in done:
            continue
        done.add(key)
        solver = solvers[rule_of(rule)]
        solver.push()
        solver.add(*fix(s_, before), *fix(t_, after))
        assert solver.check() == z3.sat, (rule, s, t)
        solver.pop()
        checked[rule_of(rule)] += 1
    return checked
