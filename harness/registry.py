"""Finds specs by name: `specs/<name>` holds the model, `invariants/<name>` its properties."""

from __future__ import annotations

import importlib
import pkgutil

import invariants
import specs
from harness.errors import BadInput
from harness.model import Spec


def spec_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(specs.__path__) if not m.name.startswith("_"))


def load_spec(name: str) -> Spec:
    """Import `specs.<name>` and, if present, `invariants.<name>` (which registers properties)."""
    if name not in spec_names():
        raise BadInput(f"unknown spec {name!r} (known: {', '.join(spec_names())})")
    module = importlib.import_module(f"specs.{name}")
    if any(m.name == name for m in pkgutil.iter_modules(invariants.__path__)):
        importlib.import_module(f"invariants.{name}")
    return module.spec
