"""The kip435 model's symbolic form (specs/kip435/symbolic.py): every step of the model is a step of the
relation, the Z3 properties evaluate like their Python twins and the lemmas hold where the model goes;
`prove` proves the safe readings for every input up to 8 brokers and reports a reachable CTI for each
mutation and unsafe reading it models; bounded model checking finds the same shortest traces as BFS."""

import pytest
import z3

from harness.engines import bfs, z3bmc, z3prove
from harness.errors import BadInput
from harness.registry import load_spec
from symbolic_support import check_simulation as simulated, fix, reachable as reachable_steps
from specs.kip435 import symbolic as sym

SPEC = load_spec("kip435")

# One-partition configs where every rule fires: failures, a config change, lagging replicas, a new
# preferred leader, a shrinking and a growing target, MinISR above the in-sync count.
SAMPLED = [
    ("leader-first", ["max_failures=1", "max_config_changes=1", "min_isr=2"]),
    ("short", ["max_failures=1", "max_config_changes=1"]),
    ("drop2", ["max_failures=2", "targets=[[4,5]]"]),
    ("tiny", ["max_failures=1", "targets=[[3,1,2]]", "lagging=1", "min_isr=2"]),
]


def config(preset, settings=(), variants=(), mutation=None):
    return SPEC.config(preset, list(settings), list(variants), mutation)


def reachable(cfg, limit=4000):
    return reachable_steps(SPEC.bind(cfg), limit)


def check_simulation(cfg) -> dict:
    """Every model step that changes the projection is a step of the relation's rule of the same name, from
    and to the projected states; every other step keeps the projection. Returns steps checked per rule."""
    return simulated(sym, cfg, cfg.brokers, reachable(cfg)[1])


@pytest.mark.parametrize("preset,settings", SAMPLED)
def test_every_model_step_is_a_step_of_the_relation(preset, settings):
    checked = check_simulation(config(preset, settings))
    assert all(checked[r] for r in ("collect_batch", "catch_up", "drop_replicas", "fail", "recover")), checked


@pytest.mark.parametrize("variants,mutation", [
    (("reading=text",), None), (("reading=text", "leader_step=alone"), None), (("leader_step=alone",), None),
    (("topup=after",), None), (("wait=none",), None), (("wait=new",), None), ((), "drop_before_in_sync"),
    ((), "ignore_r"), ((), "skip_topup"), ((), "no_reorder"), ((), "leader_later"), ((), "keep_leader"),
])
def test_the_relation_follows_variants_and_mutations(variants, mutation):
    checked = check_simulation(config("leader-first", ["max_failures=1", "min_isr=2"], variants, mutation))
    assert checked["collect_batch"] and checked["drop_replicas"], checked


def evaluate(formula_of, cfg, state) -> bool:
    s = sym.make_state("e_", cfg.brokers)
    solver = z3.Solver()
    solver.add(*fix(s, sym.project(cfg, state)), z3.Not(formula_of(s)))
    return solver.check() == z3.unsat


@pytest.mark.parametrize("preset,settings,variants,mutation", [
    ("leader-first", ["max_failures=1", "min_isr=2"], (), None),
    ("leader-first", ["max_failures=1", "min_isr=2"], ("wait=none",), None),
    ("short", [], ("reading=text",), None),
    ("order", [], (), "no_reorder"),
    ("leader-first", [], (), "keep_leader"),
])
def test_z3_properties_agree_with_python_and_lemmas_hold_where_the_model_goes(preset, settings, variants, mutation):
    cfg = config(preset, settings, variants, mutation)
    model = SPEC.bind(cfg)
    states, _ = reachable(cfg, limit=300)
    disagreed = 0
    for state in states:
        for name, formula in sym.PROPERTIES.items():
            assert evaluate(formula, cfg, state) == model.holds(name, state), (name, state)
            disagreed += not model.holds(name, state)
        if mutation is None and not variants:
            for name, lemma in sym.LEMMAS.items():
                assert evaluate(lemma, cfg, state), (name, state)
    assert disagreed or (mutation is None and not variants)  # the unsafe ones reach a violation


@pytest.mark.gate
def test_prove_proves_the_safe_readings_for_every_input_up_to_8_brokers():
    result = z3prove.prove(SPEC.bind(config("ci")), max_brokers=8)
    assert result["proved"] and not result["ctis"], result["ctis"]
    assert {c["rule"] for c in result["failed"]} == set()
    assert result["checks"] == 8 * (1 + len(sym.RULES)) * len(SPEC.z3_invariants)


@pytest.mark.parametrize("variants", [("leader_step=alone",), ("topup=after",)])
def test_prove_proves_the_safe_readings_of_the_open_choices(variants):
    """The choices the KIP leaves open in the step calculation keep the step properties under the existing
    algorithm's wait (ci), for every input up to 4 brokers."""
    result = z3prove.prove(SPEC.bind(config("ci", (), variants)), max_brokers=4)
    assert result["proved"] and not result["ctis"], result["ctis"]


@pytest.mark.parametrize("preset,variants,mutation,rule,prop", [
    ("drop2", (), "drop_before_in_sync", "drop_replicas", "IsrFloor"),
    ("short", (), "ignore_r", "collect_batch", "StepWithinR"),
    ("short", (), "skip_topup", "collect_batch", "TopUp"),
    ("leader-first", (), "leader_later", "collect_batch", "PreferredLeaderFirst"),
    ("leader-first", (), "keep_leader", "drop_replicas", "PreferredLeaderFirst"),
    ("short", ("reading=text",), None, "collect_batch", "TopUp"),
    ("drop2", ("wait=none",), None, "drop_replicas", "NoAckedRecordLost"),
    ("drop2", ("wait=new",), None, "drop_replicas", "IsrFloor"),
    ("leader-first", ("reading=text",), None, "collect_batch", "PreferredLeaderFirst"),
])
def test_prove_reports_a_reachable_cti_for_each_unsafe_choice(preset, variants, mutation, rule, prop):
    result = z3prove.prove(SPEC.bind(config(preset, (), variants, mutation)), max_brokers=3)
    assert not result["proved"]
    found = {(c["rule"], c["property"]): c["reachable_depth"] for c in result["ctis"]}
    assert found.get((rule, prop)) is not None, found


def test_ignore_l_is_beyond_the_one_partition_relation():
    """A batch needs several partitions: the relation has no P or L, so the proof holds under ignore_l and
    bounded model checking refuses the two-partition config where BFS catches it."""
    model = SPEC.bind(config("leaders", mutation="ignore_l"))
    assert z3prove.prove(model, max_brokers=3)["proved"]
    with pytest.raises(BadInput, match="one partition"):
        z3bmc.check(model, depth=4)


@pytest.mark.parametrize("preset,variants,mutation", [
    ("drop2", (), "drop_before_in_sync"), ("leader-first", (), "keep_leader"), ("short", ("reading=text",), None),
    ("order", (), "no_reorder"),
])
def test_bmc_finds_the_shortest_trace_bfs_finds(preset, variants, mutation):
    model = SPEC.bind(config(preset, (), variants, mutation))
    by_bfs = bfs.explore(model).violations[0]
    by_z3 = z3bmc.check(model, depth=8).violations[0]
    assert by_z3.depth == by_bfs.depth and by_z3.outcome.property == by_bfs.outcome.property
