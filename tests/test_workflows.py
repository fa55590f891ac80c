"""The GitHub workflows: valid against GitHub's workflow schema (check-jsonschema's vendored copy, offline),
least privilege, one run per branch, the interpreter setup-python installs is the one `make` uses, the pip
cache keyed on what `make` installs from, and the nightly's state saved whatever the outcome."""

import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML  # check-jsonschema's own YAML reader (a dev dependency)

from conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def test_the_workflows_match_githubs_schema():
    checker = Path(sys.executable).with_name("check-jsonschema")
    p = subprocess.run([str(checker), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_each_workflow_is_least_privilege_serialised_and_uses_the_python_it_sets_up():
    assert [w.name for w in WORKFLOWS] == ["gate.yml", "nightly.yml"]
    for path in WORKFLOWS:
        doc = YAML(typ="safe").load(path.read_text())
        assert doc["permissions"] == {"contents": "read"} and "group" in doc["concurrency"], path.name
        steps = next(iter(doc["jobs"].values()))["steps"]
        python = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python"))
        assert python["with"]["cache"] == "pip"
        assert python["with"]["cache-dependency-path"].split() == ["pyproject.toml", "constraints.txt"]
        make = next(s["run"] for s in steps if s.get("run", "").startswith("make "))
        assert f"PYTHON=\"${{{{ steps.{python['id']}.outputs.python-path }}}}\"" in make, make
        assert not any("apt-get" in s.get("run", "") for s in steps)  # nothing installed that nothing uses


def test_the_nightly_restores_its_state_and_saves_it_whatever_the_outcome():
    steps = YAML(typ="safe").load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())["jobs"]["nightly"]["steps"]
    uses = [s.get("uses", "").split("@")[0] for s in steps]
    assert uses.index("actions/cache/restore") < next(i for i, s in enumerate(steps) if "make nightly" in s.get("run", ""))
    save = steps[uses.index("actions/cache/save")]
    assert save["if"] == "always()" and set(save["with"]["path"].split()) == {"checkpoints/", "reports/"}


def test_make_installs_from_the_constraints_the_cache_is_keyed_on():
    makefile = (ROOT / "Makefile").read_text()
    assert "-c constraints.txt" in makefile and "$(STAMP): pyproject.toml constraints.txt" in makefile
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().split() if "==" in line)
    for package in ("hypothesis", "z3-solver", "pyspark", "Jinja2", "playwright", "networkx"):
        assert package in pins, package
