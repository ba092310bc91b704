"""Tracing real MPI runs (a PMPI library built with the user's mpicc) and
replaying them in the simulator."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from idlewave.trace.format import TraceError, calls, read
from idlewave.trace.replay import extrapolate, to_goal

SOURCE = Path(__file__).parent / "pmpi_tracer.c"


def build(out_dir: str | Path = ".", mpicc: str | None = None) -> Path:
    """Compiles the tracer with `mpicc` (default: the one beside this Python,
    else on PATH) into out_dir/libidlewave-trace.so."""
    cc = mpicc or (str(Path(sys.executable).parent / "mpicc") if (Path(sys.executable).parent / "mpicc").exists() else shutil.which("mpicc"))
    if not cc:
        raise TraceError("mpicc not found: give --mpicc (the compiler wrapper of the MPI your application uses)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lib = out / "libidlewave-trace.so"
    tmp = out / ".libidlewave-trace.so.tmp"
    p = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(tmp), str(SOURCE)], capture_output=True, text=True)
    if p.returncode != 0:
        raise TraceError(f"{cc} failed:\n{p.stderr.strip()}")
    os.replace(tmp, lib)
    return lib


__all__ = ["build", "read", "calls", "to_goal", "extrapolate", "TraceError"]
