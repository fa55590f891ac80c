"""Counterexamples a person reads at a glance: `check`'s inline trace, `show`, `diff`, `describe`.

The expectations are read from the spec objects (fields, rules, properties, Enum-typed state fields,
statements and reasons), not from hard-coded lists, so they stay true as specs grow.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Iterator, NamedTuple

import pytest
from rich.console import Console

from harness.engines import graph
from harness.itf import ById, Enum, Int, ItfType, Record, Seq, Tup
from harness.model import Config, Spec, config_to_dict
from harness.present import Selection, fair_rules_enabled, field_matcher, trace_view, view_table, violation_lines
from harness.registry import load_spec, spec_names
from harness.trace import Outcome, read_trace, write_trace
from tests.conftest import ROOT

COUNTEREXAMPLES = sorted((ROOT / "counterexamples").glob("*.itf.json"))


def each_trace(paths=COUNTEREXAMPLES) -> list:
    """`paths` as test cases: make test runs each model's largest trace (the longest lists and most steps), the
    nightly's pytest the rest (a `show` a trace costs a process start: all of them took half a minute)."""
    largest = {}
    for path in paths:
        model = path.name.split("-")[0]
        if model not in largest or path.stat().st_size > largest[model].stat().st_size:
            largest[model] = path
    return [path if path in largest.values() else pytest.param(path, marks=pytest.mark.nightly) for path in paths]
FIELD_LINE = re.compile(r"^  (?P<path>\S+)(?: = (?P<value>.*)|: (?P<before>.*) -> (?P<after>.*))$")


def harness(*args, columns: int = 80) -> subprocess.CompletedProcess:
    """`python -m harness ...` as a user runs it, stdout piped (not a terminal), COLUMNS fixed."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS=str(columns))
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=600)


# ------------------------------------------------------------------------- enums print as names

def enum_paths(t: ItfType, value: Any, path: str = "") -> Iterator[tuple[str, ItfType]]:
    """(path, type) of each leaf `ItfType.leaves` would print, so Enum-typed fields can be found by path."""
    if isinstance(t, Record):
        for (name, sub), x in zip(t.fields.items(), value):
            yield from enum_paths(sub, x, f"{path}.{name}" if path else name)
    elif isinstance(t, ById):
        for i, x in enumerate(value):
            yield from enum_paths(t.item, x, f"{path}[{i + t.base}]")
    else:
        yield path, t


def enum_names(t: ItfType) -> set[str] | None:
    """The names a leaf of type `t` may print, item by item (a sequence or tuple of Enum values prints
    each item); None if the leaf holds no Enum."""
    if isinstance(t, Enum):
        return set(t.names)
    if isinstance(t, Seq):
        return enum_names(t.item)
    if isinstance(t, Tup):
        names = [enum_names(i) for i in t.items]
        return set().union(*(n for n in names if n)) if any(names) else None
    return None


def numbers_among_enum_fields(schema: ItfType, state: tuple, output: str) -> list[str]:
    """Lines of `show` output where a field of Enum type prints something other than its names."""
    expected = {p: names for p, t in enum_paths(schema, state) if (names := enum_names(t)) is not None}
    bad = []
    for line in output.splitlines():
        m = FIELD_LINE.match(line)
        if not m or m["path"] not in expected:
            continue
        for value in filter(None, (m["value"], m["before"], m["after"])):
            items = [v for v in re.split(r"[\[\](),]", value) if v] if value[:1] in "[(" else [value]
            if any(item not in expected[m["path"]] for item in items if item != "(absent)"):
                bad.append(line)
    return bad


def test_the_enum_check_catches_a_number():
    """The check of test_show_is_never_cut_and_names_coded_values is not vacuous: a number printed for an
    Enum field (directly, in a map, in a sequence) is caught; its name passes."""
    status = Enum("OFFLINE", "ONLINE")
    schema = Record(tuple, {"status": status, "peers": ById(status), "history": Seq(status), "count": Int()})
    state = (1, (0, 1), (0,), 5)
    assert numbers_among_enum_fields(schema, state, "step 0  init\n  status = ONLINE\n  peers[1] = OFFLINE\n"
                                     "  history = [OFFLINE]\n  count = 5\nstep 1  x()\n  status: ONLINE -> OFFLINE") == []
    for bad in ("  status = 1", "  peers[2]: 0 -> ONLINE", "  history = [OFFLINE,1]"):
        assert numbers_among_enum_fields(schema, state, bad) == [bad]


@pytest.mark.parametrize("path", each_trace(), ids=lambda p: p.name)
def test_show_is_never_cut_and_names_coded_values(path):
    p = harness("show", path)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert "…" not in p.stdout
    trace = read_trace(path)
    # The first state is printed in full: every field path appears, whole.
    shown_paths = {m["path"] for line in p.stdout.splitlines() if (m := FIELD_LINE.match(line))}
    assert shown_paths >= {path for path, _ in trace.model.schema.leaves(trace.states[0], "")}
    assert numbers_among_enum_fields(trace.model.schema, trace.states[0], p.stdout) == []
    # The header names what was checked; the last line is the statement (or its reason).
    header = p.stdout.splitlines()[0]
    for word in (trace.spec.name, f"config={trace.meta['preset']}", f"mutation={trace.model.config.mutation}",
                 f"engine={trace.meta['engine']}", trace.outcome.kind):
        assert word in header
    statement = trace.model.statement(trace.outcome.property) if trace.outcome.property else None
    if statement:
        tail = p.stdout.splitlines()[-2:]
        assert any(line.startswith(f"property: {trace.outcome.property}: ") for line in tail), tail


# ------------------------------------------------------------------------- check prints the trace

def test_check_prints_the_trace_statement_and_ends_with_the_violation_and_replay_command(tmp_path):
    p = harness("check", "kraft", "--config", "small", "--mutation", "stale_partition_epoch", "--out", tmp_path)
    assert p.returncode == 1, p.stderr
    trace_file = tmp_path / "kraft-small-stale_partition_epoch-ReplicationQuorumSuperset.itf.json"
    trace = read_trace(trace_file)
    lines = p.stdout.splitlines()
    assert lines[-2] == f"VIOLATION ReplicationQuorumSuperset ({len(trace.states) - 1} steps): {trace_file}"
    assert lines[-1] == f"python -m harness replay {trace_file}"
    # Every step, with its formatted action and one line per changed field.
    view = trace_view(trace)
    for step in view.steps[1:]:
        assert f"step {step.index}  {step.label}" in lines
        for change in step.edits:
            assert f"  {change.text()}" in lines
    statement = " ".join(trace.model.statement("ReplicationQuorumSuperset").split())
    assert f"property: ReplicationQuorumSuperset: {statement}" in lines
    reason = trace.meta["outcome"].get("reason")
    assert (f"reason: {reason}" in lines) if reason else not any(line.startswith("reason: ") for line in lines)
    assert "VIOLATION" not in p.stderr and "step 1" not in p.stderr  # diagnostics only there


def test_check_gives_the_reason_and_json_carries_statement_and_reason(tmp_path):
    p = harness("check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out", tmp_path, "--quiet")
    assert p.returncode == 1
    trace = read_trace(tmp_path / "example-ci-hwm_ignores_isr-CommittedOnIsr.itf.json")
    reason = trace.model.explain("CommittedOnIsr", trace.states[-1])
    assert reason and f"reason: {reason}" in p.stdout.splitlines()
    assert trace.meta["outcome"]["reason"] == reason
    assert p.stdout.splitlines()[-1].startswith("python -m harness replay ")
    j = harness("check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out", tmp_path, "--json")
    summary = json.loads(j.stdout)  # stdout is only the JSON object
    first = summary["violations"][0]
    assert first["property"] == "CommittedOnIsr" and first["reason"] == reason
    assert first["statement"] == trace.model.statement("CommittedOnIsr")


def test_a_multi_line_statement_is_folded_and_the_trace_reads_back(tmp_path):
    """A docstring over several lines becomes a one-line statement (a line break would make the trace
    unreadable: the reader refuses control characters)."""
    spec = load_spec("kraft")
    multi = next(n for n, doc in spec.invariant_docs.items() if "\n" in doc)
    model = spec.bind(spec.config("small"))
    path = write_trace(tmp_path / "t.itf.json", model, model.init_states()[:1], [None], Outcome("invariant", multi), "bfs")
    trace = read_trace(path)  # refused before: "a string holding '\n'"
    assert trace.meta["outcome"]["statement"] == " ".join(spec.invariant_docs[multi].split())


# ------------------------------------------------------------------------- show options

@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """A fresh kraft trace (the committed corpus may lag behind the spec while it changes)."""
    out = tmp_path_factory.mktemp("small")
    p = harness("check", "kraft", "--config", "small", "--mutation", "stale_partition_epoch", "--out", out, "--quiet")
    assert p.returncode == 1, p.stderr
    return out / "kraft-small-stale_partition_epoch-ReplicationQuorumSuperset.itf.json"


def test_a_fresh_trace_shows_coded_values_as_names(small):
    """The same check on a trace written now (the committed corpus is rewritten after a spec changes)."""
    trace = read_trace(small)
    p = harness("show", small, "--full")
    assert p.returncode == 0 and "…" not in p.stdout
    assert numbers_among_enum_fields(trace.model.schema, trace.states[0], p.stdout) == []
    enums = [path for path, t in enum_paths(trace.model.schema, trace.states[0]) if enum_names(t)]
    printed = {m["path"] for line in p.stdout.splitlines() if (m := FIELD_LINE.match(line))}
    assert set(enums) <= printed  # every Enum field was printed, and checked


def test_show_step_prints_only_that_step_with_the_whole_state(small):
    trace = read_trace(small)
    p = harness("show", small, "--step", 3)
    assert p.returncode == 0
    steps = [line for line in p.stdout.splitlines() if line.startswith("step ")]
    assert len(steps) == 1 and steps[0].startswith(f"step 3  {trace.model.format_action(trace.actions[3])}")
    printed = {m["path"] for line in p.stdout.splitlines() if (m := FIELD_LINE.match(line))}
    assert printed == {path for path, _ in trace.model.schema.leaves(trace.states[3], "")}
    bad = harness("show", small, "--step", len(trace.states))
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and bad.stderr.startswith("error:")


def test_show_fields_filters_by_glob_with_literal_brackets(small):
    assert field_matcher(["brokers[2].*"])("brokers[2].log") and not field_matcher(["brokers[2].*"])("brokers[1].log")
    assert field_matcher(["brokers[*].log"])("brokers[3].log")
    assert field_matcher(["budget"])("budget.records") and not field_matcher(["budget"])("budgets.x")
    p = harness("show", small, "--fields", "brokers[2].*", "--fields", "partition.isr")
    assert p.returncode == 0
    printed = {m["path"] for line in p.stdout.splitlines() if (m := FIELD_LINE.match(line))}
    assert printed and all(f.startswith("brokers[2].") or f == "partition.isr" for f in printed)
    bad = harness("show", small, "--fields", "no_such_field")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1


def test_show_json_has_the_same_content(small):
    trace = read_trace(small)
    p = harness("show", small, "--json", "--fields", "partition.*")
    doc = json.loads(p.stdout)
    assert doc["spec"] == "kraft" and doc["length"] == len(trace.states) - 1
    assert [s["action"] for s in doc["steps"][1:]] == [trace.model.format_action(a) for a in trace.actions[1:]]
    view = trace_view(trace)
    for entry, step in zip(doc["steps"], view.steps):
        assert [c["field"] for c in entry["changes"]] == [c.path for c in step.edits if c.path.startswith("partition.")]
    assert doc["outcome"]["statement"] and doc["closing"]["statement"]
    full = json.loads(harness("show", small, "--json", "--full").stdout)
    assert all(len(s["state"]) == len(view.steps[0].fields) for s in full["steps"])


class Pos(NamedTuple):
    at: int


@dataclass(frozen=True)
class PosConfig(Config):
    pass


def lasso_spec(stutter: bool) -> Spec:
    """Goal 3 is never reached. stutter: 0 -> 1 by an unfair rule, then nothing fair is enabled (the
    run may stop at 1 forever). Otherwise 0 -> 1 -> 2 -> 1 ... by a fair rule: a real cycle."""
    spec = Spec("lasso", PosConfig, Pos, presets={"tiny": {}}, deadlock=False)
    spec.init(lambda cfg: [Pos(0)])

    @spec.rule(fair=not stutter)
    def go(cfg, s):
        return Pos({0: 1, 1: 2, 2: 1}[s.at]) if not stutter or s.at == 0 else None

    spec.eventually("ReachesThree", goal=lambda cfg, s: s.at == 3, doc="eventually at 3")
    return spec


@pytest.mark.parametrize("stutter", [True, False])
def test_a_lasso_says_which_state_repeats_and_why_stuttering_is_fair(stutter):
    model = lasso_spec(stutter).bind(lasso_spec(stutter).config("tiny"))
    result, _ = graph.explore(model)
    [v] = result.violations
    v.trace_path = "lasso.itf.json"
    text = "\n".join(map(str, violation_lines(model, [v])))
    last = len(v.states) - 1
    if stutter:
        assert v.loop == last and fair_rules_enabled(model, v.states[last]) == []
        assert f"lasso: from state {last}, state {last} repeats forever (stuttering: no fair rule is enabled in state {last})" in text
    else:
        assert v.loop < last
        assert f"lasso: from state {v.loop}, steps {v.loop + 1}..{last} repeat forever" in text
        assert f"(back to state {v.loop}: the loop closes)" in text
    assert "property: ReachesThree: eventually at 3" in text
    assert text.splitlines()[-2] == f"VIOLATION ReachesThree ({last} steps, lasso): lasso.itf.json"


def test_show_explains_the_committed_lassos_with_the_model():
    for path in (ROOT / "counterexamples").glob("*graph*.itf.json"):
        trace = read_trace(path)
        p = harness("show", path)
        assert p.returncode == 0, p.stderr
        last = len(trace.states) - 1
        lasso = next(line for line in p.stdout.splitlines() if line.startswith("lasso: "))
        if trace.loop == last:
            assert fair_rules_enabled(trace.model, trace.states[last]) == []
            assert f"state {last} repeats forever" in lasso
            assert f"stuttering: no fair rule is enabled in state {last}" in lasso
        else:
            assert f"from state {trace.loop}" in lasso


def test_the_table_is_used_only_where_it_fits(small):
    view = trace_view(read_trace(small))
    assert view_table(view, Selection(), 60) is None
    table = view_table(view, Selection(), 400)
    console = Console(width=400, record=True, file=open(os.devnull, "w"))
    console.print(table)
    text = console.export_text()
    assert "…" not in text and "brokers[1].response.partition_epoch: 0 -> 5" in text


@pytest.fixture(scope="module")
def cti_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cti")
    p = harness("prove", "kraft", "--mutation", "completion_ignores_min_isr", "--brokers", 2, "--depth", 2, "--out", out)
    assert p.returncode == 1, p.stderr
    return next(out.glob("*-cti.itf.json"))


def test_show_reads_a_cti_as_pre_and_post(cti_file):
    doc = json.loads(cti_file.read_text())
    p = harness("show", cti_file)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    meta = doc["#meta"]
    assert meta["rule"] in out.splitlines()[0] and meta["property"] in out.splitlines()[0]
    assert f"reachability: {meta['reachability']}" in out
    pre, post = ({k: v for k, v in s.items() if k != "#meta"} for s in doc["states"])
    changed = [k for k in pre if pre[k] != post[k]]
    assert changed and all(re.search(rf"^  {re.escape(k)}: .* -> ", out, re.M) for k in changed)
    assert all(f"{k}=" in out for k in meta["params"])
    j = json.loads(harness("show", cti_file, "--json").stdout)
    assert j["kind"] == "cti" and [c["field"] for c in j["steps"][1]["changes"]] == changed
    replayed = harness("replay", cti_file)
    assert replayed.returncode == 2  # a CTI is for reading, not for replay


def test_a_malformed_cti_is_one_line_exit_2(cti_file, tmp_path):
    doc = json.loads(cti_file.read_text())
    for edit in (lambda d: d["states"].append(d["states"][0]), lambda d: d["#meta"].update(property="Bogus"),
                 lambda d: d["states"][1].update({"partition.replicas": 1.5}),
                 lambda d: d["states"][1].pop("partition.replicas")):
        bad = json.loads(json.dumps(doc))
        edit(bad)
        path = tmp_path / "bad-cti.itf.json"
        path.write_text(json.dumps(bad))
        p = harness("show", path)
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    marked = json.loads(json.dumps(doc))
    marked["#meta"]["rule"] = "[bold red]x[/]"
    path = tmp_path / "markup-cti.itf.json"
    path.write_text(json.dumps(marked))
    p = harness("show", path)
    assert p.returncode == 0 and "[bold red]x[/](" in p.stdout


# ------------------------------------------------------------------------- diff

def test_diff_of_a_trace_with_itself_is_identical(small):
    p = harness("diff", small, small)
    assert p.returncode == 0 and "identical" in p.stdout


def test_diff_reports_the_first_differing_step(small, tmp_path):
    a = read_trace(small)
    model = a.model
    # B: the same run up to step 2, then another enabled action.
    other = next((i, s) for i, s in model.successors(a.states[2]) if model.actions[i] != a.actions[3])
    path = write_trace(tmp_path / "b.itf.json", model, a.states[:3] + [other[1]], a.actions[:3] + [model.actions[other[0]]],
                       Outcome("none"), "hypothesis")
    p = harness("diff", small, path)
    assert p.returncode == 1, p.stderr
    assert "first difference at step 3:" in p.stdout
    assert f"  A: {model.format_action(a.actions[3])}" in p.stdout
    assert f"  B: {model.format_action(model.actions[other[0]])}" in p.stdout
    assert f"({len(a.states) - 1} steps, invariant ReplicationQuorumSuperset" in p.stdout and "(3 steps, none" in p.stdout
    j = json.loads(harness("diff", small, path, "--json").stdout)
    assert j["first_difference"] == 3 and not j["identical"] and j["fields"]
    # A prefix: B ends where A goes on.
    prefix = write_trace(tmp_path / "p.itf.json", model, a.states[:3], a.actions[:3], Outcome("none"), "bfs")
    p = harness("diff", small, prefix)
    assert p.returncode == 1 and "first difference at step 3:" in p.stdout and "(the trace has ended)" in p.stdout


def test_diff_of_two_mutations_says_how_the_configs_differ(small, tmp_path):
    p = harness("check", "kraft", "--config", "small", "--mutation", "keep_removing_in_isr", "--out", tmp_path, "--quiet")
    other = tmp_path / "kraft-small-keep_removing_in_isr-IsrSubsetOfReplicas.itf.json"
    p = harness("diff", small, other)
    assert p.returncode == 1 and p.stderr == ""
    assert "configs differ (A | B): mutation: stale_partition_epoch | keep_removing_in_isr" in p.stdout
    assert "first difference at step" in p.stdout


def test_diff_of_two_specs_is_not_comparable(small):
    p = harness("diff", small, COUNTEREXAMPLES[0])
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "not comparable" in p.stderr


# ------------------------------------------------------------------------- describe

def test_describe_mentions_everything_the_spec_declares():
    spec = load_spec("kraft")
    p = harness("describe", "kraft", "--config", "ci")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    cfg = spec.config("ci")
    values = config_to_dict(cfg)
    for name, f in spec.config_fields.items():
        if name != "mutation":
            assert re.search(rf"^  {name} = ", out, re.M), name
            assert " ".join(f.metadata["doc"].split()) in out
    for rule in spec.rules:
        assert re.search(rf"^  {rule.name}\(", out, re.M), rule.name
    absent = [r.name for r in spec.rules if r.name not in spec.bind(cfg).rule_names]
    for name in absent:
        assert re.search(rf"^  {name}\(.*not in this config", out, re.M)
    for name in [*spec.invariants, *spec.liveness, *spec.z3_invariants]:
        assert name in out
    for m in spec.mutations.values():
        assert f"{m.name}: weakens {m.rule}" in out and m.removes in out and f"caught at config {m.caught_at}" in out
    for preset, text in spec.expected.items():
        assert text in out
    d = json.loads(harness("describe", "kraft", "--config", "ci", "--json").stdout)
    assert {p["name"]: p["value"] for p in d["params"]} == {k: v for k, v in values.items()
                                                            if k != "mutation" and k not in spec.variants}
    assert [r["name"] for r in d["rules"]] == [r.name for r in spec.rules]
    assert {r["name"] for r in d["rules"] if not r["in_config"]} == set(absent)
    assert [r["name"] for r in d["rules"] if r["fair"]] == [r.name for r in spec.rules if r.fair]
    assert {v["name"]: tuple(v["choices"]) for v in d["variants"]} == spec.variants
    assert d["z3"] == list(spec.z3_invariants)


@pytest.mark.parametrize("name", [n for n in spec_names() if n != "example"])
def test_describe_names_the_models_own_doc(name):
    """Each protocol's modelling decisions live in docs/models/<name>.md, and `describe` says so."""
    p = harness("describe", name)
    assert p.returncode == 0, p.stderr
    assert f"model doc: docs/models/{name}.md" in p.stdout.splitlines()[1]
    assert (ROOT / "docs" / "models" / f"{name}.md").is_file()
    assert json.loads(harness("describe", name, "--json").stdout)["model_doc"] == f"docs/models/{name}.md"


def test_describe_refuses_an_unknown_config_in_one_line():
    p = harness("describe", "kraft", "--config", "bogus")
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "unknown config" in p.stderr
