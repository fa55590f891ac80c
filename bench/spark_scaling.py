"""Does a second Spark worker make a search faster? (issue 42; not part of `make bench`: about half an hour.)

One standalone cluster on this machine (`harness.standalone`), its workers of one core each: the same
search with one worker and with two, alternately (1, 2, 2, 1, ... : PAIRS pairs in one sitting), each a whole
`python -m harness check --engine spark` process timed from outside, with a fresh checkpoint directory. A
worker is added before a two-worker run and killed after it, so the cluster has exactly the workers a run
names. Reported per run: wall time, the search's seconds, levels run by Spark's tasks and by the driver,
the bytes the tasks exchanged per level (their largest level and the total), the largest resident set of a
PySpark Python process (sampled each second) and the checkpoint's size on disk at the end; per pair the
ratio of the two walls. Results go to stdout and bench/results/spark_scaling.json.
The case must have at least 10^7 states to say anything about scaling (smaller ones are the driver's).

    python bench/spark_scaling.py [SPEC PRESET] [--pairs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from runner import environment, save

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.standalone import StandaloneCluster, wait_for  # noqa: E402


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def python_task_rss() -> int:
    """The largest resident set of a PySpark Python process (a task's, or the daemon forking them), in bytes."""
    largest = 0
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"python" not in Path(argv[0].decode()).name.encode() or not any(a.startswith(b"pyspark.") for a in argv):
                continue  # not `python -m pyspark.daemon` (the JVMs name pyspark's jars on their class path)
            rss = next(line for line in (proc / "status").read_text().splitlines() if line.startswith("VmRSS:"))
            largest = max(largest, int(rss.split()[1]) * 1024)
        except (OSError, StopIteration, ValueError):
            continue
    return largest


def run(spec: str, preset: str, master: str, work: Path, name: str) -> dict:
    ck = work / f"ck-{name}"
    args = [sys.executable, "-m", "harness", "check", spec, "--config", preset, "--engine", "spark",
            "--master", master, "--checkpoint", str(ck), "--json", "--quiet", "--out", str(work / "traces")]
    started = time.monotonic()
    child = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:  # once a second: cheap beside a search of minutes
        while child.poll() is None:
            peak[0] = max(peak[0], python_task_rss())
            time.sleep(1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = child.communicate()
    sampler.join()
    p = subprocess.CompletedProcess(args, child.returncode, out, err)
    wall = round(time.monotonic() - started, 2)
    if p.returncode not in (0, 1):
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1], "wall": wall}
    s = json.loads(p.stdout)["stats"]
    per_level = [sent for _, sent in s.get("exchanged_bytes_per_level", [])]
    return {"wall": wall, "seconds": s["seconds"], "distinct": s["distinct"], "depth": s["depth"], "tasks": s["tasks"],
            "spark_levels": s["spark_levels"], "driver_levels": s["driver_levels"],
            "session_start_seconds": s.get("session_start_seconds"),
            "exchanged_bytes_total": sum(per_level), "exchanged_bytes_max_level": max(per_level, default=0),
            "exchanged_bytes_per_level": s.get("exchanged_bytes_per_level", []),
            "checkpoint_bytes": folder_bytes(ck), "python_task_peak_rss_bytes": peak[0],
            "states_per_depth": s["states_per_depth"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", nargs="*", default=["kip435", "scale"], metavar="SPEC PRESET")
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    spec, preset = args.case
    runs: dict[str, list] = {"1 worker": [], "2 workers": []}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp, \
            StandaloneCluster(Path(tmp) / "cluster", workers=1, memory="4g") as cluster:
        work = Path(tmp)
        order = [w for k in range(args.pairs) for w in ((1, 2) if k % 2 == 0 else (2, 1))]
        for i, workers in enumerate(order):
            extra = None
            if workers == 2:
                extra = cluster.add_worker()
                wait_for(lambda: cluster.alive_workers() == 2, 120, "the second worker never registered")
            r = run(spec, preset, cluster.url, work, f"{i}-{workers}")
            if extra is not None:
                cluster.kill_worker(extra)
                wait_for(lambda: cluster.alive_workers() == 1, 120, "the second worker was never seen gone")
            runs["1 worker" if workers == 1 else "2 workers"].append(r)
            print(f"{spec}/{preset} {workers} worker(s): " + json.dumps(
                {k: v for k, v in r.items() if k not in ("exchanged_bytes_per_level", "states_per_depth")}), flush=True)
    ones, twos = runs["1 worker"], runs["2 workers"]
    ratios = [round(b["wall"] / a["wall"], 3) for a, b in zip(ones, twos) if "error" not in a and "error" not in b]
    same = len({json.dumps(r.get("states_per_depth")) for r in ones + twos}) == 1
    result = {"case": f"{spec}/{preset}", "date": time.strftime("%Y-%m-%d"), "environment": environment(),
              "order": order, "runs": runs, "paired_ratios_2_over_1": ratios,
              "paired_ratio_median": statistics.median(ratios) if ratios else None, "same_counts": same,
              "median_wall": {k: statistics.median(r["wall"] for r in v if "error" not in r) for k, v in runs.items()
                              if any("error" not in r for r in v)}}
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}))
    save(result, "spark_scaling.json")


if __name__ == "__main__":
    main()
