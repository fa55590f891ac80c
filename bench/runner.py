"""Shared by the benchmarks: run one measurement in a fresh Python process (so peak RSS and caches are
its own), pick the median of repeated runs, and compare each case with its previous recorded figure."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Callable, NamedTuple


def run_child(source: str, *args: str) -> dict:
    """Run `python -c source args...`; its last stdout line is a JSON object. On failure, the last
    stderr line as {"error": ...}."""
    p = subprocess.run([sys.executable, "-c", source, *args], capture_output=True, text=True)
    if p.returncode:
        return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def median_run(runs: list[dict]) -> dict:
    """The run with the median wall time (runs carry "seconds")."""
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def measure(run: Callable[[], dict], repeats: int) -> tuple[dict, list[dict]]:
    """`run()` `repeats` times: (the median run, all runs), or (the first failure, []) if one failed."""
    runs = [run() for _ in range(repeats)]
    failed = [r for r in runs if "error" in r]
    return (failed[0], []) if failed else (median_run(runs), runs)


def environment() -> dict:
    """What the numbers were measured on. The interpreter's build moves them: pyenv's default CPython
    runs these searches about 12% slower than Debian's (docs/ARCHITECTURE.md, "The interpreter"); so does
    the compiled build of the hot modules ("A compiled hot path": how many of them load compiled)."""
    from harness import compiled

    return {"python": platform.python_version(), "interpreter": os.path.realpath(sys.executable),
            "compiler": platform.python_compiler(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "compiled_modules": len(compiled.sorted_out(active.folder).loaded) if (active := compiled.active()) else 0}


RESULTS = Path(__file__).parent / "results"

# A case whose time per unit of work grew by more than this since its recorded figure is flagged. The VM's
# speed drifts by 10-25% between runs (docs/PERFORMANCE.md), so a flag says "measure in pairs", not "regressed".
SLOWER_BY = 0.05


class Figure(NamedTuple):
    """A case's headline figure: a rate (higher is faster: states/s) or a time (lower is faster: seconds),
    and the work it measured (distinct states, steps): another amount of work is another search."""

    value: float
    unit: str
    higher_is_faster: bool
    work: int | None


def recorded(filename: str) -> list | dict | None:
    """The previous results in bench/results/`filename` (read before `save` replaces them), or None."""
    path = RESULTS / filename
    return json.loads(path.read_text()) if path.exists() else None


def compare(before: dict[str, Figure], now: dict[str, Figure], slower_by: float = SLOWER_BY) -> list[str]:
    """One line per case measured now, against its recorded figure: SLOWER when its time per unit of
    work grew by more than `slower_by`."""
    lines = []
    for case, fig in now.items():
        old = before.get(case)
        shown = f"{case}: {fig.value:,} {fig.unit}"
        if old is None or not old.value or not fig.value:
            lines.append(f"{shown}, no recorded figure to compare with")
            continue
        # time per unit of work, now against then
        growth = (old.value / fig.value if fig.higher_is_faster else fig.value / old.value) - 1
        if growth > slower_by:
            verdict = f"SLOWER by {growth:.1%} (more than {slower_by:.0%})"
        elif growth > 0:
            verdict = f"slower by {growth:.1%}, within {slower_by:.0%}"
        else:
            verdict = f"faster by {-growth:.1%}"
        line = f"{shown} against {old.value:,} recorded: {verdict}"
        if old.work != fig.work and None not in (old.work, fig.work):
            line += f" (not the same search: {old.work:,} -> {fig.work:,})"
        lines.append(line)
    return lines


def report(before: dict[str, Figure], now: dict[str, Figure]) -> None:
    then = (recorded("environment.json") or {}).get("compiled_modules", 0)
    here = environment()["compiled_modules"]
    print("against the recorded figures (bench/results/)"
          + (f", measured with {then} compiled modules, now {here}: not the same build" if then != here else "") + ":")
    for line in compare(before, now):
        print("  " + line)


def save(results: list | dict, filename: str) -> None:
    """Write the results as JSON to bench/results/`filename`, and the environment to environment.json."""
    out = RESULTS
    out.mkdir(exist_ok=True)
    (out / filename).write_text(json.dumps(results, indent=1) + "\n")
    (out / "environment.json").write_text(json.dumps(environment(), indent=1) + "\n")
