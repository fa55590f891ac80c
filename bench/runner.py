"""Shared by the benchmarks: run one measurement in a fresh Python process (so peak RSS and caches are
its own) and pick the median of repeated runs."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Callable


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
    runs these searches about 12% slower than Debian's (docs/ARCHITECTURE.md, "The interpreter")."""
    return {"python": platform.python_version(), "interpreter": os.path.realpath(sys.executable),
            "compiler": platform.python_compiler(), "machine": platform.machine(), "cpus": os.cpu_count()}


def save(results: list | dict, filename: str) -> None:
    """Write the results as JSON to bench/results/`filename`, and the environment to environment.json."""
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / filename).write_text(json.dumps(results, indent=1) + "\n")
    (out / "environment.json").write_text(json.dumps(environment(), indent=1) + "\n")
