"""The CI gate: what a protocol change must pass before it merges (run by `make ci`).

Steps (each deterministic): pytest; BFS exhaustion of each model's `ci` config for its default
variants (must find nothing); mutation adequacy (every declared mutation caught at its config; a
survivor names the rule whose loss went unnoticed); replay of every trace in counterexamples/;
the Hypothesis `ci` profile on each model; a comparison with ci/baseline.json (distinct states
and per-rule coverage per model and config) printed as a table, where a rule that stops firing
fails the gate (a search stopped by a violation is not compared: it saw only part of the space); for
models with a symbolic form, a Z3 proof that their Z3 properties are inductive, BMC of the ci config, and
BMC of every mutation that breaks the induction (at its config); liveness with the graph engine at each
model's liveness preset, against the failures the spec declares. A violation the spec declares expected
(`Spec.declared_failure`, the decision `check --json`'s `expected` and the nightly share) is printed, not a
failure; any other ends with the commands that replay, show and explore its trace; for models that
declare a conformance, `conform` at a small config against the newest Kafka resolved.
`--write-baseline` rewrites the baseline (`make ci-baseline`).

Pytest runs first, on both cores, without the tests marked `gate` (work a later step repeats); then every
other step runs as jobs of one step for one model, two processes at a time, longest first. The gate
writes `junit.xml` (pytest) and `timings.json` (seconds per step and model) into its output folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.corpus import (REGRESSIONS, all_cases, liveness_preset, liveness_verdicts, protocol_changes,  # noqa: E402
                            run_case)
from harness.engines import bfs  # noqa: E402
from harness.errors import BadInput  # noqa: E402
from harness.engines import hypothesis as hyp  # noqa: E402
from harness.registry import load_spec, spec_names  # noqa: E402
from harness.replay import replay  # noqa: E402
from harness.check import expectation, trace_commands, write_counterexamples  # noqa: E402
from harness.trace import read_trace  # noqa: E402

BASELINE = ROOT / "ci" / "baseline.json"
console = Console(stderr=True, highlight=False, soft_wrap=True)


CHANGES: dict[str, str] = {}  # spec -> mutation made the default (--protocol-change, for testing the gate)


def exhaust_ci(names: list[str], failures: list[str], out: Path) -> dict:
    measured = {}
    for name in names:
        spec = load_spec(name)
        if "ci" not in spec.presets:
            continue
        model = spec.bind(spec.config("ci", mutation=CHANGES.get(name)))
        t = time.monotonic()
        r = bfs.explore(model)
        # A search stopped by a violation saw only part of the space: its figures are no state space to
        # compare with the baseline (compare_baseline says so instead of listing every rule as changed).
        measured[f"{name}/ci"] = {"distinct": r.stats["distinct"], "depth": r.stats["depth"],
                                  "coverage": {k: v["distinct"] for k, v in r.coverage.items()},
                                  **({"stopped_by": r.stopped_by} if r.stopped_by == "violation" else {})}
        console.print(f"  {name}/ci: {r.stats['distinct']:,} states, depth {r.stats['depth']}, "
                      f"{time.monotonic() - t:.1f} s, {r.outcome}")
        write_counterexamples(model, r, out, None)
        report_violations(model, r, f"{name}/ci", failures)
        if not r.complete and r.stopped_by != "violation":
            failures.append(f"{name}/ci was not exhausted ({r.stopped_by})")
    return measured


def report_violations(model, result, label: str, failures: list[str]) -> None:
    """A violation the spec declares expected (`Spec.declared_failure`, as `check` and the nightly decide) is
    printed; any other is a failure, with the commands that replay, show and explore its trace."""
    for v in result.violations:
        what = f"{label} violates {v.outcome.property or v.outcome.kind} ({result.engine}, {v.depth} steps)"
        if declared := expectation(model, v):
            console.print(f"  {what}: expected violation, declared at config {declared['preset']} "
                          f"({declared['source']})", markup=False)
        else:
            failures.append(failure_with_commands(what, v.trace_path))


def failure_with_commands(what: str, trace: str) -> str:
    return f"{what}: {trace}" + "".join(f"\n      {command}" for command in trace_commands(trace))


def mutation_adequacy(names: list[str], failures: list[str]) -> None:
    for case in all_cases(names):
        model, r = run_case(case)
        if case.mutation == "none":
            ok = case.found(model, r)
            what = "expected violation" if ok else "expected violation NOT found"
        else:
            ok = bool(r.violations)
            rule = case.why.split(":")[0]
            what = f"caught by {r.violations[0].outcome.property} in {r.violations[0].depth} steps" if ok else \
                f"SURVIVED: nothing noticed the loss of the check in rule {rule}"
        console.print(f"  {case.label}: {what}")
        if not ok:
            failures.append(f"{case.label}: {what}")


def liveness_step(names: list[str], failures: list[str]) -> None:
    """Every liveness property at the spec's liveness preset (`harness.corpus.liveness_preset`) with the graph
    engine, against the spec's declared expected failures: a new failure, or an expected one that no longer
    reproduces, fails the gate."""
    from harness.engines import graph

    for name in names:
        spec = load_spec(name)
        preset = liveness_preset(spec)
        if not spec.liveness or preset not in spec.presets:
            continue
        model = spec.bind(spec.config(preset, mutation=CHANGES.get(name)))
        t = time.monotonic()
        r, _ = graph.explore(model, check_safety=False)
        verdicts = liveness_verdicts(spec, preset, r.stats["liveness"], model.config)
        console.print(f"  {name}/{preset}: " + ", ".join(f"{p} {v}" for p, v in verdicts.items()) +
                      f" ({r.stats['states']:,} states, {time.monotonic() - t:.1f} s)")
        failures += [f"{name}/{preset} liveness {p}: {v}" for p, v in verdicts.items() if v in REGRESSIONS]


def replay_corpus(failures: list[str]) -> None:
    paths = sorted((ROOT / "counterexamples").glob("*.itf.json"))
    for path in paths:
        try:
            report = replay(read_trace(path))
        except BadInput as exc:  # a trace the current spec refuses (its fields or config changed): a failure, listed
            failures.append(f"{path.name} no longer reads: {exc}")
            continue
        if not report.ok:
            failures.append(f"{path.name} no longer reproduces: {report.message}")
    console.print(f"  {len(paths)} traces replayed")


# Runs of the `ci` profile per model in the gate (the profile's own budget is 1,500): the step looks for deep
# bugs in the correct models, and 1,000 runs keep `make ci` inside ten minutes on two cores (about 40 s less).
GATE_HYPOTHESIS_RUNS = 1000


def hypothesis_ci(names: list[str], failures: list[str], out: Path) -> None:
    for name in names:
        spec = load_spec(name)
        preset = "large" if "large" in spec.presets else "ci"
        model = spec.bind(spec.config(preset, mutation=CHANGES.get(name)))
        r = hyp.explore(model, profile="ci", examples=GATE_HYPOTHESIS_RUNS)
        console.print(f"  {name}/{preset}: {r.stats['max_examples']} runs x {r.stats['max_steps']} steps, "
                      f"{r.stats['seconds']:.1f} s, {r.outcome}")
        write_counterexamples(model, r, out, None)
        report_violations(model, r, f"{name}/{preset}", failures)


def z3_checks(names: list[str], failures: list[str], out: Path) -> None:
    """Specs with a symbolic form: the ci model's Z3 properties are inductive and BMC finds nothing;
    every mutation that breaks the induction (a CTI) is found by BMC with a replayable trace."""
    from harness.engines import z3bmc, z3prove

    for name in names:
        spec = load_spec(name)
        if spec.symbolic is None or "ci" not in spec.presets:
            continue
        if hasattr(spec.symbolic, "CI_PLAN"):
            z3_plan(spec, failures, out)
            continue
        model = spec.bind(spec.config("ci", mutation=CHANGES.get(name)))
        proof = z3prove.prove(model, max_brokers=8)
        if proof["proved"]:
            # Inductive properties that hold initially hold in every reachable state: BMC of the same
            # properties could find nothing, so it runs only to give a failed proof a trace.
            console.print(f"  {name}/ci: prove PROVED ({proof['checks']} checks, {proof['seconds']} s)")
        else:
            bmc = z3bmc.check(model, depth=8)
            write_counterexamples(model, bmc, out, None)
            console.print(f"  {name}/ci: prove NOT INDUCTIVE ({proof['checks']} checks, {proof['seconds']} s); "
                          f"BMC to depth 8: {'VIOLATION' if bmc.violations else 'no violation'} "
                          f"({bmc.stats['seconds']} s)")
            failures.append(f"{name}/ci: Z3 properties not inductive: "
                            + "; ".join(f"{c['rule']} breaks {c['property']} ({c['reachability']})" for c in proof["ctis"]))
            report_violations(model, bmc, f"{name}/ci", failures)
        for mutation in spec.mutations:
            preset = spec.preset_for(mutation)
            mutated = spec.bind(spec.config(preset, mutation=mutation))
            if getattr(spec.symbolic, "unsupported", lambda cfg: None)(mutated.config):
                continue  # a variant or a config the relation does not model (zk: kafka, a zombie)
            if z3prove.prove(mutated, max_brokers=3)["proved"]:
                continue  # the mutation leaves the symbolic relation's properties intact (a data-plane rule)
            r = z3bmc.check(mutated, depth=8)
            if r.violations:
                v = r.violations[0]
                console.print(f"  {name}/{preset} {mutation}: CTI, and BMC finds {v.outcome.property} in {v.depth} steps "
                              f"({r.stats['seconds']} s)")
            else:
                failures.append(f"{name}/{preset} {mutation}: prove reports a CTI but BMC to depth 8 finds no violation")


def z3_plan(spec, failures: list[str], out: Path) -> None:
    """A relation too large for the generic step (replication's message-level one) says what fits: the
    properties whose proof closes at a config."""
    from harness.engines import z3prove

    plan, name = spec.symbolic.CI_PLAN, spec.name
    preset, properties = plan["prove"]
    proof = z3prove.prove(spec.bind(spec.config(preset, list(plan.get("settings", [])), mutation=CHANGES.get(name))),
                          properties, max_brokers=8, reach_depth=0)
    console.print(f"  {name}/{preset}: prove {', '.join(properties)}: "
                  f"{'PROVED' if proof['proved'] else 'NOT INDUCTIVE'} ({proof['checks']} checks, {proof['seconds']} s)")
    if not proof["proved"]:
        failures.append(f"{name}/{preset}: Z3 properties not inductive: "
                        + "; ".join(f"{c['rule']} {c['result']} for {c['property']}" for c in proof["failed"]))
    # plan["bmc"], the mutation BMC finds at BFS's length, takes minutes: the nightly runs it (ci/nightly.py)


def compare_baseline(measured: dict, failures: list[str]) -> None:
    if not BASELINE.exists():
        console.print("  no baseline yet (make ci-baseline)")
        return
    base = json.loads(BASELINE.read_text())
    table = Table("model/config", "what", "baseline", "now", "change", box=None, padding=(0, 2))
    stopped = [key for key, now in measured.items() if now.get("stopped_by") == "violation"]
    for key in stopped:
        console.print(f"  {key}: the search stopped at a violation after {measured[key]['distinct']:,} states: "
                      "not compared with the baseline")
    for key, now in measured.items():
        if key in stopped:
            continue
        old = base.get(key)
        if old is None:
            table.add_row(key, "distinct states", "-", f"{now['distinct']:,}", "new")
            continue
        if old["distinct"] != now["distinct"]:
            delta = now["distinct"] - old["distinct"]
            table.add_row(key, "distinct states", f"{old['distinct']:,}", f"{now['distinct']:,}",
                          f"{delta:+,} ({delta / old['distinct']:+.1%})")
        for rule in sorted(set(old["coverage"]) | set(now["coverage"])):
            a, b = old["coverage"].get(rule), now["coverage"].get(rule)
            if a != b:
                table.add_row(key, f"rule {rule}", "-" if a is None else f"{a:,}", "-" if b is None else f"{b:,}",
                              "STOPPED FIRING" if a and not b else ("new rule" if a is None else f"{(b or 0) - a:+,}"))
                if a and not b:
                    failures.append(f"{key}: rule {rule} stopped firing (baseline {a:,} states)")
    if table.row_count:
        # as wide as its longest row: rich fits a table to the console (80 columns in a CI log) by cutting cells
        width = Measurement.get(console, console.options.update(max_width=10**4), table).maximum
        Console(file=console.file, width=max(console.width, width), highlight=False).print(table)
    elif len(stopped) < len(measured):
        console.print("  state space identical to the baseline")


# The config `conform` walks in the gate, per model with a conformance (seconds; the nightly walks `ci`).
GATE_CONFORM_PRESET = {"kraft": "tiny-fence"}


def conformance_step(names: list[str], failures: list[str], out: Path) -> None:
    """Models with a conformance: every transition of a small config against the newest Kafka resolved. An
    undeclared divergence fails the gate; declared ones (Kafka behaviour not reproduced yet) are listed."""
    from harness import conform
    from harness.conform.kafka import KafkaController
    from harness.kafka import default_version

    for name in names:
        spec = load_spec(name)
        if spec.conformance is None or name not in GATE_CONFORM_PRESET:
            continue
        version = default_version()
        model = spec.bind(spec.config(GATE_CONFORM_PRESET[name], (), spec.conformance.variants_for(version)))
        r = conform.walk_bfs(model, KafkaController(version, **spec.conformance.setup(model.config)))
        conform.write_divergences(model, r, out)
        declared = ", ".join(f"{k} {v:,}" for k, v in r.declared.items()) or "none"
        console.print(f"  {name}/{GATE_CONFORM_PRESET[name]} vs Kafka {r.kafka_version}: {r.transitions:,} transitions "
                      f"compared, {r.seconds:.1f} s, {r.outcome}; declared: {declared}")
        if r.divergence is not None:
            failures.append(f"{name}/{GATE_CONFORM_PRESET[name]} diverges from Kafka {r.kafka_version}: "
                            f"{r.divergence.classification} ({r.divergence.trace_path})")


STEPS = ["pytest", "BFS exhaustion of the ci configs", "mutation adequacy", "replay of counterexamples/",
         "Hypothesis ci profile", "comparison with ci/baseline.json", "Z3: inductive proof and bounded model checking",
         "liveness at the liveness preset (graph engine)", "conformance with Kafka's controller (conform)"]
# After pytest (both cores), the gate runs its steps as jobs of one step for one model, two processes at a
# time, longest first (2 cores). These are rough seconds on this 2-core machine, used only for that order;
# a job not listed comes after the listed ones. The baseline comparison runs in the same job as the
# exhaustion it compares.
EXPECTED_SECONDS = {("2,6", "zk"): 75, ("5", "replication"): 50, ("2,6", "kip642"): 47, ("5", "kraft"): 40,
                    ("5", "zk"): 35, ("7", "zk"): 45, ("5", "kip642"): 30, ("7", "kraft"): 30, ("5", "kip435"): 25,
                    ("2,6", "kraft"): 20, ("7", "kip435"): 15, ("7", "kip642"): 3, ("5", "example"): 10,
                    ("3,8", "zk"): 15, ("3,8", "kraft"): 15, ("3,8", "kip435"): 5, ("3,8", "replication"): 4,
                    ("3,8", "kip642"): 3, ("9", "kraft"): 10, ("7", "replication"): 50}


def jobs(names: list[str]) -> list[tuple[str, str | None]]:
    """(steps, model) pairs, longest expected first; the replay of counterexamples/ is one job. Mutation
    adequacy and liveness, a few seconds each, share a job: each job is a process start (1-2 s)."""
    listed = [(steps, name) for steps in ("2,6", "3,8", "5", "7") for name in names]
    listed += [("9", name) for name in names if name in GATE_CONFORM_PRESET]
    listed.sort(key=lambda job: -EXPECTED_SECONDS.get(job, 5))
    return listed + [("4", None)]


def run_jobs(listed: list[tuple[str, str | None]], args, out: Path) -> list[dict]:
    """Run the jobs in two processes at a time, the next one starting as soon as either ends (waiting on the
    first started left a core idle behind a long job); each writes a JSON report (its output, failures,
    timings) and its output to a log beside it. Reports come back in the order the jobs were listed."""
    pending, running, done = list(enumerate(listed)), [], {}
    reports_dir = out / "jobs"
    reports_dir.mkdir(parents=True, exist_ok=True)
    try:
        while pending or running:
            while pending and len(running) < JOB_PROCESSES:
                number, (steps, name) = pending.pop(0)
                report = reports_dir / f"{steps.replace(',', '-')}-{name or 'all'}.json"
                log = report.with_suffix(".log")
                report.unlink(missing_ok=True)
                cmd = [sys.executable, str(Path(__file__)), "--skip-pytest", "--only", steps, "--out", args.out,
                       "--report", str(report)] + (["--spec", name] if name else [])
                for change in args.protocol_change:
                    cmd += ["--protocol-change", change]
                with open(log, "w") as fh:
                    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, text=True)
                running.append((number, proc, steps, name, report, log))
            finished = [job for job in running if job[1].poll() is not None]
            if not finished:
                time.sleep(0.1)
                continue
            for job in finished:
                running.remove(job)
                number, proc, steps, name, report, log = job
                output = log.read_text(errors="replace")
                if report.exists():
                    done[number] = {**json.loads(report.read_text()), "output": output}
                else:
                    done[number] = {"steps": steps, "spec": name, "output": output, "timings": {},
                                    "failures": [f"gate job {steps} for {name or 'every model'} exited with "
                                                 f"{proc.returncode} without a report"]}
    finally:
        for _, proc, *_ in running:
            proc.kill()
    return [done[number] for number in sorted(done)]


JOB_PROCESSES = 2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="steps (numbers for --only):\n" + "\n".join(
                                     f"  {number}  {title}" for number, title in enumerate(STEPS, 1)) +
                                 "\n\nExit 0: passed; 1: a step failed (each failure listed last, a violation with the "
                                 "commands\nthat replay, show and explore its trace); 2: bad input; 130/143: interrupted.")
    ap.add_argument("--write-baseline", action="store_true",
                    help="rewrite ci/baseline.json from the ci exhaustions (step 2) and stop; refused on a violation")
    ap.add_argument("--skip-pytest", action="store_true", help="leave out step 1 (pytest)")
    ap.add_argument("--out", default="traces/gate",
                    help="folder (under the repository) for the traces of violations, junit.xml, timings.json and "
                         "the jobs' reports (default: %(default)s)")
    ap.add_argument("--only", default=None, metavar="N[,N...]",
                    help="run only these steps, in this process (numbers below); without it pytest runs first and "
                         "steps 2-8 as jobs, two processes at a time")
    ap.add_argument("--spec", action="append", default=[], metavar="NAME",
                    help="only these models (repeatable; default: every model)")
    ap.add_argument("--protocol-change", action="append", default=[], metavar="SPEC:MUTATION",
                    help="simulate a protocol change: make MUTATION the default behaviour of SPEC")
    ap.add_argument("--report", default=None, metavar="FILE",
                    help="write this run's failures and timings as JSON to FILE instead of printing a verdict "
                         "(how the whole gate runs its jobs)")
    args = ap.parse_args()
    try:
        CHANGES.update(protocol_changes(args.protocol_change))
    except BadInput as exc:
        console.print(f"error: {exc}", markup=False)
        return 2
    names = spec_names()
    unknown = [n for n in args.spec if n not in names]
    if unknown:
        console.print(f"error: unknown spec {unknown[0]!r} (known: {', '.join(names)})", markup=False)
        return 2
    names = [n for n in names if n in args.spec] if args.spec else names
    out = ROOT / args.out
    failures: list[str] = []
    started = time.monotonic()
    if args.write_baseline:
        measured = exhaust_ci(names, failures, out)
        if failures:  # a violation stops a search: its figures are no baseline
            console.print("[red]baseline not written[/red]")
            for f in failures:
                console.print(f"  - {f}", markup=False)
            return 1
        if args.spec and BASELINE.exists():  # only these models' entries change
            measured = {**json.loads(BASELINE.read_text()), **measured}
        BASELINE.write_text(json.dumps(measured, indent=1, sort_keys=True) + "\n")
        console.print(f"wrote {BASELINE}")
        return 0
    measured: dict = {}

    def pytest_step():
        if args.skip_pytest:
            return
        out.mkdir(parents=True, exist_ok=True)
        # Tests marked `gate` do work a later step repeats (the ci exhaustions, the kip435 proof, the replays).
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "not gate and not cluster and not nightly", f"--junitxml={out / 'junit.xml'}"]
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            failures.append("pytest failed")

    def exhaust():
        measured.update(exhaust_ci(names, failures, out))

    functions = [pytest_step, exhaust,
                 lambda: mutation_adequacy(names, failures),
                 lambda: replay_corpus(failures),
                 lambda: hypothesis_ci(names, failures, out),
                 lambda: compare_baseline(measured, failures),
                 lambda: z3_checks(names, failures, out),
                 lambda: liveness_step(names, failures),
                 lambda: conformance_step(names, failures, out)]
    only = {int(x) for x in args.only.split(",")} if args.only else None
    timings: dict[str, float] = {}
    for number, (title, fn) in enumerate(zip(STEPS, functions), 1):
        if number not in (only or {1}):  # the whole gate runs pytest here and the other steps as jobs
            continue
        t = time.monotonic()
        console.print(f"[bold]{title}[/bold]")
        fn()
        timings[title] = round(time.monotonic() - t, 1)
        console.print(f"  ({timings[title]:.1f} s)")
    if only is None:  # the whole gate: after pytest, every other step as jobs on both cores
        t = time.monotonic()
        reports = run_jobs(jobs(names), args, out)
        by_step: dict[str, list[dict]] = {}
        for report in reports:
            by_step.setdefault(report["steps"], []).append(report)
        for steps in sorted(by_step, key=lambda k: int(k.split(",")[0])):
            for report in sorted(by_step[steps], key=lambda r: r["spec"] or ""):
                console.print(report["output"], end="", markup=False, highlight=False)
                failures += report["failures"]
                for title, seconds in report["timings"].items():
                    if title != "total":
                        timings[f"{title} / {report['spec'] or 'every model'}"] = seconds
        timings["steps 2-8 on two processes"] = round(time.monotonic() - t, 1)
    timings["total"] = round(time.monotonic() - started, 1)
    if args.report:  # a job of the whole gate: its parent prints the failures
        Path(args.report).write_text(json.dumps({"steps": args.only, "spec": args.spec[0] if args.spec else None,
                                                 "failures": failures, "timings": timings}))
        return 1 if failures else 0
    if out.exists() or only is None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    console.print(f"gate: {timings['total']:.0f} s")
    if failures:
        console.print("[red]GATE FAILED[/red]")
        for f in failures:
            console.print(f"  - {f}", markup=False)
        return 1
    console.print("[green]gate passed[/green]")
    return 0


if __name__ == "__main__":
    from harness import interrupt, streams

    streams.install()  # a closed stdout (its --help) exits 141; a closed stderr (its log) is dropped
    interrupt.install()  # Ctrl-C stops a Z3 query or a search at once, and the gate never passes
    try:
        with streams.delivering_result():
            sys.exit(main())
    except interrupt.Interrupted as exc:
        print(f"gate interrupted by {exc.name}: not passed", file=sys.stderr)
        sys.exit(exc.exit_code)
