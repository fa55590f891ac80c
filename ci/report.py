"""The nightly report: a status matrix, per-model figures, provenance and trends, rendered from the night's
summary.json and every earlier one kept beside it (ci/templates/report.html.j2, jinja2), and a Markdown
summary for $GITHUB_STEP_SUMMARY. Trends come from the earlier summaries' data, never from their HTML."""

from __future__ import annotations

import json
import os
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from harness.errors import BadInput
from harness.files import reason, write_atomic

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATUSES = ("holds", "violated", "expected", "not checked")


def matrix(summary: dict) -> list[dict]:
    """One row per model and property: its status under each engine, with the trace that shows it."""
    rows = []
    for name, m in summary["models"].items():
        engines: dict[str, dict[str, dict]] = {}
        for engine in ("spark", "hypothesis"):
            run = m.get(engine)
            if not run:
                continue
            violated = {t["property"]: t["file"] for t in run.get("violations", [])}
            expected = {t["property"] for t in run.get("violations", []) if t.get("expected")}
            for prop in m["invariants"]:
                status = ("expected" if prop in expected else "violated") if prop in violated else \
                    ("holds" if run.get("complete", True) else "not checked")
                engines.setdefault(prop, {})[engine] = {"status": status, "trace": violated.get(prop)}
        live = m.get("liveness", {})
        traces = {t["property"]: t["file"] for t in live.get("violations", [])}
        for prop, verdict in live.get("verdicts", {}).items():
            status = {"holds": "holds", "expected failure": "expected"}.get(verdict, "violated")
            engines.setdefault(prop, {})["graph"] = {"status": status, "trace": traces.get(prop), "verdict": verdict}
        z3 = m.get("z3")
        if z3:
            for prop in z3.get("properties", []):
                engines.setdefault(prop, {})["z3"] = {"status": "holds" if z3["proved"] else "violated", "trace": None}
        for prop, cells in engines.items():
            rows.append({"model": name, "property": prop,
                         "cells": {e: cells.get(e, {"status": "not checked", "trace": None})
                                   for e in ("spark", "hypothesis", "graph", "z3")}})
    return rows


def trends(history: list[dict]) -> dict[str, list[dict]]:
    """Per model, one point per night (oldest first): distinct states, seconds, rules fired, runs."""
    out: dict[str, list[dict]] = {}
    for night in history:
        for name, m in night.get("models", {}).items():
            sp = m.get("spark", {})
            coverage = sp.get("coverage", {})
            out.setdefault(name, []).append({
                "night": night.get("date", night.get("started")), "distinct": sp.get("distinct", 0),
                "seconds": round(sum(m.get(e, {}).get("seconds", 0) for e in ("spark", "hypothesis", "liveness", "z3")), 1),
                "rules_fired": sum(1 for v in coverage.values() if v), "rules": len(coverage),
                "runs": m.get("hypothesis", {}).get("runs", 0)})
    return out


def polyline(values: list[float], width: int, height: int) -> str:
    """SVG polyline points for `values` scaled into a width x height box (y grows downwards)."""
    if not values:
        return ""
    top = max(values) or 1
    step = width / max(len(values) - 1, 1)
    return " ".join(f"{i * step:.1f},{height - v / top * height:.1f}" for i, v in enumerate(values))


def run_kind(summary: dict, separator: str = "") -> str:
    """What kind of night it was, when not a full one: a quick run, a simulated protocol change ("" else)."""
    kinds = (["quick run (reduced configs, no fuzzers, no cluster tests)"] if summary.get("quick") else []) + [
        f"simulated protocol change {spec}:{mutation} (a mutation made the default behaviour, to test the job: "
        "it should fail)"
        for spec, mutation in (summary.get("protocol_changes") or {}).items()]
    return separator + "; ".join(kinds) if kinds else ""


def failure_traces(summary: dict) -> list[dict]:
    """Each failure with its trace and the commands that replay, show and explore it (a summary written
    before nights recorded them: the texts alone)."""
    return summary.get("failure_traces") or [{"failure": f, "trace": None, "commands": []}
                                              for f in summary.get("failures", [])]


def render(folder: Path, summary: dict, history: list[dict]) -> None:
    """report.html and summary.md in `folder`; appends summary.md to $GITHUB_STEP_SUMMARY when it is set."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]))
    env.filters["polyline"] = polyline
    rows = matrix(summary)
    html = env.get_template("report.html.j2").render(summary=summary, rows=rows, trends=trends(history + [summary]),
                                                     statuses=STATUSES, run_kind=run_kind(summary),
                                                     failures=failure_traces(summary))
    write_atomic(folder / "report.html", lambda p: p.write_text(html))
    md = markdown(summary, rows)
    write_atomic(folder / "summary.md", lambda p: p.write_text(md))
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            with open(step_summary, "a") as f:
                f.write(md)
        except OSError as exc:  # CI's file, appended to: nothing to clean up, only to say which file
            raise BadInput(f"cannot append to {step_summary} ($GITHUB_STEP_SUMMARY): {reason(exc)}") from None


def markdown(summary: dict, rows: list[dict]) -> str:
    lines = [f"## Nightly {summary['date']}: {summary['outcome']}", ""]
    if run_kind(summary):
        lines += [f"**{run_kind(summary)[0].upper()}{run_kind(summary)[1:]}.**", ""]
    lines += [f"Seed {summary['seed']}, commit `{summary['provenance']['commit']}`.", ""]
    if summary.get("failures"):
        lines += ["Failures:", ""]
        for f in failure_traces(summary):
            lines.append(f"- {f['failure']}" + (f" (`{f['trace']}`)" if f["trace"] else ""))
            lines += [f"  - `{command}`" for command in f["commands"]]
        lines.append("")
    lines += ["| model | property | spark | hypothesis | graph | z3 |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['property']} | " + " | ".join(r["cells"][e]["status"] for e in
                                                                       ("spark", "hypothesis", "graph", "z3")) + " |")
    if summary.get("conformance"):
        lines += ["", "kraft against Kafka's controller (`conform`; exit 1 = a divergence, or a declared Kafka behaviour "
                  "the model does not reproduce yet):", "",
                  "| Kafka | model variant | config | outcome | transitions compared | beyond a declared divergence "
                  "| declared | seconds |", "|---|---|---|---|---|---|---|---|"]
        for version, c in summary["conformance"].items():
            st = c.get("stats", {})
            declared = ", ".join(f"{k} {v:,}" for k, v in c.get("declared", {}).items()) or c.get("error", "none")
            completion = c.get("variant", {}).get("completion", "-")
            lines.append(f"| {version} | completion={completion} | {c['preset']} | {c['outcome']} | "
                         f"{st.get('transitions_compared', 0):,} | {st.get('not_compared', 0):,} | {declared} | "
                         f"{c['seconds']} |")
    lines += ["", "Liveness (graph engine):", ""]
    for name, m in summary["models"].items():
        live = m.get("liveness")
        if live:
            declared = live.get("declared") or {}
            lines += [f"- {name} at `{live['preset']}`: " + "; ".join(
                f"{p} {v}" + (f" ({declared[p]})" if p in declared else "") for p, v in live["verdicts"].items())]
    return "\n".join(lines) + "\n"


def load_history(reports: Path, before: str) -> list[dict]:
    """Every earlier night's summary.json under `reports` (by folder name), oldest first."""
    out = []
    for folder in sorted(p for p in reports.glob("*") if p.is_dir() and p.name < before):
        try:
            out.append(json.loads((folder / "summary.json").read_text()))
        except (OSError, ValueError):
            continue  # an interrupted night leaves no summary: it has no point on the trend
    return out
