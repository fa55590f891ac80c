"""BFS throughput and memory on named benchmark configs (`make bench`).

Each case runs in a fresh process so that peak RSS is its own: bytes/state = (peak RSS after the
search - RSS before it) / distinct states, i.e. visited set + frontier + interpreter growth; the visited
set's own bytes per state (numpy arrays, fingerprint mode) are reported beside it.
Results go to stdout and bench/results/bfs.json. No assertions: these are measurements.
"""

from __future__ import annotations

import json

from runner import Figure, measure, recorded, report, run_child, save

CASES = [
    # (spec, preset, settings, variants, mutation)
    ("example", "ci", ["brokers=5", "max_records=7"], [], None),
    ("kraft", "ci", [], [], None),
    ("kip642", "ci", [], [], None),
    # one fence, no other perturbation (BrokerCount 3, InitReplicationFactor 3, MinISR 2, InitIsrSize 2)
    ("replication", "fence", [], [], None),
]
# This VM's speed drifts by 10-25% between back-to-back runs, so each case runs REPEATS times (each in
# a fresh process) and the run with the median time is reported, with the range of states/s.
REPEATS = 3

CHILD = r"""
import json, resource, sys, time
from harness.registry import load_spec
from harness.engines import bfs
spec_name, preset, settings, variants, mutation, exact = json.loads(sys.argv[1])
spec = load_spec(spec_name)
model = spec.bind(spec.config(preset, settings, variants, mutation))
model.init_states()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
r = bfs.explore(model, exact=exact)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
s = r.stats
print(json.dumps({"distinct": s["distinct"], "generated": s["generated"], "depth": s["depth"], "seconds": s["seconds"],
                  "states_per_second": s["states_per_second"], "bytes_per_state": round((after - before) / s["distinct"]),
                  "visited_bytes_per_state": s.get("visited_bytes_per_state"),
                  "complete": r.complete, "violations": [v.outcome.property for v in r.violations]}))
"""


def run_case(spec, preset, settings, variants, mutation, exact=False):
    return run_child(CHILD, json.dumps([spec, preset, settings, variants, mutation, exact]))


def figures(results: list | None) -> dict[str, Figure]:
    """Each case's states/s (per mode), from bfs.json's form."""
    return {f"{r['case']} {'exact' if r['exact'] else 'fp64'}": Figure(r["states_per_second"], "states/s", True,
                                                                        r["distinct"])
            for r in results or [] if "error" not in r}


def main() -> None:
    from harness.registry import spec_names

    before = figures(recorded("bfs.json"))
    results = []
    print(f"{'case':45s} {'mode':6s} {'distinct':>10s} {'gen':>11s} {'depth':>5s} {'sec':>7s} {'states/s':>9s} {'B/state':>8s} {'visited':>8s} range")
    for spec, preset, settings, variants, mutation in CASES:
        if spec not in spec_names():
            continue
        for exact in (False, True):
            name = f"{spec}/{preset} {' '.join(settings + variants)}".strip()
            r, runs = measure(lambda: run_case(spec, preset, settings, variants, mutation, exact), REPEATS)
            if "error" in r:
                results.append({"case": name, "exact": exact, **r})
                print(f"{name:45s} error: {r['error']}")
                continue
            rates = [x["states_per_second"] for x in runs]
            results.append({"case": name, "exact": exact, **r, "states_per_second_range": [min(rates), max(rates)]})
            print(f"{name:45s} {'exact' if exact else 'fp64':6s} {r['distinct']:>10,} {r['generated']:>11,} {r['depth']:>5} "
                  f"{r['seconds']:>7.2f} {r['states_per_second']:>9,} {r['bytes_per_state']:>8,} "
                  f"{r['visited_bytes_per_state'] or '':>8} {min(rates):,}-{max(rates):,}")
    report(before, figures(results))
    save(results, "bfs.json")


if __name__ == "__main__":
    main()
