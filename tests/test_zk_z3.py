"""The zk model's symbolic form (specs/zk/symbolic.py): each Z3 rule agrees with its model rule on
concrete states, every model step is a stutter or a step of the relation, the Z3 properties evaluate
like their Python twins and the lemmas hold where the model goes; `prove` proves the seed model and
reports a reachable CTI for a mutation it models."""

import itertools
import random

import pytest
import z3

from harness.bitset import mask
from harness.engines import z3prove
from harness.errors import BadInput
from harness.registry import load_spec
from specs.zk.logic import alive
from specs.zk.state import Budget
from specs.zk import symbolic as sym

SPEC = load_spec("zk")
N = 3
# Every controller rule of the seed variant applies; targets include a one-broker one and a reordering.
SAMPLED = ["brokers=3", "replicas=[1,2]", "targets=[[2,3],[3],[1,3],[3,2,1]]", "max_reassignments=2",
           "max_failovers=2", "max_broker_crashes=2", "max_preferred=1", "max_records=0"]
PLENTY = Budget(reassignments=3, cancels=0, failovers=3, zombies=0, broker_crashes=3, shrinks=3, preferred=3, records=0)


def config(settings=(), variants=(), mutation=None):
    return SPEC.config("tiny", list(SAMPLED) + list(settings), list(variants), mutation)


_WALKS: dict = {}


def sampled_states(cfg, per_step=6, walks=150, steps=40, seed=0):
    """States met by seeded random walks of the model, up to `per_step` for each controller step (and
    for no controller) with or without each pending event (an ISR change notification, the admin
    znode's creation, a broker change) and a leader being removed, so that every phase, handler and
    branch is represented; deterministic."""
    key_ = (cfg, per_step, walks, steps, seed)
    if key_ not in _WALKS:
        model = SPEC.bind(cfg)
        rnd = random.Random(seed)
        seen: dict = {}
        for _ in range(walks):
            state = model.init_states()[0]
            for _ in range(steps):
                seen.setdefault(state, None)
                nxt = model.successors(state)
                if not nxt:
                    break
                state = rnd.choice(nxt)[1]
        buckets: dict = {}
        for state in rnd.sample(list(seen), len(seen)):
            c = state.controller
            leaving = bool(state.zk.leader and c.stopping >> state.zk.leader & 1)
            events = (state.zk.isr_notice, c.znode_event, c.live == alive(state))
            bucket = buckets.setdefault((c.epoch > 0, c.step, events, leaving), [])
            if len(bucket) < per_step:
                bucket.append(state)
        _WALKS[key_] = [s for b in buckets.values() for s in b]
    return _WALKS[key_]


def key(cfg, state) -> tuple:
    p = sym.project(cfg, state)
    return tuple(p[f] for f in sym.MATCHED)


def orderings(state):
    """The state under every order of its two replica lists (the symbolic state has sets)."""
    zk, c = state.zk, state.controller
    for rs in dict.fromkeys(itertools.permutations(zk.rs)):
        for crs in dict.fromkeys(itertools.permutations(c.rs)):
            yield state._replace(zk=zk._replace(rs=rs), controller=c._replace(rs=crs))


def concrete_steps(model, state):
    """(symbolic rule or None, successor) for every step of the model from `state` and its reorderings,
    with budgets that disable nothing (the relation has none)."""
    names = {v: k for k, v in sym.MODEL_RULE.items()}
    out = []
    for s in orderings(state._replace(budget=PLENTY)):
        for index, t in model.successors(s):
            name = model.rule_names[model.action_rule[index]]
            name = names.get(name, name)
            out.append((name if name in sym.RULES else None, s, t))
    return out


def fix(s, values: dict):
    return [s[f] == sym.const(s[f], v) for f, v in values.items()]


def symbolic(cfg, state) -> dict:
    return dict(sym.project(cfg, state), LR=sym.leader_replicas(state))


S, T = sym.make_state("s_", N), sym.make_state("t_", N)  # every relation below is over these


class Relation:
    """One rule's relation in one solver; each query pushes a concrete pre-state's constraints."""

    def __init__(self, rule, cfg):
        rel, _ = sym.RULES[rule](S, T, cfg)
        self.solver = z3.Solver()
        self.solver.add(rel, sym.type_ok(T))
        if rule == "create_reassign_znode":  # the model's targets only (as BMC's bounds)
            self.solver.add(z3.Or(*[T["T"] == z3.BitVecVal(mask(x), N + 1) for x in cfg.targets]))

    def outcomes(self, pre: list) -> set:
        fields = [T[f] for f in sym.MATCHED]
        self.solver.push()
        self.solver.add(*pre)
        out = set()
        while self.solver.check() == z3.sat and len(out) < 500:
            m = self.solver.model()
            vals = [m.evaluate(f, model_completion=True) for f in fields]
            out.add(tuple(z3.is_true(v) if z3.is_bool(v) else v.as_long() for v in vals))
            self.solver.add(z3.Or(*[f != v for f, v in zip(fields, vals)]))
        self.solver.pop()
        return out

    def allows(self, pre: list, post: dict) -> bool:
        """The step, with LR as the concrete states determine it."""
        self.solver.push()
        self.solver.add(*pre, *fix(T, post))
        verdict = self.solver.check()
        self.solver.pop()
        return verdict == z3.sat


ENVIRONMENT = ("expand_isr", "shrink_isr")  # abstractions of the leaders' writes: over-approximations


def check_agreement(cfg, states, rules=None) -> dict:
    """For each state: every symbolic rule's outcomes are exactly the model rule's (projected, over all
    replica orders; the environment's rules include them); every projection-changing model step is a
    step of its rule with LR; every other step keeps the projection and does not grow LR. Returns, per
    rule, how many states had a step of it."""
    model = SPEC.bind(cfg)
    relations = {r: Relation(r, cfg) for r in (rules or sym.RULES)}
    fired = dict.fromkeys(relations, 0)
    for state in states:
        steps = concrete_steps(model, state)
        pre = fix(S, dict(symbolic(cfg, state), live=alive(state)))
        for rule, rel in relations.items():
            py = {key(cfg, t) for name, s, t in steps if name == rule and key(cfg, t) != key(cfg, s)}
            zz = rel.outcomes(pre)
            if rule in ENVIRONMENT:
                assert py <= zz, (rule, state, py - zz)
            else:
                assert py == zz, (rule, state, py ^ zz)
            fired[rule] += bool(py)
        checked = set()
        for name, s, t in steps:
            if key(cfg, t) == key(cfg, s):
                assert sym.leader_replicas(t) & ~sym.leader_replicas(s) == 0, (name, s, t)
                continue
            assert name is not None, ("a step outside the relation changes the projection", s, t)
            before, after = symbolic(cfg, s), symbolic(cfg, t)
            step = (name, tuple(before.items()), tuple(after.items()))
            if name in relations and step not in checked:
                checked.add(step)
                assert relations[name].allows(fix(S, dict(before, live=alive(s))), after), (name, s, t)
    return fired


def test_each_rule_agrees_with_the_model_and_every_step_is_simulated():
    cfg = config()
    fired = check_agreement(cfg, sampled_states(cfg, per_step=4))
    assert all(fired[r] >= 3 for r in fired if r != "shrink_isr"), fired
    shrinking = config(["max_shrinks=1"])
    fired = check_agreement(shrinking, sampled_states(shrinking, per_step=4), ["expand_isr", "shrink_isr"])
    assert fired["shrink_isr"] >= 10, fired


@pytest.mark.parametrize("variants,mutation,rules", [
    (("phase_b=literal",), None,
     ("handle_reassign_znode_creation", "handle_isr_change_notification", "resume_reassignments")),
    (("unclean=true",), None, ("controller_failover", "handle_broker_change")),
    ((), "rs_updated_first", ("b1_online_new_replicas",)),
    ((), "complete_without_trs_in_isr", ("handle_reassign_znode_creation",)),
    ((), "delete_before_shrink", ("b3_move_leader", "b4_offline_removed_replicas", "b5_delete_removed_replicas")),
    ((), "b3_skip_election", ("b3_move_leader", "b4_offline_removed_replicas")),  # B4 then removes the leader
    ((), "a1_no_epoch_bump", ("a1_bump_leader_epoch",)),
])
def test_rules_agree_under_variants_and_mutations(variants, mutation, rules):
    """The variants, and the mutations of controller rules, that the relation models."""
    cfg = config((), variants, mutation)
    fired = check_agreement(cfg, sampled_states(cfg, per_step=3), list(rules))
    assert all(fired[r] >= 1 for r in rules), fired


FORMULAS = {name: f(S) for name, f in {**sym.PROPERTIES, **sym.LEMMAS}.items()}


def evaluate(names, cfg, state) -> dict:
    """The Z3 forms `names` on a concrete state (LR as it determines it)."""
    values = dict(symbolic(cfg, state), live=alive(state))
    pairs = [(S[f], sym.const(S[f], v)) for f, v in values.items()]
    out = {}
    for name in names:
        verdict = z3.simplify(z3.substitute(FORMULAS[name], *pairs))
        assert z3.is_true(verdict) or z3.is_false(verdict), verdict
        out[name] = z3.is_true(verdict)
    return out


PARTIAL = ("CompletionPostcondition",)  # its Z3 form leaves out the clause on a leaderless idle controller


def test_z3_properties_evaluate_like_their_python_twins_and_lemmas_hold_where_the_model_goes():
    clean = config()
    broken = [config(mutation="complete_without_trs_in_isr"), config(mutation="rs_updated_first"),
              config(["brokers=2", "replicas=[1,2]", "targets=[[2]]", "max_shrinks=1"])]
    violated = set()
    for cfg, states in [(clean, sampled_states(clean)), *[(c, sampled_states(c, per_step=3)) for c in broken]]:
        model = SPEC.bind(cfg)
        for state in states:
            zz = evaluate(list(sym.PROPERTIES) + (list(sym.LEMMAS) if cfg is clean else []), cfg, state)
            for name in sym.PROPERTIES:
                py = model.holds(name, state)
                assert (zz[name] if py else True) if name in PARTIAL else py == zz[name], (name, state)
                if not py:
                    violated.add(name)
            assert all(zz[name] for name in sym.LEMMAS if name in zz), (zz, state)
    assert {"AssignmentRecoverable", "CompletionPostcondition", "IsrSubsetOfReplicas"} <= violated, violated


def test_prove_proves_the_seed_model():
    r = z3prove.prove(SPEC.bind(SPEC.config()), max_brokers=3)
    assert r["proved"], r["ctis"]
    assert r["checks"] == 3 * len(SPEC.z3_invariants) * (len(sym.RULES) + 1)
    assert set(sym.PROPERTIES) | set(sym.LEMMAS) == set(SPEC.z3_invariants)


def test_prove_with_every_controller_rule():
    """Broker crashes and preferred elections on (the default config has neither)."""
    r = z3prove.prove(SPEC.bind(config()), max_brokers=2)
    assert r["proved"], r["ctis"]


def test_without_the_lemmas_the_properties_are_not_inductive():
    r = z3prove.prove(SPEC.bind(SPEC.config()), properties=list(sym.PROPERTIES), max_brokers=1, reach_depth=2)
    assert not r["proved"] and all(c["reachable_depth"] is None for c in r["ctis"])


def test_a_mutation_the_relation_models_gives_a_reachable_cti():
    r = z3prove.prove(SPEC.bind(SPEC.config(mutation="rs_updated_first")), max_brokers=2, reach_depth=3)
    assert not r["proved"]
    cti = [c for c in r["ctis"] if c["property"] == "AssignmentRecoverable"][0]
    assert cti["rule"] == "b1_online_new_replicas" and cti["reachability"].startswith("reachable")
    assert set(cti["pre"]["ors"]) - set(cti["post"]["RS"])  # an original replica left RS


@pytest.mark.parametrize("preset", ["kafka_small", "zombie"])
def test_prove_refuses_what_the_relation_does_not_model(preset):
    with pytest.raises(BadInput, match="seed variant|zombie"):
        z3prove.prove(SPEC.bind(SPEC.config(preset)), max_brokers=1)


def test_bmc_finds_the_bfs_shortest_trace_and_it_replays(tmp_path):
    from harness.check import write_counterexamples
    from harness.engines import bfs, z3bmc
    from harness.replay import replay
    from harness.trace import read_trace

    model = SPEC.bind(SPEC.config(mutation="complete_without_trs_in_isr"))
    shortest = bfs.explore(model).violations[0]
    r = z3bmc.check(model, depth=8)
    assert r.stats["exhaustive"] and len(r.violations) == 1
    v = r.violations[0]
    assert v.depth == shortest.depth and v.outcome.property == shortest.outcome.property
    write_counterexamples(model, r, tmp_path, None)
    assert replay(read_trace(v.trace_path)).ok
