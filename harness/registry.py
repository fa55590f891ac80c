"""Finds specs by name: `specs/<name>` holds the model, `invariants/<name>` its properties."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import invariants
import specs
from harness.errors import BadInput
from harness.model import Spec, check_declarations, repository_path


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
