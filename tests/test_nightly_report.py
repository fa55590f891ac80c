"""The nightly job's report (ci/nightly.py, ci/report.py): seeds from the date, a failure on a liveness
property the spec does not declare, and the page itself, rendered in headless Chromium (Debian's
package, which `make test` installs) and checked from its DOM and a screenshot."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))  # the Makefile passes its own
# Chromium as root, offline: no sandbox, and none of the background connections a closed network refuses.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def nightly(reports: Path, *args: str) -> tuple[int, dict, Path]:
    # Checkpoints of its own: xdist may run this module's fixture on both workers at once.
    p = subprocess.run([sys.executable, "ci/nightly.py", "--quick", "--reports", str(reports),
                        "--checkpoints", str(reports.with_name(reports.name + "-checkpoints")), *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    folder = max(reports.glob("*"), key=lambda f: f.stat().st_mtime)
    assert (folder / "summary.json").exists(), p.stderr[-2000:]
    return p.returncode, json.loads((folder / "summary.json").read_text()), folder


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Two quiet nights a day apart on `example`, then a night where zk's completion rule is broken."""
    root = tmp_path_factory.mktemp("reports")
    first = nightly(root, "--spec", "example", "--date", "2026-11-20")
    second = nightly(root, "--spec", "example", "--date", "2026-11-21")
    broken = nightly(root, "--spec", "zk", "--protocol-change", "zk:completion_literal", "--date", "2026-11-22")
    return first, second, broken


@pytest.mark.nightly  # two quick nights (20 s) for this fixture
def test_two_nights_a_day_apart_use_different_recorded_seeds(reports):
    (code1, s1, f1), (code2, s2, f2), _ = reports
    assert code1 == code2 == 0 and s1["outcome"] == s2["outcome"] == "ok"
    assert (s1["seed"], s2["seed"]) == (20261120, 20261121)
    assert s1["models"]["example"]["hypothesis"]["seed"] == 20261120
    assert s2["models"]["example"]["hypothesis"]["seed"] == 20261121
    assert "Hypothesis seed</th><td>20261121" in (f2 / "report.html").read_text()


@pytest.mark.nightly
def test_a_liveness_failure_the_spec_does_not_declare_fails_the_night(reports):
    code, summary, folder = reports[2]
    assert code == 1 and summary["outcome"] == "failed"
    assert "zk/liveness liveness ReassignmentCompletes: NEW failure" in summary["failures"]  # its liveness preset
    [trace] = [t["file"] for t in summary["models"]["zk"]["liveness"]["violations"]]
    assert (folder / trace).exists()
    assert "ReassignmentCompletes" in (folder / "summary.md").read_text()


def test_a_night_whose_checkpoint_another_night_holds_stops_in_one_line_and_touches_nothing(tmp_path):
    import fcntl

    held = tmp_path / "checkpoints" / "nightly-example-tiny"
    held.mkdir(parents=True)
    (held / "checkpoint.json").write_text("{}")  # unreadable to this night, which must say "in use" first
    fd = os.open(held, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as the other night's driver does
        p = subprocess.run([sys.executable, "ci/nightly.py", "--quick", "--spec", "example", "--reports",
                            str(tmp_path / "reports"), "--checkpoints", str(tmp_path / "checkpoints")],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    finally:
        os.close(fd)
    errors = [line for line in p.stderr.splitlines() if line.startswith("error")]
    assert p.returncode == 2 and len(errors) == 1 and "in use by another run" in errors[0], p.stderr[-2000:]
    assert "Traceback" not in p.stderr and os.listdir(held) == ["checkpoint.json"]


def browser():
    if not CHROMIUM.exists():
        pytest.fail("Chromium is missing: `make test` installs Debian's package (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    return sync_playwright()


@pytest.mark.slow
def test_the_nightly_runs_the_checkpoint_editing_fuzzer_and_reports_its_counts(tmp_path, monkeypatch):
    """The night's fuzzers include the edited-manifest cases of tests/test_checkpoint.py, and their counts reach
    the report: the nightly's own runner, at the short profile and for that fuzzer alone."""
    monkeypatch.syspath_prepend(str(ROOT / "ci"))
    import nightly

    out = nightly.run_fuzzer("checkpoints", nightly.FUZZERS["checkpoints"], tmp_path, profile="short",
                             select="edited_manifests")
    counts = out["counts"]
    assert out["passed"] and counts["profile"] == "short" and counts["edited"] > 0, out
    assert counts["edits_refused"] + counts["edits_resumed_unchanged"] + counts["edits_no_op"] == counts["edited"]
    assert counts["edits_refused"] > counts["edited"] / 2  # most edits are caught, not harmless


@pytest.mark.nightly  # the fixture's three nights (about 20 s): with the nightly's own tests, not make test's
def test_the_report_in_chromium_shows_matrix_links_plots_and_the_trend(reports, tmp_path):
    _, (_, _, quiet), (_, _, broken) = reports
    with browser() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = chromium.new_page(viewport={"width": 1200, "height": 900})
        page.goto((broken / "report.html").as_uri())
        assert page.locator("#outcome").inner_text() == "failed"
        cell = page.locator('#matrix tr[data-model="zk"][data-property="ReassignmentCompletes"] td[data-engine="graph"]')
        assert cell.get_attribute("class") == "violated"
        href = cell.locator("a.trace").get_attribute("href")
        assert (broken / href).exists() and f"python -m harness replay {broken}/{href}" in cell.inner_text()
        assert page.locator('#matrix td.holds').count() > 0
        assert page.locator("figure.states-per-depth svg rect").count() > 3  # a bar per depth, with axes
        assert page.locator("figure.states-per-depth svg line").count() == 2
        assert "commit" in page.locator("#provenance").inner_text()
        shot = tmp_path / "broken.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        page.goto((quiet / "report.html").as_uri())
        assert page.locator("#outcome").inner_text() == "ok"
        assert page.locator("#model-example table.trend-table tr").count() == 3  # header + two nights
        assert page.locator("#model-example figure.trend svg polyline").count() == 1
        chromium.close()


def test_the_report_lists_each_models_liveness_preset_verdicts_and_the_source_of_a_declared_failure(tmp_path):
    """The liveness section of report.html and summary.md, rendered from a night's summary (no search needed)."""
    sys.path.insert(0, str(ROOT / "ci"))
    import report

    why = "an offline partition (KIP-966, Eligible Leader Replicas: unclean recovery)"
    live = {"preset": "liveness", "states": 61036, "transitions": 222055, "seconds": 8.6, "violations": [],
            "verdicts": {"ReassignmentCompletes": "expected failure", "StrayReplicasDeleted": "holds"},
            "declared": {"ReassignmentCompletes": why}}
    model = {"invariants": [], "liveness": live, "spark": {"preset": "ci", "outcome": "ok", "distinct": 1, "depth": 0,
             "seconds": 1, "states_per_depth": [1], "coverage": {}, "violations": []},
             "hypothesis": {"preset": "ci", "outcome": "ok", "runs": 1, "seed": 1, "seconds": 1, "violations": []}}
    summary = {"date": "2026-11-27", "outcome": "ok", "seed": 1, "folder": str(tmp_path), "failures": [],
               "provenance": {"commit": "x"}, "models": {"kraft": model}, "configs": {}}
    report.render(tmp_path, summary, [])
    html = (tmp_path / "report.html").read_text()
    assert 'class="liveness" data-preset="liveness"' in html and "61,036 states, 222,055 transitions" in html
    assert f'<tr data-property="ReassignmentCompletes"><td>ReassignmentCompletes</td><td>expected failure</td><td>{why}' in html
    assert '<tr data-property="StrayReplicasDeleted"><td>StrayReplicasDeleted</td><td>holds</td><td></td>' in html
    md = (tmp_path / "summary.md").read_text()
    assert f"- kraft at `liveness`: ReassignmentCompletes expected failure ({why}); StrayReplicasDeleted holds" in md


def test_the_report_has_a_conformance_row_per_kafka_version_and_an_undeclared_divergence_fails_the_night(tmp_path):
    """The conformance section of report.html and summary.md, rendered from a night's summary (no search needed)."""
    sys.path.insert(0, str(ROOT / "ci"))
    import nightly
    import report

    ok = {"preset": "ci", "exit": 0, "outcome": "conformant", "seconds": 274.0, "by_class": {"abstraction": 5236},
          "variant": {"completion": "kafka", "elr": True, "unclean": False},
          "stats": {"transitions_compared": 4451336, "not_compared": 0}, "declared": {"new-leader-elected": 5236},
          "divergence": None, "not_reproduced": None}
    broken = dict(ok, exit=1, outcome="divergence", divergence={"classification": "unclassified", "trace": "t.itf.json"})
    summary = {"date": "2026-11-27", "outcome": "ok", "seed": 1, "folder": str(tmp_path), "failures": [],
               "provenance": {"commit": "x"}, "models": {}, "configs": {}, "fuzz": {},
               "conformance": {"4.0.0": ok, "9.0.0": broken}}
    report.render(tmp_path, summary, [])
    html = (tmp_path / "report.html").read_text()
    assert '<tr data-kafka="4.0.0"><td>4.0.0</td><td>completion=kafka</td><td>ci</td><td>conformant</td><td>4,451,336</td><td>0</td>' \
           '<td>new-leader-elected 5236</td><td>274.0</td></tr>' in html
    md = (tmp_path / "summary.md").read_text()
    assert "| 4.0.0 | completion=kafka | ci | conformant | 4,451,336 | 0 | new-leader-elected 5,236 | 274.0 |" in md
    assert nightly.failures_of(summary) == ["kraft vs Kafka 9.0.0: unclassified (t.itf.json)"]
