"""BFS with its levels on disk (harness/frontier.py, `check --frontier-memory`): a budget too small for any level
spills every chunk, and the search's counts, per-depth counts, coverage and traces are BFS's in memory; its
folder is its own, made fresh and removed at the end, on an error or an interrupt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from harness.engines import bfs
from harness.frontier import FrontierFiles
from harness.registry import load_spec
from harness.replay import replay
from harness.trace import read_trace, write_trace


def _same_search(spec_name, preset, tmp_path, settings=(), mutation=None, symmetry=False, **options):
    work = tmp_path / "work"
    work.mkdir()
    spec = load_spec(spec_name)
    model = spec.bind(spec.config(preset, settings, mutation=mutation), symmetry=symmetry)
    memory = bfs.explore(model, **options)
    spilled = bfs.explore(model, frontier_memory=1, frontier_dir=str(work), **options)
    assert spilled.stats["frontier_spilled_states"] > 0  # the budget forced levels to disk
    for key in ("distinct", "generated", "depth", "states_per_depth"):
        assert spilled.stats[key] == memory.stats[key], key
    assert spilled.coverage == memory.coverage
    assert [(v.outcome, v.states, v.actions) for v in spilled.violations] == \
           [(v.outcome, v.states, v.actions) for v in memory.violations]
    for i, v in enumerate(spilled.violations):
        path = write_trace(tmp_path / f"{i}.itf.json", model, v.states, v.actions, v.outcome, "bfs")
        assert replay(read_trace(path)).ok
    assert list(work.iterdir()) == []  # its folder is gone
    return memory, spilled


def test_a_tiny_budget_gives_the_exact_counts_of_an_exhausted_search(tmp_path):
    memory, _ = _same_search("kraft", "tiny-fence", tmp_path)
    assert memory.complete and memory.stats["distinct"] > 2_000


def test_a_tiny_budget_gives_the_same_traces(tmp_path):
    memory, _ = _same_search("kraft", "small", tmp_path, mutation="expand_below_hwm")  # 12,759 states to depth 10
    assert memory.violations


def test_spilling_under_a_view_keeps_the_same_representatives(tmp_path):
    """Replication's view: a state found again in its level may replace a kept one already on disk."""
    memory, _ = _same_search("replication", "fence", tmp_path, mutation="ap_ignores_partition_epoch")
    assert memory.violations


def test_spilling_with_symmetry(tmp_path):
    _same_search("kraft", "tiny-fence", tmp_path, settings=["brokers=5"], symmetry=True)


def test_the_folder_goes_on_an_interrupt_and_nothing_else_is_touched(tmp_path):
    spec = load_spec("kraft")
    model = spec.bind(spec.config("tiny-fence", ["brokers=5"]))  # 6,428 states: progress is asked at 4,096
    mine = tmp_path / "user-file"
    mine.write_text("kept")
    seen = []

    def interrupt(figures):
        seen.extend(list(p.iterdir()) for p in tmp_path.iterdir() if p.name.startswith("harness-frontier-"))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bfs.explore(model, frontier_memory=1, frontier_dir=str(tmp_path), progress=interrupt)
    assert len(seen) == 1 and seen[0]  # its folder held chunks when the interrupt came
    assert sorted(p.name for p in tmp_path.iterdir()) == ["user-file"] and mine.read_text() == "kept"


def test_the_command_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "harness", "check", "kraft", "--config", "tiny-fence", "--quiet",
                          "--frontier-memory", "1", "--frontier-dir", str(tmp_path), "--json"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert '"frontier_spilled_states"' in run.stdout and list(tmp_path.iterdir()) == []
    missing = subprocess.run([sys.executable, "-m", "harness", "check", "kraft", "--config", "tiny", "--quiet",
                              "--frontier-memory", "1000", "--frontier-dir", str(tmp_path / "absent")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and len(missing.stderr.splitlines()) == 1
    assert not (tmp_path / "absent").exists()


def test_a_level_read_in_order_leaves_no_file_behind(tmp_path):
    """Each chunk's file goes once the level's reading is past it, the last one as well (it stayed until
    the search ended: one chunk per level on disk)."""
    spec = load_spec("kraft")
    model = spec.bind(spec.config("tiny"))
    with FrontierFiles(model, 1, str(tmp_path), batch=4) as files:
        level = files.level()
        states = list(model.init_states()) * 1030  # chunks are sized on the first 512 states: then 4 each
        for s in states:
            level.append(s)
        assert files.chunk == 4 and level.on_disk == 1028 and len(os.listdir(files.folder)) == 257
        read = [s for at in range(0, len(level), 4) for s in level[at:at + 4]]
        assert read == states and os.listdir(files.folder) == []


STUCK = """
import sys, time
from harness import cli, interrupt
from harness.frontier import FrontierFiles
from harness.registry import load_spec
spec = load_spec("kraft")
model = spec.bind(spec.config("tiny"))
interrupt.install(last_resort=cli._interrupted)
with FrontierFiles(model, 1, sys.argv[1]) as files:
    files.write(list(model.init_states()))
    try:
        print(files.folder, flush=True)
        time.sleep(600)
    except BaseException:  # the signal's exception is lost, as in a __del__ or a gc callback
        time.sleep(600)
"""


def test_the_last_resort_removes_the_folder_too(tmp_path):
    """A signal whose exception never unwinds the main thread (lost, or a main thread stuck in a C call) ends
    the process from the interrupt watcher, which unwinds nothing: the work folder is removed there as well."""
    run = subprocess.Popen([sys.executable, "-c", STUCK, str(tmp_path)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        folder = run.stdout.readline().strip()
        assert os.path.isdir(folder) and os.listdir(folder)
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 130 and err.startswith("interrupted by SIGINT: no verdict")
    assert list(tmp_path.iterdir()) == []
