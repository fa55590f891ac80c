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
