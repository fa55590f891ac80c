"""`check`'s options and engines: an option an engine does not take is refused (one line, exit 2), the
docs' table is the code's, a search stopped by a limit exits 3 and says which, results go to stdout and
progress to stderr, as plain lines with figures that make sense when stderr is not a terminal."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import cli as harness_cli
from conftest import ROOT, run_cli

# A valid value for each engine-specific option (flags take none).
VALUES = {"seed": ["--seed", "1"], "exact": ["--exact"], "no_deadlock": ["--no-deadlock"],
          "max_states": ["--max-states", "10"], "max_depth": ["--max-depth", "2"], "time_limit": ["--time-limit", "5"],
          "keep_going": ["--continue"], "check_reads": ["--check-reads"], "view_keep": ["--view-keep", "first"],
          "symmetry": ["--symmetry"], "frontier_memory": ["--frontier-memory", "1000000"],
          "frontier_dir": ["--frontier-dir", "."], "profile": ["--profile", "ci"],
          "examples": ["--examples", "2"], "steps": ["--steps", "2"], "master": ["--master", "local[1]"],
          "partitions": ["--partitions", "2"], "checkpoint": ["--checkpoint", "ck"], "resume": ["--resume"],
          "spark_levels_only": ["--every-level-on-spark"], "executor_wait": ["--executor-wait", "5"],
          "checkpoint_every": ["--checkpoint-every", "0"],
          "depth": ["--depth", "3"], "solver_timeout": ["--solver-timeout", "5"]}


def test_every_engine_specific_option_has_a_value_here_and_a_tag_in_help():
    assert set(VALUES) == set(harness_cli.ENGINE_OPTIONS)
    text = " ".join(CliRunner().invoke(harness_cli.cli, ["check", "--help"], terminal_width=200).output.split())
    for param, engines in harness_cli.ENGINE_OPTIONS.items():
        flag = VALUES[param][0]
        assert re.search(re.escape(flag) + r"\b[^[]*\[" + re.escape(", ".join(engines)) + r"\]", text), flag


@pytest.mark.parametrize("param,engine", [(p, e) for p, takes in harness_cli.ENGINE_OPTIONS.items()
                                          for e in harness_cli.ENGINES if e not in takes])
def test_an_option_of_other_engines_is_refused_in_one_line(param, engine):
    result = CliRunner().invoke(harness_cli.cli, ["check", "example", "--engine", engine, *VALUES[param]])
    assert result.exit_code != 0 and isinstance(result.exception, harness_cli.BadInput)
    message = str(result.exception)
    assert VALUES[param][0] in message and all(e in message for e in harness_cli.ENGINE_OPTIONS[param])


def test_the_docs_table_is_the_codes():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    table = text[text.index("| `check` option |"):].split("\n\n")[0].splitlines()
    engines = [c.strip() for c in table[0].strip("|").split("|")[1:]]
    assert engines == list(harness_cli.ENGINES)
    documented = {}
    for row in table[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        flag = cells[0].strip("`").split()[0]
        documented[flag] = tuple(e for e, c in zip(engines, cells[1:]) if c == "used")
        assert all(c in ("used", "refused") for c in cells[1:]), row
    assert documented == {VALUES[p][0]: takes for p, takes in harness_cli.ENGINE_OPTIONS.items()}


def test_a_time_limit_exits_3_naming_it_with_plain_progress_lines(tmp_path):
    code, out, err = run_cli("check", "kraft", "--config", "ci", "--time-limit", "5", "--progress-every", "1",
                             "--out", tmp_path)
    assert code == 3 and "stopped at --time-limit" in out and "never fired" not in out + err
    lines = [line for line in err.splitlines() if line.startswith("progress: ")]
    assert len(lines) >= 2, err
    for line in lines:
        figures = [int(x.replace(",", "")) for x in re.findall(r"-?[\d,]+(?= (?:distinct|generated|states/s))|"
                                                               r"(?<=depth )-?\d+|(?<=frontier )-?[\d,]+", line)]
        assert len(figures) == 5 and all(f >= 0 for f in figures), line
    assert "frontier 0 " not in lines[0]  # a level in progress has states waiting


def test_results_on_stdout_with_every_variant_in_the_header(tmp_path):
    code, out, err = run_cli("check", "kraft", "--config", "tiny", "--quiet", "--out", tmp_path)
    assert code == 0 and all(line.startswith("warning: ") for line in err.splitlines())  # diagnostics only
    assert "kraft config=tiny variants: completion=seed elr=true unclean=false mutation=none engine=bfs" in out
    assert "no violation" in out


def test_preset_and_config_mean_the_same_in_json_and_in_trace_metadata(tmp_path):
    import json

    code, out, _ = run_cli("check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--json",
                           "--out", tmp_path)
    assert code == 1
    summary = json.loads(out)
    meta = json.loads(Path(summary["violations"][0]["trace"]).read_text())["#meta"]
    assert summary["preset"] == meta["preset"] == "ci"
    assert summary["config"] == meta["config"] and summary["config"]["brokers"] == 3
