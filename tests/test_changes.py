"""Traces read element by element (issue #41, the text side): a list-valued field that changes by one element
prints that element, records inside lists are addressable by `--fields`, booleans read true/false, `diff`
compares traces of one preset under two variants or mutations, a state breaking several properties prints
its trace once, and a count of one reads "1 step"."""

from __future__ import annotations

import json
import re
from typing import Annotated, NamedTuple

import pytest

from harness.changes import Change, changes
from harness.itf import Bool, ById, Enum, IdSet, Seq, counted, type_of_annotation
from harness.present import offset_convention, trace_view, violation_lines
from harness.replay import diff_states
from harness.registry import load_spec
from harness.result import Violation
from harness.trace import Outcome, read_trace, write_trace
from tests.test_presentation import COUNTEREXAMPLES, each_trace, harness

KIND = Enum("LeaderAndIsr", "StopReplica")


class Request(NamedTuple):
    kind: Annotated[int, KIND]
    ctrl_epoch: int
    isr: Annotated[int, IdSet()]


class Partition(NamedTuple):
    isr: Annotated[int, IdSet()]
    leader: int


class Node(NamedTuple):
    alive: Annotated[bool, Bool()]
    inbox: Annotated[tuple, Seq(Request)]
    log: Annotated[tuple, Seq(int)]


class State(NamedTuple):
    nodes: Annotated[tuple, ById(Node)]
    partitions: Annotated[tuple, Seq(Partition)]
    messages: Annotated[tuple, Seq(Request, unordered=True)]


SCHEMA = type_of_annotation(State)
A, B, C = Request(0, 1, 0b110), Request(0, 2, 0b110), Request(1, 2, 0b100)


def state(inbox=(), log=(), partitions=(Partition(0b11, 1),), messages=(), alive=True) -> State:
    return State((Node(alive, tuple(inbox), tuple(log)),), tuple(partitions), tuple(messages))


# ------------------------------------------------------------------------- the one comparison

def test_a_request_added_to_an_inbox_is_one_element_named_by_its_kind():
    assert changes(SCHEMA, state([A]), state([A, B])) == [
        Change("nodes[1].inbox", "add", None, "LeaderAndIsr(ctrl_epoch=2, isr={1,2})", 1)]
    [consumed] = changes(SCHEMA, state([A, B]), state([B]))
    assert consumed.text() == "nodes[1].inbox[0]: - LeaderAndIsr(ctrl_epoch=1, isr={1,2})"


def test_a_list_of_records_that_keeps_its_length_changes_field_by_field():
    before, after = state(partitions=[Partition(0b11, 1), Partition(0b11, 2)]), state(partitions=[Partition(0b11, 1), Partition(0b1, 2)])
    assert [c.text() for c in changes(SCHEMA, before, after)] == ["partitions[1].isr: {0,1} -> {0}"]


def test_a_bag_changes_by_multiset_difference_whatever_the_positions():
    # sorted, so C's arrival moves B; a duplicate leaving is one removal, not a rewrite of the bag
    assert [(c.kind, c.after or c.before) for c in changes(SCHEMA, state(messages=[A, A, C]), state(messages=[A, B, C]))] == [
        ("remove", "LeaderAndIsr(ctrl_epoch=1, isr={1,2})"), ("add", "LeaderAndIsr(ctrl_epoch=2, isr={1,2})")]


def test_plain_values_and_lists_of_plain_values_compare_whole_and_booleans_read_true_false():
    assert [c.text() for c in changes(SCHEMA, state(log=[1, 1]), state(log=[1, 1, 2], alive=False))] == [
        "nodes[1].alive: true -> false", "nodes[1].log: [1,1] -> [1,1,2]"]
    assert changes(SCHEMA, state([A]), state([A])) == []


def test_records_inside_lists_are_leaves_of_their_own():
    leaves = dict(SCHEMA.leaves(state([A, B]), ""))
    assert leaves["nodes[1].inbox[1].ctrl_epoch"] == "2" and leaves["partitions[0].leader"] == "1"
    assert leaves["messages"] == "[]" and leaves["nodes[1].log"] == "[]"


def test_counted_says_one_step():
    assert (counted(1, "step"), counted(0, "step"), counted(1200, "state")) == ("1 step", "0 steps", "1,200 states")


# ------------------------------------------------------------------------- show, on every committed trace

WHOLE_LIST_PAIR = re.compile(r"^\s+\S+: \[.*\] -> \[.*\]$")


@pytest.mark.parametrize("path", each_trace(), ids=lambda p: p.name)
def test_show_never_prints_a_long_list_whole_before_and_after(path):
    p = harness("show", path, columns=100)
    assert p.returncode == 0, p.stderr
    walls = [line for line in p.stdout.splitlines() if len(line) > 200 and WHOLE_LIST_PAIR.match(line)]
    assert walls == []


@pytest.mark.parametrize("path", each_trace([p for p in COUNTEREXAMPLES
                                              if p.name.split("-")[0] in ("zk", "replication", "kip642")]),
                         ids=lambda p: p.name)
def test_show_spells_booleans_as_users_type_them(path):
    p = harness("show", path, "--full")
    assert p.returncode == 0, p.stderr
    assert re.search(r" = (true|false)$", p.stdout, re.M) and not re.search(r"\b(True|False)\b", p.stdout)


def test_fields_select_a_record_inside_a_list():
    kip435 = next(p for p in COUNTEREXAMPLES if p.name.startswith("kip435-example-"))
    p = harness("show", kip435, "--fields", "partitions[0].*")
    assert p.returncode == 0, p.stderr
    fields = [line for line in p.stdout.splitlines() if line.startswith("  ")]
    assert fields and all(line.startswith("  partitions[0].") for line in fields)
    zk = next(p for p in COUNTEREXAMPLES if p.name.startswith("zk-kafka-cancel-failover-"))
    p = harness("show", zk, "--fields", "brokers[*].inbox[*]")
    assert p.returncode == 0, p.stderr
    fields = [line for line in p.stdout.splitlines() if line.startswith("  ")]
    assert any(re.match(r"  brokers\[\d\]\.inbox\[\d+\]: \+ LEADER_AND_ISR\(ctrl_epoch=", f) for f in fields)
    assert all(re.match(r"  brokers\[\d\]\.inbox\[\d+\]", f) for f in fields)
    doc = json.loads(harness("show", zk, "--json", "--fields", "brokers[2].inbox[*]").stdout)
    added = [c for s in doc["steps"] for c in s["changes"] if c["change"] == "add"]
    assert added and all(c["field"] == "brokers[2].inbox" and c["before"] is None for c in added)


# ------------------------------------------------------------------------- check, diff, counts

def test_a_state_breaking_two_properties_prints_its_trace_once(tmp_path):
    p = harness("check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out", tmp_path, "--quiet")
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    assert lines.count("step 2  advance_hwm()") == 1
    assert [line.split(" (")[0] for line in lines if line.startswith("VIOLATION")] == [
        "VIOLATION CommittedOnIsr", "VIOLATION CommittedOnMinIsr"]
    assert any(line.startswith("property: CommittedOnIsr: ") for line in lines)
    assert any(line.startswith("property: CommittedOnMinIsr: ") for line in lines)
    assert lines[-1].startswith("python -m harness replay ") and lines[-1].endswith("CommittedOnMinIsr.itf.json")


def test_one_step_is_one_step(tmp_path):
    trace = read_trace(COUNTEREXAMPLES[0])
    one = write_trace(tmp_path / "one.itf.json", trace.model, trace.states[:2], trace.actions[:2], Outcome("none"), "bfs")
    assert "(1 step)" in harness("show", one).stdout.splitlines()[0]
    assert "replays as recorded: 1 step, no violation" in harness("replay", one).stdout
    assert "(1 step, none, engine bfs)" in harness("diff", one, one).stdout


def test_diff_compares_one_preset_under_two_variants(tmp_path):
    """Where does seed's completion part from kafka's? The kafka trace, replayed under seed as far as it goes."""
    a = read_trace(next(p for p in COUNTEREXAMPLES if p.name.startswith("kraft-kafka-cancel-without-elr-")))
    assert a.model.config.completion == "kafka"
    spec = load_spec("kraft")
    seed = spec.bind(spec.config(a.meta["preset"], variants=["completion=seed"]))
    states, actions = [a.states[0]], [None]
    for action in a.actions[1:]:
        nxt = seed.apply(states[-1], action) if action in seed.action_index else None
        if nxt is None:
            break
        states.append(nxt)
        actions.append(action)
    b = write_trace(tmp_path / "seed.itf.json", seed, states, actions, Outcome("none"), "bfs")
    p = harness("diff", a.path, b)
    assert p.returncode == 1, p.stderr
    assert "configs differ (A | B): completion: kafka | seed" in p.stdout
    assert "first difference at step" in p.stdout
    j = json.loads(harness("diff", a.path, b, "--json").stdout)
    assert j["config_differences"] == {"completion": {"a": "kafka", "b": "seed"}} and not j["identical"]


# ------------------------------------------------------------------------- one offset convention on screen

def test_replication_views_name_their_1_based_offsets_and_kafka_views_need_no_label():
    replication = next(p for p in COUNTEREXAMPLES if p.name.startswith("replication-p1-"))
    lines = harness("show", replication).stdout.splitlines()
    assert lines[1].startswith("offsets: 1-based as in the TLA+ specification (Kafka's are 0-based")
    assert all(f in lines[1] for f in ("hwm", "leo", "fetch_offset", "partition_leso"))
    assert json.loads(harness("show", replication, "--json").stdout)["offsets"] == lines[1].removeprefix("offsets: ")
    assert harness("diff", replication, replication).stdout.splitlines()[2] == lines[1]
    trace = read_trace(replication)
    v = Violation(trace.outcome, trace.states, trace.actions, trace_path="t.itf.json")
    assert str(violation_lines(trace.model, [v])[0]) == lines[1]  # check's inline trace
    kraft = next(p for p in COUNTEREXAMPLES if p.name.startswith("kraft-"))
    assert "offsets:" not in harness("show", kraft).stdout and offset_convention(read_trace(kraft).model) is None


def test_an_offset_converts_to_kafkas_convention():
    from specs.replication.state import EMPTY_DATA, OFFSET, OFFSET_OR_NIL
    assert (OFFSET.kafka(EMPTY_DATA.leo), OFFSET.kafka(3), OFFSET_OR_NIL.kafka(0)) == (0, 2, None)


def test_a_violation_names_the_other_invariants_its_last_state_breaks():
    """An engine that stops at one property (Hypothesis, Z3) still says what else the state breaks."""
    trace = read_trace(next(p for p in COUNTEREXAMPLES if p.name == "example-ci-hwm_ignores_isr-CommittedOnIsr.itf.json"))
    v = Violation(trace.outcome, trace.states, trace.actions, trace_path="t.itf.json")
    lines = [str(line) for line in violation_lines(trace.model, [v])]
    assert f"also violated in state {v.depth}: CommittedOnMinIsr (the engine reported the first: no trace of their own)" in lines
    assert [line for line in lines if line.startswith("VIOLATION")] == ["VIOLATION CommittedOnIsr (2 steps): t.itf.json"]


def test_a_whole_state_marks_elements_not_shifted_leaves():
    """`--step N` prints the whole state; a request consumed from an inbox is one `-` line, not every field
    of the requests behind it rewritten and the last one gone."""
    zk = next(p for p in COUNTEREXAMPLES if p.name.startswith("zk-kafka-cancel-failover-"))
    trace = read_trace(zk)
    step = next(i for i in range(1, len(trace.states))
                if any(c.kind == "remove" for c in changes(trace.model.schema, trace.states[i - 1], trace.states[i]))
                and len(trace.states[i - 1].brokers[1].inbox) > 1)
    out = harness("show", zk, "--step", step, "--fields", "brokers[*].inbox").stdout
    assert "(absent)" not in out and re.search(r"^  brokers\[\d\]\.inbox\[0\]: - LEADER_AND_ISR\(", out, re.M)


def test_prove_prints_a_cti_in_the_same_spelling(tmp_path):
    p = harness("prove", "kraft", "--mutation", "keep_removing_in_isr", "--property", "IsrSubsetOfReplicas", "--brokers", 1,
                "--out", tmp_path)
    assert p.returncode == 1, p.stderr
    assert "(1 broker)" in p.stdout and re.search(r"^  pre:  \S+=", p.stdout, re.M)
    assert not re.search(r"\b(True|False)\b|'", p.stdout)  # no Python reprs


def test_the_explorer_and_replay_read_the_same_changes_by_path():
    """`Step.changes` (the explorer's table) and replay's differences are `show`'s changes by path: a request
    sent is one entry, absent before."""
    zk = read_trace(next(p for p in COUNTEREXAMPLES if p.name.startswith("zk-kafka-cancel-failover-")))
    steps = trace_view(zk).steps
    step = next(s for s in steps if any(c.kind == "add" for c in s.edits))
    added = next(c for c in step.edits if c.kind == "add")
    assert step.changes[added.address] == ("(absent)", added.after)
    assert step.changes == diff_states(zk.model, zk.states[step.index - 1], zk.states[step.index])
    assert not any(path.startswith(added.address + ".") for path in step.changes)  # not field by field
