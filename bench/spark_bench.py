"""Spark engine against single-process BFS on kraft `ci` (`make bench`).

Each run is a fresh process. Reported: BFS wall time; Spark wall time with local[2] and local[1], the
session start (it runs in a background thread while the driver expands the small levels) and the time
the driver waited for it, the ratio (Spark without that wait) / BFS, and the fixed cost of one Spark
level (a tiny model run with every level forced through Spark, per level). Results go to stdout and
bench/results/spark.json. No assertions: these are measurements.
"""

from __future__ import annotations

import json
import tempfile

from runner import run_child, save

CHILD = r"""
import json, sys, time
from harness.registry import load_spec
from harness.engines import bfs, spark
engine, spec_name, preset, master, forced = json.loads(sys.argv[1])
spec = load_spec(spec_name)
model = spec.bind(spec.config(preset))
t = time.monotonic()
if engine == "bfs":
    r = bfs.explore(model)
else:
    r = spark.explore(model, master=master, partitions=2, checkpoint=sys.argv[2], spark_levels_only=forced)
s = r.stats
out = {"distinct": s["distinct"], "seconds": round(time.monotonic() - t, 2)}
for k in ("session_start_seconds", "waited_for_session_seconds", "seconds_without_session_wait",
          "spark_level_seconds", "spark_levels", "driver_levels"):
    if k in s:
        out[k] = s[k]
print(json.dumps(out))
"""


def run(engine: str, spec: str, preset: str, master: str | None = None, forced: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as ck:
        return run_child(CHILD, json.dumps([engine, spec, preset, master, forced]), ck)


def main() -> None:
    results = {"bfs": run("bfs", "kraft", "ci"),
               "local[2]": run("spark", "kraft", "ci", "local[2]"),
               "local[1]": run("spark", "kraft", "ci", "local[1]"),
               "empty levels": run("spark", "example", "tiny", "local[2]", forced=True)}
    bfs = results["bfs"].get("seconds")
    for name in ("local[2]", "local[1]"):
        r = results[name]
        if "error" not in r and bfs:
            r["ratio_to_bfs"] = round(r["seconds_without_session_wait"] / bfs, 2)
    e = results["empty levels"]
    if "error" not in e and e.get("spark_levels"):
        e["seconds_per_level"] = round(e["spark_level_seconds"] / e["spark_levels"], 3)
    two, one = results["local[2]"], results["local[1]"]
    if "error" not in two and "error" not in one:
        results["scaling_local1_over_local2"] = round(one["spark_level_seconds"] / two["spark_level_seconds"], 2)
    for name, r in results.items():
        print(f"{name:28s} {json.dumps(r)}")
    save(results, "spark.json")


if __name__ == "__main__":
    main()
