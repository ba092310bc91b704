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


BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def lib(tmp_path_factory):
    """The PMPI tracer, built once for the session."""
    from idlewave.trace import build

    return build(tmp_path_factory.mktemp("lib"))


def compile_c(tmp: Path, name: str, src: str) -> Path:
    """Compiles an MPI C program with the wheel's mpicc."""
    (tmp / f"{name}.c").write_text(src)
    exe = tmp / name
    p = subprocess.run([str(BIN / "mpicc"), "-O1", "-o", str(exe), str(tmp / f"{name}.c")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return exe


def traced(lib: Path, out: Path, ranks: int, *cmd, timeout: float = 120) -> Path:
    """Runs `cmd` on `ranks` ranks under the tracer, writing the trace to `out`."""
    from idlewave.measure import MPI_ENV, mpiexec

    env = {**os.environ, **MPI_ENV, "IDLEWAVE_TRACE_DIR": str(out)}
    p = subprocess.run([mpiexec(), "--oversubscribe", "-n", str(ranks), "-x", f"LD_PRELOAD={lib}", "-x", "IDLEWAVE_TRACE_DIR",
                        *map(str, cmd)], env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout + p.stderr
    return out
