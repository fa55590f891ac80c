"""Trace validation on a real KRaft cluster (issue 40): `conform kraft --cluster` starts three Kafka JVMs on
127.0.0.1, runs a scenario, and checks the metadata log against the kraft model; `--metadata-log` checks a
log one brings. The short scenario (reassigned, a broker killed -9 and restarted) runs here; the longer
ones are marked `cluster` (the nightly runs every scenario through ci/nightly.py).

Every JVM the harness starts must be gone after success, failure, exit 2 and a signal: checked with psutil
by the work folder each node's command line names."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest

from conftest import ROOT, run_cli
from harness.cluster.scenarios import SCENARIOS
from harness.tracevalidate import verdict_lines

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def jvms_of(folder) -> list[psutil.Process]:
    """Running Java processes whose command line names `folder` (each node's logs dir is in it)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if cmd and os.path.basename(cmd[0]) == "java" and any(str(folder) in arg for arg in cmd):
            found.append(proc)
    return found


def nodes_of(folder) -> list[psutil.Process]:
    """The Kafka nodes (not the storage formatting) among `jvms_of(folder)`."""
    return [p for p in jvms_of(folder) if "kafka.Kafka" in p.info["cmdline"]]


def conform(*args):
    return run_cli("conform", "kraft", *args)


@pytest.mark.slow
def test_the_short_scenario_is_explained_and_a_tampered_isr_is_not(tmp_path):
    """One cluster run (one test, so that xdist never starts two): the short scenario is explained by the
    model; then a copy of its metadata log with one record's ISR changed is unexplained at that record."""
    folder = tmp_path / "cluster"
    began = time.monotonic()
    code, out, err = conform("--cluster", "--scenario", "kill-leader", "--workdir", folder, "--json")
    seconds = time.monotonic() - began
    assert code == 0, err
    answer = json.loads(out)
    assert answer["explained"] is True and answer["scenario"] == "kill-leader"
    # reassignment growth and completion, the fencing, the re-registration, the unfencing, the ISR expansion
    assert answer["model_steps_matched"] >= 5
    assert answer["records_validated"] >= answer["model_steps_matched"] and answer["records_read"] > 20
    assert answer["model_config"]["completion"] == "kafka-4.4" and answer["model_config"]["brokers"] == 3  # 4.4.0: KAFKA-19975
    assert answer["model_config"]["replicas"] == [1, 2] and [2, 3] in answer["model_config"]["targets"]
    side = answer["broker_side"]
    assert side["matches_model"] is True and side["describe"]["replicas"] == [2, 3]
    assert side["end_offset"] == side["produced_acked"] == 2
    # the model trace replays as recorded
    code, out, err = run_cli("replay", answer["trace"])
    assert code == 0, err + out
    assert (folder / "node-1" / "server.log").stat().st_size > 0  # the logs are kept for the user
    assert not jvms_of(folder)
    print(f"short scenario: {seconds:.1f} s in all, cluster start {answer['cluster_start_seconds']:.1f} s")
    check_a_tampered_copy(folder, tmp_path)


def check_a_tampered_copy(folder, tmp_path):
    log_dir = tmp_path / "__cluster_metadata-0"
    shutil.copytree(folder / "node-1" / "data" / "__cluster_metadata-0", log_dir)  # the log found explained
    # in its own process: a JVM in this pytest worker would hold one Kafka version for the worker's life
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "metadata_tamper.py"), str(log_dir)],
                          capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=120)
    assert done.returncode == 0, done.stderr
    offset, forged = json.loads(done.stdout)
    code, out, err = conform("--metadata-log", log_dir, "--topic", "reassigned", "--out", tmp_path / "t1", "--json")
    assert code == 1, err
    tampered = json.loads(out)
    assert tampered["explained"] is False
    first = tampered["first_unexplained_record"]
    assert first["offset"] == offset and first["type"] == "PartitionChangeRecord" and first["data"]["isr"] == forged
    # the model states possible just before it, and what the model could have written: the true ISR
    assert tampered["possible_states_before"] >= 1 and tampered["possible_before"]
    assert tampered["possible_before"][0]["partition"]["replicas"] == [2, 3, 1]
    assert any("replicas [2,3] isr {2,3}" in text for text in tampered["model_could_write"])
    assert not (tmp_path / "t1").exists()  # no trace for an unexplained log
    # the text form says the same in a few lines
    assert any(line.startswith(f"unexplained: record at offset {offset} (PartitionChangeRecord")
               for line in verdict_lines(tampered))


def test_a_cluster_that_does_not_start_in_time_is_one_line_and_leaves_nothing(tmp_path):
    folder = tmp_path / "slow"
    code, out, err = conform("--cluster", "--workdir", folder, "--start-timeout", "0.5")
    assert code == 2 and out == "", err
    assert err.startswith("error: the KRaft cluster did not start within 0.5 s"), err
    assert len(err.strip().splitlines()) == 1
    assert not jvms_of(folder)


@pytest.mark.slow
def test_a_failure_inside_the_run_stops_every_jvm(tmp_path, monkeypatch):
    """A bug (any exception) after the nodes were launched: the context manager kills them all."""
    from harness.cluster import Cluster
    from harness.kafka import default_version

    def launched_then_broken(self, began):
        deadline = time.monotonic() + 60
        while len(nodes_of(self.workdir)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(nodes_of(self.workdir)) == 3
        raise RuntimeError("broken after the launch")

    monkeypatch.setattr(Cluster, "wait_until_ready", launched_then_broken)
    cluster = Cluster(default_version(), tmp_path / "c")
    with pytest.raises(RuntimeError, match="broken after the launch"):
        with cluster:
            pass
    assert sum("kafka.Kafka" in p.args for p in cluster.started) == 3  # and the three storage formats before
    assert all(p.returncode is not None for p in cluster.started)
    assert not jvms_of(tmp_path / "c")


@pytest.mark.slow
@pytest.mark.parametrize("signum, code, when", [(signal.SIGINT, 130, "launched"), (signal.SIGTERM, 143, "running")])
def test_a_signal_stops_every_jvm(tmp_path, signum, code, when):
    """Ctrl-C while the nodes start; SIGTERM during the scenario (the in-process Admin JVM running)."""
    folder = tmp_path / "sig"
    p = subprocess.Popen([sys.executable, "-m", "harness", "conform", "kraft", "--cluster", "--workdir", str(folder)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
    try:
        deadline = time.monotonic() + 120
        while len(nodes_of(folder)) < 3 and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.2)
        assert len(nodes_of(folder)) == 3
        if when == "running":
            assert p.stderr.readline().startswith("cluster started in ")  # its first line, once the nodes answer
            assert p.stderr.readline().startswith("produce ")
        p.send_signal(signum)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == code, err
    assert f"interrupted by {signal.Signals(signum).name}" in err
    assert not jvms_of(folder)


def test_a_folder_that_exists_is_refused_and_left_alone(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("the user's")
    code, out, err = conform("--cluster", "--workdir", folder)
    assert code == 2 and err.startswith("error: ") and "exists" in err and len(err.splitlines()) == 1
    assert [p.name for p in folder.iterdir()] == ["notes.txt"] and (folder / "notes.txt").read_text() == "the user's"


def test_a_cluster_id_never_starts_with_a_dash():
    """The storage tool reads `-t -xyz` as an option: one formatting in 64 failed before."""
    from harness.cluster import kafka_uuid
    ids = [kafka_uuid() for _ in range(2000)]
    assert not [i for i in ids if i.startswith("-")] and all(len(i) == 22 for i in ids)


def test_bad_input_is_one_line(tmp_path):
    junk = tmp_path / "junk.log"
    junk.write_bytes(b"not a log segment, just bytes" * 10)
    for args, said in ((["--cluster", "--scenario", "nope"], "unknown scenario 'nope' (known: kill-leader, "),
                       (["--metadata-log", junk], "holds no record batch: not a KRaft metadata log"),
                       (["--cluster", "--metadata-log", junk], "give --cluster (run a scenario) or --metadata-log PATH"),
                       (["--cluster", "--kafka", "0.1"], "unknown Kafka version '0.1'")):
        code, out, err = conform(*args)
        assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1, (args, err)
        assert said in err, (args, err)
    code, out, err = run_cli("conform", "zk", "--cluster")
    assert code == 2 and err.startswith("error: trace validation checks the kraft model, not 'zk'")


def test_scenarios_are_listed():
    code, out, err = conform("--list", "--json")
    assert code == 0
    listed = {s["name"]: s for s in json.loads(out)}
    assert set(listed) == set(SCENARIOS) and len(listed) >= 7
    assert [s for s in listed.values() if not s["nightly_only"]] == [listed["kill-leader"]]
    code, out, _ = conform("--list")
    assert "kill -9 broker 2" in out and "cancel the reassignment" in out


@pytest.mark.cluster
@pytest.mark.parametrize("name", [n for n, s in SCENARIOS.items() if s.nightly])
def test_each_longer_scenario_is_explained(tmp_path, name):
    """Explained, or (for a scenario that names a known divergence of Kafka from the model) unexplained."""
    code, out, err = conform("--cluster", "--scenario", name, "--workdir", tmp_path / name, "--json")
    assert code in ((0, 1) if SCENARIOS[name].known else (0,)), err + out
    assert json.loads(out)["explained"] is (code == 0)
    assert not jvms_of(tmp_path / name)


def test_the_nightly_report_shows_each_scenarios_verdict(tmp_path, monkeypatch):
    """ci/nightly.py's KRaft section, from a night's summary (no cluster needed): every verdict in the report;
    an unexplained scenario fails the night unless the scenario names it a known divergence."""
    monkeypatch.syspath_prepend(str(ROOT / "ci"))
    import nightly
    import report

    def row(verdict, known, detail=""):
        return {"verdict": verdict, "known": known, "records_validated": 9, "steps_matched": 6, "detail": detail,
                "cluster_start_seconds": 20.5, "seconds": 50.1}

    scenarios = {"kill-leader": row("explained", False), "kill-leader-midway": row("unexplained", True, "KAFKA-19975"),
                 "cancel": row("unexplained", False, "at offset 53"), "replace": row("error (exit 2)", False, "waited")}
    summary = {"date": "2026-11-27", "outcome": "ok", "seed": 1, "folder": str(tmp_path), "failures": [],
               "provenance": {"commit": "x"}, "models": {}, "configs": {}, "fuzz": {}, "kraft_cluster": scenarios}
    assert nightly.failures_of(summary) == ["KRaft cluster scenario cancel: unexplained at offset 53",
                                            "KRaft cluster scenario replace: error (exit 2) waited"]
    report.render(tmp_path, summary, [])
    html = (tmp_path / "report.html").read_text()
    assert 'id="kraft-cluster"' in html
    for name, v in scenarios.items():
        assert f"<tr><td>{name}</td><td>{v['verdict']}</td><td>9</td><td>6</td>" in html


def test_a_log_is_validated_in_the_variant_of_the_kafka_that_wrote_it():
    """As `conform` compares each Kafka version with its variant: 4.4's controller completes by KAFKA-19975's rule."""
    from harness.cluster.run import completion_for
    assert [completion_for(v) for v in ("3.9.1", "4.0.0", "4.3.1", "4.4.0")] == ["kafka", "kafka", "kafka", "kafka-4.4"]
