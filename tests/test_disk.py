"""Hostile disks and odd paths (issue #36): every writer of the harness, on a full disk, under a file-size
limit and in a read-only folder, stops with one line naming the path and exit 2, leaves no temporary
file and keeps a complete file that was there before; empty, blank and odd path options are refused.

The disks are real: a small tmpfs (mounted here when the sandbox lets root mount one; else those cases
are skipped with the reason), filled to the last page or remounted read-only, and a real RLIMIT_FSIZE set
in the child process (Python ignores SIGXFSZ, so a write past it fails with EFBIG). As root, a folder
without write permission is still writable: a read-only mount is what refuses root."""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

LIMIT = 1024  # bytes: below every file the writers below produce (traces, graphs, CTIs, parquet parts)


def run(argv: list[str], cwd: Path, fsize: int | None = None, program: list[str] | None = None):
    """`python -m harness *argv` (or `program`) as a process, with a file-size limit if `fsize` is given.
    Its output goes to pipes, which the limit does not cover."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run((program or [sys.executable, "-m", "harness"]) + argv, cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          preexec_fn=limit if fsize is not None else None, stdin=subprocess.DEVNULL)


def assert_refused(p, *named: str) -> str:
    """Exit 2 with one `error:` line that names every one of `named`, and no traceback."""
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr + p.stdout
    for text in named:
        assert text in lines[0], lines[0]
    return lines[0]


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}


def temporaries(folder: Path) -> list[Path]:
    return [f for f in folder.rglob("*") if re.search(r"\.tmp\d+$", f.name)]


class Tmpfs:
    """A real small filesystem at `path`: filled to its last page, or remounted read-only."""

    def __init__(self, path: Path, size: str = "256k") -> None:
        path.mkdir()
        self.path = path
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}): "
                        "the real-filesystem cases need a sandbox that lets root mount one")

    def fill(self) -> None:
        """Take every free page, so that the next write of a single byte fails with ENOSPC."""
        with open(self.path / "filler", "wb", buffering=0) as f:  # unbuffered: nothing left to flush on close
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == 28, exc  # ENOSPC

    def read_only(self) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True)

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def tmpfs(tmp_path):
    mounts: list[Tmpfs] = []

    def make(name: str = "disk", size: str = "256k") -> Tmpfs:
        mounts.append(Tmpfs(tmp_path / name, size))
        return mounts[-1]

    yield make
    for m in mounts:
        m.unmount()


# Every writer of the CLI, with the option naming its folder. A checkpoint is not rewritten in place (a fresh
# run clears its own), so it is kept whole by its resume test below instead.
WRITERS = {
    "check traces": (["check", "example", "--config", "ci", "--mutation", "hwm_ignores_isr", "--out"], True),
    "corpus": (["corpus", "--spec", "example", "--out"], True),
    "graph": (["graph", "example", "--out"], True),
    "prove CTIs": (["prove", "kraft", "--mutation", "keep_removing_in_isr", "--property", "IsrSubsetOfReplicas",
                    "--brokers", "1", "--depth", "1", "--out"], True),
    "spark checkpoint": (["check", "example", "--engine", "spark", "--master", "local[1]", "--checkpoint-every", "0",
                          "--quiet", "--checkpoint"], False),
}


@pytest.mark.parametrize("hostility", ["file-size limit", "full disk", "read-only folder"])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_hostile_disk_stops_the_writer_in_one_line_and_keeps_what_was_there(writer, hostility, tmp_path, tmpfs):
    """Write once (when the writer rewrites its files in place), make the disk hostile, write again."""
    argv, rewrites = WRITERS[writer]
    disk = None if hostility == "file-size limit" else tmpfs()
    folder = (disk.path if disk else tmp_path).resolve() / "out"
    if rewrites:
        first = run(argv + [str(folder)], tmp_path)
        assert first.returncode in (0, 1) and files_under(folder), first.stderr[-2000:]
    before = files_under(folder) if folder.exists() else {}
    if hostility == "full disk":
        disk.fill()
    elif hostility == "read-only folder":
        disk.read_only()
    p = run(argv + [str(folder)], tmp_path, fsize=LIMIT if hostility == "file-size limit" else None)
    expected = {"file-size limit": "File too large", "full disk": "No space left on device",
                "read-only folder": "read-only filesystem"}[hostility]
    assert_refused(p, str(folder), expected)
    assert not temporaries(tmp_path) and not temporaries(folder.parent)
    if rewrites:
        assert files_under(folder) == before


def test_a_checkpoint_commit_refused_by_the_disk_keeps_the_last_manifest_and_resumes(tmp_path):
    """state.json is the commit point: a run that cannot write the next one keeps the last whole, and a
    later run resumes from it to the same result as a run never stopped."""
    spark = WRITERS["spark checkpoint"][0]
    ck = (tmp_path / "ck").resolve()
    assert run(spark + [str(ck), "--max-depth", "2"], tmp_path).returncode == 3
    manifest = (ck / "state.json").read_bytes()
    # Room for every level's data file (about 1.4 KB each) but not for a manifest that lists one more.
    p = run(spark + [str(ck), "--resume"], tmp_path, fsize=len(manifest) + 20)
    assert_refused(p, str(ck), "File too large")
    assert (ck / "state.json").read_bytes() == manifest and not temporaries(ck)
    resumed = run(spark + [str(ck), "--resume", "--json"], tmp_path)
    fresh = run(spark + [str(tmp_path / "fresh"), "--json"], tmp_path)
    assert resumed.returncode == fresh.returncode == 0, resumed.stderr[-2000:]
    assert json.loads(resumed.stdout)["stats"]["distinct"] == json.loads(fresh.stdout)["stats"]["distinct"] == 17


NIGHTLY = [sys.executable, str(ROOT / "ci" / "nightly.py")]


def nightly_args(tmp_path: Path, reports: Path) -> list[str]:
    return ["--quick", "--spec", "example", "--date", "2026-11-20", "--reports", str(reports),
            "--checkpoints", str(tmp_path / "checkpoints")]


@pytest.mark.parametrize("hostility", ["file-size limit", "full disk"])
def test_the_nightly_report_on_a_hostile_disk_is_one_line_and_no_temporary_file(hostility, tmp_path, tmpfs):
    """The night runs (its checkpoint and summary fit), then its report.html does not."""
    reports = tmp_path / "reports" if hostility == "file-size limit" else tmpfs(size="8k").path / "reports"
    # 4 KB: the checkpoint's files and summary.json (under 2 KB) fit, report.html (over 5 KB) does not.
    p = run(nightly_args(tmp_path, reports), tmp_path, fsize=4096 if hostility == "file-size limit" else None,
            program=NIGHTLY)
    # The night's progress lines come first (its log); then one error line, the last.
    errors = [line for line in p.stderr.splitlines() if line.startswith("error")]
    assert p.returncode == 2 and errors == p.stderr.strip().splitlines()[-1:] and "Traceback" not in p.stderr, p.stderr
    for text in (str(reports), "report.html", "No space left" if hostility == "full disk" else "File too large"):
        assert text in errors[0]
    assert not temporaries(reports) and not (next(reports.iterdir()) / "report.html").exists()


def test_the_nightly_refuses_a_read_only_reports_folder_before_any_work(tmp_path, tmpfs):
    disk = tmpfs()
    disk.read_only()
    p = run(nightly_args(tmp_path, disk.path / "reports"), tmp_path, program=NIGHTLY)
    assert_refused(p, "--reports", str(disk.path), "read-only filesystem")
    assert not (tmp_path / "checkpoints").exists()


def test_a_walk_saved_by_the_explorer_on_a_read_only_disk_is_an_error_page(tmpfs):
    from harness.explore import create_app
    from harness.registry import load_spec

    disk = tmpfs()
    spec = load_spec("example")
    client = create_app(model=spec.bind(spec.config("tiny")), out_dir=disk.path / "walks").test_client()
    token = re.search(r'name="token" value="([^"]+)"', client.get("/model?path=0").text).group(1)
    disk.read_only()
    response = client.post("/model/save", data={"path": "0", "token": token})
    assert response.status_code == 500 and "cannot write" in response.text and str(disk.path) in response.text
    assert not list(disk.path.iterdir())


# ------------------------------------------------------------------------------------------ odd paths

ODD = ["", " ", "\t", "afile", "afile/x", "o" * 300]
# `explore` is given a port held here: a path it took would end in a refused port, not in a server for ever.
BUSY_PORT = socket.create_server(("127.0.0.1", 0))
PATH_OPTIONS = {
    "check --out": ["check", "example", "--out"],
    "check --checkpoint": ["check", "example", "--engine", "spark", "--master", "local[1]", "--checkpoint"],
    "graph --out": ["graph", "example", "--out"],
    "prove --out": ["prove", "kraft", "--brokers", "1", "--out"],
    "corpus --out": ["corpus", "--spec", "example", "--out"],
    "explore --out": ["explore", "example", "--port", str(BUSY_PORT.getsockname()[1]), "--out"],
    "nightly --reports": NIGHTLY + ["--quick", "--spec", "example", "--checkpoints", "ck", "--reports"],
    "nightly --checkpoints": NIGHTLY + ["--quick", "--spec", "example", "--reports", "rep", "--checkpoints"],
}


@pytest.mark.parametrize("value", ODD, ids=["empty", "blank", "tab", "a file", "under a file", "a name too long"])
@pytest.mark.parametrize("option", list(PATH_OPTIONS))
def test_an_odd_path_is_refused_in_one_line_and_nothing_is_written(option, value, tmp_path):
    (tmp_path / "afile").write_text("a regular file\n")
    argv = PATH_OPTIONS[option] + [value]
    p = run(argv[2:], tmp_path, program=argv[:2]) if argv[0] == sys.executable else run(argv, tmp_path)
    line = assert_refused(p)
    assert ("afile" in line) if "afile" in value else ("300 bytes long" in line) if len(value) > 255 else \
        ("empty or blank" in line)
    assert [f.name for f in tmp_path.iterdir()] == ["afile"]  # not even a folder named by spaces
    assert (tmp_path / "afile").read_text() == "a regular file\n"


def test_graph_out_dash_still_writes_the_graph_on_stdout(tmp_path):
    p = run(["graph", "example", "--out", "-"], tmp_path)
    assert p.returncode == 0 and p.stdout.startswith('digraph "example"') and not list(tmp_path.iterdir())
