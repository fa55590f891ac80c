"""The nightly exploration job (run by `make nightly`): what the CI gate cannot afford.

For every model: Spark exhaustion of its `nightly` config (resumable: fixed checkpoint directories,
so a killed run continues where it stopped), the Hypothesis `nightly` profile (at `large` when the
model has it), liveness with the graph engine at `tiny`, and for models with a symbolic form a Z3
proof and BMC to depth 16 at the `nightly` config; then the project's fuzzers (malformed traces,
command lines, damaged checkpoints) at their long profile. Writes reports/<UTC timestamp>/:
summary.json, report.html (states per depth, per-rule coverage, time per engine, as inline SVG),
every counterexample as ITF, and a comparison with the previous report. Exit 1 on any violation
of a default (unmutated) configuration. NIGHTLY_QUICK=1 runs a reduced version (tests).
"""

from __future__ import annotations

import html
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

from harness import interrupt  # noqa: E402
from harness.engines import graph, hypothesis as hyp, spark  # noqa: E402
from harness.checkpoint import CheckpointRefused  # noqa: E402
from harness.registry import load_spec, spec_names  # noqa: E402
from harness.check import write_counterexamples  # noqa: E402
from harness.corpus import REGRESSIONS, liveness_verdicts  # noqa: E402

QUICK = os.environ.get("NIGHTLY_QUICK") == "1"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def save_violations(model, result, folder: Path) -> list[str]:
    write_counterexamples(model, result, folder, None)
    return [str(Path(v.trace_path).relative_to(folder)) for v in result.violations]


def run_model(name: str, folder: Path) -> dict:
    spec = load_spec(name)
    out: dict = {}
    preset = "tiny" if QUICK or "nightly" not in spec.presets else "nightly"
    model = spec.bind(spec.config(preset))
    t = time.monotonic()
    ckpt = ROOT / "checkpoints" / f"nightly-{name}-{preset}"
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
                    "coverage": {k: v["generated"] for k, v in r.coverage.items()},
                    "traces": save_violations(model, r, folder)}
    log(f"  {name}/{preset} spark: {r.outcome}, {r.stats['distinct']:,} states, {out['spark']['seconds']} s")
    hp = "large" if "large" in spec.presets and not QUICK else "ci"
    model = spec.bind(spec.config(hp))
    t = time.monotonic()
    # A new seed each night (the UTC date, recorded), so nights explore different walks; a report names its
    # seed, and `check --engine hypothesis --profile nightly --seed S` repeats that night's run.
    seed = int(datetime.now(timezone.utc).strftime("%Y%m%d"))
    r = hyp.explore(model, profile="ci" if QUICK else "nightly", examples=50 if QUICK else None, seed=seed)
    out["hypothesis"] = {"preset": hp, "outcome": r.outcome, "runs": r.stats["max_examples"], "seed": r.stats["seed"],
                         "seconds": round(time.monotonic() - t, 1), "traces": save_violations(model, r, folder)}
    log(f"  {name}/{hp} hypothesis: {r.outcome}, {out['hypothesis']['seconds']} s")
    model = spec.bind(spec.config("tiny"))
    t = time.monotonic()
    r, _ = graph.explore(model)
    verdicts = liveness_verdicts(spec, "tiny", r.stats["liveness"])
    out["liveness"] = {"preset": "tiny", "properties": r.stats["liveness"], "verdicts": verdicts,
                       "states": r.stats["states"], "seconds": round(time.monotonic() - t, 1),
                       "traces": save_violations(model, r, folder)}
    log(f"  {name}/tiny liveness: " + ", ".join(f"{p} {v}" for p, v in verdicts.items()))
    if spec.symbolic is not None:
        from harness.engines import z3bmc, z3prove

        model = spec.bind(spec.config(preset))
        if getattr(spec.symbolic, "unsupported", lambda cfg: None)(model.config):
            preset = "ci"  # the nightly config is a variant the relation does not model (zk: kafka)
            model = spec.bind(spec.config(preset))
        t = time.monotonic()
        proof = z3prove.prove(model, max_brokers=4 if QUICK else 8)
        out["z3"] = {"preset": preset, "proved": proof["proved"], "ctis": len(proof["ctis"])}
        if proof["proved"]:
            # Inductive properties that hold initially hold in every reachable state: BMC of them could
            # find nothing (and at zk's ci, depth 12 alone takes more than 3 minutes).
            out["z3"].update(outcome="ok", bmc_depth=None, traces=[])
        else:
            r = z3bmc.check(model, depth=6 if QUICK else 16)
            out["z3"].update(outcome=r.outcome, bmc_depth=r.stats["depth"], traces=save_violations(model, r, folder))
        out["z3"]["seconds"] = round(time.monotonic() - t, 1)
        bmc = "BMC not needed" if proof["proved"] else f"BMC to depth {out['z3']['bmc_depth']}: {out['z3']['outcome']}"
        log(f"  {name}/{preset} z3: {'proved' if proof['proved'] else 'NOT INDUCTIVE'}, {bmc}, {out['z3']['seconds']} s")
    return out


FUZZERS = {"traces": "tests/test_fuzz_traces.py", "command lines": "tests/test_fuzz_cli.py",
           "checkpoints": "tests/test_checkpoint.py"}


def run_fuzzers(folder: Path) -> dict:
    """The project's own fuzzers at their long profile (the short one runs in `make test`): malformed
    traces, command lines and damaged checkpoints must give one line and exit 2, or a correct result."""
    out = {}
    for name, path in FUZZERS.items():
        report = folder / f"fuzz-{name.replace(' ', '-')}.json"
        t = time.monotonic()
        env = dict(os.environ, FUZZ_PROFILE="long", FUZZ_REPORT=str(report))
        p = subprocess.run([sys.executable, "-m", "pytest", path, "-n", "0", "-q", "-p", "no:cacheprovider"],
                           cwd=ROOT, env=env, capture_output=True, text=True)
        counts = json.loads(report.read_text()) if report.exists() else {}
        out[name] = {"passed": p.returncode == 0, "counts": counts, "seconds": round(time.monotonic() - t, 1),
                     "tail": p.stdout.strip().splitlines()[-1:] if p.returncode else []}
        log(f"  fuzz {name}: {'ok' if p.returncode == 0 else 'FAILED'}, {counts}, {out[name]['seconds']} s")
    return out


def svg_bars(values: list[int], width: int = 360, height: int = 80) -> str:
    if not values:
        return ""
    top = max(values) or 1
    w = width / len(values)
    bars = "".join(f'<rect x="{i * w:.1f}" y="{height - v / top * height:.1f}" width="{max(w - 1, 1):.1f}" '
                   f'height="{v / top * height:.1f}" fill="#4a7ab0"><title>{i}: {v:,}</title></rect>'
                   for i, v in enumerate(values))
    return f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">{bars}</svg>'


def write_html(folder: Path, summary: dict) -> None:
    parts = [f"<html><head><meta charset='utf-8'><title>nightly {summary['started']}</title></head><body>",
             f"<h1>Nightly exploration, {html.escape(summary['started'])}</h1>",
             f"<p>Outcome: <b>{summary['outcome']}</b>. Quick: {summary['quick']}.</p>"]
    for name, m in summary["models"].items():
        sp = m["spark"]
        parts.append(f"<h2>{html.escape(name)}</h2><p>Spark at <code>{sp['preset']}</code>: {sp['outcome']}, "
                     f"{sp['distinct']:,} states, depth {sp['depth']}, {sp['seconds']} s</p>")
        parts.append("<p>States per depth</p>" + svg_bars(sp["states_per_depth"]))
        parts.append("<p>Per-rule coverage (generated)</p><table>" + "".join(
            f"<tr><td>{html.escape(k)}</td><td>{v:,}</td><td>{svg_bars([v], 200, 12)}</td></tr>"
            for k, v in sp["coverage"].items()) + "</table>")
        times = {"spark": sp["seconds"], "hypothesis": m["hypothesis"]["seconds"], "liveness": m["liveness"]["seconds"]}
        if "z3" in m:
            times["z3"] = m["z3"]["seconds"]
            bmc = ("no BMC needed" if m["z3"]["bmc_depth"] is None
                   else f"BMC to depth {m['z3']['bmc_depth']}: {m['z3']['outcome']}")
            parts.append(f"<p>Z3 at <code>{m['z3']['preset']}</code>: "
                         f"{'proved inductive' if m['z3']['proved'] else 'NOT inductive'}; {bmc}</p>")
        parts.append("<p>Time per engine (s): " + ", ".join(f"{k} {v}" for k, v in times.items()) + "</p>"
                     + svg_bars(list(times.values()), 150, 40))
        parts.append("<p>Liveness at <code>tiny</code>: " + html.escape(", ".join(
            f"{p}: {v}" for p, v in m["liveness"].get("verdicts", {}).items())) + "</p>")
    parts.append("<h2>Fuzzers</h2><table><tr><th>input</th><th>result</th><th>counts</th><th>s</th></tr>" + "".join(
        f"<tr><td>{html.escape(n)}</td><td>{'passed' if f['passed'] else 'FAILED'}</td>"
        f"<td>{html.escape(json.dumps(f['counts']))}</td><td>{f['seconds']}</td></tr>"
        for n, f in summary.get("fuzz", {}).items()) + "</table>")
    if summary.get("comparison"):
        parts.append("<h2>Compared with the previous report</h2><ul>" + "".join(
            f"<li>{html.escape(c)}</li>" for c in summary["comparison"]) + "</ul>")
    parts.append("</body></html>")
    (folder / "report.html").write_text("\n".join(parts))


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


def main() -> int:
    reports = ROOT / "reports"
    previous_dirs = sorted(p for p in reports.glob("*") if (p / "summary.json").exists()) if reports.exists() else []
    previous = json.loads((previous_dirs[-1] / "summary.json").read_text()) if previous_dirs else None
    started = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    folder = reports / started
    folder.mkdir(parents=True)
    summary = {"started": started, "quick": QUICK, "models": {}}
    for name in spec_names():
        log(f"[{name}]")
        summary["models"][name] = run_model(name, folder)
    log("[fuzzers]" + (" skipped: their short profile is part of make test" if QUICK else ""))
    summary["fuzz"] = {} if QUICK else run_fuzzers(folder)
    new_violations = [t for m in summary["models"].values() for eng in ("spark", "hypothesis", "z3")
                      for t in m.get(eng, {}).get("traces", [])]
    new_violations += [f"{n}: Z3 properties not inductive" for n, m in summary["models"].items()
                       if not m.get("z3", {}).get("proved", True)]
    new_violations += [f"fuzzer {n} failed" for n, f in summary["fuzz"].items() if not f["passed"]]
    new_violations += [f"{n}/tiny liveness {p}: {v}" for n, m in summary["models"].items()
                       for p, v in m["liveness"]["verdicts"].items() if v in REGRESSIONS]
    summary["outcome"] = "violation" if new_violations else "ok"
    summary["comparison"] = compare(previous, summary)
    (folder / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    write_html(folder, summary)
    log(f"report: {folder}/report.html ({summary['outcome']})")
    return 1 if new_violations else 0


if __name__ == "__main__":
    interrupt.install()
    try:
        sys.exit(main())
    except interrupt.Interrupted as exc:
        log(f"nightly interrupted by {exc.name}: no report")
        sys.exit(exc.exit_code)
