import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(config, items):
    """The `slow` tests first (in their order, then the rest in theirs): xdist's two workers then end
    together on short tests, instead of one idle while the other finishes a long one."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def run_cli(*args, cwd=None):
    """Run `python -m harness ...` as a user would; return (exit code, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd or ROOT, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def cli():
    return run_cli


def load_json(path):
    return json.loads(Path(path).read_text())


def listening_sockets(pids) -> dict[tuple[str, int], tuple[int, str]]:
    """(address, port) -> (pid, command) of every TCP socket that a process in `pids`, or a descendant,
    listens on."""
    import psutil

    found = {}
    for pid in pids:
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for proc in procs:
            try:
                for conn in proc.net_connections("tcp"):
                    if conn.status == psutil.CONN_LISTEN:
                        found[(conn.laddr.ip, conn.laddr.port)] = (proc.pid, " ".join(proc.cmdline()[:3]))
            except psutil.Error:  # it ended meanwhile
                pass
    return found


def is_loopback(address: str) -> bool:
    """127.0.0.0/8 and ::1, also as an IPv4-mapped IPv6 address (how Java's dual-stack sockets show)."""
    import ipaddress

    ip = ipaddress.ip_address(address)
    return (getattr(ip, "ipv4_mapped", None) or ip).is_loopback
