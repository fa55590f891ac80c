"""The kip642 model's symbolic form (specs/kip642/symbolic.py): every step of the model is a step of the
relation, the Z3 properties evaluate like their Python twins and the lemma holds where the model goes;
`prove` shows the quorum properties inductive for 1..8 servers only with the lemma, and reports a
reachable CTI for the mutation that breaks them; bounded model checking turns it into a replayable trace."""

import pytest
import z3

from harness.engines import bfs, z3bmc, z3prove
from harness.registry import load_spec
from symbolic_support import check_simulation, fix, reachable as reachable_steps
from harness.replay import replay
from harness.trace import read_trace
from specs.kip642 import symbolic as sym

SPEC = load_spec("kip642")

# Configs where every rule of the relation is simulated: elections and crashes, a cancel, a lost disk,
# KIP-642's own vote rule, the broken one-change-at-a-time rule.
SAMPLED = [
    ("ci", [], (), None),
    ("tiny", ["max_cancels=1", "max_reassignments=2", "max_elections=2"], (), None),
    ("disk-loss", ["max_elections=1"], (), None),
    ("literal-votes", ["max_crashes=1"], (), None),
    ("ci", [], (), "two_uncommitted_changes"),
    ("ci", [], (), "change_before_epoch_commit"),
]


def config(preset, settings=(), variants=(), mutation=None):
    return SPEC.config(preset, list(settings), list(variants), mutation)


def reachable(cfg, limit=5000):
    return reachable_steps(SPEC.bind(cfg), limit)


@pytest.mark.parametrize("preset,settings,variants,mutation", SAMPLED)
def test_every_model_step_is_a_step_of_the_relation(preset, settings, variants, mutation):
    """A model step that changes the projection is a step of the relation's rule that simulates it
    (`STEPS`), from and to the projected states."""
    cfg = config(preset, settings, variants, mutation)
    checked = check_simulation(sym, cfg, cfg.servers, reachable(cfg)[1], sym.STEPS.get)
    assert all(checked[r] for r in ("alter_partition_reassignments", "leader_step", "advance_hwm", "fetch",
                                    "become_leader", "step_down")), checked


def evaluate(formula_of, cfg, state) -> bool:
    s = sym.make_state("e_", cfg.servers)
    solver = z3.Solver()
    solver.add(*fix(s, sym.project(cfg, state)), sym.type_ok(s), z3.Not(formula_of(s)))
    return solver.check() == z3.unsat


@pytest.mark.parametrize("preset,settings,variants,mutation", SAMPLED)
def test_z3_properties_agree_with_python_and_the_lemma_holds_where_the_model_goes(preset, settings, variants, mutation):
    cfg = config(preset, settings, variants, mutation)
    model = SPEC.bind(cfg)
    states, _ = reachable(cfg, limit=400)
    if mutation == "two_uncommitted_changes":  # and the states of its shortest counterexample, 7 steps deep
        [v] = bfs.explore(model).violations
        states += v.states
    disagreed = 0
    for state in states:
        for name, formula in sym.PROPERTIES.items():
            assert evaluate(formula, cfg, state) == model.holds(name, state), (name, state)
            disagreed += not model.holds(name, state)
        if mutation != "two_uncommitted_changes":
            assert all(evaluate(lemma, cfg, state) for lemma in sym.LEMMAS.values()), state
    assert bool(disagreed) == (mutation == "two_uncommitted_changes")


@pytest.mark.gate
def test_prove_shows_the_quorum_properties_inductive_for_up_to_8_servers():
    result = z3prove.prove(SPEC.bind(config("ci")), max_brokers=8)
    assert result["proved"] and not result["ctis"], result["ctis"]
    assert result["checks"] == 8 * (1 + len(sym.RULES)) * len(SPEC.z3_invariants)


def test_without_the_lemma_a_new_leader_breaks_induction_from_an_unreachable_state():
    result = z3prove.prove(SPEC.bind(config("ci")), properties=list(sym.PROPERTIES), max_brokers=3)
    assert not result["proved"]
    assert {(c["rule"], c["property"]) for c in result["ctis"]} == {("become_leader", "AtMostOneUncommittedVoterChange")}
    assert all(c["reachable_depth"] is None for c in result["ctis"])


@pytest.mark.parametrize("mutation", sorted(SPEC.mutations))
def test_only_the_one_change_at_a_time_mutation_breaks_the_relations_properties(mutation):
    result = z3prove.prove(SPEC.bind(config("ci", mutation=mutation)), max_brokers=3)
    if mutation != "two_uncommitted_changes":
        assert result["proved"], result["ctis"]  # it breaks Raft properties, which have no Z3 form
        return
    broken = {(c["rule"], c["property"]) for c in result["ctis"] if c["reachable_depth"] is not None}
    assert ("leader_step", "AtMostOneUncommittedVoterChange") in broken


def test_bmc_turns_the_mutation_into_a_replayable_trace(tmp_path):
    from harness.check import write_counterexamples

    model = SPEC.bind(config("ci", mutation="two_uncommitted_changes"))
    r = z3bmc.check(model, depth=6)
    [v] = r.violations
    assert v.outcome.property == "AtMostOneUncommittedVoterChange"
    write_counterexamples(model, r, tmp_path, None)
    assert replay(read_trace(v.trace_path)).ok


def test_bmc_finds_nothing_on_the_correct_protocol():
    r = z3bmc.check(SPEC.bind(config("tiny")), depth=6)
    assert not r.violations and r.stats["depth"] == 6
