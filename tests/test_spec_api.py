"""The authoring API keeps its promises: a mistyped mutation fails when the spec loads, and `reads=`
hints are checked against a search that evaluates every invariant everywhere."""

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import NamedTuple

import pytest

from harness.engines import bfs
from harness.errors import BadInput
from harness.model import Config, Spec, param
from harness.registry import load_spec, spec_names
from tests.conftest import ROOT


def test_a_mistyped_mutation_in_a_rule_fails_when_the_spec_loads(tmp_path):
    for package in ("harness", "specs", "invariants"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    example = tmp_path / "specs" / "example.py"
    text = example.read_text()
    assert "cfg.mutated.hwm_ignores_isr" in text
    example.write_text(text.replace("cfg.mutated.hwm_ignores_isr", "cfg.mutated.hwm_ignore_isr"))
    for args in (["list"], ["check", "example", "--config", "tiny"]):
        p = subprocess.run([sys.executable, "-m", "harness", *args], cwd=tmp_path, capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(tmp_path)), timeout=120)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert p.stderr.strip().splitlines() == [p.stderr.strip()]
        assert "'hwm_ignore_isr', which is not declared" in p.stderr and "specs.example line" in p.stderr


def test_a_mutation_declared_against_a_missing_rule_or_preset_fails_to_load():
    from harness.registry import check_declarations

    spec = load_spec("example")
    for rule, preset in (("advance_hwm_typo", "ci"), ("advance_hwm", "cii")):
        broken = Spec("broken", spec.config_class, spec.state_class, presets=spec.presets, rules=spec.rules)
        broken.mutation("m", rule=rule, removes="something", caught_at=preset)
        with pytest.raises(BadInput, match="does not exist"):
            check_declarations(broken, [])


# ------------------------------------------------------------------------------------- reads=

class Counter(NamedTuple):
    a: int
    b: int


@dataclass(frozen=True)
class CounterConfig(Config):
    top: int = param(3, "bound", lo=0, hi=10)


def counter_spec(reads):
    spec = Spec("counter", CounterConfig, Counter, presets={"tiny": {}}, deadlock=False)
    spec.init(lambda cfg: [Counter(0, 0)])

    @spec.rule()
    def bump_a(cfg, s):
        return s._replace(a=s.a + 1) if s.a < cfg.top else None

    @spec.rule()
    def bump_b(cfg, s):
        return s._replace(b=s.b + 1) if s.b < cfg.top else None

    @spec.invariant(reads=reads)
    def SumSmall(cfg, s):
        """a + b stays below 5 (it reads both fields)."""
        return s.a + s.b < 5

    return spec


def test_an_incomplete_reads_hint_is_caught_by_check_reads():
    complete, incomplete = counter_spec(("a", "b")), counter_spec(("a",))
    model = complete.bind(complete.config("tiny"))
    found = bfs.explore(model).violations
    assert found and bfs.explore(model, check_reads=True).violations[0].states == found[0].states
    # the danger: with reads=("a",) every violating state is first reached by bump_b, and is skipped
    model = incomplete.bind(incomplete.config("tiny"))
    assert not bfs.explore(model).violations
    with pytest.raises(BadInput, match=r"SumSmall changed value on bump_b\(\) .*reads= \(a\)"):
        bfs.explore(model, check_reads=True)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.nightly) if n == "zk" else n for n in spec_names()])
def test_every_models_reads_hints_hold_at_tiny(name):  # zk (15 s): the nightly's
    spec = load_spec(name)
    model = spec.bind(spec.config("tiny"))
    r = bfs.explore(model, check_reads=True, keep_going=True)
    assert r.stats["distinct"] == bfs.explore(model, keep_going=True).stats["distinct"]


# ------------------------------------------------------------------------------- order_rules

def test_rules_written_in_several_modules_are_tried_in_the_declared_order():
    """A package that lays its rules out by actor restores the document's order with `order_rules`: the
    successors (and so BFS's first-found states and traces) follow it, and a rule left out or named twice
    fails when the spec loads."""
    spec = counter_spec(reads=())
    assert [r.name for r in spec.rules] == ["bump_a", "bump_b"]
    model = spec.bind(spec.config("tiny"))
    first = [model.format_action(model.actions[a]) for a, _ in model.successors(model.init_states()[0])]
    spec.order_rules("bump_b", "bump_a")
    model = spec.bind(spec.config("tiny"))
    assert model.rule_names == ["bump_b", "bump_a"]
    assert [model.format_action(model.actions[a]) for a, _ in model.successors(model.init_states()[0])] == first[::-1]
    for wrong in (("bump_b",), ("bump_b", "bump_a", "bump_b"), ("bump_b", "bump_c")):
        with pytest.raises(TypeError, match="every rule exactly once"):
            spec.order_rules(*wrong)


# ------------------------------------------------------------------ one layout for every protocol (issue 38)
PROTOCOLS = [n for n in spec_names() if n != "example"]
ASSEMBLY = {"__init__.py", "state.py", "presets.py", "logic.py", "view.py"}  # in every protocol package
ACTORS = {"controller", "brokers", "admin", "faults", "leaders", "followers", "voters"}  # the rule modules
# measured speed helpers, the Z3 form, TLC's successor order, the mapping to Kafka's own code (`harness conform`)
OPTIONAL = {"speed.py", "symbolic.py", "tlc.py", "conform.py"}


@pytest.mark.parametrize("name", PROTOCOLS)
def test_every_protocol_package_has_the_same_layout(name):
    """Knowing one package means knowing all five: the same modules for the same concerns, every rule in the
    module of who acts with a "Who acts / Enabled when / Next" docstring, an __init__.py that only assembles,
    and no module over about 600 lines unless its header says why it stays whole."""
    import inspect
    import re

    package = ROOT / "specs" / name
    modules = {p.name for p in package.glob("*.py")}
    assert ASSEMBLY <= modules and modules <= ASSEMBLY | OPTIONAL | {f"{a}.py" for a in ACTORS}, sorted(modules)
    spec = load_spec(name)
    for r in spec.rules:
        assert r.fn.__module__.rpartition(".")[2] in ACTORS and r.fn.__module__.startswith(f"specs.{name}."), r.name
        sections = re.findall(r"^(Who acts|Enabled when|Next):", inspect.cleandoc(r.doc), re.M)
        assert sections == ["Who acts", "Enabled when", "Next"], (name, r.name)
    assert len((package / "__init__.py").read_text().splitlines()) <= 150
    for path in package.glob("*.py"):
        text = path.read_text()
        assert len(text.splitlines()) <= 600 or "kept whole" in text[:2000], path.name
