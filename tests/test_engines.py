"""Hypothesis, graph (networkx liveness) and Spark engines on real models, against BFS."""

import json
import random
from dataclasses import dataclass
from typing import NamedTuple

import networkx as nx
import pydot
import pytest

from harness.engines import bfs, graph, hypothesis as hyp
from harness.model import Config, Spec, param
from harness.registry import load_spec
from harness.replay import replay
from harness.trace import read_trace, trace_filename, write_trace
from tests.conftest import ROOT


def bind(name, preset, mutation=None, settings=()):
    spec = load_spec(name)
    return spec.bind(spec.config(preset, settings, (), mutation))


# ------------------------------------------------------------------------------------ Hypothesis

def test_generated_machine_has_one_rule_per_model_rule_and_one_invariant_per_property():
    model = bind("kraft", "tiny")
    machine = hyp.build_machine(model)
    assert all(callable(getattr(machine, f"rule_{n}", None)) for n in model.rule_names)
    assert all(callable(getattr(machine, f"invariant_{n}", None)) for n in model.invariant_names)
    # and it runs as the standard unittest TestCase of a RuleBasedStateMachine
    case = machine.TestCase
    case.settings = hyp.profile_settings("ci", examples=20, steps=20)
    case("runTest").runTest()


@pytest.mark.parametrize("mutation", ["keep_removing_in_isr", "completion_ignores_min_isr", "hwm_below_min_isr",
                                      # ignore_added_broker_epoch left: since the leader proposes a follower only on
                                      # its fetch (issue 37) its shortest trace is 15 states, beyond the ci profile
                                      # (5,000 runs x 60 steps find nothing either); BFS catches it in the gate
                                      # the two longest (40-100 s each): the nightly's pytest runs them
                                      pytest.param("expand_below_leso", marks=pytest.mark.nightly),  # starting over, priority walks
                                      pytest.param("expand_without_fetch_in_epoch", marks=pytest.mark.nightly)])  # its own config
@pytest.mark.slow
def test_hypothesis_finds_mutation_with_short_replayable_trace(tmp_path, mutation):
    model = bind("kraft", load_spec("kraft").preset_for(mutation), mutation)
    r = hyp.explore(model, profile="ci")
    assert r.violations, mutation
    v = r.violations[0]
    shortest = bfs.explore(model).violations[0]
    assert v.depth <= 2 * shortest.depth
    path = write_trace(tmp_path / trace_filename(model, v.outcome, "hypothesis"), model, v.states, v.actions,
                       v.outcome, "hypothesis")
    assert replay(read_trace(path)).ok


def test_a_priority_walk_fires_only_its_highest_priority_enabled_rule():
    model = bind("kraft", "small")
    machine = hyp.build_machine(model)()
    seeds = (seed for seed in range(1000) if random.Random(seed).random() < hyp.PRIORITY_WALKS)
    machine.start(index=0, leave_out=frozenset(), until=0, seed=next(seeds))
    assert machine.priority is not None and len(machine.drop_at) == hyp.PRIORITY_CHANGES
    fired = []
    for _ in range(40):
        groups = {model.rule_names[model.action_rule[i]] for i, _ in model.successors(machine.state)}
        if not groups:
            break
        [(rule_name, acts)] = machine.enabled().items()  # exactly one rule is offered
        assert rule_name == max(groups, key=machine.priority.__getitem__)
        getattr(machine, f"rule_{rule_name}")(pick=len(fired))
        fired.append(rule_name)
    assert len(set(fired)) > 2  # rules overtake each other as they become enabled, disabled or dropped


def test_hypothesis_ci_profile_is_deterministic(tmp_path, cli):
    outs = []
    for i in range(2):
        code, _, err = cli("check", "kraft", "--config", "small", "--mutation", "stale_partition_epoch", "--engine",
                           "hypothesis", "--quiet", "--out", tmp_path / str(i))
        assert code == 1, err
        [trace] = (tmp_path / str(i)).glob("*.itf.json")
        outs.append(trace.read_bytes())
    assert outs[0] == outs[1]


# ---------------------------------------------------------------------------- graph and liveness

@dataclass(frozen=True)
class CycleConfig(Config):
    fair_exit: bool = param(True, "the exit rule is weakly fair")


class Pos(NamedTuple):
    at: int


def cycle_spec(fair_exit: bool) -> Spec:
    """0 -> 1 -> 2 -> 1 -> ... forever by `go`; `leave` (enabled at 1 and 2) reaches the goal 3.
    If `leave` is weakly fair, the 1-2 cycle is unfair (leave stays enabled, never taken): no
    counterexample. If it is not fair, the cycle is a fair lasso where the goal never holds."""
    spec = Spec("cycle", CycleConfig, Pos, presets={"tiny": {}}, deadlock=False)

    @spec.init
    def init(cfg):
        yield Pos(0)

    @spec.rule(fair=True)
    def go(cfg, s):
        return Pos({0: 1, 1: 2, 2: 1}[s.at]) if s.at < 3 else None

    @spec.rule(fair=fair_exit)
    def leave(cfg, s):
        return Pos(3) if s.at in (1, 2) else None

    spec.eventually("ReachesThree", goal=lambda cfg, s: s.at == 3)
    return spec


def test_fair_cycle_gives_a_lasso_that_replays(tmp_path):
    spec = cycle_spec(fair_exit=False)
    model = spec.bind(spec.config("tiny"))
    result, g = graph.explore(model)
    [v] = result.violations
    assert v.outcome.kind == "liveness" and v.loop is not None
    assert [s.at for s in v.states[v.loop:]][0] == v.states[-1].at
    assert all(s.at != 3 for s in v.states[v.loop:])
    assert [s.at for s in v.states] == [0, 1, 2, 1]  # the shortest lasso: prefix 0 -> 1, cycle 1 -> 2 -> 1
    from harness.trace import Trace

    trace = Trace("-", {}, spec, model, v.states, v.actions, v.outcome, v.loop)
    assert replay(trace).ok
    broken = Trace("-", {}, spec, model, v.states[:-1], v.actions[:-1], v.outcome, v.loop)
    assert not replay(broken).ok  # a loop that does not close is refused


def test_unfair_cycle_is_not_a_counterexample():
    spec = cycle_spec(fair_exit=True)
    model = spec.bind(spec.config("tiny"))
    result, _ = graph.explore(model)
    assert not result.violations
    assert result.stats["liveness"]["ReachesThree"]["holds"]


def test_kraft_liveness_lasso_replays_through_the_cli(tmp_path, cli):
    code, out, err = cli("check", "example", "--config", "ci", "--engine", "graph", "--quiet", "--json",
                         "--mutation", "expand_lagging", "--out", tmp_path)
    assert code == 1
    data = json.loads(out)
    assert data["stats"]["states"] == bfs.explore(bind("example", "ci", "expand_lagging"), keep_going=True).stats["distinct"]
    for v in data["violations"]:
        assert cli("replay", v["trace"])[0] == 0


@pytest.mark.parametrize("fmt, spec_name", [("graphml", "kraft"), ("json", "kraft"),
                                            ("dot", "example")])  # pydot parses kraft tiny's DOT in 30 s
def test_graph_exports_load_back(tmp_path, cli, fmt, spec_name):
    path = tmp_path / f"{spec_name}-tiny.{fmt}"  # --out is the folder; the file is SPEC-CONFIG.FORMAT
    code, out, err = cli("graph", spec_name, "--config", "tiny", "--format", fmt, "--out", tmp_path, "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["file"] == str(path) and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    if fmt == "graphml":
        G = nx.read_graphml(path)
    elif fmt == "json":
        G = nx.node_link_graph(json.loads(path.read_text()), edges="edges")
    else:
        [dot] = pydot.graph_from_dot_file(str(path))
        G = nx.DiGraph()
        G.add_edges_from((e.get_source(), e.get_destination()) for e in dot.get_edges())
    assert G.number_of_nodes() == info["states"] and G.number_of_edges() == info["edges"]
    import shutil
    import subprocess

    if fmt == "dot" and shutil.which("dot"):  # Graphviz renders it (where it is installed)
        svg = subprocess.run(["dot", "-Tsvg", str(path)], capture_output=True, text=True, timeout=300)
        assert svg.returncode == 0 and "<svg" in svg.stdout


def test_graph_writes_to_stdout_with_out_dash(tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "harness", "graph", "example", "--out", "-"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith('digraph "example"') and "states 17" in p.stderr
    assert list(tmp_path.iterdir()) == []  # no file named "-", nothing in the current folder


def test_graph_refuses_a_state_space_over_its_limit(cli):
    code, _, err = cli("graph", "kraft", "--config", "tiny", "--max-states", "100")
    assert code == 3 and err.startswith("stopped:") and len(err.splitlines()) == 1 and "Traceback" not in err
    code, _, err = cli("check", "kraft", "--config", "tiny", "--engine", "graph", "--max-states", "100", "--quiet")
    assert code == 3 and err.startswith("stopped:") and "100 states" in err


# ------------------------------------------------------------------------------------------ Spark

@pytest.mark.slow
def test_spark_matches_bfs_and_resumes_to_the_same_result(tmp_path):
    from harness.engines import spark

    model = bind("kraft", "tiny")
    expected = bfs.explore(model)
    r = spark.explore(model, partitions=2, checkpoint=str(tmp_path / "ck"), spark_levels_only=True)
    assert r.stats["distinct"] == expected.stats["distinct"] and r.stats["spark_levels"] > 0
    assert r.stats["states_per_depth"] == expected.stats["states_per_depth"]
    # generated per rule is order-free; "distinct" credits the discovering action, which depends on order
    assert {k: v["generated"] for k, v in r.coverage.items()} == {k: v["generated"] for k, v in expected.coverage.items()}
    # simulate a kill after level 5: roll the checkpoint back and resume
    ck = tmp_path / "ck2"
    part = spark.explore(model, master="local[2]", partitions=3, checkpoint=str(ck), max_depth=5)
    assert not part.complete
    resumed = spark.explore(model, master="local[2]", partitions=3, checkpoint=str(ck), resume=True)
    assert resumed.complete and resumed.stats["distinct"] == expected.stats["distinct"]


def test_spark_violation_is_as_short_as_bfs_and_replays(tmp_path):
    from harness.engines import spark

    model = bind("kraft", "small", "keep_unclean_in_elr")
    r = spark.explore(model, partitions=2, checkpoint=str(tmp_path / "ck"))
    b = bfs.explore(model)
    assert {v.outcome.property for v in r.violations} == {v.outcome.property for v in b.violations}
    assert r.violations[0].depth == b.violations[0].depth
    path = write_trace(tmp_path / "t.itf.json", model, r.violations[0].states, r.violations[0].actions,
                       r.violations[0].outcome, "spark")
    assert replay(read_trace(path)).ok


@pytest.mark.parametrize("args, message", [
    (["--master", "spark://127.0.0.1:1"], "unreachable"),
    (["--master", "bogus://x"], "unknown Spark master"),
])
def test_spark_bad_master_is_one_line_exit_2(cli, args, message):
    code, _, err = cli("check", "kraft", "--engine", "spark", "--quiet", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_spark_corrupt_or_foreign_checkpoint_is_exit_2(tmp_path, cli):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "checkpoint.json").write_text("{not json")
    code, _, err = cli("check", "kraft", "--engine", "spark", "--quiet", "--checkpoint", ck, "--resume")
    assert code == 2 and "damaged" in err and len(err.strip().splitlines()) == 1
    ok = tmp_path / "ok"
    assert cli("check", "example", "--engine", "spark", "--quiet", "--checkpoint", ok)[0] == 0
    code, _, err = cli("check", "kraft", "--engine", "spark", "--quiet", "--checkpoint", ok, "--resume")
    assert code == 2 and "another job" in err


def test_gate_fails_on_a_protocol_change_naming_property_and_trace(tmp_path):
    """Make a mutation the default behaviour of `kraft` (a protocol change): the gate's ci
    exhaustion step fails and names the property and the trace file."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, str(ROOT / "ci" / "gate.py"), "--only", "2", "--out", str(tmp_path),
                        "--spec", "kraft", "--protocol-change", "kraft:hwm_below_min_isr"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 1
    assert "GATE FAILED" in p.stderr and "kraft/ci violates LeaderCandidateCompleteness" in p.stderr
    [trace] = tmp_path.glob("kraft-ci-hwm_below_min_isr-LeaderCandidateCompleteness.itf.json")
    assert str(trace) in p.stderr.replace("\n", "")


@pytest.mark.slow
def test_spark_on_kip642_matches_bfs(tmp_path):
    from harness.engines import spark

    model = bind("kip642", "tiny")
    expected = bfs.explore(model)
    r = spark.explore(model, master="local[2]", partitions=2, checkpoint=str(tmp_path / "ck"), spark_levels_only=True)
    assert r.complete and r.stats["distinct"] == expected.stats["distinct"]
    assert r.stats["states_per_depth"] == expected.stats["states_per_depth"]


@pytest.mark.nightly  # builds the archive anew (15 s); `make` builds and uses it every time
def test_the_class_archive_is_built_whole_and_the_driver_jvm_maps_it(tmp_path, monkeypatch):
    """`make` builds the archive once per environment: whole, by a rename, replacing one of an earlier
    pyspark or java; a fresh driver JVM then maps it (its memory maps name the file), which is what halves
    the session's start."""
    import subprocess
    import sys

    from harness.engines import spark

    environment = spark.class_archive()
    built_here = tmp_path / "spark-class-archive" / environment.name
    stale = built_here.with_name("driver-0123456789abcdef.jsa")
    stale.parent.mkdir()
    stale.write_bytes(b"an archive of another java")
    with monkeypatch.context() as m:
        m.setattr(spark.archive, "class_archive", lambda: built_here)  # where make_class_archive looks it up
        assert spark.make_class_archive() == built_here and built_here.stat().st_size > 10_000_000
    assert [f.name for f in built_here.parent.iterdir()] == [built_here.name]  # no temporary file, no stale one

    archive = spark.make_class_archive()  # this environment's (make's), built if it lacks one
    assert archive == environment and archive.is_file()
    probe = ("import sys, tempfile; from pathlib import Path; from harness.engines import spark; "
             "sc = spark.start_session('local[1]', Path(tempfile.mkdtemp()) / 'spark.log'); "
             "print(Path(f'/proc/{sc._gateway.proc.pid}/maps').read_text()); spark.stop_session(sc)")
    p = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert str(archive) in p.stdout


@pytest.mark.slow
@pytest.mark.nightly  # a whole quick night (80 s); test_results' simulated quick night stays in make test
def test_nightly_quick_writes_a_report(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    work = tmp_path / "repo"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".venv", "reports", "checkpoints", "traces", ".git",
                                                                ".hypothesis", "__pycache__"))
    env = dict(os.environ, NIGHTLY_QUICK="1", NIGHTLY_MASTER="local[2]")
    p = subprocess.run([sys.executable, "ci/nightly.py"], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    [report] = (work / "reports").glob("*")
    summary = json.loads((report / "summary.json").read_text())
    assert set(summary["models"]) == set(load_spec.__globals__["spec_names"]())
    kraft = summary["models"]["kraft"]
    assert kraft["spark"]["distinct"] == bfs.explore(bind("kraft", "tiny")).stats["distinct"]
    assert kraft["z3"]["proved"] and kraft["z3"]["outcome"] == "ok" and kraft["z3"]["bmc_depth"] is None
    assert summary["models"]["zk"]["z3"]["proved"]
    assert summary["models"]["kip642"]["z3"]["proved"]
    assert "z3" not in summary["models"]["replication"]  # no symbolic form
    assert "<svg" in (report / "report.html").read_text()
    assert summary["comparison"] == ["no previous report"]


SPARK_CASES = ("completion_ignores_min_isr", "stale_partition_epoch", "keep_unclean_in_elr", "expand_without_fetch_in_epoch")


@pytest.mark.parametrize("name, preset, mutation", [("kraft", load_spec("kraft").preset_for(m), m) for m in SPARK_CASES]
                         + [("kip642", "ci", "two_uncommitted_changes"), ("kip642", "tiny", None)])
def test_spark_agrees_with_bfs_on_mutations(tmp_path, name, preset, mutation):
    """Same shortest length, and BFS's violated property among Spark's (Spark reports every property
    violated at the first violating level; BFS those of the first violating state). The Spark engine
    knows nothing of mutations, so a few cases cover it: a controller bug, a data-plane bug 9 steps
    deep, an ELR bug after an unclean shutdown, a lagging-follower bug at its own config (every
    mutation's shortest trace is checked by BFS in test_kraft)."""
    from harness.engines import spark

    model = bind(name, preset, mutation)
    b = bfs.explore(model)
    r = spark.explore(model, master="local[2]", partitions=2, checkpoint=str(tmp_path / "ck"))
    assert bool(r.violations) == bool(b.violations)
    if b.violations:
        assert min(v.depth for v in r.violations) == b.violations[0].depth
        assert b.violations[0].outcome.property in {v.outcome.property for v in r.violations}
        v = min(r.violations, key=lambda v: v.depth)
        path = write_trace(tmp_path / "t.itf.json", model, v.states, v.actions, v.outcome, "spark")
        assert replay(read_trace(path)).ok
    else:
        assert r.stats["distinct"] == b.stats["distinct"]


@pytest.mark.slow
def test_spark_run_killed_mid_way_resumes_to_the_uninterrupted_result(tmp_path):
    """A real kill (SIGKILL, no clean-up) during a Spark job (every level on Spark, the fourth one
    committed), then --resume."""
    import os
    import signal
    import subprocess
    import sys
    import time

    ck = tmp_path / "ck"
    args = [sys.executable, "-m", "harness", "check", "kraft", "--config", "tiny", "--engine", "spark", "--quiet",
            "--master", "local[2]", "--partitions", "2", "--every-level-on-spark", "--checkpoint-every", "0", "--checkpoint", str(ck),
            "--out", str(tmp_path)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.monotonic() + 300
    level = 0
    while time.monotonic() < deadline and p.poll() is None:
        try:
            level = json.loads((ck / "state.json").read_text())["body"]["totals"]["spark_levels"]
        except (OSError, ValueError, KeyError):
            pass
        if level >= 4:
            os.killpg(p.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    p.wait()
    assert level >= 4 and p.returncode == -signal.SIGKILL
    resumed = subprocess.run(args + ["--resume", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    r = json.loads(resumed.stdout)
    expected = bfs.explore(bind("kraft", "tiny"))
    assert r["stats"]["resumed_at_level"] >= 4
    assert r["stats"]["distinct"] == expected.stats["distinct"]
    assert r["stats"]["states_per_depth"] == expected.stats["states_per_depth"]
    assert {k: v["generated"] for k, v in r["coverage"].items()} == \
        {k: v["generated"] for k, v in expected.coverage.items()}


@pytest.mark.slow
@pytest.mark.parametrize("user_conf", [None, "spark.ui.killEnabled true\nspark.driver.host localhost\n"],
                         ids=["harness-settings", "user-spark-defaults"])
def test_a_local_spark_session_listens_on_loopback_only_and_its_ui_offers_no_kill(tmp_path, user_conf):
    """Issue 36: while a task runs, nothing of a local session (the driver's Python, its JVM, the Python
    workers) listens on an address other machines reach, and the UI's jobs page has no kill link; a
    setting in the user's spark-defaults.conf wins over the harness's."""
    import os
    import subprocess
    import sys

    from tests.conftest import is_loopback

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if user_conf:
        (tmp_path / "spark-defaults.conf").write_text(user_conf)
        env["SPARK_CONF_DIR"] = str(tmp_path)
    p = subprocess.run([sys.executable, "tests/spark_network_probe.py", "local[1]"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    seen = json.loads(p.stdout.splitlines()[-1])
    commands = {command.split()[0].rsplit("/", 1)[-1] for _, _, command in seen["listening"]}
    assert {"java", "python"} <= commands  # the JVM and the Python workers' daemon were seen
    assert [(ip, port) for ip, port, _ in seen["listening"] if not is_loopback(ip)] == []
    if user_conf:
        assert seen["settings"]["spark.ui.killEnabled"] == "true" and seen["kill_link"]
        assert seen["settings"]["spark.driver.host"] == "localhost" and seen["settings"]["spark.driver.bindAddress"] is None
    else:
        assert seen["settings"]["spark.ui.killEnabled"] == "false" and not seen["kill_link"]
        assert seen["settings"]["spark.driver.bindAddress"] == seen["settings"]["spark.driver.host"] == "127.0.0.1"
        assert seen["ui"].startswith("http://127.0.0.1:")


def test_spark_network_settings_leave_a_remote_drivers_address_and_any_explicit_setting_to_the_user():
    from harness.engines.spark import network_settings

    on_loopback = {"spark.ui.killEnabled": "false", "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
    for master in ("local[*]", "local", "local-cluster[2,1,1024]", "spark://127.0.0.1:7077", "spark://localhost:7077",
                   "spark://[::1]:7077,127.0.0.2:7078"):
        assert network_settings(master, {}, "127.0.0.1") == on_loopback, master
    # a master other machines reach: remote executors must reach the driver, so where it binds is the user's choice
    for master in ("spark://10.1.2.3:7077", "spark://127.0.0.1:7077,spark-master:7077", "yarn", "k8s://https://k:6443"):
        assert network_settings(master, {}, None) == {"spark.ui.killEnabled": "false"}, master
    # a JVM without SPARK_LOCAL_IP (spark-submit's) would put a local session's UI on every address
    assert network_settings("local[2]", {}, None) == {**on_loopback, "spark.ui.enabled": "false"}
    assert network_settings("local[2]", {"spark.ui.enabled": "true"}, None) == on_loopback
    # the user's settings win, and the driver's two addresses are one choice
    assert network_settings("local[2]", {"spark.ui.killEnabled": "true", "spark.driver.host": "h"}, "127.0.0.1") == {}
    assert network_settings("local[2]", {"spark.driver.bindAddress": "0.0.0.0"}, "127.0.0.1") == {"spark.ui.killEnabled": "false"}
