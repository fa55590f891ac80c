"""The `kip435` model: KIP-435's worked example, the step function's properties, the model's checks,
mutations and the unsafe readings of the KIP."""

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from harness.engines import bfs, graph
from harness.registry import load_spec
from specs.kip435.logic import step, step_bound, steps

SPEC = load_spec("kip435")
KIP_CR, KIP_FTR = (0, 1, 2, 3, 4), (5, 6, 7, 8, 9)


def model(preset, mutation=None, **variants):
    return SPEC.bind(SPEC.config(preset, variants=[f"{k}={v}" for k, v in variants.items()], mutation=mutation))


# ------------------------------------------------------------------------ the worked example

@pytest.mark.parametrize("min_isr", [1, 2, 3])
def test_example_reading_reproduces_the_kips_four_steps(min_isr):
    """KIP-435, Proposed Changes: (0,1,2,3,4) -> (5,6,7,8,9) with leader 0 and R = 2 (the KIP does not give
    MinISR; the steps do not depend on it while every replica is in sync)."""
    assert steps(KIP_FTR, KIP_CR, 2, min_isr, "example") == [
        KIP_CR, (5, 0, 1, 2, 3, 4), (5, 6, 2, 3, 4), (5, 6, 7, 8, 4), KIP_FTR]
    first = step(KIP_FTR, KIP_CR, KIP_CR, 0, 2, min_isr, "example")
    assert first.nr == (5,) and first.dr == ()


def test_text_reading_of_the_example_is_recorded():
    """The numbered rules read literally drop two replicas in the first step too (three steps), and with
    MinISR = 1 rule 3.3 compares |NR| with MinISR and adds one replica while dropping two: the partition
    shrinks to four replicas on the way. Rule 4, TR = CR + NR - DR, appends the new replicas after the
    survivors: the new preferred leader 5 is not first until the last step orders TR as FTR (rule 5)."""
    assert steps(KIP_FTR, KIP_CR, 2, 2, "text") == [KIP_CR, (2, 3, 4, 5, 6), (4, 5, 6, 7, 8), KIP_FTR]
    assert steps(KIP_FTR, KIP_CR, 2, 1, "text") == [KIP_CR, (2, 3, 4, 5, 6), (4, 5, 6, 7), (5, 6, 7, 8), KIP_FTR]


# ------------------------------------------------------------------- the choices the KIP leaves open

def test_the_step_that_adds_a_new_preferred_leader_adds_it_alone_or_with_others():
    """Rule 3.2 puts FTR's new preferred leader in NR; whether 3.3/3.4 then add more in that step is open.
    `alone`: only the leader (PR #6011 adds one new replica per step); `with-others`: up to R in all. The
    MinISR top-up (Proposed Changes: the first step's exception) applies under both."""
    grow_ftr, grow_cr = (3, 1, 2, 4), (1, 2)
    assert step(grow_ftr, grow_cr, grow_cr, 1, 2, 1, "example", leader_step="with-others").nr == (3, 4)
    assert step(grow_ftr, grow_cr, grow_cr, 1, 2, 1, "example", leader_step="alone").nr == (3,)
    assert step(KIP_FTR, KIP_CR, KIP_CR, 0, 2, 1, "text", leader_step="with-others").nr == (5, 6)
    alone = step(KIP_FTR, KIP_CR, KIP_CR, 0, 2, 1, "text", leader_step="alone")
    assert alone.nr == (5,) and alone.dr == (0, 1) and alone.tr == (2, 3, 4, 5)
    # (1,2,3) with only 1 in sync, MinISR 3: the top-up adds two although the step adds a new leader
    assert step((4, 1, 5), (1, 2, 3), {1}, 1, 1, 3, "example", leader_step="alone").nr == (4, 5)


def test_the_min_isr_top_up_counts_the_in_sync_replicas_before_or_after_the_drops():
    """(1,2,3) with 3 behind -> (2,4,5), MinISR 3, R = 1: before the drop of 1 two replicas are in sync, so
    the top-up adds one; after it only 2 is, so it adds two (beyond R)."""
    ftr, cr, isr = (2, 4, 5), (1, 2, 3), {1, 2}
    assert step(ftr, cr, isr, 1, 1, 3, "example", topup="before").nr == (4,)
    assert step(ftr, cr, isr, 1, 1, 3, "example", topup="after").nr == (4, 5)


def test_how_a_leader_movement_is_counted_for_l():
    """`leaders`: two partitions whose first steps add a new preferred leader that the step then elects.
    Counted as a step whose TR leads with another replica (`first`), L = 1 keeps one of them out of the
    batch; counted as a step whose TR lacks the current leader (`leaves`, step 7's "if current leader not
    in TR"), neither counts and the batch moves two leaders."""
    assert not bfs.explore(model("leaders", moves="first")).violations
    r = bfs.explore(model("leaders", moves="leaves"))
    assert [(v.outcome.property, v.depth) for v in r.violations] == [("BatchWithinLimits", 1)]


def test_describe_lists_each_choice_with_its_source():
    from harness.present import describe

    variants = {v["name"]: v for v in describe(SPEC, None)["variants"]}
    assert set(variants) == {"reading", "leader_step", "topup", "moves", "batch", "wait"}
    assert "PR #6011" in variants["leader_step"]["doc"] and "3.3" in variants["topup"]["doc"]
    assert "step 7" in variants["moves"]["doc"] and "Performing reassignment" in variants["wait"]["doc"]
    assert variants["wait"]["value"] == "none" and variants["wait"]["choices"] == ["none", "new", "target"]


# ------------------------------------------------------------------- KIP-435 as written

def test_kip_435_as_written_loses_acknowledged_records_on_its_own_example():
    """The default is the KIP's own execution (Performing reassignment, steps 1-10: DR are forced out of the
    ISR in the step that adds NR, nothing waits for NR to catch up). On the KIP's partition with its R = 2
    and Kafka's default MinISR = 1, four steps whose new replicas have not caught up leave 5 the only
    in-sync replica and then delete it: 8 actions. The failure is declared expected."""
    cfg = SPEC.config("example")
    assert (cfg.reading, cfg.wait, cfg.r, cfg.min_isr) == ("example", "none", 2, 1)
    assert "example" in SPEC.expected
    r = bfs.explore(SPEC.bind(cfg), keep_going=True, max_depth=8)
    assert {v.outcome.property: v.depth for v in r.violations} == {"IsrFloor": 8, "NoAckedRecordLost": 8}
    # waiting for the target (the existing algorithm's step 4) is safe on the same partition
    assert not bfs.explore(model("example", wait="target")).violations


def test_presets_that_check_another_choice_pin_the_safe_execution():
    """A mutation, or an unsafe reading of the step calculation, is caught at a preset whose unmutated
    protocol is safe there, so what catches it is the mutation or reading (not the default's loss)."""
    for name, mutation in SPEC.mutations.items():
        assert not bfs.explore(SPEC.bind(SPEC.config(mutation.caught_at))).violations, name
    assert SPEC.config("ci").wait == "target"


# ------------------------------------------------------------------- replicas behind at the start

def test_initial_states_include_every_choice_of_replicas_behind():
    """`lagging`: up to that many replicas of each partition other than its leader start out of the ISR."""
    m = SPEC.bind(SPEC.config("tiny", ["replicas=[[1,2,3]]", "targets=[[1,2,3]]", "lagging=1"]))
    assert sorted(s.partitions[0].isr for s in m.init_states()) == sorted([0b1110, 0b0110, 0b1010])


def test_waiting_for_the_new_replicas_only_shrinks_the_isr_without_a_failure():
    """`wait-new`: (1,2,3) -> (2,4) with 2 behind, R = 2, MinISR 2, no failures: the step drops 1 and 3,
    adds 4 and waits for 4 only; the ISR ends as {4}."""
    cfg = SPEC.config("wait-new")
    assert cfg.max_failures == 0
    r = bfs.explore(SPEC.bind(cfg))
    assert [(v.outcome.property, v.depth) for v in r.violations] == [("IsrFloor", 3)]
    assert not bfs.explore(model("wait-new", wait="target")).violations


# ------------------------------------------------------------------- the step function's properties

@st.composite
def inputs(draw):
    n = draw(st.integers(2, 8))
    ftr = tuple(draw(st.permutations(range(n)))[:draw(st.integers(1, n))])
    cr = tuple(draw(st.permutations(range(n)))[:draw(st.integers(1, n))])
    isr = draw(st.sets(st.sampled_from(cr), min_size=1))
    leader = draw(st.sampled_from(sorted(isr)))
    return ftr, cr, isr, leader, draw(st.integers(1, 4)), draw(st.integers(1, 4))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(inputs())
def test_step_properties_example_reading(args):
    ftr, cr, isr, leader, r, min_isr = args
    s = step(ftr, cr, isr, leader, r, min_isr, "example")
    in_sync = sum(b in isr for b in cr)
    assert set(s.nr) <= set(ftr) - set(cr) and set(s.dr) <= set(cr) - set(ftr)
    assert len(s.dr) <= r
    assert len(s.nr) <= max(r, min_isr - in_sync, 1)  # beyond R only for the top-up or a new preferred leader
    assert set(s.tr) == (set(cr) | set(s.nr)) - set(s.dr)
    if ftr[0] not in cr and ftr[0] != leader:
        assert ftr[0] in s.nr and s.tr[0] == ftr[0] and not s.dr  # the preferred leader first, nothing dropped
    if in_sync < min_isr:
        assert len(s.nr) >= min(min_isr - in_sync, len(set(ftr) - set(cr)))  # the MinISR top-up
    if set(s.tr) == set(ftr):
        assert s.tr == ftr  # the last step is FTR in FTR's order
    # termination: with every step completing in sync, FTR within step_bound steps
    path = steps(ftr, cr, r, min_isr, "example")
    assert path[-1] == ftr and len(path) - 1 <= step_bound(ftr, cr, r)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(inputs())
def test_text_reading_limits_and_terminates(args):
    """The literal reading keeps R on both sides and ends at FTR, but never exceeds R to top up MinISR."""
    ftr, cr, isr, leader, r, min_isr = args
    s = step(ftr, cr, isr, leader, r, min_isr, "text")
    assert len(s.dr) <= r and len(s.nr) <= max(r, 1)
    if s.tr != ftr:  # rule 4: the survivors in CR's order, then NR (rule 5 orders only the last step)
        assert s.tr == tuple(b for b in cr if b not in s.dr) + s.nr
    path = steps(ftr, cr, r, min_isr, "text")
    assert path[-1] == ftr and len(path) - 1 <= step_bound(ftr, cr, r, min_isr, "text")


# -------------------------------------------------------------------------------------- the model

@pytest.mark.gate
def test_ci_exhausts_without_violation_and_every_rule_fires():
    r = bfs.explore(model("ci"))
    assert r.complete and not r.violations
    assert all(c["distinct"] for c in r.coverage.values()), r.coverage


def test_ci_reaches_ftr_under_fairness():
    """ReachesFTR at ci with one failure (20,056 states; the nightly job checks ci itself, 290,055)."""
    m = SPEC.bind(SPEC.config("ci", ["max_failures=1"]))
    result, _ = graph.explore(m)
    assert not result.violations


SMALL_MOVE = ["brokers=4", "replicas=[[1,2]]", "targets=[[3,4]]", "r=1", "min_isr=1", "max_failures=1"]


@pytest.mark.parametrize("variants,live", [
    ((), True), (("reading=text",), True), (("wait=new",), True), (("wait=none",), False)])
def test_which_readings_are_live(variants, live):
    """Forcing DR out at once (wait=none) can empty the ISR with steps left: the partition has no in-sync
    replica to lead and never reaches FTR. The other readings reach FTR here (wait=new fails to at ci,
    after a failure empties an ISR: docs/ARCHITECTURE.md)."""
    m = SPEC.bind(SPEC.config("drop2", SMALL_MOVE, list(variants)))
    result, _ = graph.explore(m, check_safety=False)
    lasso = [v for v in result.violations if v.outcome.property == "ReachesFTR"]
    assert bool(lasso) != live
    if lasso:
        assert lasso[0].states[-1].lost  # stranded by the loss


@pytest.mark.parametrize("name", list(SPEC.mutations))
def test_each_mutation_is_caught_at_its_config(name):
    r = bfs.explore(SPEC.bind(SPEC.config(SPEC.preset_for(name), mutation=name)))
    assert r.violations, name


@pytest.mark.parametrize("preset,variants,prop,length", [
    ("drop2", {"wait": "none"}, "IsrFloor", 2),                    # the new list read literally: DR out at once
    ("ci", {"wait": "none"}, "NoAckedRecordLost", 4),
    ("ci", {"wait": "new"}, "IsrFloor", 5),                        # waiting for NR only: a failed TR replica
    ("wait-new", {}, "IsrFloor", 3),                               # waiting for NR only: a replica behind
    ("example", {}, "NoAckedRecordLost", 8),                       # KIP-435 as written, on its own example
    ("leaders", {"batch": "pseudocode"}, "BatchWithinLimits", 1),  # leader movements first, no L
    ("leaders", {"moves": "leaves"}, "BatchWithinLimits", 1),      # a new preferred leader escapes L
    ("short", {"reading": "text"}, "TopUp", 1),                    # rule 3.3 caps the top-up at R
    ("leader-first", {"reading": "text"}, "PreferredLeaderFirst", 1),  # rule 4 puts the new leader last
])
def test_unsafe_readings_are_found_with_their_shortest_traces(preset, variants, prop, length):
    r = bfs.explore(model(preset, **variants), keep_going=True, max_depth=length)
    found = {v.outcome.property: v.depth for v in r.violations}
    assert found.get(prop) == length, found


# ------------------------------------------------------------- traces of a search that goes on past a violation

PAST_A_SHRINK = ["brokers=6", "targets=[[4,5,6]]"]  # losing the ISR takes a shrink below MinISR first


def test_continue_traces_replay_and_record_the_violations_on_the_way(tmp_path):
    import json

    from harness.check import write_counterexamples
    from harness.replay import replay
    from harness.trace import read_trace

    m = SPEC.bind(SPEC.config("drop2", PAST_A_SHRINK, ["wait=none"]))
    r = bfs.explore(m, keep_going=True)
    write_counterexamples(m, r, tmp_path, None)
    by_prop = {v.outcome.property: v for v in r.violations}
    assert by_prop["IsrFloor"].depth == 4 and by_prop["NoAckedRecordLost"].depth == 6
    for v in r.violations:
        assert replay(read_trace(v.trace_path)).ok, v.trace_path
    lost = Path(by_prop["NoAckedRecordLost"].trace_path)
    doc = json.loads(lost.read_text())
    assert doc["#meta"]["outcome"]["passes"] == {"IsrFloor": 4}
    # Without the record, the earlier violation reads as a model that fails earlier than recorded.
    del doc["#meta"]["outcome"]["passes"]
    lost.write_text(json.dumps(doc))
    report = replay(read_trace(lost))
    assert not report.ok and "IsrFloor fails earlier than recorded" in report.message
    # A recorded violation on the way that the run does not have does not reproduce.
    doc["#meta"]["outcome"]["passes"] = {"IsrFloor": 3}
    lost.write_text(json.dumps(doc))
    report = replay(read_trace(lost))
    assert not report.ok and "IsrFloor on the way does not reproduce" in report.message


# ------------------------------------------------------------------- the docs' table of readings

def test_the_docs_table_gives_every_reading_combination_a_verdict():
    """docs/models/kip435.md: one row per combination of the step calculation's and the
    execution's choices, each with a safe and a live verdict."""
    import itertools
    import re

    section = (Path(__file__).resolve().parents[1] / "docs" / "models" / "kip435.md").read_text()
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and re.fullmatch(r"`(example|text)`( \(default\))?", cells[0]):
            rows[tuple(c.split()[0].strip("`") for c in cells[:4])] = cells[4:6]
    choices = [SPEC.variants[k] for k in ("reading", "leader_step", "topup", "wait")]
    assert set(rows) == set(itertools.product(*choices))
    verdicts = [(safe.split()[0].rstrip(":"), live.split()[0]) for safe, live in rows.values()]
    assert all(safe in ("yes", "no") and live in ("yes", "no") for safe, live in verdicts)


# ------------------------------------------------------------------- the package's layout (issue #38)

def test_the_rules_live_in_their_actors_modules_in_the_order_bfs_follows():
    """specs/kip435 in the common layout: each rule in the module of who acts, the order the rules had in one
    module (BFS's successor order, hence the committed traces), docstrings in the Who acts / Enabled when /
    Next form, and an __init__.py that only assembles."""
    from harness.present import describe

    assert [(r.name, r.fn.__module__) for r in SPEC.rules] == [
        ("collect_batch", "specs.kip435.controller"), ("change_config", "specs.kip435.admin"),
        ("catch_up", "specs.kip435.brokers"), ("elect_preferred_leader", "specs.kip435.controller"),
        ("drop_replicas", "specs.kip435.controller"), ("fail", "specs.kip435.faults"),
        ("recover", "specs.kip435.faults")]
    who = {r["name"]: r["who"] for r in describe(SPEC, None)["rules"]}
    assert all(who[r.name].split(":")[0] in ("Controller", "Broker", "Operator") for r in SPEC.rules), who


# ------------------------------------------------------------------- liveness where the failures are (issue #37)

def test_at_the_liveness_preset_every_rule_fires_and_the_only_lasso_is_the_declared_loss():
    """The preset the gate and the nightly job check liveness at, KIP-435 as written: the graph engine sees every
    rule fire, ReachesFTR fails as declared, and every state where a fair run can stop short of FTR is a partition
    whose last in-sync replica a step deleted (docs/models/kip435.md, "Liveness triage"). The existing
    algorithm's wait (wait=target) reaches FTR there."""
    from harness.corpus import liveness_verdicts

    config = SPEC.config("liveness")
    assert config.wait == "none" and config.max_failures == 1
    m = SPEC.bind(config)
    result, g = graph.explore(m, check_safety=False)
    assert {m.rules[i].name for i in set().union(*map(g.rules_enabled, range(len(g))))} == {r.name for r in SPEC.rules}
    assert liveness_verdicts(SPEC, "liveness", result.stats["liveness"]) == {"ReachesFTR": "expected failure"}
    [lasso] = result.violations
    assert lasso.depth == 8 and lasso.states[-1].lost
    fair = {i for i, r in enumerate(m.rules) if r.fair}
    reaches = SPEC.liveness["ReachesFTR"].goal
    stuck = [s for n, s in enumerate(g.all_states()) if not g.rules_enabled(n) & fair and not reaches(config, s)]
    assert result.stats["nontrivial_sccs"] == 0 and stuck
    assert all(s.lost and any(not p.isr for p in s.partitions) for s in stuck)
    safe = SPEC.bind(SPEC.config("liveness", variants=["wait=target"]))
    assert graph.explore(safe, check_safety=False)[0].stats["liveness"]["ReachesFTR"]["holds"]
