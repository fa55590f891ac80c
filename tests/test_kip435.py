"""The `kip435` model: KIP-435's worked example, the step function's properties, the model's checks,
mutations and the unsafe readings of the KIP."""

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from harness.engines import bfs, graph
from harness.registry import load_spec
from specs.kip435 import step, step_bound, steps

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
    shrinks to four replicas on the way."""
    assert steps(KIP_FTR, KIP_CR, 2, 2, "text") == [KIP_CR, (5, 6, 2, 3, 4), (5, 6, 7, 8, 4), KIP_FTR]
    assert steps(KIP_FTR, KIP_CR, 2, 1, "text") == [KIP_CR, (5, 6, 2, 3, 4), (5, 6, 7, 4), (5, 6, 7, 8), KIP_FTR]


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
    ("wait-new", {}, "NoAckedRecordLost", 7),
    ("leaders", {"batch": "pseudocode"}, "BatchWithinLimits", 1),  # leader movements first, no L
    ("short", {"reading": "text"}, "TopUp", 1),                    # rule 3.3 caps the top-up at R
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
