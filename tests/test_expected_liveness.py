"""Expected liveness failures: a spec declares where a liveness property fails on the correct protocol;
the corpus keeps the lasso, the gate fails when it no longer reproduces or when a property fails where
nothing declares it, and the graph engine's summary says which failures are expected."""

import importlib.util
from pathlib import Path

import pytest

from harness.corpus import REGRESSIONS, cases, liveness_verdicts
from harness.engines import graph
from harness.registry import load_spec

ROOT = Path(__file__).resolve().parent.parent


def gate_module():
    spec = importlib.util.spec_from_file_location("gate_under_test", ROOT / "ci" / "gate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kraft_declares_the_leaderless_partition_and_the_corpus_keeps_its_lasso():
    kraft = load_spec("kraft")
    declared = {(c.preset, c.liveness) for c in cases(kraft) if c.liveness}
    assert declared == {("leaderless", "ReassignmentCompletes"), ("leaderless", "CompletesUnlessTargetGone"),
                        ("gone-target", "ReassignmentCompletes"), ("liveness", "ReassignmentCompletes"),
                        ("liveness", "CompletesUnlessTargetGone")}
    case = next(c for c in cases(kraft) if (c.preset, c.liveness) == ("leaderless", "ReassignmentCompletes"))
    model = kraft.bind(kraft.config("leaderless"))
    result, _ = graph.explore(model, properties=["ReassignmentCompletes"], check_safety=False)
    assert case.found(model, result) and result.violations[0].depth == 7
    assert liveness_verdicts(kraft, "leaderless", result.stats["liveness"]) == {
        "ReassignmentCompletes": "expected failure"}
    assert (ROOT / "counterexamples" / "kraft-leaderless-ReassignmentCompletes.itf.json").exists()


def test_the_gate_fails_when_an_expected_liveness_failure_no_longer_reproduces(monkeypatch):
    """The leaderless config with both replicas in sync: the unclean shutdown of one leaves the other to
    lead, the reassignment completes, and the declared failure is gone."""
    gate = gate_module()
    kraft = load_spec("kraft")
    monkeypatch.setattr(gate, "all_cases", lambda names: [c for c in cases(kraft) if c.preset == "leaderless"])
    monkeypatch.setitem(kraft.presets, "leaderless", dict(kraft.presets["leaderless"], isr=[1, 2]))
    failures: list[str] = []
    gate.mutation_adequacy(["kraft"], failures)
    assert failures == ["kraft/leaderless ReassignmentCompletes: expected violation NOT found",
                        "kraft/leaderless CompletesUnlessTargetGone: expected violation NOT found"]


def test_the_gate_fails_on_a_new_liveness_failure(monkeypatch):
    """kip642's failure under KIP-642's own vote rule, put at its liveness preset, undeclared, is a new failure;
    declared, it is expected."""
    gate = gate_module()
    kip642 = load_spec("kip642")
    monkeypatch.setitem(kip642.presets, "liveness", kip642.presets["literal-votes"])
    monkeypatch.setattr(kip642, "expected_liveness", {("liveness", "ReassignmentCompletes"): "KIP-642's vote rule"})
    failures: list[str] = []
    gate.liveness_step(["kip642"], failures)
    assert failures == []
    monkeypatch.setattr(kip642, "expected_liveness", {})
    gate.liveness_step(["kip642"], failures)
    assert failures == ["kip642/liveness liveness ReassignmentCompletes: NEW failure"]


def test_declaring_an_unknown_property_or_preset_is_refused():
    kraft = load_spec("kraft")
    with pytest.raises(ValueError):
        kraft.expect_liveness_failure("leaderless", "NoSuchProperty", "why")
    with pytest.raises(ValueError):
        kraft.expect_liveness_failure("no-such-preset", "ReassignmentCompletes", "why")


def test_a_declaration_applies_to_its_preset_only():
    """leaderless with ELR off is another protocol: there the reassignment completes, and nothing says
    the declared failure vanished."""
    kraft = load_spec("kraft")
    assert set(kraft.expected_liveness_failures(kraft.config("leaderless"))) == {
        "ReassignmentCompletes", "CompletesUnlessTargetGone"}
    assert kraft.expected_liveness_failures(kraft.config("leaderless", variants=["elr=false"])) == {}
    assert kraft.expected_liveness_failures(kraft.config("tiny")) == {}


def test_the_graph_summary_names_an_expected_failure(tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "harness", "check", "kraft", "--config", "leaderless", "--engine",
                        "graph", "--quiet", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 1
    assert "liveness ReassignmentCompletes: FAILS (lasso of 7 steps, loop at 7) - an expected failure here" in \
        " ".join(p.stdout.split())


@pytest.mark.parametrize("name, variants", [("kraft", ()), ("kraft", ("completion=kafka",)), ("kip642", ()),
                                            ("replication", ())])
def test_at_the_liveness_preset_every_rule_fires_and_no_failure_is_undeclared(name, variants):
    """The preset the gate and the nightly job check liveness at: the graph engine's per-rule coverage has every
    rule of the spec (for these variants) firing, and each property holds or fails where the spec declares it."""
    spec = load_spec(name)
    model = spec.bind(spec.config("liveness", variants=variants))
    result, _ = graph.explore(model, check_safety=True)
    assert set(result.coverage) == {r.name for r in spec.rules if r.applies is None or r.applies(model.config)}
    assert result.never_fired() == [] and not result.warnings
    if not variants:  # kraft's kafka variant loses a record here: MinISR 1 and one unclean shutdown (see the docs)
        assert [v.outcome.property for v in result.violations if v.outcome.kind != "liveness"] == []
        verdicts = liveness_verdicts(spec, "liveness", result.stats["liveness"])
        assert not [p for p, v in verdicts.items() if v in REGRESSIONS], verdicts
        assert all(len(why) > 40 for (preset, _), why in spec.expected_liveness.items() if preset == "liveness")


def test_the_gate_lists_a_committed_trace_the_spec_no_longer_reads(monkeypatch, tmp_path):
    """A committed trace whose config no longer matches its spec (a field added, a digest edited) is a listed
    failure of the corpus replay, not a traceback that ends the gate."""
    gate = gate_module()
    source = ROOT / "counterexamples" / "example-ci-hwm_ignores_isr-CommittedOnIsr.itf.json"
    (tmp_path / "counterexamples").mkdir()
    good = tmp_path / "counterexamples" / source.name
    good.write_text(source.read_text())
    stale = tmp_path / "counterexamples" / "example-stale.itf.json"
    stale.write_text(source.read_text().replace('"config_digest": "', '"config_digest": "0', 1))
    monkeypatch.setattr(gate, "ROOT", tmp_path)
    failures: list[str] = []
    gate.replay_corpus(failures)
    assert len(failures) == 1 and failures[0].startswith("example-stale.itf.json no longer reads: ")
    assert "digest mismatch" in failures[0]
