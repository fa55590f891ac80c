"""`python -m harness conform` (a model against Kafka's own code, and a cluster's metadata log against the model), on the group of harness/cli.py, kept apart so that
cli.py stays a map of the commands; imported by cli.py once its helpers exist."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
from rich.text import Text

from harness.cli import Folder, _flag_given, _header, _progress, cli, out
from harness.errors import BadInput
from harness.files import check_writable_dir


# --------------------------------------------------------------------------------------- conform
@cli.command("conform")
@click.argument("spec_name", metavar="SPEC")
@click.option("--config", "preset", default=None, help="named preset (see `list`)")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="override a config constant")
@click.option("--variant", "variants", multiple=True, metavar="NAME=VALUE",
              help="select a protocol variant (kraft: the completion that matches the Kafka version unless given)")
@click.option("--mutation", default=None, help="remove one safety rule (see `list`)")
@click.option("--kafka", "kafka_version", default=None, help="Kafka version (default: the newest resolved, kafka/versions.txt)")
@click.option("--engine", default="bfs", type=click.Choice(("bfs", "hypothesis")), show_default=True,
              help="bfs: every transition; hypothesis: random walks (larger configs)")
@click.option("--max-states", type=click.IntRange(min=1), default=None, help="[bfs] stop beyond this many states (exit 3)")
@click.option("--examples", type=click.IntRange(min=1), default=300, show_default=True, help="[hypothesis] walks")
@click.option("--steps", type=click.IntRange(min=1), default=60, show_default=True, help="[hypothesis] steps per walk")
@click.option("--seed", type=int, default=None, help="[hypothesis] random walks from this seed (default: derandomized)")
@click.option("--out", default="traces", show_default=True, type=Folder(file_okay=False), help="where a divergence trace goes")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object on stdout")
@click.option("--quiet", is_flag=True, help="no progress on stderr")
@click.option("--cluster", "on_cluster", is_flag=True, help="[cluster] run a scenario on a real 3-node KRaft cluster "
              "and validate its metadata log against the model")
@click.option("--scenario", default="kill-leader", show_default=True, help="[cluster] the cluster scenario (see --list)")
@click.option("--list", "list_scenarios", is_flag=True, help="[cluster] list the cluster scenarios")
@click.option("--metadata-log", "metadata_log", default=None, type=Folder(exists=True),
              help="[cluster] validate this metadata log (a __cluster_metadata-0 folder or a segment file) instead")
@click.option("--topic", default=None, help="[cluster] with --metadata-log: the topic whose partition 0 is validated "
              "(default: the first one created)")
@click.option("--workdir", default=None, type=Folder(), help="[cluster] the cluster's work folder, created by the "
              "harness (default: clusters/<scenario>-<UTC time>)")
@click.option("--start-timeout", type=click.FloatRange(min=0.1, max=3600), default=120.0, show_default=True,
              help="[cluster] seconds for the cluster to start (every broker unfenced); later: exit 2, nothing left running")
@click.pass_context
def conform_cmd(ctx, spec_name, preset, settings, variants, mutation, kafka_version, engine, max_states, examples, steps,
                seed, out, as_json, quiet, on_cluster, scenario, list_scenarios, metadata_log, topic, workdir,
                start_timeout) -> None:
    """Compare SPEC with Apache Kafka's own controller code on every transition (docs/ARCHITECTURE.md, "Kafka's own
    code"). Exit 0: every transition agrees (or differs only as the spec declares); 1: a divergence (its trace
    and Kafka's records are written); 2: bad input or no usable JVM/jars; 3: --max-states stopped the walk.
    With --cluster or --metadata-log (trace validation, docs/models/kraft.md): 0 the metadata log is explained
    by the model (the model trace is written), 1 a record the model cannot explain, 2 bad input or a cluster
    that could not do the scenario; every JVM the harness starts is stopped on every way out."""
    from harness import conform
    from harness.conform.kafka import KafkaController
    from harness.kafka import classpath, default_version
    from harness.registry import load_spec

    validating = on_cluster or metadata_log or list_scenarios
    walk_only = ("preset", "settings", "variants", "mutation", "engine", "max_states", "examples", "steps", "seed", "quiet")
    for name in walk_only if validating else ("scenario", "topic", "workdir", "start_timeout"):
        if flag := _flag_given(ctx, name):
            raise BadInput(f"{flag} applies to " + ("the comparison with Kafka's controller, not to trace validation"
                                                     if validating else "--cluster or --metadata-log"))
    if validating:
        return _conform_cluster(spec_name, on_cluster, scenario, list_scenarios, kafka_version, metadata_log, topic,
                                workdir, out, start_timeout, as_json)
    for name, takes in (("max_states", "bfs"), ("examples", "hypothesis"), ("steps", "hypothesis"), ("seed", "hypothesis")):
        if engine != takes and (flag := _flag_given(ctx, name)):
            raise BadInput(f"{flag} applies to --engine {takes}, not to --engine {engine}")
    spec = load_spec(spec_name)
    if spec.conformance is None:
        raise BadInput(f"{spec_name} declares no conformance with Kafka (kraft does)")
    version = kafka_version or default_version()
    classpath(version)  # an unknown or unresolved version: one line, before the variants that match it are picked
    given = {v.split("=", 1)[0] for v in variants}
    defaults = tuple(v for v in spec.conformance.variants_for(version) if v.split("=", 1)[0] not in given)
    model = spec.bind(spec.config(preset, settings, defaults + tuple(variants), mutation))
    conformance = conform.conformance_of(model)
    check_writable_dir(out, "--out")
    with _progress(quiet, f"comparing with Kafka {version} ...") as progress:
        kafka = KafkaController(version, **conformance.setup(model.config))

        def report(result, elapsed):
            progress({"distinct": result.states, "generated": result.transitions, "depth": "-", "queue": 0,
                      "elapsed": elapsed})

        if engine == "hypothesis":
            result = conform.walk_random(model, kafka, examples=examples, steps=steps, seed=seed, progress=report)
        else:
            result = conform.walk_bfs(model, kafka, max_states=max_states, progress=report)
    conform.write_divergences(model, result, out)
    data = conform.summary(model, result)
    if as_json:
        print(json.dumps(data, indent=1))
    else:
        _print_conform(model, data)
    sys.exit(conform.exit_code(result))


def _print_conform(model, data: dict) -> None:
    k, st = data["kafka"], data["stats"]
    out.print(Text(f"{_header(model, 'conform-' + data['engine'], None)} kafka={data['kafka_version']} "
                   f"(metadata.version {k['metadata_version']}, ELR {'on' if k['elr'] else 'off'}"
                   f"{', unstable features' if k['unstable_features'] else ''})", "bold"))
    walks = f", {st['walks']:,} walks" if data["engine"] == "hypothesis" else ""
    out.print(f"  {st['states']:,} states, {st['transitions_compared']:,} transitions compared "
              f"({st['controller_transitions']:,} with a Kafka call, {st['kafka_calls']:,} "
              f"{'distinct calls' if data['engine'] == 'bfs' else 'calls'} run on Kafka)"
              f"{walks}, {st['seconds']:.2f} s" + (f"; {st['not_compared']:,} beyond a declared divergence not compared"
                                                  if st["not_compared"] else ""))
    for name, d in data["declared"].items():
        if d["count"]:
            out.print(Text(f"  declared {d['kind']} {name}: {d['count']:,} transitions ({d['why']})"))
    for d in (data["not_reproduced"], data["divergence"]):
        if d is not None:
            _print_divergence(d)
    if data["divergence"] is not None:
        return
    if data["not_reproduced"] is not None:
        out.print("[red]Kafka behaves as the model does not (yet), as declared above[/red] (exit 1)")
    elif data["complete"]:
        out.print("[green]conformant[/green]: every transition agrees with Kafka" +
                  (" (or differs only as declared)" if any(d["count"] for d in data["declared"].values()) else ""))
    else:
        out.print("[yellow]no verdict: --max-states stopped the walk before the space was exhausted (exit 3)[/yellow]")


def _print_divergence(d: dict) -> None:
    out.print(Text(f"DIVERGES at step {d['step']}: {d['classification']}", "red"))
    out.print(Text(f"  call: {d['call']['op']} {d['call']['args']}"))
    for name, diff in d["differences"].items():
        out.print(Text(f"  {name}: model {diff['model']}, kafka {diff['kafka']}"))
    out.print(Text("  Kafka's records:" + ("".join(f"\n    {r}" for r in d["kafka_records"]) or " none")))
    if d["kafka_response"]:
        out.print(Text(f"  Kafka's response: {d['kafka_response']}"))
    out.print(Text(f"  trace: {d['trace']} (replay, show)"))


def _conform_cluster(spec_name, on_cluster, scenario, list_scenarios, version, metadata_log, topic, workdir, out,
                     start_timeout, as_json) -> None:
    """Trace validation (issue 40): with --cluster, start a real 3-node KRaft cluster from Kafka's jars on
    127.0.0.1, run a scenario of admin calls and faults, stop the cluster, and check that its metadata log
    is a behaviour of the kraft model's controller projection; with --metadata-log, check a log you bring."""
    if spec_name != "kraft":
        raise BadInput(f"trace validation checks the kraft model, not {spec_name!r}")
    from harness.cluster import scenarios
    from harness.kafka import default_version

    if list_scenarios:
        listed = scenarios.describe_scenarios()
        if as_json:
            print(json.dumps(listed, indent=1))
        else:
            for s in listed:
                print(f"{s['name']}: {s['summary']}" + ("" if s["nightly_only"] else " [make test]"))
                for step in s["steps"]:
                    print(f"  - {step}")
        return
    if on_cluster == bool(metadata_log):
        raise BadInput("give --cluster (run a scenario) or --metadata-log PATH (validate a log), one of them")
    version = version or default_version()
    from harness.cluster import run
    from harness.cluster.scenarios import scenario as named
    if on_cluster:
        plan = named(scenario)
        folder = Path(workdir or f"clusters/{plan.name}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}")
        say = (lambda line: None) if as_json else (lambda line: print(line, file=sys.stderr, flush=True))
        result = run.run_scenario(plan, version, folder, say, start_timeout)
    else:
        verdict, trace = run.validate_log(Path(metadata_log), version, Path(out), topic=topic)
        result = run.tracevalidate.verdict_json(verdict, trace)
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        for line in run.tracevalidate.verdict_lines(result):
            print(line)
    sys.exit(0 if result["explained"] else 1)




