"""The nightly exploration job (run by `make nightly`): what the CI gate cannot afford.

For every model: Spark exhaustion of its `nightly` config (resumable: fixed checkpoint directories,
so a killed run continues where it stopped), the Hypothesis `nightly` profile (at `large` when the
model has it), liveness with the graph engine at its `liveness` preset (`tiny` if it has none), and for
models with a symbolic form a Z3 proof and BMC to depth 16 at the `nightly` config; `conform kraft` at `ci` against
every Kafka version kafka/versions.txt lists (Kafka's own controller code); then the project's fuzzers
(malformed traces, command lines, damaged checkpoints, edited checkpoint manifests) at their long profile. Writes
reports/<UTC timestamp>/: summary.json, report.html (states per depth, per-rule coverage, time per engine, as inline SVG),
every counterexample as ITF, and a comparison with the previous report. Exit 1 on any violation
of a default (unmutated) configuration that the spec does not declare expected (`Spec.declared_failure`), on
a liveness failure the spec does not declare and on a declared one that no longer reproduces; the last lines
on stderr list each failure with its trace and the commands that replay, show and explore it. NIGHTLY_QUICK=1 (or --quick) runs a reduced version (tests).

The Hypothesis seed is the UTC date (YYYYMMDD), printed and recorded: `--seed S` repeats a night's walks,
`--date YYYY-MM-DD` runs as of another night (tests). The report (ci/report.py, ci/templates/) starts
with a status matrix, links every trace with its replay and show commands, and draws trends from every
earlier summary.json under the reports folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import interrupt, streams  # noqa: E402
from harness.engines import graph, hypothesis as hyp, spark  # noqa: E402
from harness.checkpoint import CheckpointRefused  # noqa: E402
from harness.errors import BadInput  # noqa: E402
from harness.files import check_writable_dir, write_atomic  # noqa: E402
from harness.registry import load_spec, spec_names  # noqa: E402
from harness.check import expectation, trace_commands, write_counterexamples  # noqa: E402
from harness.corpus import REGRESSIONS, liveness_preset, liveness_verdicts, protocol_changes  # noqa: E402
from harness.model import config_to_dict  # noqa: E402

import report  # noqa: E402  (ci/report.py)

QUICK = os.environ.get("NIGHTLY_QUICK") == "1"
CHANGES: dict[str, str] = {}  # spec -> mutation made the default (--protocol-change, for testing the job)
CHECKPOINTS = ROOT / "checkpoints"  # where each model's Spark run keeps its checkpoint (--checkpoints)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def save_violations(model, result, folder: Path, seed: int | None = None) -> list[dict]:
    """Each violation's trace, written into the night's folder; one the spec declares expected
    (`Spec.declared_failure`, as `check` and the gate decide) carries its declaration and fails nothing."""
    write_counterexamples(model, result, folder, seed)
    return [{"property": v.outcome.property or v.outcome.kind, "file": str(Path(v.trace_path).relative_to(folder)),
             **({"expected": declared} if (declared := expectation(model, v)) else {})} for v in result.violations]


def run_model(name: str, folder: Path, seed: int) -> dict:
    spec = load_spec(name)
    out: dict = {"invariants": list(spec.invariants)}
    preset = "tiny" if QUICK or "nightly" not in spec.presets else "nightly"
    model = spec.bind(spec.config(preset, mutation=CHANGES.get(name)))
    out["configs"] = {preset: config_to_dict(model.config)}
    t = time.monotonic()
    ckpt = CHECKPOINTS / f"nightly-{name}-{preset}"
    master = os.environ.get("NIGHTLY_MASTER", "local[*]")
    try:
        r = spark.explore(model, checkpoint=str(ckpt), resume=(ckpt / "state.json").exists(), master=master)
    except CheckpointRefused as exc:
        if not (ckpt / "state.json").exists():
            raise
        # The nightly's own checkpoint, refused (damaged, or written by other code): start afresh, say so.
        out["checkpoint_refused"] = str(exc)
        log(f"  {name}/{preset} spark: checkpoint refused ({exc}); starting afresh")
        shutil.rmtree(ckpt)
        r = spark.explore(model, checkpoint=str(ckpt), master=master)
    if r.stopped_by in (None, "violation"):
        shutil.rmtree(ckpt, ignore_errors=True)  # finished: only an interrupted run resumes
    out["spark"] = {"preset": preset, "outcome": r.outcome, "distinct": r.stats["distinct"], "depth": r.stats["depth"],
                    "states_per_depth": r.stats["states_per_depth"], "seconds": round(time.monotonic() - t, 1),
                    "coverage": {k: v["generated"] for k, v in r.coverage.items()}, "complete": r.complete,
                    "violations": save_violations(model, r, folder)}
    log(f"  {name}/{preset} spark: {r.outcome}, {r.stats['distinct']:,} states, {out['spark']['seconds']} s")
    hp = "large" if "large" in spec.presets and not QUICK else "ci"
    model = spec.bind(spec.config(hp, mutation=CHANGES.get(name)))
    out["configs"][hp] = config_to_dict(model.config)
    t = time.monotonic()
    # A new seed each night (the date, recorded), so nights explore different walks; a report names its
    # seed, and `check --engine hypothesis --profile nightly --seed S` repeats that night's run. The quick
    # run uses the nightly profile too (fewer runs), so that its seed is used.
    r = hyp.explore(model, profile="nightly", examples=50 if QUICK else None, steps=40 if QUICK else None, seed=seed)
    out["hypothesis"] = {"preset": hp, "outcome": r.outcome, "runs": r.stats["max_examples"], "seed": r.stats["seed"],
                         "seconds": round(time.monotonic() - t, 1), "violations": save_violations(model, r, folder, seed)}
    log(f"  {name}/{hp} hypothesis: {r.outcome}, {out['hypothesis']['seconds']} s")
    lp = liveness_preset(spec)
    model = spec.bind(spec.config(lp, mutation=CHANGES.get(name)))
    out["configs"][lp] = config_to_dict(model.config)
    t = time.monotonic()
    r, _ = graph.explore(model, check_safety=False)
    verdicts = liveness_verdicts(spec, lp, r.stats["liveness"], model.config)
    # each declared failure with the reason the spec gives, which cites its source (a Kafka JIRA issue or KIP)
    declared = {p: why for (preset, p), why in spec.expected_liveness.items() if preset == lp}
    out["liveness"] = {"preset": lp, "properties": r.stats["liveness"], "verdicts": verdicts, "declared": declared,
                       "states": r.stats["states"], "transitions": r.stats["transitions"],
                       "seconds": round(time.monotonic() - t, 1), "violations": save_violations(model, r, folder)}
    log(f"  {name}/{lp} liveness: " + ", ".join(f"{p} {v}" for p, v in verdicts.items()))
    if spec.symbolic is not None:
        from harness.engines import z3bmc, z3prove

        # The nightly config where the relation models it, else the gate's: ci (tiny, the quick run's, may be a
        # reading that is unsafe by design, and a nightly config a variant the relation does not model).
        model = spec.bind(spec.config("nightly", mutation=CHANGES.get(name))) if preset == "nightly" else None
        properties = None
        if hasattr(spec.symbolic, "CI_PLAN"):  # a relation too large for every property (replication): what fits
            preset, properties = spec.symbolic.CI_PLAN["prove"]
            model = spec.bind(spec.config(preset, spec.symbolic.CI_PLAN.get("settings", []), mutation=CHANGES.get(name)))
        elif model is None or getattr(spec.symbolic, "unsupported", lambda cfg: None)(model.config):
            preset = "ci"
            model = spec.bind(spec.config(preset, mutation=CHANGES.get(name)))
        t = time.monotonic()
        proof = z3prove.prove(model, properties, max_brokers=4 if QUICK else 8, reach_depth=0 if properties else 6)
        out["z3"] = {"preset": preset, "proved": proof["proved"], "ctis": len(proof["ctis"]),
                     "properties": proof["properties"]}
        if proof["proved"]:
            # Inductive properties that hold initially hold in every reachable state: BMC of them could
            # find nothing (and at zk's ci, depth 12 alone takes more than 3 minutes).
            out["z3"].update(outcome="ok", bmc_depth=None, violations=[])
        elif properties:  # BMC of this relation to depth 16 takes hours: the gate runs its mutation's at p1
            out["z3"].update(outcome="not inductive", bmc_depth=None, violations=[])
        else:
            r = z3bmc.check(model, depth=6 if QUICK else 16)
            out["z3"].update(outcome=r.outcome, bmc_depth=r.stats["depth"], violations=save_violations(model, r, folder))
        plan = getattr(spec.symbolic, "CI_PLAN", {}).get("bmc")
        if plan and not QUICK:  # BMC finds a mutation's trace at BFS's length (minutes: not in the gate)
            at, mutation, length = plan
            mutated = spec.bind(spec.config(at, mutation=mutation))
            r = z3bmc.check(mutated, depth=length, timeout_ms=600_000)
            found = r.violations[0].depth if r.violations else None
            out["z3"]["mutation_bmc"] = {"preset": at, "mutation": mutation, "bfs_steps": length, "bmc_steps": found,
                                         "seconds": r.stats["seconds"]}
            log(f"  {name}/{at} {mutation}: BMC finds {found or 'no'} steps, BFS {length}, {r.stats['seconds']} s")
        out["z3"]["seconds"] = round(time.monotonic() - t, 1)
        bmc = "BMC not needed" if proof["proved"] else f"BMC to depth {out['z3']['bmc_depth']}: {out['z3']['outcome']}"
        log(f"  {name}/{preset} z3: {'proved' if proof['proved'] else 'NOT INDUCTIVE'}, {bmc}, {out['z3']['seconds']} s")
    return out


FUZZERS = {"traces": "tests/test_fuzz_traces.py", "command lines": "tests/test_fuzz_cli.py",
           "checkpoints": "tests/test_checkpoint.py"}


def run_fuzzers(folder: Path) -> dict:
    """The project's own fuzzers at their long profile (the short one runs in `make test`): malformed
    traces, command lines, damaged checkpoints and edited checkpoint manifests must give one line and
    exit 2, or a correct result."""
    out = {}
    for name, path in FUZZERS.items():
        out[name] = run_fuzzer(name, path, folder)
        log(f"  fuzz {name}: {'ok' if out[name]['passed'] else 'FAILED'}, {out[name]['counts']}, {out[name]['seconds']} s")
    return out


def run_fuzzer(name: str, path: str, folder: Path, profile: str = "long", select: str | None = None) -> dict:
    """One fuzzer's test file at `profile` (`select`: only the tests pytest's -k selects), with the counts
    it writes to $FUZZ_REPORT."""
    report = folder / f"fuzz-{name.replace(' ', '-')}.json"
    t = time.monotonic()
    env = dict(os.environ, FUZZ_PROFILE=profile, FUZZ_REPORT=str(report))
    p = subprocess.run([sys.executable, "-m", "pytest", path, "-n", "0", "-q", "-p", "no:cacheprovider",
                        *(["-k", select] if select else [])], cwd=ROOT, env=env, capture_output=True, text=True)
    counts = json.loads(report.read_text()) if report.exists() else {}
    return {"passed": p.returncode == 0, "counts": counts, "seconds": round(time.monotonic() - t, 1),
            "tail": p.stdout.strip().splitlines()[-1:] if p.returncode else []}


def run_cluster_tests(folder: Path) -> dict:
    """The tests marked `cluster` (a real standalone Spark cluster with a worker killed mid-run, spark-submit's
    exit codes): a minute or more of JVMs, so they run here rather than in `make test`; then those marked
    `nightly` (long checks `make test` leaves out)."""
    t = time.monotonic()
    junit = folder / "cluster-junit.xml"
    p = subprocess.run([sys.executable, "-m", "pytest", "-m", "cluster", "-n", "0", "-q", "-p", "no:cacheprovider",
                        f"--junitxml={junit}", "tests/test_spark_cluster.py"], cwd=ROOT, capture_output=True, text=True)
    # and the long checks `make test` leaves to the night (marked `nightly`), on both cores
    q = subprocess.run([sys.executable, "-m", "pytest", "-m", "nightly", "-q", "-p", "no:cacheprovider",
                        f"--junitxml={folder / 'nightly-junit.xml'}", "tests/"], cwd=ROOT, capture_output=True, text=True)
    out = {"passed": p.returncode == 0 and q.returncode == 0, "seconds": round(time.monotonic() - t, 1),
           "tail": p.stdout.strip().splitlines()[-1:] + q.stdout.strip().splitlines()[-1:]}
    log(f"  Spark cluster tests: {'ok' if out['passed'] else 'FAILED'}, {out['tail']}, {out['seconds']} s")
    return out


def run_kraft_scenarios(folder: Path) -> dict:
    """Every `conform kraft --cluster` scenario (issue 40): a real 3-node KRaft cluster, its metadata log
    validated against the kraft model; each verdict with its records validated and times."""
    from harness.cluster.scenarios import SCENARIOS
    out = {}
    for name, plan in SCENARIOS.items():
        t = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "harness", "conform", "kraft", "--cluster", "--scenario", name,
                            "--workdir", str(folder / "kraft-cluster" / name), "--json"],
                           cwd=ROOT, capture_output=True, text=True)
        answer = json.loads(p.stdout) if p.returncode in (0, 1) else {}
        verdict = {0: "explained", 1: "unexplained"}.get(p.returncode, f"error (exit {p.returncode})")
        first = answer.get("first_unexplained_record") or {}
        detail = (f"at offset {first.get('offset')} {first.get('type')}: {plan.known or 'not a known divergence'}"
                  if p.returncode == 1 else (p.stderr.strip().splitlines() or [""])[-1] if p.returncode else "")
        start = answer.get("cluster_start_seconds")
        out[name] = {"verdict": verdict, "known": bool(plan.known), "records_validated": answer.get("records_validated"),
                     "steps_matched": answer.get("model_steps_matched"), "detail": detail,
                     "cluster_start_seconds": round(start, 1) if start else None,
                     "seconds": round(time.monotonic() - t, 1)}
        log(f"  {name}: {verdict} ({out[name]['seconds']} s) {detail}")


def run_conformance(folder: Path, versions: list[str] | None = None) -> dict:
    """`conform kraft` at `ci` (`tiny-fence` in the quick run, against the newest version only), ELR on and off,
    against every Kafka version kafka/versions.txt lists, one process per run (a JVM holds one version): transitions compared, divergences by
    class, wall time."""
    from harness.kafka import default_version, listed_versions

    out = {}
    preset = "tiny-fence" if QUICK else "ci"
    # The quick run (a test's, or a developer's) checks the version `make` resolves; the night every listed one
    # (`make nightly` resolves them all), and an unresolved one there fails the night.
    versions = versions or ([default_version()] if QUICK else listed_versions())
    for version, elr in [(v, elr) for v in versions for elr in ("true", "false")]:
        t = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "harness", "conform", "kraft", "--config", preset, "--kafka", version,
                        "--variant", f"elr={elr}", "--json", "--quiet", "--out", str(folder)], cwd=ROOT,
                           capture_output=True, text=True)
        run = f"{version} elr={elr}"
        seconds = round(time.monotonic() - t, 1)
        if p.returncode in (0, 1) and p.stdout.strip():
            data = json.loads(p.stdout)
            div = data["divergence"]
            out[run] = {"preset": preset, "exit": p.returncode, "outcome": data["outcome"], "seconds": seconds,
                        "variant": data["variant"], "stats": data["stats"], "kafka": data["kafka"],
                        "by_class": data["divergences_by_class"],
                        "declared": {k: v["count"] for k, v in data["declared"].items() if v["count"]},
                        "divergence": div and {"classification": div["classification"], "trace": div["trace"]},
                        "not_reproduced": (data["not_reproduced"] or {}).get("trace")}
        else:
            out[run] = {"preset": preset, "exit": p.returncode, "outcome": "not run", "seconds": seconds,
                        "error": (p.stderr.strip().splitlines() or [""])[-1]}
        c = out[run]
        log(f"  Kafka {run} at {preset}" + (f" (completion={c['variant']['completion']})" if "variant" in c else "")
            + f": {c['outcome']}, "
            f"{c.get('stats', {}).get('transitions_compared', 0):,} transitions compared, {seconds} s")
    return out


def compare(previous: dict | None, summary: dict) -> list[str]:
    if previous is None:
        return ["no previous report"]
    out = []
    for name, m in summary["models"].items():
        old = previous.get("models", {}).get(name)
        if old is None:
            out.append(f"{name}: new model")
            continue
        a, b = old["spark"]["distinct"], m["spark"]["distinct"]
        if a != b:
            out.append(f"{name}: distinct states {a:,} -> {b:,}")
        for eng in ("spark", "hypothesis"):
            if old[eng]["outcome"] != m[eng]["outcome"]:
                out.append(f"{name}: {eng} {old[eng]['outcome']} -> {m[eng]['outcome']}")
    return out or ["no change"]


def provenance(master: str) -> dict:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    def v(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "not installed"

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"commit": commit or "unknown (not a git checkout)", "harness": v("kafka-reassignment-harness"),
            "python": platform.python_version(), "pyspark": v("pyspark"), "hypothesis": v("hypothesis"),
            "z3-solver": v("z3-solver"), "networkx": v("networkx"), "spark master": master}


def failures_of(summary: dict) -> list[str]:
    """What fails the night: a safety violation the spec does not declare, a proof that no longer holds, a
    liveness failure the spec does not declare or a declared one that no longer reproduces, a failing fuzzer."""
    out = [violation_failure(n, eng, t) for n, m in summary["models"].items()
           for eng in ("spark", "hypothesis", "z3") for t in m.get(eng, {}).get("violations", []) if "expected" not in t]
    out += [f"{n}: Z3 properties not inductive" for n, m in summary["models"].items()
            if not m.get("z3", {}).get("proved", True)]
    out += [f"{n}: BMC of {b['mutation']} at {b['preset']} finds {b['bmc_steps'] or 'no'} steps, BFS {b['bfs_steps']}"
            for n, m in summary["models"].items() if (b := m.get("z3", {}).get("mutation_bmc"))
            and b["bmc_steps"] != b["bfs_steps"]]
    out += [liveness_failure(n, m, p, v) for n, m in summary["models"].items()
            for p, v in m["liveness"]["verdicts"].items() if v in REGRESSIONS]
    out += [f"fuzzer {n} failed" for n, f in summary["fuzz"].items() if not f["passed"]]
    out += [f"kraft vs Kafka {v}: {c['divergence']['classification']} ({c['divergence']['trace']})"
            for v, c in summary.get("conformance", {}).items() if c.get("divergence")]
    out += [f"kraft vs Kafka {v}: not run ({c['error']})" for v, c in summary.get("conformance", {}).items()
            if c["outcome"] == "not run"]
    if summary.get("cluster") and not summary["cluster"]["passed"]:
        out.append(f"Spark cluster tests failed: {summary['cluster']['tail']}")
    out += [f"KRaft cluster scenario {n}: {v['verdict']} {v['detail']}" for n, v in summary.get("kraft_cluster", {}).items()
            if v["verdict"] != "explained" and not (v["verdict"] == "unexplained" and v["known"])]
    return out


def violation_failure(name: str, engine: str, violation: dict) -> str:
    return f"{name} ({engine}) violates {violation['property']}: {violation['file']}"


def liveness_failure(name: str, m: dict, prop: str, verdict: str) -> str:
    return f"{name}/{m['liveness']['preset']} liveness {prop}: {verdict}"


def failure_traces(summary: dict) -> list[dict]:
    """Each failure (`failures_of`) as {"failure", "trace": the path of its trace or None, "commands": those
    that replay, show and explore it}: what stderr's summary, summary.md and report.html list."""
    folder = Path(summary["folder"])
    traces = {violation_failure(n, eng, t): t["file"] for n, m in summary["models"].items()
              for eng in ("spark", "hypothesis", "z3") for t in m.get(eng, {}).get("violations", [])}
    traces.update({liveness_failure(n, m, t["property"], m["liveness"]["verdicts"].get(t["property"], "")): t["file"]
                   for n, m in summary["models"].items() for t in m["liveness"]["violations"]})
    return [{"failure": f, "trace": str(folder / traces[f]) if f in traces else None,
             "commands": trace_commands(str(folder / traces[f])) if f in traces else []} for f in failures_of(summary)]


def main() -> int:
    global QUICK, CHECKPOINTS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--date", default=None, help="run as of this UTC date, YYYY-MM-DD (default: today)")
    ap.add_argument("--seed", type=int, default=None, help="Hypothesis seed (default: the date as YYYYMMDD)")
    ap.add_argument("--spec", action="append", default=[], metavar="NAME", help="only these models (repeatable)")
    ap.add_argument("--reports", default=str(ROOT / "reports"), help="the folder of every night's report")
    ap.add_argument("--checkpoints", default=str(CHECKPOINTS), metavar="DIR",
                    help="the folder of the Spark runs' checkpoints, kept while a run is unfinished")
    ap.add_argument("--quick", action="store_true", help="the reduced run (also NIGHTLY_QUICK=1)")
    ap.add_argument("--protocol-change", action="append", default=[], metavar="SPEC:MUTATION",
                    help="make MUTATION the default behaviour of SPEC (to test the job)")
    args = ap.parse_args()
    QUICK = QUICK or args.quick
    CHECKPOINTS = Path(args.checkpoints)
    try:
        CHANGES.update(protocol_changes(args.protocol_change))  # before any work: a typo makes no report folder
    except BadInput as exc:
        log(f"error: {exc}")
        return 2
    now = datetime.now(timezone.utc)
    try:
        day = datetime.strptime(args.date, "%Y-%m-%d").date() if args.date else now.date()
    except ValueError:
        log(f"error: --date {args.date!r} is not a date YYYY-MM-DD")
        return 2
    names = spec_names()
    unknown = [n for n in args.spec if n not in names]
    if unknown:
        log(f"error: unknown spec {unknown[0]!r} (known: {', '.join(names)})")
        return 2
    # Before any search: the night's results must have somewhere to go.
    check_writable_dir(args.reports, "--reports")
    check_writable_dir(args.checkpoints, "--checkpoints")
    seed = args.seed if args.seed is not None else int(day.strftime("%Y%m%d"))
    reports = Path(args.reports)
    started = f"{day.isoformat()}T{now.strftime('%H%M%SZ')}"
    history = report.load_history(reports, started) if reports.exists() else []
    previous = history[-1] if history else None
    folder = reports / started
    folder.mkdir(parents=True)
    master = os.environ.get("NIGHTLY_MASTER", "local[*]")
    log(f"nightly {day.isoformat()}: Hypothesis seed {seed}, report {folder}" +
        report.run_kind({"quick": QUICK, "protocol_changes": CHANGES}, "; "))
    summary = {"started": started, "date": day.isoformat(), "seed": seed, "quick": QUICK, "folder": str(folder),
               "protocol_changes": dict(CHANGES),
               "provenance": provenance(master), "models": {}, "configs": {}}
    for name in [n for n in names if n in args.spec] if args.spec else names:
        log(f"[{name}]")
        summary["models"][name] = run_model(name, folder, seed)
        summary["configs"][name] = summary["models"][name].pop("configs")
    log("[fuzzers]" + (" skipped: their short profile is part of make test" if QUICK else ""))
    summary["fuzz"] = {} if QUICK else run_fuzzers(folder)
    log("[conformance with Kafka]")
    summary["conformance"] = run_conformance(folder) if not args.spec or "kraft" in args.spec else {}
    log("[Spark cluster]" + (" skipped in the quick run" if QUICK else ""))
    summary["cluster"] = {} if QUICK else run_cluster_tests(folder)
    log("[KRaft cluster scenarios]" + (" skipped in the quick run" if QUICK else ""))
    summary["kraft_cluster"] = {} if QUICK else run_kraft_scenarios(folder)
    summary["failures"] = failures_of(summary)
    summary["outcome"] = "failed" if summary["failures"] else "ok"
    summary["failure_traces"] = failure_traces(summary)
    summary["comparison"] = compare(previous, summary)
    text = json.dumps(summary, indent=1, sort_keys=True)
    write_atomic(folder / "summary.json", lambda p: p.write_text(text))
    report.render(folder, summary, history)
    log(f"report: {folder}/report.html ({summary['outcome']}{report.run_kind(summary, ', ')})")
    for f in summary["failure_traces"]:
        log(f"  - {f['failure']}" + (f" ({f['trace']})" if f["trace"] else ""))
        for command in f["commands"]:
            log(f"      {command}")
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    streams.install()  # a closed stdout (its --help) exits 141; a closed stderr (its log) is dropped
    interrupt.install()
    try:
        with streams.delivering_result():
            sys.exit(main())
    except interrupt.Interrupted as exc:
        log(f"nightly interrupted by {exc.name}: no report")
        sys.exit(exc.exit_code)
    except BadInput as exc:  # e.g. a checkpoint another night is still using
        log(f"error: {exc}; no report")
        sys.exit(2)
