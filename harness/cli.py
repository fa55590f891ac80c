"""`python -m harness`: list, describe, check, replay, show, diff, graph, prove, corpus, conform, explore.

Exit codes: 0 = the property holds / the trace replays as recorded; 1 = a violation was found / the
trace does not reproduce; 2 = bad input, reported on one line with no traceback; 3, 130 / 143 and 141 (stdout's
reader gone, harness/streams.py): see docs/ARCHITECTURE.md.

About 680 lines: one click group whose commands are thin adapters over the harness's modules; what is
longest, `check`'s options, its per-engine option table and its progress and summary lines, serves that one
command and reads best beside it. `conform` and `explore`, each with helpers of its own, are in
harness/cli_conform.py and harness/cli_explore.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text  # text from a file or a spec is printed as Text: never read as markup or emoji codes

from harness import interrupt, streams
from harness.files import check_writable_dir, path_problem, write_atomic
from harness.errors import BadInput, LimitReached
from harness.interrupt import Interrupted
from harness.itf import counted, spelled
from harness.model import VIEW_KEEP



class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's own exits 1 (having pointed stdout, even for a stderr console, at /dev/null): pass the error
        # on to streams.delivering_result, which knows whether stdout's reader left (exit 141)
        raise


err = _Console(stderr=True, highlight=False, soft_wrap=True)
out = _Console(highlight=False, soft_wrap=True)

ENGINES = ("bfs", "hypothesis", "graph", "spark", "z3")


def _fail(message: str) -> None:
    """The one line of every refusal: whitespace folded, anything unprintable escaped."""
    line = " ".join(message.split()).encode("utf-8", "backslashreplace").decode("utf-8")
    print(f"error: {line}", file=sys.stderr)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafka-reassignment-harness", prog_name="harness")
def cli() -> None:
    """Model checking and property testing of Kafka reassignment protocols."""


# ------------------------------------------------------------------------------------------ list
@cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def list_cmd(as_json: bool) -> None:
    """Specs with their configs, variants, mutations, rules and properties."""
    from harness.registry import load_spec, spec_names

    data = {}
    for name in spec_names():
        spec = load_spec(name)
        data[name] = {
            "configs": list(spec.presets),
            "variants": {k: list(v) for k, v in spec.variants.items()},
            "mutations": {n: str(m) for n, m in spec.mutations.items()},
            "rules": [r.name + (" (fair)" if r.fair else "") for r in spec.rules],
            "invariants": list(spec.invariants),
            "liveness": list(spec.liveness),
            "z3": list(spec.z3_invariants) if spec.symbolic is not None else [],  # prove / --engine z3
        }
    if as_json:
        print(json.dumps(data, indent=1))
        return
    for name, d in data.items():
        out.print(f"[bold]{name}[/bold]")
        out.print(f"  configs:    {', '.join(d['configs'])}")
        out.print("  variants:   " + (", ".join(f"{k}={'/'.join(map(spelled, v))}" for k, v in d["variants"].items()) or "-"))
        out.print(f"  rules:      {', '.join(d['rules'])}")
        out.print(f"  invariants: {', '.join(d['invariants'])}")
        out.print(f"  liveness:   {', '.join(d['liveness']) or '-'}")
        out.print(f"  z3 forms:   {', '.join(d['z3']) or '- (no symbolic form: prove and --engine z3 exit 2)'}")
        out.print("  mutations:")
        for m, doc in d["mutations"].items():
            out.print(f"    {m}: {doc}")


# ----------------------------------------------------------------------------------------- check
# Which engines take each engine-specific option of `check`. An option given to an engine that does not
# take it is refused (exit 2) rather than silently ignored; `--help` tags each option with its engines.
# docs/ARCHITECTURE.md's table is this one (tests/test_cli_options.py checks both).
ENGINE_OPTIONS = {
    "seed": ("hypothesis",),
    "exact": ("bfs",),
    "no_deadlock": ("bfs", "spark"),
    "max_states": ("bfs", "graph"),
    "max_depth": ("bfs", "spark"),
    "time_limit": ("bfs", "spark"),
    "keep_going": ("bfs", "spark"),
    "check_reads": ("bfs",),
    "view_keep": ("bfs",),
    "symmetry": ("bfs", "graph", "spark"),
    "frontier_memory": ("bfs",),
    "frontier_dir": ("bfs",),
    "profile": ("hypothesis",),
    "examples": ("hypothesis",),
    "steps": ("hypothesis",),
    "master": ("spark",),
    "partitions": ("spark",),
    "checkpoint": ("spark",),
    "resume": ("spark",),
    "spark_levels_only": ("spark",),
    "executor_wait": ("spark",),
    "checkpoint_every": ("spark",),
    "depth": ("z3",),
    "solver_timeout": ("z3",),
}


def _engines(param: str) -> str:
    return f"[{', '.join(ENGINE_OPTIONS[param])}] "


class Folder(click.Path):
    """A folder option. An empty or blank value is a usage error (it would name the current folder), and so
    is a NUL: `os.stat` raises ValueError for it, which click lets through."""

    def convert(self, value, param, ctx):
        if problem := path_problem(str(value)):
            self.fail(problem, param, ctx)
        return super().convert(value, param, ctx)


def _flag_given(ctx: click.Context, name: str) -> str | None:
    """The flag of option `name` if the user gave it on the command line (not its default), else None."""
    if ctx.get_parameter_source(name) in (click.core.ParameterSource.DEFAULT, click.core.ParameterSource.DEFAULT_MAP):
        return None
    return max(next(p for p in ctx.command.params if p.name == name).opts, key=len)


def _refuse_options_of_other_engines(ctx: click.Context, engine: str) -> None:
    """One line naming the engines that take an option the user gave to an engine that does not."""
    for param in ctx.command.params:
        takes = ENGINE_OPTIONS.get(param.name)
        if takes and engine not in takes and (flag := _flag_given(ctx, param.name)):
            raise BadInput(f"{flag} applies to the {' and '.join(takes)} engine{'s' if len(takes) > 1 else ''}, "
                           f"not to --engine {engine}")


@cli.command()
@click.argument("spec_name", metavar="SPEC")
@click.option("--config", "preset", default=None, help="named preset (see `list`)")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="override a config constant")
@click.option("--variant", "variants", multiple=True, metavar="NAME=VALUE", help="select a protocol variant")
@click.option("--mutation", default=None, help="remove one safety rule (see `list`)")
@click.option("--engine", default="bfs", type=click.Choice(ENGINES), show_default=True)
@click.option("--out", default="traces", show_default=True, type=Folder(file_okay=False), help="where counterexamples go")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object on stdout")
@click.option("--quiet", is_flag=True, help="no progress on stderr")
@click.option("--progress-every", type=click.FloatRange(min=0.1, max=86400), default=30.0, show_default=True,
              help="seconds between progress lines when stderr is not a terminal (a terminal is redrawn)")
@click.option("--seed", default=None, type=int, help=_engines("seed") + "seed of the random walks (recorded in traces; "
              "default 0); refused by the derandomized ci profile")
@click.option("--exact", is_flag=True, help=_engines("exact") + "store full states instead of 64-bit fingerprints")
@click.option("--no-deadlock", is_flag=True, help=_engines("no_deadlock") + "do not report states without successors")
@click.option("--max-states", type=click.IntRange(min=1), default=None,
              help=_engines("max_states") + "stop after this many distinct states (exit 3)")
@click.option("--max-depth", type=click.IntRange(min=0), default=None, help=_engines("max_depth") + "stop at this depth (exit 3)")
@click.option("--time-limit", type=click.FloatRange(min=0, max=10**9), default=None,
              help=_engines("time_limit") + "stop after this many seconds (exit 3)",
              callback=lambda ctx, param, v: _not_nan(v, "--time-limit"))
@click.option("--continue", "keep_going", is_flag=True, help=_engines("keep_going") + "collect one shortest trace per violated property")
@click.option("--check-reads", is_flag=True, help=_engines("check_reads") + "evaluate every invariant everywhere and check the reads= hints")
@click.option("--view-keep", type=click.Choice(VIEW_KEEP), default="tie", show_default=True, metavar="|".join(VIEW_KEEP),
              help=_engines("view_keep") + "under a view, the state kept of those with one view: tie (the smallest hash of "
              "the hidden fields, whatever the order) or first (the first found in TLC's order, as TLC keeps)")
@click.option("--symmetry", is_flag=True, help=_engines("symmetry") + "keep one state per orbit of the ids the spec declares "
              "interchangeable (TLC's SYMMETRY; the graph engine refuses it for liveness)")
@click.option("--frontier-memory", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help=_engines("frontier_memory") + "keep about this many bytes of each level in memory, the rest on disk "
              "in chunks (a folder made under --frontier-dir, removed at the end)")
@click.option("--frontier-dir", type=Folder(file_okay=False), default=None,
              help=_engines("frontier_dir") + "where the on-disk levels' folder is made (default: the temporary folder)")
@click.option("--profile", default="ci", show_default=True, help=_engines("profile") + "settings profile (ci, nightly, dev)")
@click.option("--examples", type=click.IntRange(min=1), default=None, help=_engines("examples") + "runs to generate")
@click.option("--steps", type=click.IntRange(min=1), default=None, help=_engines("steps") + "steps per run")
@click.option("--master", default="local[*]", show_default=True, help=_engines("master") + "master URL ('' under spark-submit)")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help=_engines("partitions") + "Spark tasks (default and at most: the cluster's task slots)")
@click.option("--checkpoint", default=None, help=_engines("checkpoint") + "checkpoint directory (default under checkpoints/)")
@click.option("--resume", is_flag=True, help=_engines("resume") + "continue from the checkpoint")
@click.option("--every-level-on-spark", "spark_levels_only", is_flag=True,
              help=_engines("spark_levels_only") + "run small levels on Spark too, not in the driver (to try a cluster on a small model)")
@click.option("--executor-wait", type=click.FloatRange(min=0, max=10**6), default=120.0, show_default=True,
              help=_engines("executor_wait") + "seconds a cluster may take to give the job an executor (then exit 2)",
              callback=lambda ctx, param, v: _not_nan(v, "--executor-wait"))
@click.option("--checkpoint-every", type=click.FloatRange(min=0, max=10**6), default=60.0, show_default=True,
              help=_engines("checkpoint_every") + "seconds between commits of a level (0: every level); the last is always committed",
              callback=lambda ctx, param, v: _not_nan(v, "--checkpoint-every"))
@click.option("--depth", type=click.IntRange(min=0), default=12, show_default=True,
              help=_engines("depth") + "bound of the bounded model check (abstract steps)")
@click.option("--solver-timeout", type=click.FloatRange(min=1, max=10**6), default=60.0, show_default=True,
              help=_engines("solver_timeout") + "seconds one solver query may take (then the check is incomplete: exit 3)",
              callback=lambda ctx, param, v: _not_nan(v, "--solver-timeout"))
@click.pass_context
def check(ctx, spec_name, preset, settings, variants, mutation, engine, out, as_json, quiet, progress_every, seed, exact,
          no_deadlock, max_states, max_depth, time_limit, keep_going, check_reads, view_keep, symmetry, frontier_memory,
          frontier_dir, profile, examples, steps, master,
          partitions, checkpoint, resume, spark_levels_only, executor_wait, checkpoint_every, depth,
          solver_timeout) -> None:
    """Check SPEC's invariants with an engine; write a trace per violation.

    Results go to stdout (a summary, or one JSON object with --json), progress and diagnostics to
    stderr. Exit 0: no violation in the whole space (or budget); 1: a violation; 2: bad input; 3: a
    limit stopped the search first. Options tagged [engine, ...] apply to those engines only."""
    _refuse_options_of_other_engines(ctx, engine)
    from harness.check import exit_code, summary, write_counterexamples
    from harness.engines import bfs
    from harness.registry import load_spec

    spec = load_spec(spec_name)
    cfg = spec.config(preset, settings, variants, mutation)
    model = spec.bind(cfg, symmetry=symmetry)
    if no_deadlock:
        model.check_deadlock = False
    check_writable_dir(out, "--out")  # before the search: its result must have somewhere to go
    _progress.every = progress_every
    if engine == "spark":
        from harness.engines import spark

        with _progress(quiet, "exploring with Spark ...") as progress:
            result = spark.explore(model, master=master or None, partitions=partitions, checkpoint=checkpoint,
                                   resume=resume, max_depth=max_depth, time_limit=time_limit, keep_going=keep_going,
                                   check_deadlock=not no_deadlock, progress=progress,
                                   spark_levels_only=spark_levels_only, executor_wait=executor_wait,
                                   checkpoint_every=checkpoint_every)
    elif engine == "z3":
        from harness.engines import z3bmc

        with _progress(quiet, "bounded model checking with Z3 ...") as progress:
            result = z3bmc.check(model, depth, timeout_ms=int(solver_timeout * 1000))
    elif engine == "graph":
        from harness.engines import graph

        with _progress(quiet, "building the state graph ...") as progress:
            kwargs = {"max_states": max_states} if max_states else {}
            result, _ = graph.explore(model, progress=progress, **kwargs)
    elif engine == "hypothesis":
        from harness.engines import hypothesis

        with _progress(quiet, "testing with Hypothesis ...") as progress:
            result = hypothesis.explore(model, profile=profile, examples=examples, steps=steps, seed=seed,
                                        progress=progress)
        seed = result.stats.get("seed")
    else:
        with _progress(quiet) as progress:
            result = bfs.explore(model, exact=exact, max_states=max_states, max_depth=max_depth, time_limit=time_limit,
                                 keep_going=keep_going, check_deadlock=not no_deadlock, progress=progress,
                                 check_reads=check_reads, view_keep=view_keep, frontier_memory=frontier_memory,
                                 frontier_dir=frontier_dir)
    if model.symmetry:
        result.stats["symmetry"] = [list(g) for g in model.symmetry]
    write_counterexamples(model, result, Path(out), seed)
    if as_json:
        print(json.dumps(summary(model, result), indent=1))
    else:
        _print_result(model, result)
    sys.exit(exit_code(result))


def _not_nan(value: float | None, option: str) -> float | None:
    if value is not None and value != value:
        raise click.BadParameter("nan is not a number of seconds", param_hint=option)
    return value


_last_progress: dict = {}  # the last figures an engine reported: what an interrupted run had done


def _header(model, engine: str, seed: int | None) -> str:
    """What is being checked: spec, config, every variant (defaults included), mutation, engine, seed."""
    from harness.model import preset_of, variant_of

    variants = " ".join(f"{k}={spelled(v)}" for k, v in variant_of(model.spec, model.config).items()) or "-"
    return (f"{model.name} config={preset_of(model.config) or '(defaults)'} variants: {variants} "
            f"mutation={model.config.mutation} engine={engine}" + ("" if seed is None else f" seed={seed}"))


def _progress_line(p: dict) -> str:
    """One progress line from an engine's figures: a search's states, depth, frontier and rate, or a
    budgeted run's share of its budget with an ETA."""
    elapsed = max(p["elapsed"], 0.0)
    if "budget" in p:  # Hypothesis: runs of a known budget
        done, total = p["runs"], max(p["budget"], 1)
        # Hypothesis may run a few more than its budget (replayed examples): never over 100%, never a negative ETA
        share = min(done / total, 1.0)
        eta = f", ETA {elapsed / done * (total - done):,.0f} s" if 0 < done < total else ""
        return f"{done:,} of {p['budget']:,} runs ({share:.0%}), {p['steps']:,} steps, {elapsed:,.0f} s{eta}"
    rate = p["distinct"] / elapsed if elapsed > 0 else 0
    return (f"{p['distinct']:,} distinct  {p['generated']:,} generated  depth {p['depth']}  "
            f"frontier {max(p['queue'], 0):,}  {rate:,.0f} states/s  {elapsed:,.0f} s")


class _progress:
    """Progress on stderr: a line redrawn in place on a terminal, else a plain line every `every`
    seconds (like TLC's progress lines, for CI logs); nothing with --quiet. It keeps the last figures
    either way, so that an interrupted run can report them as partial."""

    every = 30.0

    def __init__(self, quiet: bool, message: str = "exploring ...") -> None:
        self.quiet = quiet
        self.message = message
        self.status = None
        self.next_line = None

    def __enter__(self):
        if not self.quiet:
            if err.is_terminal:
                self.status = err.status(self.message)
                self.status.__enter__()
            else:
                self.next_line = time.monotonic() + self.every
        return self.update

    def update(self, p: dict) -> None:
        _last_progress.update(p)
        if p.get("spark_ui") and not self.quiet and not getattr(self, "ui_shown", False):
            self.ui_shown = True
            print(f"Spark UI: {p['spark_ui']}", file=sys.stderr, flush=True)
        if self.status is not None:
            self.status.update(_progress_line(p))
        elif self.next_line is not None and time.monotonic() >= self.next_line:
            self.next_line = time.monotonic() + self.every
            print(f"progress: {_progress_line(p)}", file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self.status is not None:
            self.status.__exit__(*exc)


def _print_result(model, result) -> None:
    s = result.stats
    out.print(Text(_header(model, result.engine, s.get("seed") if result.engine == "hypothesis" else None), "bold"))
    if result.engine == "graph":
        bits = [f"{s['states']:,} states", f"{s['edges']:,} edges", f"{s['sccs']:,} SCCs", f"{s['terminal_states']:,} terminal",
                f"depth {s['depth']}", f"{s['seconds']:.2f} s"]
        for name, r in s.get("liveness", {}).items():
            verdict = "holds" if r["holds"] else f"FAILS (lasso of {counted(r['lasso_length'], 'step')}, loop at {r['loop_start']})"
            if name in model.spec.expected_liveness_failures(model.config):  # declared: say so either way
                verdict += " - an expected failure here" if not r["holds"] else \
                    " - declared an expected failure here: it no longer reproduces"
            bits.append(f"liveness {name}: {verdict}")
    elif result.engine == "z3":
        bits = [f"depth {s['depth']} of {s['max_depth']}", f"{s['abstract_candidates']} abstract counterexamples "
                f"({s['spurious']} spurious)", f"{s['concrete_states_explored']:,} model states to concretize",
                f"solver {s['solver_seconds']:.2f} s"]
        if s.get("relation"):  # a relation BMC sized to the run, widened where a run filled it
            size = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s["relation"].items())
            bits.append(f"relation: {size} ({counted(s['widenings'], 'widening')})")
    elif result.engine == "hypothesis":
        bits = [f"profile {s['profile']}", f"budget {s['max_examples']:,} runs x {s['max_steps']} steps",
                f"{s['walks']:,} walks ({s['distinct_walks']:,} distinct)", f"{s['steps']:,} steps",
                "derandomized" if s["derandomized"] else f"seed {s['seed']}"]
    else:
        depth = s.get("depth")
        # depth counts steps from an initial state; TLC's counts the states on the path (one more)
        shown = f"depth {depth}" + (f" (TLC depth {depth + 1})" if isinstance(depth, int) else "")
        bits = [f"{s.get('distinct', 0):,} distinct states", f"{s.get('generated', 0):,} generated", shown]
    if s.get("seconds") is not None:
        bits.append(f"{s['seconds']:.2f} s")
    if s.get("states_per_second"):
        bits.append(f"{s['states_per_second']:,} states/s")
    if s.get("peak_rss_bytes"):
        bits.append(f"peak RSS {s['peak_rss_bytes'] / 2**20:.0f} MiB")
    out.print("  " + ", ".join(bits))
    if "collision_probability" in s:
        out.print(f"  fingerprint collision probability (optimistic, n*(g-n)/2^64): {s['collision_probability']:.1e}")
    if s.get("view_keep") == "first":
        out.print("  under the view: the first state found per view was kept, in TLC's order (--view-keep first)")
    if s.get("symmetry"):
        groups = " ".join("{" + ",".join(map(str, g)) + "}" for g in s["symmetry"])
        out.print(f"  symmetry: one state per orbit of the interchangeable ids {groups} (counts are orbits)")
    if result.coverage:
        table = Table("rule", "distinct", "generated", title="coverage", title_justify="left", box=None, padding=(0, 2))
        for rule, c in result.coverage.items():
            table.add_row(rule, f"{c['distinct']:,}", f"{c['generated']:,}")
        out.print(table)
    for w in result.warnings:
        err.print(f"[yellow]warning:[/yellow] {w}")
    if result.violations:
        from harness.present import same_runs, violation_lines

        from harness.check import expectation

        for i, run in enumerate(same_runs(result.violations)):  # on stdout: each trace inline, its VIOLATION lines last
            _print_lines(([Text("")] if i else []) + violation_lines(model, run))
            for v in run:
                if declared := expectation(model, v):  # exit 1 still: JSON's `expected` tells a wrapper apart
                    out.print(Text.assemble(("expected violation", "bold yellow"),
                                            f": declared at config {declared['preset']} ({declared['source']}): {declared['why']}"))
    elif result.engine == "z3":
        out.print(f"[green]no violation[/green] of {', '.join(result.stats['properties'])} within {result.stats['depth']} "
                  "abstract steps" + ("" if result.complete else " examined (incomplete: see the warning)"))
    elif result.complete and result.engine == "hypothesis":
        out.print("[green]no violation[/green] in the whole budget of runs")
    elif result.complete:
        out.print("[green]no violation[/green]: the state space was exhausted")
    else:
        limit = {"time-limit": "--time-limit", "max-states": "--max-states", "max-depth": "--max-depth"}.get(
            result.stopped_by, result.stopped_by)
        out.print(f"[yellow]no verdict: the search stopped at {limit} before the space was exhausted "
                  "(exit 3)[/yellow]")


# ---------------------------------------------------------------------------------- replay / show
@cli.command("replay")
@click.argument("trace_path", metavar="TRACE")
@click.option("--json", "as_json", is_flag=True)
def replay_cmd(trace_path: str, as_json: bool) -> None:
    """Re-execute TRACE from the model's initial state; exit 0 if it reproduces as recorded."""
    from harness.replay import replay
    from harness.trace import read_trace

    report = replay(read_trace(trace_path))
    if as_json:
        print(json.dumps(report.to_json(), indent=1))
    else:
        verdict = Text("OK ", "green") if report.ok else Text("DIVERGES ", "red")
        out.print(verdict + report.message)
        for var, (rec, rep) in report.differences.items():
            out.print(Text(f"  {var}: recorded {rec}, replayed {rep}"))
    sys.exit(0 if report.ok else 1)


@cli.command("show")
@click.argument("trace_path", metavar="TRACE")
@click.option("--step", type=click.IntRange(min=0), default=None, help="only this step, with the whole state")
@click.option("--fields", "patterns", multiple=True, metavar="PATTERN",
              help="only fields whose path matches (glob: * and ?; brackets literal), e.g. 'brokers[2].*'")
@click.option("--full", is_flag=True, help="the whole state at every step")
@click.option("--json", "as_json", is_flag=True, help="the same content as one JSON object")
def show_cmd(trace_path: str, step: int | None, patterns: tuple, full: bool, as_json: bool) -> None:
    """Print TRACE step by step: the first state, then the fields each action changes (a table on a
    terminal when it fits, else one line per field). Also reads `prove`'s CTI files."""
    from harness.present import rendered, selection, view_json, view_of
    from harness.trace import read_shown

    view = view_of(read_shown(trace_path))
    sel = selection(view, step, patterns, full)
    if as_json:
        print(json.dumps(view_json(view, sel), indent=1))
    else:
        _print_lines(rendered(view, sel, out.width if out.is_terminal else None))


def _print_lines(lines) -> None:
    for line in lines:
        out.print(line)


@cli.command("diff")
@click.argument("trace_a", metavar="A")
@click.argument("trace_b", metavar="B")
@click.option("--json", "as_json", is_flag=True)
def diff_cmd(trace_a: str, trace_b: str, as_json: bool) -> None:
    """Compare two traces of one spec: where they first differ (step, both actions, the fields that differ),
    their lengths and outcomes, and what differs in their configs (the same preset under two variants or
    mutations). Exit 0 if identical, 1 if they differ, 2 if not comparable (two specs)."""
    from harness.present import compare, compare_lines
    from harness.trace import read_trace

    result = compare(read_trace(trace_a), read_trace(trace_b))
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        _print_lines(compare_lines(result))
    sys.exit(0 if result["identical"] else 1)


@cli.command("describe")
@click.argument("spec_name", metavar="SPEC")
@click.option("--config", "preset", default=None, help="named preset (default: the spec's default)")
@click.option("--json", "as_json", is_flag=True)
def describe_cmd(spec_name: str, preset: str | None, as_json: bool) -> None:
    """SPEC in full at one config: each parameter's value, meaning and range; rules (who acts, fair,
    parameters, in this config or not); properties with their statements; variants; mutations; expected
    violations."""
    from harness.present import describe, describe_lines
    from harness.registry import load_spec

    data = describe(load_spec(spec_name), preset)
    if as_json:
        print(json.dumps(data, indent=1))
    else:
        _print_lines(describe_lines(data))


@cli.command("graph")
@click.argument("spec_name", metavar="SPEC")
@click.option("--config", "preset", default=None, help="named preset (see `list`)")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE")
@click.option("--variant", "variants", multiple=True, metavar="NAME=VALUE")
@click.option("--mutation", default=None)
@click.option("--format", "fmt", type=click.Choice(["dot", "graphml", "json"]), default="dot", show_default=True)
@click.option("--out", "out_dir", default="traces", show_default=True,
              help="the folder the graph is written to, as SPEC-CONFIG.FORMAT; '-': the graph on stdout")
@click.option("--max-states", type=click.IntRange(min=1), default=None, help="stop beyond this many states (exit 3)")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON (on stderr with --out -)")
def graph_cmd(spec_name, preset, settings, variants, mutation, fmt, out_dir, max_states, as_json) -> None:
    """Export the reachable state graph with action labels on edges, and summarise it."""
    import tempfile

    from harness.engines import graph
    from harness.registry import load_spec

    spec = load_spec(spec_name)
    cfg = spec.config(preset, settings, variants, mutation)
    model = spec.bind(cfg)
    to_stdout = out_dir == "-"
    if not to_stdout:
        check_writable_dir(out_dir, "--out")
    g, _ = graph.build(model, max_states or graph.MAX_STATES, check_safety=False)
    name = f"{spec_name}-{preset or spec.default_preset}.{fmt}"
    if to_stdout:
        with tempfile.TemporaryDirectory() as tmp:
            graph.write(g, str(Path(tmp) / name), fmt)
            sys.stdout.write((Path(tmp) / name).read_text())
            sys.stdout.flush()  # delivered (or exit 141) before the summary says it was
        path = "-"
    else:
        path = str(Path(out_dir) / name)
        write_atomic(Path(path), lambda p: graph.write(g, str(p), fmt))
    info = dict(graph.summary(g), file=path, format=fmt)
    console = err if to_stdout else out  # stdout holds the graph itself with --out -
    if as_json:
        console.print_json(json.dumps(info)) if to_stdout else print(json.dumps(info, indent=1))
    else:
        console.print(", ".join(f"{k} {v}" for k, v in info.items()))


@cli.command("prove")
@click.argument("spec_name", metavar="SPEC")
@click.option("--config", "preset", default=None)
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="override a config constant")
@click.option("--variant", "variants", multiple=True, metavar="NAME=VALUE")
@click.option("--mutation", default=None)
@click.option("--property", "properties", multiple=True, help="prove these (default: every property with a Z3 form)")
@click.option("--brokers", type=click.IntRange(min=1, max=16), default=8, show_default=True, help="up to N brokers")
@click.option("--depth", type=click.IntRange(min=0), default=6, show_default=True,
              help="BMC depth used to decide whether a CTI is reachable")
@click.option("--out", "out_dir", default="traces", show_default=True, type=Folder(file_okay=False),
              help="where CTIs are written (two-state ITF traces over the symbolic state)")
@click.option("--json", "as_json", is_flag=True)
def prove_cmd(spec_name, preset, settings, variants, mutation, properties, brokers, depth, out_dir, as_json) -> None:
    """Prove SPEC's properties inductive with Z3 for up to N brokers; print CTIs with their reachability."""
    from harness.engines import z3prove
    from harness.present import cti_values
    from harness.registry import load_spec

    spec = load_spec(spec_name)
    plan = getattr(spec.symbolic, "CI_PLAN", None)
    if preset is None and not settings and plan is not None:
        # a relation sized by its config (replication): without --config, the config and bounds whose proof
        # closes (CI_PLAN), not the default preset at its default bounds (the same model over a relation
        # several times larger, whose queries can reach the solver timeout)
        preset, settings = plan["prove"][0], tuple(plan.get("settings", ()))
        err.print(f"prove: no --config: {spec_name}'s proof plan, --config {preset} "
                  + " ".join(f"--set {s}" for s in settings))
    model = spec.bind(spec.config(preset, settings, variants, mutation))
    check_writable_dir(out_dir, "--out")
    result = z3prove.prove(model, list(properties) or None, brokers, depth)
    for cti in result["ctis"]:
        path = Path(out_dir) / f"{spec_name}-{mutation or 'none'}-{cti['rule']}-{cti['property']}-cti.itf.json"
        text = json.dumps(z3prove.cti_itf(result, cti), indent=1)
        write_atomic(path, lambda p: p.write_text(text))
        cti["file"] = str(path)
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        verdict = "[green]PROVED[/green]" if result["proved"] else "[red]NOT INDUCTIVE[/red]"
        out.print(f"{verdict} {', '.join(result['properties'])} for 1..{brokers} brokers: "
                  f"{result['checks']} checks in {result['seconds']} s")
        for cti in result["ctis"]:
            out.print(Text(f"CTI {cti['rule']} breaks {cti['property']} ({counted(cti['brokers'], 'broker')}): "
                           f"{cti['reachability']}"))
            out.print(Text(f"  pre:  {cti_values(cti['fields']['pre'])}"))  # the spec's field names (`show FILE` reads them)
            out.print(Text(f"  post: {cti_values(cti['fields']['post'])}  params {cti_values(cti['params'])}  -> {cti['file']}"))
    sys.exit(0 if result["proved"] else 1)


@cli.command("corpus")
@click.option("--out", default="counterexamples", show_default=True, type=Folder(file_okay=False))
@click.option("--spec", "names", multiple=True, help="only these specs")
def corpus_cmd(out: str, names: tuple) -> None:
    """Regenerate the counterexample corpus: a shortest trace per mutation and per expected violation."""
    from harness.corpus import regenerate

    for n in names:
        from harness.registry import load_spec
        load_spec(n)  # unknown spec -> exit 2
    check_writable_dir(out, "--out")  # before the searches: their traces must have somewhere to go
    survivors = regenerate(Path(out), list(names) or None, echo=lambda m: err.print(m, markup=False))
    if survivors:
        err.print(f"[red]mutations not caught:[/red] {', '.join(survivors)}")
    sys.exit(1 if survivors else 0)


# The commands kept in modules of their own register on `cli` when imported (after the helpers they use).
from harness import cli_conform, cli_explore  # noqa: E402

SPLIT_OUT = (cli_conform, cli_explore)

_exiting = threading.Lock()


def _interrupted(exc: Interrupted) -> None:
    """One line: which signal, what the run had done (partial, not a verdict), then 130 or 143. Called
    by the main thread, or by the interrupt watcher when the main thread lost the exception."""
    interrupt.stopping()
    if not _exiting.acquire(blocking=False):
        threading.Event().wait()  # the other thread is saying it and exits the process
    p = _last_progress
    done = f"partial: {_progress_line(p)}" if p else "no figures yet"
    hint = interrupt.hint()
    print(f"interrupted by {exc.name}: no verdict ({done})" + (f"; {hint}" if hint else ""), file=sys.stderr)
    # Exit now: tearing down millions of states (or waiting on library threads) would take seconds. The
    # harness's work folders still go (the main thread may not have unwound to their owners).
    interrupt.remove_owned_folders()
    with contextlib.suppress(BrokenPipeError):  # stdout's reader left too: the signal is still the reason
        sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exc.exit_code)


def main() -> None:
    """Run the command; whatever way it ends, a run that received a signal reports the interrupt, and one
    whose stdout's reader left exits 141 (harness/streams.py)."""
    streams.install()
    try:
        with streams.delivering_result():
            _main()
    except SystemExit:
        if interrupt.received():
            _interrupted(Interrupted(interrupt.last_signal()))
        raise
    if interrupt.received():
        _interrupted(Interrupted(interrupt.last_signal()))


def _main() -> None:
    interrupt.install(last_resort=_interrupted)
    for stream in (sys.stdout, sys.stderr):  # a trace's text on an ASCII terminal: escaped, never a traceback
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        # make_context + invoke rather than cli.main: main turns Ctrl-C into Abort and prints a blank line
        with cli.make_context("harness", sys.argv[1:]) as ctx:
            cli.invoke(ctx)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        _fail("aborted")
    except click.ClickException as exc:  # usage errors: unknown option, bad value, missing argument
        _fail(exc.format_message().replace("\n", " "))
    except BadInput as exc:
        _fail(str(exc))
    except LimitReached as exc:  # no verdict: one line, exit 3
        line = " ".join(str(exc).split())
        print(f"stopped: {line}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except Interrupted as exc:
        _interrupted(exc)
    except KeyboardInterrupt:  # a Ctrl-C that arrived before the handler was installed
        _interrupted(Interrupted(signal.SIGINT))
    except Exception:
        if interrupt.received():  # a library turned the interrupt into its own error (Py4J: a closed connection)
            _interrupted(Interrupted(interrupt.last_signal()))
        raise


if __name__ == "__main__":
    main()
