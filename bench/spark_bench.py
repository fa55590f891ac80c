"""The Spark engine against single-process BFS (`make bench`; about 25 minutes).

Cases: kraft `ci`, and replication `fence` (the largest kraft/replication preset one process exhausts in
about two minutes). Modes: BFS; Spark `local[2]`; Spark on a standalone cluster of two workers of one core
each (`harness.standalone`, started once). Every run is a whole `python -m harness check` process, its
wall time taken from outside (Python and the JVM's start, the session, the search, the traces), in the
order BFS, local[2], standalone, repeated REPEATS times: each repeat gives a paired ratio to the BFS run
beside it. Reported: the median wall time per mode, the median of the paired ratios, and whether the
results (distinct states per depth, successors per rule) are BFS's. Also the cost of a level with nothing
in it (a tiny model, every level on Spark). Results go to stdout and bench/results/spark.json.
No assertions: these are measurements.

`spark_bench.py kraft/ci` runs the cases named only, and replaces just those in spark.json (each case
records its date).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runner import Figure, recorded, report, save

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.standalone import StandaloneCluster  # noqa: E402

CASES = [("kraft", "ci"), ("replication", "fence")]
REPEATS = 3


def check(spec: str, preset: str, work: Path, *extra: str) -> dict:
    args = [sys.executable, "-m", "harness", "check", spec, "--config", preset, "--json", "--quiet",
            "--out", str(work / "traces"), *extra]
    started = time.monotonic()
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    wall = round(time.monotonic() - started, 2)
    if p.returncode not in (0, 1):
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1], "wall": wall}
    r = json.loads(p.stdout)
    s = r["stats"]
    keep = ("distinct", "depth", "tasks", "spark_jobs", "spark_levels", "driver_levels", "session_start_seconds",
            "waited_for_session_seconds", "warm_up_seconds", "spark_level_seconds", "task_seconds")
    return {"wall": wall, **{k: s[k] for k in keep if k in s},
            "signature": [s["states_per_depth"], {k: v["generated"] for k, v in r["coverage"].items()}]}


def figures(results: dict | None, cases: list[str] | None = None) -> dict[str, Figure]:
    """Each case's median whole-process wall time per mode (of `cases`, default all), from spark.json's form."""
    out = {}
    for case, modes in (results or {}).items():
        if case == "empty levels" or cases is not None and case not in cases:
            continue
        for mode, m in modes.items():
            if isinstance(m, dict) and m.get("median_wall"):
                distinct = next((r["distinct"] for r in m["runs"] if "distinct" in r), None)
                out[f"{case} {mode}"] = Figure(m["median_wall"], "s", False, distinct)
    return out


def main(only: list[str]) -> None:
    cases = [c for c in CASES if not only or "/".join(c) in only]
    unknown = set(only) - {"/".join(c) for c in CASES}
    if unknown:
        sys.exit(f"unknown case {sorted(unknown)[0]}; cases: {', '.join('/'.join(c) for c in CASES)}")
    before = figures(recorded("spark.json"))
    results: dict = (recorded("spark.json") or {}) if only else {}
    with tempfile.TemporaryDirectory() as tmp, StandaloneCluster(Path(tmp) / "cluster", workers=2) as cluster:
        work = Path(tmp)
        modes = {"bfs": [], "local[2]": ["--engine", "spark", "--master", "local[2]"],
                 "standalone 2x1": ["--engine", "spark", "--master", cluster.url]}
        for spec, preset in cases:
            runs: dict[str, list] = {m: [] for m in modes}
            for k in range(REPEATS):
                for mode, extra in modes.items():
                    ck = ["--checkpoint", str(work / f"ck-{spec}-{preset}-{mode}-{k}")] if extra else []
                    runs[mode].append(check(spec, preset, work, *extra, *ck))
            case: dict = {"date": time.strftime("%Y-%m-%d")}
            bfs = runs["bfs"]
            for mode, rs in runs.items():
                ok = [r for r in rs if "error" not in r]
                case[mode] = {"median_wall": statistics.median(r["wall"] for r in ok) if ok else None,
                              "walls": [r.get("wall") for r in rs], "runs": rs}
                if mode != "bfs":
                    ratios = [r["wall"] / b["wall"] for r, b in zip(rs, bfs) if "error" not in r and "error" not in b]
                    case[mode]["paired_ratio_median"] = round(statistics.median(ratios), 3) if ratios else None
                    case[mode]["paired_ratios"] = [round(x, 3) for x in ratios]
                    case[mode]["same_results_as_bfs"] = all(
                        r.get("signature") == b.get("signature") for r, b in zip(rs, bfs))
            results[f"{spec}/{preset}"] = case
            for mode in modes:
                c = case[mode]
                print(f"{spec}/{preset:8s} {mode:15s} median {c['median_wall']} s  walls {c['walls']}"
                      + (f"  ratio {c['paired_ratio_median']} {c['paired_ratios']}  same {c['same_results_as_bfs']}"
                         if mode != "bfs" else ""))
        report(before, figures(results, ["/".join(c) for c in cases]))
        if only:
            save(results, "spark.json")
            return
        empty = check("example", "tiny", work, "--engine", "spark", "--master", "local[2]", "--every-level-on-spark",
                      "--checkpoint", str(work / "ck-empty"))
        if "error" not in empty and empty.get("spark_levels"):
            empty["seconds_per_level"] = round(empty["spark_level_seconds"] / empty["spark_levels"], 3)
        results["empty levels"] = empty
        print(f"empty levels: {json.dumps({k: v for k, v in empty.items() if k != 'signature'})}")
    save(results, "spark.json")  # with each run's signature (states per depth, successors per rule)


if __name__ == "__main__":
    main(sys.argv[1:])
