"""`conform kraft --cluster` and `--metadata-log`: run a scenario on a real cluster (or take a user's log),
validate the metadata log against the kraft model, and compare what the brokers expose.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from harness import interrupt, tracevalidate
from harness.bitset import members
from harness.cluster import START_TIMEOUT, Cluster
from harness.cluster.admin import PartitionView, start_jvm_keeping_signals
from harness.cluster.metadata import read_batches
from harness.cluster.scenarios import TOPIC, Run, Scenario
from harness.trace import Outcome, write_trace

TRACE_NAME = "kraft-trace-validation.itf.json"


def validate_log(path: Path, version: str, out: Path | None, topic: str | None = None,
                 targets: tuple | None = None) -> tuple[tracevalidate.Verdict, Path | None]:
    """Decode the metadata log at `path` and validate it; an explained log's model trace goes to `out`."""
    start_jvm_keeping_signals(version)
    verdict = tracevalidate.validate(read_batches(path), topic=topic, targets=targets, completion=completion_for(version))
    trace = None
    if verdict.explained and out is not None:
        trace = write_trace(out / TRACE_NAME, verdict.model, verdict.states, verdict.actions, Outcome("none"),
                            "tracevalidate", extra={"note": f"trace validation of the metadata log {path}: the model "
                                                    f"steps that change what the log shows match its batches at "
                                                    f"offsets {verdict.observed_offsets}"})
    return verdict, trace


def completion_for(version: str) -> str:
    """The kraft `completion` variant that matches Kafka `version`'s controller: the one `conform` compares
    with it (specs/kraft/conform.py; Kafka 4.4 completes a reassignment by KAFKA-19975's rule)."""
    from harness.registry import load_spec
    chosen = dict(v.split("=", 1) for v in load_spec("kraft").conformance.variants_for(version))
    return chosen.get("completion", "kafka")


def broker_side(view: PartitionView, end_offset: int, produced: int, verdict: tracevalidate.Verdict) -> dict:
    """What the brokers expose (describeTopics, listOffsets) against the model's last partition state."""
    out = {"describe": {"leader": view.leader, "replicas": list(view.replicas), "isr": sorted(view.isr),
                        "elr": None if view.elr is None else sorted(view.elr)},
           "end_offset": end_offset, "produced_acked": produced,
           "acked_records_kept": end_offset >= produced}
    if verdict.explained and verdict.states:
        p = verdict.states[-1].partition
        model = {"leader": p.leader or -1, "replicas": list(p.replicas), "isr": sorted(members(p.isr)),
                 "elr": sorted(members(p.elr))}
        out["model"] = model
        out["matches_model"] = all(out["describe"][k] == model[k] for k in model if out["describe"][k] is not None)
    return out


def run_scenario(plan: Scenario, version: str, workdir: Path, say: Callable[[str], None],
                 start_timeout: float = START_TIMEOUT) -> dict:
    """Start a cluster in `workdir`, run `plan`, stop the cluster, validate the metadata log."""
    began = time.monotonic()
    cluster = Cluster(version, workdir, start_timeout, plan.controllers)
    # a signal also kills the nodes from the interrupt watcher, should the main thread sit in a Java call
    with interrupt.cancelling(cluster.stop_processes), cluster:
        say(f"cluster started in {cluster.start_seconds:.1f} s at {cluster.bootstrap} (work folder {workdir})")
        Run(cluster, plan, say).run()
        view = cluster.admin.describe(TOPIC)
        end_offset = cluster.admin.end_offset(TOPIC)
    ran = time.monotonic() - began  # the cluster's start, the scenario and the stop
    # a controller's copy (a broker-only node replicates it too, but may have been down at the end)
    verdict, trace = validate_log(cluster.nodes[plan.controllers[0]].metadata_log, version, workdir, TOPIC, plan.targets)
    result = tracevalidate.verdict_json(verdict, trace)
    result.update(scenario=plan.name, kafka=version, workdir=str(workdir), cluster_start_seconds=cluster.start_seconds,
                  scenario_seconds=ran - cluster.start_seconds, validation_seconds=time.monotonic() - began - ran,
                  broker_side=broker_side(view, end_offset, plan.produced, verdict))
    return result
