"""Results that say what they mean (issue #41, the results side): expected violations in `check`, the gate's
failure output, Hypothesis seeds, progress lines, the nightly report, and prove's CTIs in the spec's names."""

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from harness.corpus import cases, run_case
from harness.registry import load_spec


def gate_module():
    spec = importlib.util.spec_from_file_location("gate_under_test", ROOT / "ci" / "gate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------- expected violations

def readme_checks_ending_in_an_expected_violation() -> list[list[str]]:
    """The README's `check` examples whose comment says they end in an expected violation."""
    out = []
    for line in (ROOT / "README.md").read_text().splitlines():
        command, _, comment = line.partition("#")
        if command.startswith("python -m harness check") and "expected" in comment:
            out.append(command.split()[4:])
    return out


def test_the_readme_marks_its_expected_violations():
    assert len(readme_checks_ending_in_an_expected_violation()) >= 2


@pytest.mark.parametrize("args", readme_checks_ending_in_an_expected_violation(), ids=" ".join)
def test_a_readme_example_that_ends_in_an_expected_violation_says_so(args, cli, tmp_path):
    code, out, _ = cli("check", *args, "--out", tmp_path, "--quiet")
    assert code == 1
    lines = [x for x in out.splitlines() if x.startswith("expected violation: ")]
    spec = load_spec(args[0])
    preset = args[args.index("--config") + 1]
    assert len(lines) == sum(x.startswith("VIOLATION ") for x in out.splitlines()) >= 1
    assert set(lines) == {f"expected violation: declared at config {preset} (specs/{args[0]}/presets.py): "
                          f"{spec.expected[preset]}"}
    code, out, _ = cli("check", *args, "--out", tmp_path, "--json")
    result = json.loads(out)
    assert code == 1 and result["expected"] is True and result["violations"]
    for v in result["violations"]:
        assert v["expected"] is True and v["declaration"] == {
            "kind": "safety", "preset": preset, "property": None, "why": spec.expected[preset],
            "source": f"specs/{args[0]}/presets.py"}


def test_a_violation_at_another_config_or_under_a_mutation_is_not_expected(cli, tmp_path):
    # the same protocol issue at ci with the same variants is another config: not the declaration's
    code, out, _ = cli("check", "kraft", "--config", "ci", "--variant", "completion=kafka", "--variant", "elr=false",
                       "--out", tmp_path, "--json")
    result = json.loads(out)
    assert code == 1 and result["expected"] is False and result["violations"][0]["expected"] is False
    assert "declaration" not in result["violations"][0]
    code, out, _ = cli("check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out", tmp_path)
    assert code == 1 and "VIOLATION" in out and "expected violation" not in out


def test_a_declared_liveness_failure_names_its_declaration():
    kraft = load_spec("kraft")
    declared = kraft.declared_failure(kraft.config("leaderless"), "liveness", "ReassignmentCompletes")
    assert declared["why"] == kraft.expected_liveness[("leaderless", "ReassignmentCompletes")]
    assert re.fullmatch(r"specs/kraft/__init__\.py:\d+", declared["source"])
    assert kraft.declared_failure(kraft.config("leaderless"), "invariant", "LeaderCandidateCompleteness") is None
    assert kraft.declared_failure(kraft.config("leaderless", mutation="truncate_to_hwm"), "liveness",
                                  "ReassignmentCompletes") is None


def test_the_corpus_and_check_agree_on_what_is_expected():
    """The gate's mutation adequacy finds a declared failure through the same decision as `check`."""
    kip435 = load_spec("kip435")
    case = next(c for c in cases(kip435) if c.preset == "example" and c.mutation == "none" and not c.liveness)
    model, result = run_case(case)
    assert case.found(model, result)
    assert all(model.spec.declared_failure(model.config, v.outcome.kind, v.outcome.property) for v in result.violations)


# ------------------------------------------------------------------------------------ the gate's output

def test_the_gate_with_a_protocol_change_prints_the_violation_its_commands_and_no_baseline_table(tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "ci" / "gate.py"), "--only", "2,6", "--out", str(tmp_path),
                        "--spec", "kraft", "--protocol-change", "kraft:hwm_below_min_isr"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 1
    [trace] = tmp_path.glob("kraft-ci-hwm_below_min_isr-LeaderCandidateCompleteness.itf.json")
    failed = p.stderr[p.stderr.index("GATE FAILED"):].splitlines()
    assert failed[1] == f"  - kraft/ci violates LeaderCandidateCompleteness (bfs, 8 steps): {trace}"
    assert [x.strip() for x in failed[2:5]] == [f"python -m harness {c} {trace}" for c in ("replay", "show", "explore")]
    assert "kraft/ci: the search stopped at a violation after" in p.stderr
    assert "model/config" not in p.stderr and "STOPPED FIRING" not in p.stderr  # no baseline table
    assert "was not exhausted" not in p.stderr


def test_the_baseline_table_never_cuts_a_rule_name(capsys, monkeypatch):
    gate = gate_module()
    long_rule = "AlterPartitionReassignmentsCancelledAfterTheLeaderMoved"
    base = json.loads(gate.BASELINE.read_text())
    key = next(iter(base))
    measured = {key: dict(base[key], coverage=dict(base[key]["coverage"], **{long_rule: 5}))}
    gate.compare_baseline(measured, [])
    err = capsys.readouterr().err
    assert f"rule {long_rule}" in err and "new rule" in err


def test_the_gate_help_documents_every_option_and_step():
    p = subprocess.run([sys.executable, str(ROOT / "ci" / "gate.py"), "--help"], capture_output=True, text=True)
    assert p.returncode == 0
    gate = gate_module()
    for number, title in enumerate(gate.STEPS, 1):
        assert f"  {number}  {title}" in p.stdout
    options = re.findall(r"^  (--[a-z-]+)", p.stdout, re.M)
    assert set(options) == {"--write-baseline", "--skip-pytest", "--out", "--only", "--spec",
                            "--protocol-change", "--report"}
    assert "SUPPRESS" not in p.stdout and p.stdout.count("--report") >= 2


# ---------------------------------------------------------------------------------- Hypothesis's seed

def test_a_seed_given_to_the_derandomized_profile_is_refused_in_one_line(cli, tmp_path):
    for args in ([], ["--profile", "ci"]):
        code, out, err = cli("check", "example", "--engine", "hypothesis", "--seed", "7", *args, "--out", tmp_path)
        assert code == 2 and out == ""
        assert err.splitlines() == ["error: --seed does not apply to the ci profile: it is derandomized (the same "
                                    "walks on every run); use --profile nightly or dev"]
    code, out, _ = cli("check", "example", "--engine", "hypothesis", "--examples", "5", "--json", "--out", tmp_path)
    assert code == 0 and json.loads(out)["stats"]["derandomized"] is True


@pytest.mark.parametrize("profile", ["nightly", "dev"])
def test_every_random_profile_honours_the_seed(profile, cli, tmp_path):
    def stats(seed):
        code, out, _ = cli("check", "kraft", "--engine", "hypothesis", "--profile", profile, "--seed", seed,
                           "--examples", "20", "--steps", "15", "--json", "--out", tmp_path, cwd=tmp_path)
        assert code == 0
        s = json.loads(out)["stats"]
        return s["seed"], s["steps"], s["distinct_walks"]

    first, again, other = stats(5), stats(5), stats(6)
    assert first == again and first[0] == 5 and other[0] == 6 and first[1:] != other[1:]


# ------------------------------------------------------------------------------------------- progress

@pytest.mark.parametrize("figures,shown", [
    ({"runs": 1600, "budget": 1500, "steps": 10, "elapsed": 20.0}, "1,600 of 1,500 runs (100%), 10 steps, 20 s"),
    ({"runs": 1500, "budget": 1500, "steps": 10, "elapsed": 20.0}, "1,500 of 1,500 runs (100%), 10 steps, 20 s"),
    ({"runs": 0, "budget": 1500, "steps": 0, "elapsed": 0.0}, "0 of 1,500 runs (0%), 0 steps, 0 s"),
    ({"runs": 500, "budget": 1500, "steps": 9, "elapsed": 10.0}, "500 of 1,500 runs (33%), 9 steps, 10 s, ETA 20 s"),
    ({"runs": 3, "budget": 0, "steps": 1, "elapsed": 1.0}, "3 of 0 runs (100%), 1 steps, 1 s"),
    ({"distinct": 10, "generated": 20, "depth": 2, "queue": -3, "elapsed": 0.0},
     "10 distinct  20 generated  depth 2  frontier 0  0 states/s  0 s"),
    ({"distinct": 10, "generated": 20, "depth": 2, "queue": 5, "elapsed": -0.5},
     "10 distinct  20 generated  depth 2  frontier 5  0 states/s  0 s"),
])
def test_a_progress_line_never_shows_over_100_percent_or_a_negative_eta(figures, shown):
    from harness.cli import _progress_line

    line = _progress_line(figures)
    assert line == shown
    assert not re.search(r"-\d", line) and all(int(p) <= 100 for p in re.findall(r"(\d+)%", line))


def test_the_graph_engine_reports_progress_as_bfs_does(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from harness import cli as harness_cli
    from harness.engines import graph

    kraft = load_spec("kraft")
    seen: list[dict] = []
    result, _ = graph.explore(kraft.bind(kraft.config("leaderless")), progress=seen.append, check_safety=False)
    assert len(seen) == result.stats["states"] // 4096 and all(set(p) == {"distinct", "generated", "depth", "queue",
                                                                           "elapsed"} for p in seen)
    assert [p["distinct"] for p in seen] == sorted(p["distinct"] for p in seen)
    assert seen[-1]["distinct"] <= result.stats["states"] and seen[-1]["generated"] <= result.stats["transitions"]
    # `check --engine graph` hands the engine the same reporter as BFS (which keeps the last figures, for the
    # line an interrupted run prints)
    monkeypatch.setattr(harness_cli, "_last_progress", {})
    CliRunner().invoke(harness_cli.cli, ["check", "kraft", "--config", "leaderless", "--engine", "graph", "--quiet",
                                         "--out", str(tmp_path)])
    assert harness_cli._last_progress == seen[-1] | {"elapsed": harness_cli._last_progress["elapsed"]}


# ------------------------------------------------------------------------------------- nightly report

@pytest.mark.slow
def test_a_quick_simulated_night_says_so_and_gives_each_failures_trace_and_commands(tmp_path):
    p = subprocess.run([sys.executable, "ci/nightly.py", "--quick", "--spec", "example", "--protocol-change",
                        "example:hwm_ignores_isr", "--reports", str(tmp_path / "r"), "--checkpoints",
                        str(tmp_path / "c")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1
    [folder] = (tmp_path / "r").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    kind = ("quick run (reduced configs, no fuzzers, no cluster tests); simulated protocol change "
            "example:hwm_ignores_isr (a mutation made the default behaviour, to test the job: it should fail)")
    assert kind in p.stderr.splitlines()[0] and f"report: {folder}/report.html (failed, {kind})" in p.stderr
    md = (folder / "summary.md").read_text()
    html = (folder / "report.html").read_text()
    assert f"**{kind[0].upper()}{kind[1:]}.**" in md and f'<p id="run-kind" class="run-kind">Not a full night: {kind}.' in html
    assert summary["failures"] and len(summary["failure_traces"]) == len(summary["failures"])
    for f in summary["failure_traces"]:
        trace = folder / next(t["file"] for t in summary["models"]["example"]["spark"]["violations"]
                              + summary["models"]["example"]["hypothesis"]["violations"] if t["file"] in f["trace"])
        assert f["trace"] == str(trace) and trace.exists()
        commands = [f"python -m harness {c} {trace}" for c in ("replay", "show", "explore")]
        assert f"  - {f['failure']} ({trace})\n" + "".join(f"      {c}\n" for c in commands) in p.stderr
        assert f"- {f['failure']} (`{trace}`)\n" + "".join(f"  - `{c}`\n" for c in commands) in md
        assert all(c in html for c in commands)


def test_the_report_scales_coverage_per_model_and_labels_the_trend(tmp_path):
    sys.path.insert(0, str(ROOT / "ci"))
    import report

    def model(coverage, distinct):
        return {"invariants": ["P"], "spark": {"preset": "nightly", "outcome": "ok", "distinct": distinct, "depth": 1,
                                                "seconds": 1, "states_per_depth": [1, distinct - 1], "coverage": coverage,
                                                "violations": [], "complete": True},
                "hypothesis": {"preset": "ci", "outcome": "ok", "runs": 1, "seed": 1, "seconds": 1, "violations": []}}

    def night(date, distinct):
        return {"date": date, "outcome": "ok", "seed": 1, "folder": str(tmp_path), "failures": [],
                "provenance": {"commit": "x"}, "configs": {},
                "models": {"big": model({"A": 1_000_000, "B": 500_000}, distinct), "small": model({"C": 10, "D": 5}, 30)}}

    report.render(tmp_path, night("2026-11-27", 2_000_000), [night("2026-11-25", 1_000_000), night("2026-11-26", 1_500_000)])
    html = (tmp_path / "report.html").read_text()
    # each model's most generated rule fills its bar: the small model's bars are not slivers of the big one's
    assert html.count('<rect width="300.0" height="10"') == 2 and html.count('<rect width="150.0" height="10"') == 2
    assert 'data-top="1000000"' in html and 'data-top="10"' in html
    big = html[html.index('id="model-big"'):html.index('id="model-small"')]
    assert '<text class="y-title"' in big and ">distinct states</text>" in big
    assert '<text class="y-label" x="66" y="14" text-anchor="end">2,000,000</text>' in big
    assert '>2026-11-25</text>' in big and '>2026-11-27</text>' in big and "night (UTC date)" in big
    assert "Not a full night" not in html  # a full night says nothing about its kind


# ------------------------------------------------------------------- prove's CTIs in the spec's names

SYMBOLIC = ["kraft", "zk", "kip435", "kip642"]
_STEP = re.compile(r"(\w+)(?:\[(\d+)\])?$")


def concrete(state, path: str):
    """The value at `path` ("partition.isr", "partitions[0].replicas") of a concrete state, None if `path`
    names no field (a variable the state has no field for)."""
    value = state
    for part in path.split("."):
        m = _STEP.match(part)
        if m is None or not hasattr(value, "_fields") or m[1] not in value._fields:
            return None
        value = getattr(value, m[1])
        if m[2] is not None:  # an element of a list: 0 (none) past its end, as the symbolic form reads it
            value = value[int(m[2])] if int(m[2]) < len(value) else 0
    return value


@pytest.mark.parametrize("name", SYMBOLIC)
def test_each_symbolic_variable_is_named_by_the_state_field_it_stands_for(name):
    from harness.bitset import mask
    from harness.engines import bfs

    spec = load_spec(name)
    sym = spec.symbolic
    assert set(sym.STATE_FIELDS) == set(sym.make_state("x_", 2)) - {"n"}
    model = spec.bind(spec.config())
    result = bfs.explore(model, max_depth=3, check_deadlock=False)
    states = [s for v in result.violations for s in v.states] or list(model.init_states())
    states += list(model.init_states())
    real = 0
    for state in states:
        projected = sym.project(model.config, state)
        for var, f in sym.STATE_FIELDS.items():
            value = concrete(state, f.path)
            if value is None:  # a derived variable: named by what it means, never a bare letter
                assert " " in f.path or f.reads == "per-broker", (var, f.path)
                continue
            real += 1
            value = mask(value) if isinstance(value, tuple) else value
            value = (1 << value if value else 0) if f.reads == "broker" else value
            assert value == projected[var], (var, f.path)
    assert real > 0


def test_a_cti_is_written_and_shown_with_the_specs_field_names(cli, tmp_path):
    code, out, _ = cli("prove", "kraft", "--config", "small", "--mutation", "completion_ignores_min_isr",
                       "--brokers", "2", "--out", tmp_path)
    assert code == 1 and "pre:  partition.replicas={" in out
    [cti] = tmp_path.glob("kraft-completion_ignores_min_isr-alter_partition_reassignments-*-cti.itf.json")
    doc = json.loads(cti.read_text())
    assert {"partition.isr", "partition.leader", "completed_below_min_isr"} <= set(doc["vars"])
    assert not {"I", "L", "B"} & set(doc["vars"]) and isinstance(doc["states"][0]["partition.leader"], int)
    code, shown, _ = cli("show", cti, "--fields", "partition.*")
    lines = shown.splitlines()
    assert code == 0 and any(x.startswith("  partition.isr = {") for x in lines)
    assert any(re.match(r"  partition\.leader: \d -> \d", x) for x in lines)
    assert not any(re.match(r"  (I|L|B|le|pe) ", x) for x in lines)


@pytest.mark.parametrize("script", ["gate.py", "nightly.py"])
@pytest.mark.parametrize("change", ["kraft:no_such_mutation", "kraft", "no_such_spec:x"])
def test_a_bad_protocol_change_is_one_line_and_exit_2_before_any_work(script, change, tmp_path):
    args = ["--only", "2", "--spec", "kraft", "--out", str(tmp_path / "out")] if script == "gate.py" else \
        ["--quick", "--spec", "kraft", "--reports", str(tmp_path / "r"), "--checkpoints", str(tmp_path / "c")]
    p = subprocess.run([sys.executable, f"ci/{script}", *args, "--protocol-change", change], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1
    assert p.stderr.startswith("error: ") and "Traceback" not in p.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_ctis_coded_fields_read_by_name(cli, tmp_path):
    code, _, _ = cli("prove", "zk", "--config", "tiny", "--mutation", "rs_updated_first", "--brokers", "2", "--depth", "3",
                     "--out", tmp_path)
    assert code == 1
    cti = tmp_path / "zk-rs_updated_first-b1_online_new_replicas-AssignmentRecoverable-cti.itf.json"
    doc = json.loads(cti.read_text())
    assert (doc["states"][0]["controller.step"], doc["states"][1]["controller.step"]) == ("B1", "B2")
    assert doc["states"][0]["status"] == "IN_PROGRESS" and set(doc["states"][0]["zk.rs"]["#set"]) == {1, 2}
    code, shown, _ = cli("show", cti, "--fields", "controller.step")
    assert code == 0 and "  controller.step: B1 -> B2" in shown.splitlines()
