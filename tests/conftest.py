import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
