"""The replication model's symbolic form (specs/replication/symbolic.py): every step of the model is a step of
the relation, the Z3 properties and lemmas evaluate like their Python twins on the states the model reaches,
`prove` closes the metadata properties and judges the other CTIs against BFS's states, and BMC runs over
the relation."""

import json

import pytest
import z3

from harness.engines import z3bmc, z3prove
from harness.registry import load_spec
from harness.symbolic import const
from symbolic_support import reachable

SPEC = load_spec("replication")
NIGHTLY = pytest.mark.nightly  # cases the nightly's pytest adds (make test stays within its minutes)


def config(preset, mutation=None, settings=()):
    return SPEC.config(preset, list(settings), [], mutation)


def fixed(formula, pairs):
    """`formula` with the symbolic fields fixed, simplified (a literal when nothing else is free)."""
    return z3.simplify(z3.substitute(formula, *[(x, const(x, v)) for x, v in pairs]))


def simulated(cfg, limit: int, rules=None) -> dict:
    """Checks that each model step (from up to `limit` states) that changes the projection, of `rules` if
    given, is a step of the relation's rule of the same name; returns the steps checked per rule."""
    rel = SPEC.symbolic.for_config(cfg)
    n = cfg.broker_count
    s_, t_ = rel.make_state("s_", n), rel.make_state("t_", n)
    relations, checked, seen = {}, {}, set()
    for s, rule, t in reachable(SPEC.bind(cfg), limit)[1]:
        if rules and rule not in rules:
            continue
        before, after = rel.project(cfg, s), rel.project(cfg, t)
        key = (rule, tuple(before.values()), tuple(after.values()))
        if before == after or key in seen:
            continue
        seen.add(key)
        if rule not in relations:
            relations[rule] = z3.And(rel.RULES[rule](s_, t_, cfg)[0], rel.type_ok(s_), rel.type_ok(t_))
        solver = z3.Solver()
        solver.add(fixed(relations[rule], [(s_[f], v) for f, v in before.items()] +
                         [(t_[f], v) for f, v in after.items()]))
        assert solver.check() == z3.sat, (rule, {f: (before[f], after[f]) for f in before if before[f] != after[f]})
        checked[rule] = checked.get(rule, 0) + 1
    return checked


# Every rule of the relation: the parity configs (p3: a reassignment), fencing, restarts with both shutdowns,
# and kip966's (data-loss shutdown, fencing, the ELR).
# make test checks p1; the nightly every config (between them every rule).
CONFIGS = [("p1", 60), pytest.param("p3", 120, marks=NIGHTLY), pytest.param("fence", 120, marks=NIGHTLY),
           pytest.param("restart_faults", 120, marks=NIGHTLY), pytest.param("kip966", 120, marks=NIGHTLY)]


@pytest.mark.parametrize("preset,limit", CONFIGS)
@pytest.mark.slow
def test_every_model_step_is_a_step_of_the_relation(preset, limit):
    checked = simulated(config(preset), limit)
    assert sum(checked.values()) > 50, checked


@pytest.mark.parametrize("mutation", [m if m == "isr_join_below_hwm" else pytest.param(m, marks=NIGHTLY)
                                      for m in sorted(SPEC.mutations)])
def test_every_mutated_step_is_a_step_of_the_mutated_relation(mutation):
    """Under each mutation, the steps of the rule it changes (at the config that catches it)."""
    m = SPEC.mutations[mutation]
    checked = simulated(config(m.caught_at, mutation), 200, rules={m.rule})
    assert checked.get(m.rule, 0) > 0, checked


@pytest.mark.parametrize("preset,mutation,limit", [("p1", None, 60), ("p1", "isr_join_below_hwm", 60),
                                                   pytest.param("kip966", None, 150, marks=NIGHTLY),
                                                   pytest.param("fence", None, 150, marks=NIGHTLY)])
def test_z3_properties_agree_with_python_on_reached_states(preset, mutation, limit):
    """On the first states BFS reaches and, under a mutation, on its counterexample's states (the violating
    ones among them: BFS finds them at depth 11, past any affordable prefix)."""
    from harness.engines import bfs

    cfg = config(preset, mutation)
    model = SPEC.bind(cfg)
    rel = SPEC.symbolic.for_config(cfg)
    s_ = rel.make_state("s_", cfg.broker_count)
    forms = {p: f(s_) for p, f in SPEC.z3_invariants.items() if p in SPEC.invariants}
    states = reachable(model, limit)[0]
    if mutation:
        states = list(states) + bfs.explore(model).violations[0].states
    violated = 0
    for st in states:
        pairs = [(s_[f], v) for f, v in rel.project(cfg, st).items()]
        for p, form in forms.items():
            value = fixed(form, pairs)
            assert z3.is_true(value) or z3.is_false(value)
            assert z3.is_true(value) == bool(model.holds(p, st) is True), (p, st)
            violated += z3.is_false(value)
    assert violated > 0 or mutation is None  # the mutation's violations are among the states compared


@pytest.mark.parametrize("preset,settings,limit", [
    ("p1", (), 40), pytest.param("p1", tuple(SPEC.symbolic.CI_PLAN["settings"]), 100_000, marks=NIGHTLY),
    pytest.param("fence", (), 150, marks=NIGHTLY), pytest.param("restart_faults", (), 150, marks=NIGHTLY),
    pytest.param("kip966", (), 150, marks=NIGHTLY), pytest.param("p3", (), 150, marks=NIGHTLY)])
@pytest.mark.slow
def test_the_lemmas_hold_where_the_model_goes(preset, settings, limit):
    """Every lemma holds on the states BFS reaches first (the nightly: every state of p1 at the proof's bounds,
    and the first states of the fault configs, where LemmaNoElectionBeforeAFault's premise ends)."""
    cfg = config(preset, settings=settings)
    rel = SPEC.symbolic.for_config(cfg)
    s_ = rel.make_state("s_", cfg.broker_count)
    forms = {name: lemma(s_) for name, lemma in SPEC.symbolic.LEMMAS.items()}
    seen = set()
    for st in reachable(SPEC.bind(cfg), limit)[0]:
        projected = rel.project(cfg, st)
        key = tuple(projected.values())
        if key in seen:
            continue
        seen.add(key)
        pairs = [(s_[f], v) for f, v in projected.items()]
        for name, form in forms.items():
            assert z3.is_true(fixed(form, pairs)), (name, st)


def test_each_lemma_excludes_some_state():
    """No lemma is vacuous at p1: each is false on some well-typed state (so the test above can fail)."""
    cfg = config("p1", settings=SPEC.symbolic.CI_PLAN["settings"])
    rel = SPEC.symbolic.for_config(cfg)
    s_ = rel.make_state("s_", cfg.broker_count)
    for name, lemma in SPEC.symbolic.LEMMAS.items():
        solver = z3.Solver()
        solver.add(rel.type_ok(s_), z3.Not(lemma(s_)))
        assert solver.check() == z3.sat, name


@pytest.mark.gate  # the gate's Z3 step proves the same (replication's CI_PLAN): make ci and the nightly run it
@NIGHTLY  # about 45 s of one core: make test leaves it to the gate's step
def test_prove_closes_every_property_at_p1_with_the_lemmas():
    """The six properties and the lemmas are inductive together over the whole relation at p1 (with p1's own
    message and metadata bounds): no CTI is left."""
    preset, properties = SPEC.symbolic.CI_PLAN["prove"]
    assert set(properties) == set(SPEC.symbolic.PROPERTIES) | set(SPEC.symbolic.LEMMAS)
    cfg = config(preset, settings=SPEC.symbolic.CI_PLAN["settings"])
    result = z3prove.prove(SPEC.bind(cfg), properties)
    assert result["proved"], result["failed"]
    assert result["checks"] == (1 + len(SPEC.symbolic.for_config(cfg).RULES)) * len(properties)


def test_prove_without_a_config_runs_the_proof_plan(cli):
    """`prove replication` without --config proves at the plan's config and bounds (p1, two messages, three
    metadata records), and says so."""
    code, out, err = cli("prove", "replication", "--property", "MinIsrRecoveryQuorum", "--json")
    assert code == 0, (out, err)
    assert "--config p1 --set message_bound=2 --set metadata_log_bound=3" in err, err
    assert '"proved": true' in out


def test_prove_explains_each_cti_by_the_reachable_states():
    """LogMatching alone is not inductive (a leader's write beside a follower whose log disagrees below
    both HWMs): each CTI's pre-state is judged against every state BFS reaches at p1, and none is."""
    result = z3prove.prove(SPEC.bind(config("p1", settings=SPEC.symbolic.CI_PLAN["settings"])), ["LogMatchingProperty"])
    assert not result["proved"] and result["ctis"]
    assert "WriteRecordToLeader" in {c["rule"] for c in result["ctis"]}
    for cti in result["ctis"]:
        assert cti["reachable_depth"] is None
        assert cti["reachability"].startswith("unreachable (not among the 1,163 states BFS reaches)"), cti


def test_bmc_widens_its_cut_relation_where_the_model_needs_room():
    """BMC's relation starts with one message slot per type; p1's followers put two fetch requests in flight
    by step 2, so it is widened once (to two slots) and the search to depth 5 is complete and clean."""
    result = z3bmc.check(SPEC.bind(config("p1", "isr_join_below_hwm")), depth=5)
    assert not result.violations and result.complete, result.stats
    assert result.stats["widenings"] == 1 and result.stats["relation"]["message_slots"] == 2, result.stats


@pytest.mark.parametrize("preset,limit", [("p1", 60), pytest.param("fence", 150, marks=NIGHTLY)])
@pytest.mark.slow
def test_every_model_step_is_a_step_of_the_cut_relation_or_flagged_by_it(preset, limit):
    """BMC's sound cut: a model step between states that fit the cut relation is one of its steps; a step
    into a state that does not fit (a third metadata record, a second message of a type) is a step of the
    relation into a state it flags as saturated, so BMC widens instead of missing the run."""
    cfg = config(preset)
    rel = SPEC.symbolic.for_bmc(cfg, 8)
    n = cfg.broker_count
    s_, t_ = rel.make_state("s_", n), rel.make_state("t_", n)
    kinds, seen = {"fits": 0, "flagged": 0}, set()
    for s, rule, t in reachable(SPEC.bind(cfg), limit)[1]:
        before, after = rel.project(cfg, s), rel.project(cfg, t)
        fits = rel.fits(cfg, t)
        key = (rule, tuple(before.values()), tuple(after.values()) if fits else None)
        if not rel.fits(cfg, s) or before == after or key in seen:
            continue
        seen.add(key)
        step = z3.And(rel.RULES[rule](s_, t_, cfg)[0], rel.type_ok(s_), rel.type_ok(t_))
        pairs = [(s_[f], v) for f, v in before.items()] + ([(t_[f], v) for f, v in after.items()] if fits else [])
        solver = z3.Solver()
        solver.add(fixed(step, pairs), *([] if fits else [rel.saturated(t_)]))
        assert solver.check() == z3.sat, (rule, fits, {f: (before[f], after[f]) for f in before if before[f] != after[f]})
        kinds["fits" if fits else "flagged"] += 1
    assert kinds["fits"] > 20 and kinds["flagged"] > 5, kinds


@NIGHTLY
def test_bmc_finds_bfs_shortest_trace_of_the_p1_mutation_and_it_replays(cli, tmp_path):
    """The acceptance case: BMC to depth 11 finds isr_join_below_hwm's 11-step trace (BFS's length) and the
    trace replays (about 2 minutes of solver time on this machine)."""
    code, out, err = cli("check", "replication", "--config", "p1", "--mutation", "isr_join_below_hwm", "--engine", "z3",
                         "--depth", "11", "--solver-timeout", "600", "--out", tmp_path, "--json")
    assert code == 1, (out, err)
    bmc = json.loads(out)
    trace = next(tmp_path.glob("*.itf.json"))
    assert [v["length"] for v in bmc["violations"]] == [11], bmc["violations"]
    bfs_result = json.loads(cli("check", "replication", "--config", "p1", "--mutation", "isr_join_below_hwm",
                                "--out", tmp_path / "bfs", "--json")[1])
    assert [v["length"] for v in bfs_result["violations"]] == [11]
    code, out, err = cli("replay", trace)
    assert code == 0 and "replays as recorded: 11 steps" in out, (out, err)


def test_prove_below_the_configs_broker_count_is_refused(cli):
    """The relation is sized by the config: `--brokers` below its broker count would prove nothing."""
    code, out, err = cli("prove", "replication", "--config", "p1", "--brokers", "2")
    assert code == 2 and err.strip().count("\n") == 0 and "broker_count (3)" in err, (out, err)
