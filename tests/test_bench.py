"""`make bench` compares each case with its previous recorded figure (bench/results/) and flags one whose
time per unit of work grew by more than 5%. The inputs are results as the benchmarks record them (the
figures of bench/results/ at 2026-11-27, then changed); nothing here is timed."""

import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bfs_bench  # noqa: E402
import hypothesis_bench  # noqa: E402
import runner  # noqa: E402
import spark_bench  # noqa: E402


def bfs_record(case, exact, rate, distinct):
    return {"case": case, "exact": exact, "distinct": distinct, "generated": 4 * distinct, "depth": 32,
            "seconds": round(distinct / rate, 3), "states_per_second": rate, "bytes_per_state": 174,
            "visited_bytes_per_state": 26.2, "complete": True, "violations": [],
            "states_per_second_range": [rate - 100, rate + 100]}


RECORDED_BFS = [bfs_record("kraft/ci", False, 40493, 669562), bfs_record("kraft/ci", True, 38019, 669562),
                bfs_record("kip642/ci", False, 36561, 1281701), bfs_record("replication/fence", False, 20891, 2367225)]


def lines_by_case(lines):
    return {line.split(":")[0]: line for line in lines}


def test_a_bfs_case_more_than_5_percent_slower_is_flagged_and_the_others_are_not():
    now = [bfs_record("kraft/ci", False, 34145, 634208),  # 18.6% more time per state, and another search
           bfs_record("kraft/ci", True, 36400, 669562),  # 4.4% more: within the VM's drift
           bfs_record("kip642/ci", False, 38000, 1281701),  # faster
           {"case": "replication/fence", "exact": False, "error": "MemoryError"},  # failed: nothing to compare
           bfs_record("zk/ci", False, 50000, 1000)]  # new case
    lines = lines_by_case(runner.compare(bfs_bench.figures(RECORDED_BFS), bfs_bench.figures(now)))
    assert set(lines) == {"kraft/ci fp64", "kraft/ci exact", "kip642/ci fp64", "zk/ci fp64"}
    assert lines["kraft/ci fp64"] == ("kraft/ci fp64: 34,145 states/s against 40,493 recorded: SLOWER by 18.6% "
                                      "(more than 5%) (not the same search: 669,562 -> 634,208)")
    assert lines["kraft/ci exact"] == ("kraft/ci exact: 36,400 states/s against 38,019 recorded: slower by 4.4%, "
                                       "within 5%")
    assert lines["kip642/ci fp64"] == "kip642/ci fp64: 38,000 states/s against 36,561 recorded: faster by 3.8%"
    assert lines["zk/ci fp64"] == "zk/ci fp64: 50,000 states/s, no recorded figure to compare with"
    assert [case for case, line in lines.items() if "SLOWER" in line] == ["kraft/ci fp64"]


@pytest.mark.parametrize("rate, flagged", [(40000, False), (38565, False), (38564, True)])
def test_the_threshold_is_5_percent_more_time_per_state(rate, flagged):
    # 40,493 / 38,565 = 1.049994: within; 40,493 / 38,564 = 1.050021: flagged
    now = [bfs_record("kraft/ci", False, rate, 669562)]
    [line] = runner.compare(bfs_bench.figures(RECORDED_BFS[:1]), bfs_bench.figures(now))
    assert ("SLOWER" in line) == flagged, line


def spark_case(walls):
    runs = {mode: [{"wall": wall, "distinct": 669562}] for mode, wall in walls.items()}
    return {"date": "2026-11-27", **{mode: {"median_wall": wall, "walls": [wall], "runs": runs[mode]}
                                     for mode, wall in walls.items()}}


def test_a_spark_mode_whose_wall_time_grew_by_more_than_5_percent_is_flagged():
    before = {"kraft/ci": spark_case({"bfs": 15.81, "local[2]": 12.31, "standalone 2x1": 14.83}),
              "empty levels": {"wall": 9.0}}
    now = {"kraft/ci": spark_case({"bfs": 15.0, "local[2]": 13.0, "standalone 2x1": 15.5}),
           "replication/fence": spark_case({"bfs": 110.0})}
    lines = lines_by_case(runner.compare(spark_bench.figures(before), spark_bench.figures(now, ["kraft/ci"])))
    assert lines == {
        "kraft/ci bfs": "kraft/ci bfs: 15.0 s against 15.81 recorded: faster by 5.1%",
        "kraft/ci local[2]": "kraft/ci local[2]: 13.0 s against 12.31 recorded: SLOWER by 5.6% (more than 5%)",
        "kraft/ci standalone 2x1": "kraft/ci standalone 2x1: 15.5 s against 14.83 recorded: slower by 4.5%, within 5%"}


def test_a_hypothesis_case_is_compared_by_steps_per_second():
    record = {"case": "kraft/large", "runs": 300, "seconds": 10.603, "steps": 32435, "outcome": "ok",
              "steps_per_second": 3059}
    [line] = runner.compare(hypothesis_bench.figures([record]),
                            hypothesis_bench.figures([{**record, "steps_per_second": 2800}]))
    assert line == "kraft/large: 2,800 steps/s against 3,059 recorded: SLOWER by 9.3% (more than 5%)"


def test_no_recorded_results_compare_as_new_cases(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "RESULTS", tmp_path)
    assert runner.recorded("bfs.json") is None and bfs_bench.figures(runner.recorded("bfs.json")) == {}
    assert spark_bench.figures(None) == {} and hypothesis_bench.figures(None) == {}
