import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run_cli(*args, check=True, env=None):
    """Runs the installed console script; returns the CompletedProcess."""
    exe = Path(sys.executable).parent / "idlewave"
    p = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and p.returncode != 0:
        raise AssertionError(f"idlewave {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def cli():
    return run_cli
