"""Tracing real MPI runs (a PMPI library generated from, and built with, the
user's mpicc) and replaying them in the simulator."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from idlewave.trace.format import TraceError, calls, read, read_rank
from idlewave.trace.replay import export_goal, replay

# -O2 for a low per-call overhead; warnings about deprecated MPI functions are
# expected (every function of the header is wrapped, deprecated ones too).
CFLAGS = ["-shared", "-fPIC", "-O2", "-Wno-deprecated-declarations"]


def default_mpicc() -> str | None:
    here = Path(sys.executable).parent / "mpicc"
    return str(here) if here.exists() else shutil.which("mpicc")


def build(out_dir: str | Path = ".", mpicc: str | None = None) -> Path:
    """Generates the tracer from `mpicc`'s mpi.h (default: the mpicc beside
    this Python, else on PATH) and compiles it into out_dir/libidlewave-trace.so."""
    from idlewave.trace.gen_tracer import GenError, generate

    cc = mpicc or default_mpicc()
    if not cc:
        raise TraceError("mpicc not found: give --mpicc (the compiler wrapper of the MPI your application uses)")
    try:
        source, _ = generate(cc)
    except GenError as e:
        raise TraceError(f"cannot generate the tracer: {e}") from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lib = out / "libidlewave-trace.so"
    tmp = out / ".libidlewave-trace.so.tmp"
    src = out / ".libidlewave-trace.c"  # kept beside the library for inspection
    src.write_text(source)
    try:
        p = subprocess.run([cc, *CFLAGS, "-o", str(tmp), str(src), "-ldl", "-pthread"], capture_output=True, text=True)
    except FileNotFoundError:
        raise TraceError(f"{cc} not found") from None
    if p.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise TraceError(f"{cc} failed to compile the tracer ({src}):\n{p.stderr.strip()}")
    os.replace(tmp, lib)
    return lib


__all__ = ["build", "read", "read_rank", "calls", "replay", "export_goal", "TraceError"]
