"""Shared by the benchmarks: run one measurement in a fresh Python process (so peak RSS and caches are
its own) and pick the median of repeated runs."""

from __future__ import annotations

import json
import subprocess
import sys


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
