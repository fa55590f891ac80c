"""`harness conform`: the kraft model against Kafka's own controller code (harness/conform, specs/kraft/conform.py).

In-process tests use the default Kafka version, one JVM per pytest worker (a JVM holds one version); the other
versions and the refusals run the CLI in a subprocess. Tiny configs only: the full runs are the nightly's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness import conform
from harness.kafka import default_version, has_adapter, resolved_versions
from harness.registry import load_spec
from harness.replay import replay
from harness.trace import read_trace
from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.skipif(not resolved_versions() or not has_adapter(resolved_versions()[0]),
                                reason="Kafka's jars and conform's adapter are not built (make kafka)")


def bound(preset: str, *variants: str, mutation: str | None = None):
    """The model `conform` compares with the default Kafka version: the variants that match it."""
    spec = load_spec("kraft")
    return spec.bind(spec.config(preset, (), spec.conformance.variants_for(default_version()) + variants, mutation))


def kafka_for(model):
    from harness.conform.kafka import KafkaController

    return KafkaController(default_version(), **model.spec.conformance.setup(model.config))


def test_tiny_conforms_with_the_newest_kafka_on_every_transition():
    model = bound("tiny")
    result = conform.walk_bfs(model, kafka_for(model))
    assert result.complete and result.divergence is None and result.not_reproduced is None
    assert (result.states, result.transitions) == (1201, 3583)  # every state expanded, every transition compared
    assert result.controller_transitions == 314 and result.kafka_calls == 4
    # the only difference is the declared one: Kafka answers NEW_LEADER_ELECTED where the model says ACCEPTED
    assert set(result.declared) == {"new-leader-elected"}
    assert conform.exit_code(result) == 0


def test_a_mutation_diverges_at_the_expected_step_and_its_trace_replays(tmp_path):
    # keep_removing_in_isr: the completing AlterPartition keeps the removed leader 1 in the ISR; Kafka trims it
    # and elects 2. Shortest: reassign, learn, fetch, propose, learn... the 6th step is the controller's answer.
    model = bound("tiny", mutation="keep_removing_in_isr")
    result = conform.walk_bfs(model, kafka_for(model))
    d = result.divergence
    assert d is not None and len(d.states) - 1 == 6 and d.actions[-1].rule == "handle_alter_partition"
    assert d.differences["isr"] == (0b1110, 0b1100) and d.differences["leader"] == (1, 2)
    assert d.classification.startswith("model bug") and any("PartitionChangeRecord" in r for r in d.kafka_records)
    conform.write_divergences(model, result, tmp_path)
    trace = read_trace(d.trace_path)
    assert replay(trace).ok
    assert trace.meta["conformance"]["step"] == 6 and trace.meta["conformance"]["kafka_version"] == default_version()
    code, out, err = run_cli("show", d.trace_path)  # Kafka's side among the closing lines
    assert code == 0 and f"kafka: Kafka {default_version()} at step 6, alter" in out and "PartitionChangeRecord" in out
    assert conform.exit_code(result) == 1


def test_a_wrong_adapter_value_is_caught_at_the_first_kafka_call(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CONFORM_PERTURB", "leader_epoch")
    model = bound("tiny")
    result = conform.walk_bfs(model, kafka_for(model))
    d = result.divergence
    assert d is not None and len(d.states) - 1 == 1 and d.actions[-1].rule == "alter_partition_reassignments"
    assert set(d.differences) == {"leader_epoch"} and d.differences["leader_epoch"] == (1, 2)
    conform.write_divergences(model, result, tmp_path)
    assert replay(read_trace(d.trace_path)).ok


def test_hypothesis_walks_drive_the_same_comparison():
    model = bound("tiny")
    result = conform.walk_random(model, kafka_for(model), examples=20, steps=30)
    assert result.complete and result.walks >= 20 and result.controller_transitions > 0
    mutated = bound("tiny", mutation="completion_no_epoch_bump")  # the cancellation keeps the leader epoch
    result = conform.walk_random(mutated, kafka_for(mutated), examples=50, steps=30)
    d = result.divergence
    assert d is not None and d.actions[-1].rule == "cancel_reassignment" and "leader_epoch" in d.differences


def test_the_cli_reports_counts_in_text_and_json(tmp_path):
    code, out, err = run_cli("conform", "kraft", "--config", "tiny", "--json", "--out", tmp_path)
    assert code == 0 and err == "", err  # nothing from the JVM's logging either
    data = json.loads(out)
    assert data["outcome"] == "conformant" and data["variant"]["completion"] == bound("tiny").config.completion
    assert data["stats"]["states"] == 1201 and data["stats"]["transitions_compared"] == 3583
    assert data["declared"]["new-leader-elected"]["count"] == 28
    code, out, err = run_cli("conform", "kraft", "--config", "tiny", "--max-states", "100", "--out", tmp_path)
    assert code == 3 and "no verdict" in out


def test_a_hypothesis_seed_repeats_its_walks(tmp_path):
    runs = [run_cli("conform", "kraft", "--config", "tiny", "--engine", "hypothesis", "--examples", "10", "--seed", "5",
                    "--json", "--out", tmp_path) for _ in range(2)]
    stats = [json.loads(out)["stats"] for code, out, err in runs]
    assert all(code == 0 for code, _, _ in runs) and stats[0]["walks"] >= 10
    assert {k: v for k, v in stats[0].items() if k != "seconds"} == {k: v for k, v in stats[1].items() if k != "seconds"}


@pytest.mark.skipif("3.9.1" not in resolved_versions() or not has_adapter("3.9.1"), reason="make kafka KAFKA=3.9.1")
def test_kafka_3_9_handles_a_clean_restart_as_unclean_as_declared(tmp_path):
    code, out, err = run_cli("conform", "kraft", "--config", "tiny-fence", "--kafka", "3.9.1", "--json", "--out", tmp_path)
    data = json.loads(out)
    assert code == 1 and data["divergence"] is None
    assert data["not_reproduced"]["classification"] == "not reproduced: clean-restart-handled-as-unclean"
    assert replay(read_trace(data["not_reproduced"]["trace"])).ok


def conform_json(tmp_path, version: str, *args: str) -> tuple[int, dict]:
    code, out, err = run_cli("conform", "kraft", "--config", "tiny-fence", "--kafka", version, "--json", "--out",
                             tmp_path, *args)
    assert code in (0, 1), err
    return code, json.loads(out)


def resolved(version: str):
    return pytest.mark.skipif(version not in resolved_versions() or not has_adapter(version),
                              reason=f"make kafka KAFKA={version}")


@resolved("4.4.0")
def test_kafka_4_4_conforms_with_its_variant_and_not_with_4_0s(tmp_path):
    """conform picks completion=kafka-4.4 for 4.4.0: every transition compared, none diverging; 4.0's variant
    (named) diverges where KAFKA-19975 completes [1,2] -> [2,3] with 2 fenced, as declared for that variant."""
    code, data = conform_json(tmp_path, "4.4.0")
    assert code == 0 and data["outcome"] == "conformant" and data["variant"]["completion"] == "kafka-4.4"
    assert (data["stats"]["states"], data["stats"]["transitions_compared"], data["stats"]["not_compared"]) == (
        4718, 14535, 0)
    code, data = conform_json(tmp_path, "4.4.0", "--variant", "completion=kafka")
    assert code == 1 and data["divergence"] is None and data["stats"]["not_compared"] > 0
    nr = data["not_reproduced"]
    assert nr["classification"] == "not reproduced: completion-relaxed" and nr["step"] == 7
    assert nr["differences"]["replicas"] == {"model": [2, 3, 1], "kafka": [2, 3]}
    assert replay(read_trace(nr["trace"])).ok


@resolved("4.0.0")
def test_kafka_4_0_keeps_its_variant_and_4_4s_declarations_do_not_hide_a_difference(tmp_path):
    code, data = conform_json(tmp_path, "4.0.0")
    assert code == 0 and data["outcome"] == "conformant" and data["variant"]["completion"] == "kafka"
    code, data = conform_json(tmp_path, "4.0.0", "--variant", "completion=kafka-4.4")
    d = data["divergence"]  # 4.0 waits for replica 2: unclassified, not "completion-relaxed" (declared for kafka)
    assert code == 1 and d is not None and d["classification"].startswith("unclassified") and d["step"] == 7


@pytest.mark.parametrize("args, env, message", [
    (["--kafka", "9.9.9"], {}, "unknown Kafka version '9.9.9'"),
    (["--kafka", "four"], {}, "unknown Kafka version 'four'"),
    ([], {"JAVA_HOME": "/nonexistent-java"}, "JAVA_HOME=/nonexistent-java holds no Java runtime"),
    (["--variant", "completion=seed"], {}, "completion=kafka"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, env, message):
    p = subprocess.run([sys.executable, "-m", "harness", "conform", "kraft", "--config", "tiny", "--out", str(tmp_path),
                        *args], capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
                       timeout=300)
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and len(lines) == 1 and message in lines[0], p.stderr
    assert "Traceback" not in p.stderr and not list(tmp_path.iterdir())


def test_ctrl_c_stops_a_run_with_130_and_no_traceback(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "harness", "conform", "kraft", "--config", "ci", "--out", str(tmp_path)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    time.sleep(6)  # the JVM is up and the walk under way: ci takes minutes
    assert p.poll() is None
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "interrupted by SIGINT" in err and "Traceback" not in err


@pytest.mark.gate
def test_the_gate_step_walks_a_small_config_against_the_newest_kafka(tmp_path):
    p = subprocess.run([sys.executable, "ci/gate.py", "--skip-pytest", "--only", "9", "--spec", "kraft", "--out",
                        str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr
    assert f"kraft/tiny-fence vs Kafka {default_version()}: " in p.stderr and "gate passed" in p.stderr


def test_the_nightly_runs_every_listed_version_and_reports_its_figures(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "ci"))
    import nightly

    version = default_version()
    monkeypatch.setattr(nightly, "QUICK", True)
    out = nightly.run_conformance(tmp_path, [version, "9.9.9"])
    newest = out[f"{version} elr=true"]
    assert newest["preset"] == "tiny-fence" and newest["exit"] in (0, 1) and newest["stats"]["transitions_compared"] > 9000
    assert newest["variant"]["completion"] == bound("tiny").config.completion  # which variant matched the version
    assert out[f"{version} elr=false"]["stats"]["transitions_compared"] > 0
    assert out["9.9.9 elr=true"]["outcome"] == "not run" and "unknown Kafka version" in out["9.9.9 elr=true"]["error"]
    failures = nightly.failures_of({"models": {}, "fuzz": {}, "conformance": out})
    assert len(failures) == 2 and failures[0].startswith("kraft vs Kafka 9.9.9 elr=true: not run (error: unknown Kafka")


@pytest.mark.parametrize("args, message", [
    (["--engine", "hypothesis", "--max-states", "5"], "--max-states applies to --engine bfs, not to --engine hypothesis"),
    (["--examples", "5"], "--examples applies to --engine hypothesis, not to --engine bfs"),
])
def test_an_option_of_the_other_engine_is_refused(tmp_path, args, message):
    code, out, err = run_cli("conform", "kraft", "--config", "tiny", "--out", tmp_path, *args)
    assert code == 2 and err.strip() == f"error: {message}"
