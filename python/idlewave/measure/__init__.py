"""Measurement on real MPI (mpi4py + Open MPI): ping-pong, multi-pair,
collective and halo kernels, noise, the STREAM desynchronization kernel and
the communication-hiding CG MatVec. ``launch`` runs a kind under mpiexec
(or in place when already started by the user's mpiexec/srun); rank 0
writes Parquet results and ``machine.json`` atomically.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

KINDS = ("pingpong", "multipair", "kernels", "noise", "stream", "cg")

# Settings that make Open MPI work in containers and VMs (see the README).
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_smsc": "^cma",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


class MeasureError(RuntimeError):
    """A measurement that could not run; the message says why."""


def under_mpi() -> bool:
    """Whether this process was started by an MPI launcher."""
    return any(v in os.environ for v in ("OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"))


def mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if not found:
        raise MeasureError("mpiexec not found: install the package's dependencies (make install brings Open MPI)")
    return found


def launch(kind: str, ranks: int, params: dict, out: Path, timeout: float = 3600) -> Path:
    """Runs one measurement kind on `ranks` processes; returns the output directory."""
    if kind not in KINDS:
        raise MeasureError(f"unknown kind {kind!r} (choose from {', '.join(KINDS)})")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "idlewave.measure.worker", kind, json.dumps(params), str(out)]
    if under_mpi():
        from idlewave.measure.worker import run

        run(kind, params, out)
        return out
    cmd = [mpiexec(), "--oversubscribe", "-n", str(ranks), *args]
    env = {**os.environ, **MPI_ENV}
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MeasureError(f"{kind} did not finish within {timeout:.0f} s") from None
    if p.returncode != 0:
        tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-12:])
        raise MeasureError(f"{kind} failed under mpiexec (exit {p.returncode}):\n{tail}")
    return out
