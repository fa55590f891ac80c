"""The compiled hot modules (harness/compiled.py): a build is used only while it is the build of the source as
it is now, and a compiled search finds what the source finds."""

import json
import os
import subprocess
import sys

import pytest

from harness import compiled
from tests.conftest import ROOT


def fake_build(folder, name, sha256):
    binary = folder / (name.replace(".", "/") + ".so")
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_bytes(b"not loaded by these tests")
    (folder / "manifest.json").write_text(json.dumps(
        {"format": compiled.FORMAT, "modules": {name: {"sha256": sha256, "binary": binary.relative_to(folder).as_posix()}}}))


def test_a_build_is_found_only_while_its_source_is_the_one_compiled(tmp_path):
    name = "specs.replication.view"
    fake_build(tmp_path, name, compiled.digest(compiled.source_of(name)))
    finder = compiled.CompiledFinder(compiled.read_manifest(tmp_path), tmp_path)
    spec = finder.find_spec(name)
    assert spec is not None and spec.origin == str((tmp_path / "specs/replication/view.so").resolve())
    assert finder.find_spec("specs.replication.logic") is None  # not in this build: the normal import
    assert finder.loaded == [name] and finder.stale == []

    fake_build(tmp_path, name, "0" * 64)  # the source changed since the build
    finder = compiled.CompiledFinder(compiled.read_manifest(tmp_path), tmp_path)
    assert finder.find_spec(name) is None and finder.stale == [name]

    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere.so"
    outside.write_bytes(b"a binary outside the build")
    (tmp_path / "manifest.json").write_text(json.dumps({"format": compiled.FORMAT, "modules": {name: {
        "sha256": compiled.digest(compiled.source_of(name)), "binary": f"../{outside.name}"}}}))
    finder = compiled.CompiledFinder(compiled.read_manifest(tmp_path), tmp_path)
    assert finder.find_spec(name) is None and finder.stale == [name]  # never a binary outside the build

    fake_build(tmp_path, name, compiled.digest(compiled.source_of(name)))
    (tmp_path / "specs/replication/view.so").unlink()  # a manifest without its binary
    finder = compiled.CompiledFinder(compiled.read_manifest(tmp_path), tmp_path)
    assert finder.find_spec(name) is None and finder.stale == [name]


@pytest.mark.parametrize("manifest", ["{not json", '{"format": 99, "modules": {}}', '[]',
                                      '{"format": 1, "modules": {"harness.model": {"sha256": 1}}}'])
def test_a_damaged_or_foreign_manifest_is_no_build(tmp_path, manifest):
    (tmp_path / "manifest.json").write_text(manifest)
    assert compiled.read_manifest(tmp_path) == {}


def test_the_hot_modules_are_every_spec_packages_loop_and_the_harness_search():
    names = compiled.hot_modules()
    assert names[:4] == ["harness.speed", "harness.model", "harness.engines.bfs", "harness.engines.spark.worker"]
    for package in ("kraft", "zk", "kip435", "kip642", "replication"):
        ours = {n.rsplit(".", 1)[1] for n in names if n.startswith(f"specs.{package}.")}
        assert {"state", "logic", "view"} <= ours and not ours & compiled.SPEC_COLD
    assert "invariants.kraft" in names and all(compiled.source_of(n).is_file() for n in names)


def run_search(build, *args):
    """A search in a fresh process with the given build (or none), and the modules it loaded compiled."""
    code = ("import json, sys; from harness import compiled; from harness.cli import main; "
            "sys.argv = ['harness', *sys.argv[1:]]\n"
            "try: main()\nexcept SystemExit as e: code = e.code\n"
            "f = compiled.active(); print(json.dumps(f.loaded if f else []), file=sys.stderr); sys.exit(code)")
    p = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, HARNESS_COMPILED=str(build)))
    return p.returncode, json.loads(p.stdout), json.loads(p.stderr.strip().splitlines()[-1])


def without_timing(result):
    stats = {k: v for k, v in result["stats"].items() if k not in ("seconds", "states_per_second", "peak_rss_bytes")}
    return {**result, "stats": stats}


@pytest.mark.nightly
def test_a_compiled_search_finds_what_the_source_finds(tmp_path):
    """Built here (replication's modules and the harness's, about a minute), then the same searches from the
    build and from source: the same JSON but the timings, and byte-identical traces."""
    pytest.importorskip("Cython", reason="make nightly installs Cython (make compiled)")
    names = [n for n in compiled.hot_modules() if n.startswith(("harness.", "specs.replication.", "invariants.replication"))]
    assert compiled.build(names, tmp_path / "build") == 0
    searches = [("check", "replication", "--config", "p1", "--set", "unclean_shutdown_limit=1", "--max-states", "100000"),
                ("check", "replication", "--config", "kip966_loss"),
                ("check", "replication", "--config", "p1", "--mutation", "isr_join_below_hwm")]
    for i, search in enumerate(searches):
        results = []
        for build in (tmp_path / "build", "0"):
            out = tmp_path / f"traces-{i}-{build == '0'}"
            code, result, loaded = run_search(build, *search, "--json", "--quiet", "--out", str(out))
            traces = {p.name: p.read_bytes() for p in sorted(out.glob("*.json"))} if out.is_dir() else {}
            shown = json.dumps(without_timing(result), sort_keys=True).replace(str(out), "<out>")
            results.append((code, shown, traces))
            hot = {"harness.model", "harness.engines.bfs", "specs.replication.logic", "invariants.replication"}
            assert (hot <= set(loaded) <= set(names)) if build != "0" else loaded == [], loaded
        assert results[0] == results[1], search
    assert results[0][0] == 1 and results[0][2]  # the mutation is caught, with its trace
