"""Hypothesis engine throughput on the correct models' `large` configs (`make bench`).

Reports model steps/s, walks/s and distinct walks/s (Hypothesis re-runs copies of earlier runs with
a part duplicated, so some walks repeat). Each case runs REPEATS times in a fresh process; the run
with the median time is reported. Results go to stdout and bench/results/hypothesis.json.
No assertions: these are measurements.
"""

from __future__ import annotations

import json

from runner import Figure, measure, recorded, report, run_child, save

CASES = [("kraft", "large"), ("kip642", "large")]
EXAMPLES = 300  # runs of the ci profile (100 steps each)
REPEATS = 3

CHILD = r"""
import json, sys
from harness.registry import load_spec
from harness.engines import hypothesis as hyp
spec_name, preset, examples = json.loads(sys.argv[1])
spec = load_spec(spec_name)
r = hyp.explore(spec.bind(spec.config(preset)), profile="ci", examples=examples)
s = r.stats
print(json.dumps({k: s[k] for k in ("seconds", "walks", "distinct_walks", "steps")} | {"outcome": r.outcome}))
"""


def run_case(spec: str, preset: str) -> dict:
    return run_child(CHILD, json.dumps([spec, preset, EXAMPLES]))


def figures(results: list | None) -> dict[str, Figure]:
    """Each case's steps/s, from hypothesis.json's form."""
    return {r["case"]: Figure(r["steps_per_second"], "steps/s", True, r["steps"])
            for r in results or [] if "error" not in r}


def main() -> None:
    from harness.registry import load_spec, spec_names

    before = figures(recorded("hypothesis.json"))
    results = []
    print(f"{'case':16s} {'runs':>5s} {'sec':>7s} {'steps/s':>8s} {'walks/s':>8s} {'distinct/s':>10s}  outcome")
    for spec, preset in CASES:
        if spec not in spec_names() or preset not in load_spec(spec).presets:
            continue
        name = f"{spec}/{preset}"
        r, runs = measure(lambda: run_case(spec, preset), REPEATS)
        if "error" in r:
            results.append({"case": name, **r})
            print(f"{name:16s} error: {r['error']}")
            continue
        times = sorted(x["seconds"] for x in runs)
        rates = {k: round(r[k] / r["seconds"]) for k in ("steps", "walks", "distinct_walks")}
        results.append({"case": name, "runs": EXAMPLES, **r, **{f"{k}_per_second": v for k, v in rates.items()},
                        "seconds_range": [times[0], times[-1]]})
        print(f"{name:16s} {EXAMPLES:>5} {r['seconds']:>7.2f} {rates['steps']:>8,} {rates['walks']:>8,} "
              f"{rates['distinct_walks']:>10,}  {r['outcome']}")
    report(before, figures(results))
    save(results, "hypothesis.json")


if __name__ == "__main__":
    main()
