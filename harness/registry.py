"""Finds specs by name: `specs/<name>` holds the model, `invariants/<name>` its properties."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from pathlib import Path
from typing import Iterable

import invariants
import specs
from harness.errors import BadInput
from harness.model import REPOSITORY, Spec, repository_path


def spec_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(specs.__path__) if not m.name.startswith("_"))


def load_spec(name: str) -> Spec:
    """Import `specs.<name>` and, if present, `invariants.<name>` (which registers properties)."""
    if name not in spec_names():
        raise BadInput(f"unknown spec {name!r} (known: {', '.join(spec_names())})")
    module = importlib.import_module(f"specs.{name}")
    if any(m.name == name for m in pkgutil.iter_modules(invariants.__path__)):
        importlib.import_module(f"invariants.{name}")
    if name not in _checked:
        own = [m for k, m in sorted(sys.modules.items()) if k in (f"specs.{name}", f"invariants.{name}")
               or k.startswith(f"specs.{name}.")]
        check_declarations(module.spec, own)
        _record_expected_source(module.spec, own)
        _checked.add(name)
    return module.spec


_checked: set[str] = set()


def _record_expected_source(spec: Spec, modules: list) -> None:
    """Where the spec's `expected` (preset -> why) is declared: the module that defines the dict (a package's
    __init__ that only imports it comes after its submodules), for `Spec.declared_failure`'s source."""
    holders = [m for m in modules if any(v is spec.expected for v in vars(m).values())]
    holders.sort(key=lambda m: m.__name__.count("."), reverse=True)
    if spec.expected and holders and getattr(holders[0], "__file__", None):
        for preset in spec.expected:
            spec.expected_sources.setdefault(preset, repository_path(holders[0].__file__))


def _mutation_flags_read(module) -> Iterable[tuple[str, int]]:
    """Every `<x>.mutated.<name>` in a module's source, with its line. The source, not the bytecode: a
    module may run compiled (harness/compiled.py)."""
    path = Path(getattr(module, "__file__", "") or "")
    if path.suffix != ".py":
        path = REPOSITORY.joinpath(*module.__name__.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    if not path.is_file():
        return
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and (isinstance(node.value, ast.Attribute) and node.value.attr == "mutated"
                                                or isinstance(node.value, ast.Name) and node.value.id == "mutated"):
            yield node.attr, node.lineno


def check_declarations(spec: Spec, modules: Iterable) -> None:
    """When a spec loads: every mutation is declared against a rule and a preset that exist, and every
    `<x>.mutated.<name>` in the spec's modules names a declared mutation (a typo must not compile into
    a rule that silently never mutates)."""
    rules, presets = {r.name for r in spec.rules}, set(spec.presets)
    for m in spec.mutations.values():
        if m.rule not in rules or m.caught_at not in presets:
            raise BadInput(f"spec {spec.name!r}: mutation {m.name!r} names rule {m.rule!r} and preset {m.caught_at!r}; "
                           f"one of them does not exist")
    for module in modules:
        for name, line in _mutation_flags_read(module):
            if name not in spec.mutations and not name.startswith("_"):
                raise BadInput(f"spec {spec.name!r}: {module.__name__} line {line} tests mutation {name!r}, "
                               f"which is not declared (declared: {', '.join(spec.mutations) or 'none'})")
