"""Fuzzing `python -m harness` command lines with Hypothesis: nothing lost, nothing misreported.

Hypothesis builds command lines from a vocabulary: every subcommand (and unknown ones), spec names
(real and bogus), every option of every command (read from `harness.cli`, so new options are fuzzed
too) with valid and invalid values, missing values, duplicated options, options of other commands,
`--`, empty strings, odd unicode, very long strings, negative and huge numbers, floats for ints.
Most lines are malformed; some are valid. The contract every line must keep:

* the exit code is 0 (holds), 1 (violation), 2 (bad input) or 3 (a limit stopped the search);
* exit 2 prints exactly one stderr line, starting with `error:`;
* no traceback anywhere in the output, no exception escaping `main()`, no run longer than RUN_TIMEOUT.

A valid line must stay cheap, so every line ends with a *tail* of options that bounds the work
(`check`: `--max-states 200 --time-limit 2`, a `tiny` config for the big specs, Hypothesis and Z3
budgets; `graph`: `--max-states 200`; `prove`: one or two brokers; `corpus`: a bogus `--spec`; `explore`: a
port the fuzzer holds, so that it refuses instead of serving; `conform`: an unknown `--kafka`). Click
keeps the last value of a repeated option, and a tail option swallowed as the value of a dangling
option leaves its own value as a stray argument, a usage error: either way the bounds hold. Spark is
only given invalid masters, and starting a JVM is blocked and counted as a failure. Every line runs
with its own scratch directory as the working directory, and every path in the vocabulary is
relative to it (or unwritable), so nothing is written into the repository.

Lines run in-process (`harness.cli.main()` with `sys.argv` patched) for speed; the nastiest also run
as real processes (`test_nastiest_lines_end_to_end`). `FUZZ_PROFILE=short` (default: derandomized,
300 lines, stops at the first broken line and shrinks it) or `long` (1,500 random lines, for the
nightly job: runs them all, then fails listing every broken line). Counts (lines, exit-code
histogram, tracebacks, hangs) are printed, and written as JSON to `$FUZZ_REPORT` if set.

Known failures outside this file's scope are kept out of the vocabulary (see "Failures found") and reported.
"""

from __future__ import annotations

import contextlib
import faulthandler
import hashlib
import io
import itertools
import json
import os
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import click
import hypothesis.configuration
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness.cli
import harness.engines.hypothesis  # noqa: F401  (registers its settings profiles now, not inside a test)
from harness.model import without_defaults
from harness.registry import load_spec, spec_names
from specs.example import ExampleConfig
from tests.conftest import ROOT

PROFILE = os.environ.get("FUZZ_PROFILE", "short")
if PROFILE not in ("short", "long"):
    raise ValueError(f"FUZZ_PROFILE must be short or long, not {PROFILE!r}")
EXAMPLES = {"short": 300, "long": 1500}[PROFILE]
# short: stop at the first broken line and shrink it; long: run every line, then list every failure.
KEEP_GOING = PROFILE == "long"
RUN_TIMEOUT = 30.0  # seconds for one in-process line; a bounded line takes well under 3
PROCESS_TIMEOUT = 90.0  # one subprocess line, interpreter start-up included
EXIT_CODES = {0, 1, 2, 3}

# --------------------------------------------------------------------------------- vocabulary

SPECS = {name: load_spec(name) for name in spec_names()}
COMMANDS = dict(harness.cli.cli.commands)
BOGUS_COMMANDS = ["bogus", "", "CHECK", "chek", "lists", "-", "--check", "check\x00", "\u202echeck", "c" * 300]
BOGUS_SPECS = ["bogus", "", "Example", "example ", " kraft", "kraft/", "../specs/kraft", "specs.kraft", "__init__",
               "_private", "kraft\x00", "\U0001f4a5", "x" * 300, "-", "kraft.py", "KRAFT"]
PRESETS = sorted({p for s in SPECS.values() for p in s.presets})
MUTATIONS = sorted({m for s in SPECS.values() for m in s.mutations})
PROPERTIES = sorted({p for s in SPECS.values() for p in s.invariants})
VARIANTS = sorted({f"{k}={str(c).lower()}" for s in SPECS.values() for k, cs in s.variants.items() for c in cs}
                  | {str(c) for s in SPECS.values() for cs in s.variants.values() for c in cs})
CONFIG_FIELDS = {k: f for s in SPECS.values() for k, f in s.config_fields.items() if k != "mutation"}

# Strings that break parsers, terminals and one-line messages.
NASTY = ["", " ", "-", "--", "=", "==", "\x00", "a\x00b", "\n", "one\ntwo", "\r", "\t", "\x1b[31mred", "\u202e",
         "\u2028", "\u200b", "\ufeff", "\udcff", "\U0001f980", "e\u0301", "\uff11\uff12", "\u0663", "\U0001d7d9",
         "[bold]x[/bold]", "[/]", ":smile:", "%s%n", "{}", "{0}", "$(id)", "`id`", "'", '"', "\\", "null", "None",
         "true", "[]", "[[", "{", "../..", "~", "a" * 5000, "[" * 5000, "x" * 200_000]
NUMBERS_BAD = ["0", "-1", "-0", "1.5", "1e3", "0x10", "1_000", "+", "nan", "inf", "-inf", "\u0663", "\uff13",
               "-99999999999999999999", "9" * 5000, "", " 3", "3 ", "2**10"]
NUMBERS_HUGE = ["99999999999999999999", str(2**63), str(2**64 + 1)]
FLOATS = ["0", "0.5", "1e-9", "2", "-0", "-1", "nan", "NaN", "inf", "-inf", "1e309", "0x1p3", "1,5", "", "x"]
# Relative to each line's scratch directory (or not writable at all); `afile` is a regular file there, `ro` a
# read-only folder (a read-only tmpfs where root may mount one: root writes through any mode bits).
OUT_DIRS = ["out", "out/deep/er", ".", "", " ", "\t", "afile", "afile/x", "adir", "ro", "ro/deep", "/dev/null/x",
            "/proc/nope", "out\x00x", "o" * 300, "\U0001f980dir", "-"]
TRACES = ["good.itf.json", "kraft.itf.json", "garbage.itf.json", "empty.itf.json", "deep.itf.json",
          "bigint.itf.json", "edited.itf.json", "binary.itf.json", "list.itf.json", "string.itf.json",
          "negative.itf.json", "float.itf.json", "rule.itf.json", "nometa.itf.json", "foreign.itf.json",
          "badspec.itf.json", "markup.itf.json", "long.itf.json", "novars.itf.json", "extravar.itf.json",
          "config.itf.json", "afile", "adir", "nonexistent.itf.json",
          "", ".", "-", "/dev/null", "/dev/zero", "/etc", "/etc/hostname", "t" * 5000, "\U0001f980.itf.json"]
# Masters the Spark engine must refuse before any JVM starts: bad ports, bad syntax, unknown schemes,
# unresolvable or refusing hosts. (Never `local...`, `yarn`, `k8s://`, `mesos://` or '': those start a JVM.)
BOGUS_MASTERS = ["spark://256.1.1.1:99999", "spark://[::1", "spark://host:0", "spark://", "spark://:7077",
                 "spark://127.0.0.1:1", "spark://a b:7077", "spark://localhost:-1", "spark://localhost:7077x",
                 "foo://bar", "http://localhost:7077", "SPARK://x", "locals", "spark:/x", "\x00", "spark://" + "h" * 300,
                 "spark://\u00fcnic\u00f6de:7077", "spark://h1:1,h2:99999"]
MASTERS = BOGUS_MASTERS + ["local[*]", "local[2]", "local", "yarn", "", "k8s://x", "mesos://x"]  # overridden by the tail

# Options whose values the vocabulary knows (valid ones first); other options get NASTY strings.
VALUES: dict[str, tuple[list, list]] = {
    "--config": (PRESETS, ["bogus", "Tiny", "tiny ", "ci\x00"]),
    "--mutation": (MUTATIONS, ["bogus", "none", "NONE", "hwm_ignores_isr\n"]),
    "--variant": (VARIANTS, ["bogus=1", "elr=maybe", "elr", "completion=", "=", "kafka=seed", "completion=seed=kafka"]),
    "--engine": (list(harness.cli.ENGINES), ["BFS", "warp", "spark ", "z3\x00"]),
    "--out": (OUT_DIRS, []),
    "--checkpoint": (["ck", "ck/deep", "afile", "adir"], ["", " ", "afile/x", "ro", "ro/ck"]),
    "--seed": (["0", "1", "42", "-5"] + NUMBERS_HUGE, NUMBERS_BAD[3:]),
    "--max-states": (["1", "50", "200"] + NUMBERS_HUGE, NUMBERS_BAD),
    "--max-depth": (["0", "1", "5"] + NUMBERS_HUGE, NUMBERS_BAD[1:]),
    "--time-limit": (FLOATS[:6], FLOATS[6:]),
    "--profile": (["ci", "nightly", "dev"], ["bogus", "CI", "harness-ci"]),
    "--examples": (["1", "3"] + NUMBERS_HUGE, NUMBERS_BAD),
    "--steps": (["1", "5"] + NUMBERS_HUGE, NUMBERS_BAD),
    "--master": (MASTERS, []),
    "--partitions": (["1", "2"] + NUMBERS_HUGE, NUMBERS_BAD),
    "--depth": (["0", "1", "2"] + NUMBERS_HUGE, NUMBERS_BAD[1:]),
    "--format": (["dot", "graphml", "json"], ["DOT", "svg", "png"]),
    "--brokers": (["1", "2", "16"], ["0", "17", "-1", "99999999999999999999", "1.0"]),
    "--property": (PROPERTIES, ["bogus", "isrsubsetofreplicas"]),
    "--spec": (list(SPECS), BOGUS_SPECS),
    "--step": (["0", "1", "2"], NUMBERS_BAD[1:] + NUMBERS_HUGE),
    "--fields": (["hwm", "log[*]", "brokers[1].*", "*", "partition"], ["nope", "[", "**[", "brokers[99]"]),
    "--port": (["0", "8765"], ["-1", "65536", "x", "1.5"]),
}

# `explore` serves until Ctrl-C once its arguments are good: its tail names this port, held busy by the
# fuzzer, so a valid line is checked in full (spec, config, traces, --out) and then refused (exit 2).
BUSY_PORT = socket.create_server(("127.0.0.1", 0))

# Failures found by this fuzzer outside its owner's files, kept out of the vocabulary until fixed
# (each is reported with its reproducer):
# * `graph example --out /nonexistent/x.dot`, `graph example --out /`: these would create or write into folders
#   outside the scratch directory (the fuzzer runs as root), so the vocabulary keeps graph's --out inside it.
# (Fixed: `replay 'good.itf.json\x00'`, a ValueError "embedded null byte" escaping read_trace; graph.write's
# FileNotFoundError and IsADirectoryError tracebacks: every write goes through harness/files.py write_atomic,
# which turns an OSError into one line.)
TRACE_COMMANDS = ("replay", "show", "diff")  # their arguments are trace files


def _ints_text(f) -> list[str]:
    """--set values for one config field: each edge of its range, just outside it, and shapes around it."""
    lo, hi = f.metadata.get("range", (0, 3))
    edges = [lo, hi, lo - 1, hi + 1]
    if "length" not in f.metadata:
        return [str(v) for v in edges] + ["10**30", "1e3", "3.0"]
    least, most = f.metadata["length"]
    lists = [[lo], [lo, hi], [hi + 1], [lo] * (most + 1), [], [lo - 1], [lo, 99999999999999999999]]
    if "item_length" in f.metadata:
        lists = [[x] for x in lists] + [[[lo]] * (most + 1), [[]]]
    return [json.dumps(v) for v in lists] + ["[" * 3000, "1,2", "[1,2", "[true]", "[1.5]", "[NaN]"]


SET_KEYS = sorted(CONFIG_FIELDS) + ["mutation", "bogus", "", "BROKERS", " brokers"]
SET_VALUES = {k: _ints_text(f) if "range" in f.metadata or "length" in f.metadata
              else ["true", "false", "seed", "kafka", "maybe", "1"] for k, f in CONFIG_FIELDS.items()}


@st.composite
def set_values(draw, valid: bool) -> str:
    """A `--set` argument: KEY=VALUE of a known or bogus key, or no `=` at all."""
    key = draw(st.sampled_from(sorted(CONFIG_FIELDS) if valid else SET_KEYS))
    pool = SET_VALUES.get(key, [])
    value = draw(st.sampled_from(pool[:2]) if valid and pool else
                 st.one_of(st.sampled_from(pool or ["1"]), st.sampled_from(NASTY), st.text(max_size=12)))
    return draw(st.sampled_from([f"{key}={value}", f"{key}={value}", key, f"={value}", f"{key}=={value}"]) if not valid
                else st.just(f"{key}={value}"))


def spec_values(spec: str) -> dict[str, list[str]]:
    """Values that are valid for one spec: its presets, mutations, variants, settings within bounds."""
    s = SPECS[spec]
    settings = [f"{k}={json.dumps(v) if isinstance(v, tuple) else v}" for k, f in s.config_fields.items()
                if "range" in f.metadata for v in (f.default, *f.metadata["range"]) if not isinstance(v, tuple)]
    settings += [f"{k}={json.dumps(f.default)}" for k, f in s.config_fields.items() if isinstance(f.default, tuple)]
    return {"--config": list(s.presets), "--mutation": list(s.mutations) or ["none"], "--set": settings,
            "--variant": [f"{k}={str(c).lower()}" for k, cs in s.variants.items() for c in cs] or ["none"],
            "--property": list(s.z3_invariants) or ["none"]}


SPEC_VALUES = {name: spec_values(name) for name in SPECS}


def option_values(opt: click.Option, valid: bool, spec: str | None = None) -> st.SearchStrategy[str]:
    name = max(opt.opts, key=len)
    if valid and spec in SPEC_VALUES and name in SPEC_VALUES[spec]:
        return st.sampled_from(SPEC_VALUES[spec][name])
    if name == "--set":
        return set_values(valid)
    good, bad = VALUES.get(name, ([], []))
    if valid and good:
        return st.sampled_from(good)
    return st.one_of(st.sampled_from(good + bad or NASTY), st.sampled_from(NASTY), st.text(max_size=16))


@st.composite
def option_item(draw, opt: click.Option, valid: bool, spec: str | None = None) -> list[str]:
    """One option of a command, with a value: `--opt value` or `--opt=value`; flags alone (or, when
    malformed, with a value they do not take)."""
    name = draw(st.sampled_from(opt.opts))
    if opt.is_flag:
        return [name] if valid or draw(st.integers(0, 3)) else [f"{name}=1"]
    value = draw(option_values(opt, valid, spec))
    return draw(st.sampled_from([[name, value], [f"{name}={value}"]]))


def options_of(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option)]


ALL_OPTIONS = [o for c in COMMANDS.values() for o in options_of(c)]
JUNK = ["--", "-", "--bogus", "-x", "--set", "--config", "-h", "--version", "--json=", "---", "--=", "- -"] + NASTY


@st.composite
def junk_item(draw) -> list[str]:
    """A malformed piece: an option of another command, a dangling option, a stray token."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(option_item(draw(st.sampled_from(ALL_OPTIONS)), valid=False))
    if kind == 1:
        return [max(draw(st.sampled_from(ALL_OPTIONS)).opts, key=len)]  # its value missing
    if kind == 2:
        return [draw(st.sampled_from(JUNK))]
    return [draw(st.text(max_size=20))]


def positional_pool(command: str) -> list[str]:
    return TRACES if command in TRACE_COMMANDS else list(SPECS) + BOGUS_SPECS


BIG_SPECS = {name for name, s in SPECS.items() if name != "example"}


def tail(draw, command: str, spec: str | None, valid: bool) -> list[str]:
    """The options that bound the work of a line (see the module doc), last on the line."""
    pick = (lambda good, bad: draw(st.sampled_from(good))) if valid else \
        (lambda good, bad: draw(st.sampled_from(good + good + bad)))
    if command == "check":
        engine = draw(st.sampled_from(list(harness.cli.ENGINES)))
        line = []
        if spec in BIG_SPECS or draw(st.booleans()):
            config = pick(["tiny"], ["bogus", ""]) if spec in BIG_SPECS else pick(["tiny", "ci"], ["bogus"])
            line += ["--config", config]
        line += ["--engine", engine]
        if engine == "hypothesis":
            line += ["--examples", pick(["1", "3"], ["0", "-1", "x"]), "--steps", pick(["2", "5"], ["0", "1.5"])]
        elif engine == "z3":
            line += ["--depth", pick(["0", "1", "2"], ["-1", "x"])]
        elif engine == "spark":
            line += ["--master", draw(st.sampled_from(BOGUS_MASTERS)), "--checkpoint", "ck"]
        line += ["--max-states", pick(["200"], ["0", "-5", "1e3", ""]),
                 "--time-limit", pick(["2"], ["-1", "x", "nan", "inf", "0"])]
        return line + ["--out", pick(["out"], ["afile", "/dev/null/x", "ro", "", "afile/x"])]
    if command == "graph":
        line = ["--config", pick(["tiny"], ["bogus"])] if spec in BIG_SPECS else []
        fmt = draw(st.sampled_from(["dot", "graphml", "json"]))
        return line + ["--format", fmt, "--max-states", pick(["200"], ["0", "x"]), "--out", pick([f"g.{fmt}"], ["ro", " "])]
    if command == "prove":
        return ["--brokers", pick(["1", "2"], ["0", "17", "x"]), "--depth", pick(["0", "1"], ["-1", "y"]),
                "--out", pick(["cti"], ["afile", "ro"])]
    if command == "corpus":
        return ["--out", pick(["corpus"], ["ro", "", "afile/x"]), "--spec", draw(st.sampled_from([s for s in BOGUS_SPECS if s not in SPECS]))]
    if command == "explore":
        return ["--port", str(BUSY_PORT.getsockname()[1])]
    if command == "conform":  # a Kafka version no one resolves: refused before any JVM (a cluster takes a minute)
        return ["--kafka", draw(st.sampled_from(["0.0.1", "", "4.4.0 ", "x" * 300]))]
    return []


@st.composite
def command_lines(draw) -> list[str]:
    """argv after `python -m harness`."""
    command = draw(st.sampled_from(["check"] * 12 + list(COMMANDS) * 3 + BOGUS_COMMANDS))
    valid = draw(st.integers(0, 2)) == 0  # a third of the lines are built from valid pieces only
    if command not in COMMANDS:
        return [command] + draw(st.lists(junk_item(), max_size=4).map(lambda items: [t for i in items for t in i]))
    cmd = COMMANDS[command]
    options = options_of(cmd)
    takes_arg = any(isinstance(p, click.Argument) for p in cmd.params)
    spec = None
    args: list[str] = []
    if takes_arg:
        pool = positional_pool(command)
        if valid:
            good = ["good.itf.json", "kraft.itf.json"] if command in TRACE_COMMANDS else \
                ["kraft"] if command == "prove" else list(SPECS)
            spec = draw(st.sampled_from(good))
            args = [spec, draw(st.sampled_from(good))] if command == "diff" else [spec]
        else:
            args = draw(st.lists(st.sampled_from(pool), max_size=2))  # missing, one, or two
            spec = args[0] if args else None
    if valid:  # each option of the command, or not, in any order
        items = draw(st.permutations([draw(option_item(o, True, spec)) for o in options if draw(st.booleans())]))
    else:
        pieces = st.one_of(*(option_item(o, False) for o in options), junk_item()) if options else junk_item()
        items = draw(st.lists(pieces, max_size=6))
    middle = [t for item in items for t in item]
    where = draw(st.integers(0, len(middle))) if not valid else 0  # the argument among the options
    return [command] + middle[:where] + args + middle[where:] + tail(draw, command, spec, valid)


# ------------------------------------------------------------------------------------- fixtures

TRACE_EDITS = {
    "string.itf.json": lambda t: t["states"][1].update(hwm="zero"),
    "negative.itf.json": lambda t: t["states"][1].update(hwm=-1),
    "float.itf.json": lambda t: t["states"][1].update(hwm=1.5),
    "rule.itf.json": lambda t: t["states"][1]["#meta"].update(action={"rule": "[bold]bogus[/]", "params": {"x": 1}}),
    "nometa.itf.json": lambda t: t.pop("#meta"),
    "foreign.itf.json": lambda t: t["#meta"].update(spec="kraft"),
    "badspec.itf.json": lambda t: t["#meta"].update(spec="../../etc/passwd"),
    "markup.itf.json": lambda t: t["#meta"].update(description="[bold red]x[/] :smile: \x1b[2J", preset="[/]"),
    "long.itf.json": lambda t: t.update(states=t["states"] * 2000),
    "novars.itf.json": lambda t: t.update(vars=[]),
    "extravar.itf.json": lambda t: [st.update(extra=1) for st in t["states"]],
    "config.itf.json": lambda t: t["#meta"].update(config=[1, 2]),
}

def make_scratch(directory: Path) -> Path:
    """A line's working directory: trace files good and bad, a regular file and a directory."""
    directory.mkdir(parents=True)
    good = (ROOT / "counterexamples" / "example-ci-hwm_ignores_isr-CommittedOnIsr.itf.json").read_text()
    (directory / "good.itf.json").write_text(good)
    shutil.copy(ROOT / "counterexamples" / "kraft-small-keep_removing_in_isr-IsrSubsetOfReplicas.itf.json",
                directory / "kraft.itf.json")
    (directory / "garbage.itf.json").write_text("this is not JSON {")
    (directory / "empty.itf.json").write_text("")
    (directory / "deep.itf.json").write_text("[" * 100_000 + "]" * 100_000)
    (directory / "bigint.itf.json").write_text(good.replace('"hwm": 0', '"hwm": ' + "9" * 5000, 1))
    (directory / "list.itf.json").write_text("[1, 2, 3]")
    edited = json.loads(good)
    config = dict(edited["#meta"]["config"], brokers=100_000_000)  # out of range, with a matching digest
    edited["#meta"]["config"] = config
    edited["#meta"]["config_digest"] = hashlib.sha256(json.dumps(
        without_defaults(ExampleConfig, config), sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
    (directory / "edited.itf.json").write_text(json.dumps(edited))
    for name, edit in TRACE_EDITS.items():  # one malformation each, on a fresh copy of the good trace
        trace = json.loads(good)
        edit(trace)
        (directory / name).write_text(json.dumps(trace))
    (directory / "binary.itf.json").write_bytes(bytes(range(256)) * 4)
    (directory / "afile").write_text("a regular file\n")
    (directory / "adir").mkdir()
    return directory


def linked_scratch(directory: Path, fixtures: Path, read_only: Path) -> Path:
    """A fresh working directory holding hard links to the files of `fixtures` (made once: a copy of the
    2,000-state trace per line would cost more than most lines), an empty `adir` and `ro`, a link to the
    read-only folder."""
    directory.mkdir()
    for f in fixtures.iterdir():
        if f.is_file():
            os.link(f, directory / f.name)
    (directory / "adir").mkdir()
    (directory / "ro").symlink_to(read_only)
    return directory


@pytest.fixture
def read_only(tmp_path):
    """A read-only tmpfs; where the sandbox refuses the mount, a folder without write permission (read-only
    to anyone but root, so that the lines using it stay harmless)."""
    path = tmp_path / "read-only"
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)],
                             capture_output=True).returncode == 0
    if not mounted:
        path.chmod(0o555)
    try:
        yield path
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], check=False)


# ------------------------------------------------------------------------------------ running

class Hang(BaseException):
    """Raised by the alarm in a line that ran past RUN_TIMEOUT (a BaseException: nothing catches it)."""


class JvmStart(RuntimeError):
    pass


def block_jvm(monkeypatch, started: list) -> None:
    """Fail (and count) any attempt to start Spark's JVM, whatever code path tries."""
    def refuse(*args, **kwargs):
        started.append(args)
        raise JvmStart("the fuzzer blocks JVM starts")

    import pyspark.context
    import pyspark.java_gateway

    import harness.conform.kafka  # binds `start_jvm` by name: imported here, it would keep `refuse` for good
    import harness.engines.spark.driver as spark_driver  # where `explore` looks `start_session` up
    import harness.kafka  # `conform`: Kafka's JVM in-process, and the cluster's nodes
    from harness.cluster import Cluster
    monkeypatch.setattr(spark_driver, "start_session", refuse)
    monkeypatch.setattr(harness.kafka, "start_jvm", refuse)
    monkeypatch.setattr(harness.conform.kafka, "start_jvm", refuse)
    monkeypatch.setattr(Cluster, "start", refuse)
    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", refuse)
    monkeypatch.setattr(pyspark.context, "launch_gateway", refuse)


def run_in_process(argv: list[str], cwd: Path) -> dict:
    """Run `python -m harness *argv` as `harness.cli.main()` in this process; what a user would see."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    wakeup = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wakeup)
    old_argv, old_cwd, old_exit = sys.argv, os.getcwd(), os._exit
    out, err = io.StringIO(), io.StringIO()
    escaped = None
    code = None

    def alarm(signum, frame):
        raise Hang()

    def exit_now(status):  # the CLI leaves at once (os._exit) after an interrupt: not in this process
        raise SystemExit(status)

    started = time.monotonic()
    # Last resort: a hang inside C code never sees the alarm, so dump every thread's stack and end pytest.
    faulthandler.dump_traceback_later(RUN_TIMEOUT + 30, exit=True, file=sys.__stderr__)
    try:
        sys.argv = ["harness", *argv]
        os.chdir(cwd)
        os._exit = exit_now
        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, RUN_TIMEOUT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                harness.cli.main()
                code = 0
            except SystemExit as exc:
                code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
            except Hang:
                code = "hang"
            except Exception as exc:  # an exception escaping main() is a traceback for the user
                escaped = f"{type(exc).__name__}: {str(exc)[:300]}"
                code = "traceback"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        os._exit = old_exit
        os.chdir(old_cwd)
        sys.argv = old_argv
        for s, handler in saved.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(wakeup)
    return {"code": code, "out": out.getvalue(), "err": err.getvalue(), "escaped": escaped,
            "seconds": time.monotonic() - started}


def problems_of(result: dict) -> list[str]:
    """How a run broke the contract (empty if it kept it)."""
    code, out, err = result["code"], result["out"], result["err"]
    found = []
    if code == "hang":
        found.append(f"no exit within {RUN_TIMEOUT:.0f} s")
    elif code == "traceback":
        found.append(f"exception escaped main(): {result['escaped']}")
    elif code not in EXIT_CODES:
        found.append(f"exit code {code!r}")
    if "Traceback" in out or "Traceback" in err:
        found.append("a traceback in the output")
    if code == 2:
        lines = err.strip("\n").split("\n")
        if len(lines) != 1 or not lines[0].startswith("error:"):
            found.append(f"exit 2 with {len(lines)} stderr line(s), not one 'error:' line: {err[:300]!r}")
    return found


def reproducer(argv: list) -> str:
    return shlex.join(["python", "-m", "harness", *map(str, argv)])


class Tally:
    """What the fuzzer did: printed, and written to $FUZZ_REPORT."""

    def __init__(self) -> None:
        self.lines = 0
        self.exit_codes: Counter = Counter()
        self.commands: Counter = Counter()
        self.tracebacks: list[str] = []
        self.hangs: list[str] = []
        self.contract: list[str] = []
        self.jvm_starts = 0
        self.slowest = 0.0
        self.started = time.monotonic()
        self.samples: dict[str, list[str]] = {}  # a few lines per exit code, to see what the vocabulary reaches
        self.distinct: set[tuple] = set()

    def add(self, argv: list[str], result: dict, problems: list[str]) -> None:
        self.lines += 1
        self.distinct.add(tuple(argv))
        self.exit_codes[str(result["code"])] += 1
        self.commands[argv[0] if argv and argv[0] in COMMANDS else "(unknown)"] += 1
        self.slowest = max(self.slowest, result["seconds"])
        sample = self.samples.setdefault(str(result["code"]), [])
        if len(sample) < 5:
            sample.append(reproducer(argv)[:300])
        line = f"{reproducer(argv)!r}: {'; '.join(problems)}"
        if result["code"] == "hang":
            self.hangs.append(line)
        elif result["code"] == "traceback" or any("traceback" in p for p in problems):
            self.tracebacks.append(line)
        elif problems:
            self.contract.append(line)

    def report(self) -> dict:
        return {"profile": PROFILE, "lines": self.lines, "distinct_lines": len(self.distinct), "exit_codes": dict(sorted(self.exit_codes.items())),
                "commands": dict(sorted(self.commands.items())), "tracebacks": len(self.tracebacks),
                "hangs": len(self.hangs), "other_contract_breaks": len(self.contract), "jvm_starts": self.jvm_starts,
                "slowest_line_seconds": round(self.slowest, 2), "wall_seconds": round(time.monotonic() - self.started, 1),
                "failures": (self.tracebacks + self.hangs + self.contract)[:50], "samples": self.samples}


def publish(report: dict, capsys) -> None:
    with capsys.disabled():  # on stderr: a pytest-xdist worker's stdout is its channel to the controller
        print(f"\nfuzz ({report['profile']}): {report['lines']} lines ({report['distinct_lines']} distinct) in {report['wall_seconds']} s, exit codes "
              f"{report['exit_codes']}, tracebacks {report['tracebacks']}, hangs {report['hangs']}, other contract "
              f"breaks {report['other_contract_breaks']}, JVM starts {report['jvm_starts']}, slowest line "
              f"{report['slowest_line_seconds']} s", file=sys.stderr)
    if os.environ.get("FUZZ_REPORT"):
        Path(os.environ["FUZZ_REPORT"]).write_text(json.dumps(report, indent=1) + "\n")


# --------------------------------------------------------------------------------------- tests

# No example database (it would be written into the repository), no health checks (lines are slow by design;
# Hypothesis engine runs nest inside).
_COMMON = dict(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
PROFILES = {"short": settings(derandomize=True, print_blob=False, **_COMMON),
            "long": settings(derandomize=False, print_blob=True, **_COMMON)}


@pytest.mark.slow
def test_fuzz_command_lines(tmp_path, monkeypatch, capsys, read_only):
    tally = Tally()
    jvm: list = []
    block_jvm(monkeypatch, jvm)
    # Hypothesis' own files (its unicode tables, the constants it collects) go to tmp_path too.
    previous_home = vars(hypothesis.configuration).get("__hypothesis_home_directory")
    hypothesis.configuration.set_hypothesis_home_dir(tmp_path / ".hypothesis")
    monkeypatch.chdir(tmp_path)
    numbers = itertools.count()
    fixtures = make_scratch(tmp_path / "fixtures")

    @PROFILES[PROFILE]
    @given(argv=command_lines())
    def fuzz(argv):
        scratch = linked_scratch(tmp_path / f"line{next(numbers)}", fixtures, read_only)
        before = len(jvm)
        result = run_in_process(argv, scratch)
        problems = problems_of(result)
        if len(jvm) > before:
            tally.jvm_starts += 1
            problems.append("tried to start a JVM")
        if any(not entry.name.strip() for entry in scratch.iterdir()):  # `--out ' '` taken as a folder's name
            problems.append("wrote a file or folder named by whitespace")
        tally.add(argv, result, problems)
        shutil.rmtree(scratch, ignore_errors=True)
        assert KEEP_GOING or not problems, (f"{reproducer(argv)}\nargv={argv!r}\nexit {result['code']}: {'; '.join(problems)}\n"
                              f"stderr: {result['err'][-2000:]}\nstdout: {result['out'][-500:]}")

    try:
        fuzz()
    finally:
        hypothesis.configuration.set_hypothesis_home_dir(previous_home)
        report = tally.report()
        publish(report, capsys)
    assert not report["failures"], "\n".join(report["failures"])
    assert report["lines"] >= EXAMPLES
    # The vocabulary reaches every outcome: most lines malformed, some valid and run to a verdict.
    assert report["exit_codes"].get("2", 0) > report["lines"] / 3
    assert report["exit_codes"].get("0", 0) + report["exit_codes"].get("1", 0) + report["exit_codes"].get("3", 0) > 0


# The nastiest lines, as real processes: what a user's shell gets (argv bytes that are not UTF-8
# included; NUL bytes cannot be passed to a process at all).
NASTIEST = [
    ["check", "example", "--set", "replicas=" + "[" * 100_000],
    ["check", "kraft", "--config", "tiny", "--set", "replicas=[1,2,99999999999999999999]"],
    ["check", "example", "--set", "brokers=" + "9" * 5000],
    ["check", "example", "--set", "brokers=\u0663", "--set", "max_records=1"],
    ["check", "kraft", "--config", "tiny", "--set", "targets=" + json.dumps([[1, 2]] * 65)],
    ["check", "example", "--engine", "spark", "--master", "spark://256.1.1.1:99999", "--checkpoint", "ck"],
    ["check", "example", "--engine", "spark", "--master", "spark://[::1", "--checkpoint", "ck"],
    ["check", "example", "--max-states", "9" * 5000, "--time-limit", "nan"],
    ["check", b"\xff\xfe".decode("utf-8", "surrogateescape"), "--out", "out"],
    ["check", "example", "--mutation", "x" * 100_000],
    ["replay", "deep.itf.json"],
    ["show", "bigint.itf.json"],
    ["replay", "edited.itf.json"],
    ["corpus", "--out", "corpus", "--spec", "example", "--spec", "bogus\n"],
    ["\u202echeck", "--"],
    ["check", "example", "--config", "ci", "--max-states", "200", "--time-limit", "2", "--out", "out", "--json"],
]


@pytest.mark.parametrize("argv", NASTIEST, ids=range(len(NASTIEST)))
def test_nastiest_lines_end_to_end(tmp_path, argv):
    scratch = make_scratch(tmp_path / "scratch")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "harness", *[os.fsencode(a) for a in argv]], capture_output=True,
                       cwd=scratch, env=env, stdin=subprocess.DEVNULL, timeout=PROCESS_TIMEOUT)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    result = {"code": p.returncode, "out": out, "err": err, "escaped": None, "seconds": time.monotonic() - started}
    assert not problems_of(result), f"{reproducer(argv)}: exit {p.returncode}\n{err[-2000:]}"


# Lines that write, as processes on a hostile disk: under a file-size limit (RLIMIT_FSIZE, set in the child;
# Python ignores SIGXFSZ, so a write past it is an EFBIG error) and into the read-only folder. Each must end in
# one line naming its folder, exit 2, and leave no temporary file.
WRITING = [
    ["check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out", "out"],
    ["corpus", "--spec", "example", "--out", "out"],
    ["graph", "example", "--out", "out"],
    ["prove", "kraft", "--mutation", "keep_removing_in_isr", "--property", "IsrSubsetOfReplicas", "--brokers", "1",
     "--depth", "1", "--out", "out"],
    ["check", "example", "--engine", "spark", "--master", "local[1]", "--checkpoint-every", "0", "--checkpoint", "out"],
]


@pytest.mark.parametrize("disk", ["file-size limit", "read-only folder"])
@pytest.mark.parametrize("argv", WRITING, ids=[" ".join(a[:2]) + (" spark" if "spark" in a else "") for a in WRITING])
def test_writing_lines_on_a_hostile_disk_end_to_end(tmp_path, read_only, argv, disk):
    scratch = make_scratch(tmp_path / "scratch")
    if disk == "read-only folder":
        if not os.statvfs(read_only).f_flag & os.ST_RDONLY:
            pytest.skip("no read-only mount here (the sandbox refused a tmpfs), and root writes through mode bits")
        (scratch / "ro").symlink_to(read_only)
        argv = argv[:-1] + ["ro/out"]
    limit = 1024 if disk == "file-size limit" else None  # bytes: less than any trace, graph, CTI or parquet part
    p = subprocess.run([sys.executable, "-m", "harness", *argv], capture_output=True, cwd=scratch, timeout=PROCESS_TIMEOUT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), stdin=subprocess.DEVNULL,
                       preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))) if limit else None)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    result = {"code": p.returncode, "out": out, "err": err, "escaped": None, "seconds": 0.0}
    assert p.returncode == 2 and not problems_of(result), f"{reproducer(argv)}: exit {p.returncode}\n{err[-2000:]}"
    assert "out" in err and not [f for f in scratch.rglob("*") if ".tmp" in f.name], err


# The config layer on its own (what `--config`, `--set`, `--variant` and `--mutation` reach): any text
# gives a config that binds at once, or BadInput with one short line. Thousands of cases a second.
SETTING_TEXT = st.one_of(st.sampled_from(NASTY), st.text(max_size=30),
                         st.text(alphabet="[]0123456789,-+ e.", max_size=30))


@st.composite
def config_requests(draw):
    spec = draw(st.sampled_from(sorted(SPECS)))
    keys = st.sampled_from(sorted(SPECS[spec].config_fields) + SET_KEYS)
    values = st.one_of(st.sampled_from([v for k in SPECS[spec].config_fields for v in SET_VALUES.get(k, [])]),
                       SETTING_TEXT)
    settings_ = draw(st.lists(st.one_of(st.builds(lambda k, v: f"{k}={v}", keys, values), SETTING_TEXT), max_size=4))
    variants = draw(st.lists(st.one_of(st.sampled_from(VARIANTS), SETTING_TEXT), max_size=2))
    preset = draw(st.one_of(st.none(), st.sampled_from(PRESETS), SETTING_TEXT))
    mutation = draw(st.one_of(st.none(), st.sampled_from(MUTATIONS), SETTING_TEXT))
    return spec, preset, settings_, variants, mutation


@settings(max_examples={"short": 400, "long": 5000}[PROFILE], derandomize=PROFILE == "short", deadline=None,
          database=None, suppress_health_check=list(HealthCheck))
@given(config_requests())
def test_fuzz_config_resolution(request):
    from harness.errors import BadInput
    from harness.model import config_to_dict

    spec, preset, settings_, variants, mutation = request
    try:
        cfg = SPECS[spec].config(preset, settings_, variants, mutation)
    except BadInput as exc:
        message = str(exc)
        assert message and len(message) < 400 and not any(c in message for c in "\n\r\x00"), message
        return
    assert SPECS[spec].config_from_dict(config_to_dict(cfg)) == cfg  # a trace of it would be read back
    assert SPECS[spec].bind(cfg).init_states()  # binds (no timed assertion: this VM's speed varies)


@pytest.mark.parametrize("argv", [["check", "example", "--out", "out\0x"], ["explore", "example", "--out", "out\0x"],
                                  ["corpus", "--spec", "example", "--out", "c\0"], ["graph", "example", "--out", "g\0"],
                                  ["prove", "kraft", "--out", "c\0"],
                                  ["check", "example", "--engine", "spark", "--checkpoint", "ck\0"]])
def test_a_nul_in_a_folder_option_is_a_usage_error(tmp_path, monkeypatch, argv):
    """Found by the fuzzer: click's Path type stats the value, and a NUL makes that a ValueError. Only an
    in-process caller can pass one (a process's argv cannot hold it), but the contract is the same."""
    block_jvm(monkeypatch, [])
    result = run_in_process(argv, make_scratch(tmp_path / "scratch"))
    assert result["code"] == 2 and result["escaped"] is None and "NUL" in result["err"], result
    assert len(result["err"].strip().splitlines()) == 1
