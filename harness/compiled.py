"""The hot modules compiled by Cython, used only while each is the build of its current source.

A search spends its time in the rules' bodies, their `candidates=` hints, `Model.successors` and the BFS
loop: CPython's cost per call, per field read and per tuple built (docs/PERFORMANCE.md, "A compiled hot
path"). Cython compiles those same `.py` files, unchanged and unannotated, into extension modules: on the
replication model's p1 with one unclean shutdown the search takes 0.80 of the time, at kraft `ci` 0.75, with the same
states, counts and traces. The source stays the model; the compiled form is a build product.

* `make compiled` (Cython from PyPI, a C compiler and Python's headers) builds every module `HOT` names
  into .compiled/<interpreter>/ and writes a manifest of each source's SHA-256 there. Nothing is written
  beside the sources.
* When `harness` is imported, `install()` puts a finder first on `sys.meta_path` that answers for those
  modules only, and only when the source's hash is the manifest's: a module edited since the build is
  imported from its source, so a stale build never runs. HARNESS_COMPILED=0 turns it off (another value names
  the build folder to use: the tests build their own).
* `make compiled-status` says which modules load compiled and which are stale (`status()`); `build()` is
  what `make compiled` runs.

Not compiled: packages' `__init__` (a spec's declarations, read once), presets, the Z3 modules (their time
is the solver's), `conform` (Kafka's time), and everything outside a search's loop.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / ".compiled" / (sys.implementation.cache_tag or "no-cache-tag")
MANIFEST = "manifest.json"  # in the build folder
FORMAT = 1

# The harness's part of the loop (BFS and a Spark task); every spec package's modules but those named
# above; the invariants.
HARNESS_HOT = ("harness.speed", "harness.model", "harness.engines.bfs", "harness.engines.spark.worker")
SPEC_COLD = {"__init__", "presets", "symbolic", "conform"}


def hot_modules() -> list[str]:
    """Every module compiled, by dotted name, in a fixed order."""
    names = list(HARNESS_HOT)
    for package in sorted(p for p in (ROOT / "specs").iterdir() if (p / "__init__.py").is_file()):
        names += [f"specs.{package.name}.{f.stem}" for f in sorted(package.glob("*.py")) if f.stem not in SPEC_COLD]
    names += [f"invariants.{f.stem}" for f in sorted((ROOT / "invariants").glob("*.py")) if f.stem != "__init__"]
    return names


def source_of(name: str) -> Path:
    return ROOT.joinpath(*name.split(".")).with_suffix(".py")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(folder: Path = BUILD) -> dict[str, dict]:
    """The built modules (name -> source hash and binary), or none when there is no usable build. A manifest
    that does not parse, or of another format, counts as no build: the sources run."""
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("modules"), dict):
        return {}
    return {k: v for k, v in data["modules"].items()
            if isinstance(v, dict) and isinstance(v.get("sha256"), str) and isinstance(v.get("binary"), str)}


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds a hot module's extension when it was built from the source as it is now; otherwise defers to
    the normal import of the source. `loaded` and `stale` record what it decided."""

    def __init__(self, modules: dict[str, dict], folder: Path) -> None:
        self.modules, self.folder = modules, folder
        self.loaded: list[str] = []
        self.stale: list[str] = []

    def find_spec(self, fullname, path=None, target=None):
        entry = self.modules.get(fullname)
        if entry is None:
            return None
        binary = (self.folder / entry["binary"]).resolve()
        source = source_of(fullname)
        inside = binary.is_relative_to(self.folder.resolve())  # a manifest names binaries of its own build only
        if not inside or not binary.is_file() or not source.is_file() or digest(source) != entry["sha256"]:
            self.stale.append(fullname)
            return None
        self.loaded.append(fullname)
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(binary))
        return importlib.util.spec_from_file_location(fullname, binary, loader=loader)


def install() -> CompiledFinder | None:
    """Called by `harness/__init__`: the finder, first on sys.meta_path, when a build exists and
    HARNESS_COMPILED is not 0 (another value names the build folder: tests build their own)."""
    choice = os.environ.get("HARNESS_COMPILED", "")
    if choice == "0":
        return None
    folder = Path(choice) if choice else BUILD
    for finder in sys.meta_path:
        if isinstance(finder, CompiledFinder):
            return finder
    modules = read_manifest(folder)
    if not modules:
        return None
    finder = CompiledFinder(modules, folder)
    sys.meta_path.insert(0, finder)
    return finder


def active() -> CompiledFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, CompiledFinder)), None)


def build(names: list[str] | None = None, into: Path = BUILD) -> int:
    """Compile the hot modules (or `names`) into `into` and write its manifest: the hashes of the sources
    as they were compiled. Exit-code style result: 0 built, 1 a source changed meanwhile, 2 no Cython."""
    try:
        import Cython
        from Cython.Build import cythonize
    except ImportError:
        print("make compiled needs Cython (pip install 'cython>=3.0,<4')", file=sys.stderr)
        return 2
    from setuptools import Distribution
    from setuptools.command.build_ext import build_ext

    names = hot_modules() if names is None else names
    hashes = {n: digest(source_of(n)) for n in names}
    work = into / "c"
    here = Path.cwd()
    os.chdir(ROOT)  # cythonize names each module by its path from the root
    try:
        extensions = cythonize([str(source_of(n).relative_to(ROOT)) for n in names], build_dir=str(work), quiet=True,
                               compiler_directives={"language_level": 3, "binding": True, "annotation_typing": False})
        command = build_ext(Distribution({"ext_modules": extensions}))
        command.build_lib, command.build_temp = str(into), str(work / "o")
        command.parallel = os.cpu_count() or 1
        command.ensure_finalized()
        command.run()
        binaries = {n: Path(command.get_ext_fullpath(n)).relative_to(into).as_posix() for n in names}
    finally:
        os.chdir(here)
    changed = [n for n in names if digest(source_of(n)) != hashes[n]]
    if changed:
        print(f"sources changed during the build ({', '.join(changed)}): build again", file=sys.stderr)
        return 1
    modules = {n: {"sha256": hashes[n], "binary": binaries[n]} for n in names}
    (into / MANIFEST).write_text(json.dumps({"format": FORMAT, "cython": Cython.__version__, "modules": modules},
                                                 indent=1, sort_keys=True) + "\n")
    print(f"compiled {len(modules)} modules into {into}")
    return 0


def sorted_out(folder: Path = BUILD) -> CompiledFinder:
    """A finder that has decided on every module of the build: `loaded` (their source unchanged since it)
    and `stale`."""
    finder = CompiledFinder(read_manifest(folder), folder)
    for name in sorted(finder.modules):
        finder.find_spec(name)
    return finder


def status() -> int:
    finder = sorted_out()
    if not finder.modules:
        print("no compiled build (make compiled): every module runs from source")
        return 0
    off = " (HARNESS_COMPILED=0: none is used now)" if os.environ.get("HARNESS_COMPILED") == "0" else ""
    print(f"{len(finder.loaded)} modules load compiled{off}; {len(finder.stale)} stale (their source changed since "
          f"the build: they run from source){': ' + ', '.join(finder.stale) if finder.stale else ''}")
    return 0
