"""Measurement on real MPI (mpi4py + Open MPI): ping-pong, multi-pair,
collective and halo kernels, noise, the STREAM desynchronization kernel and
the communication-hiding CG MatVec. ``launch`` runs a kind under mpiexec
(or in place when already started by the user's mpiexec/srun); rank 0
writes Parquet results and ``machine.json`` atomically. Given the
application's mpicc or mpiexec, the kernels run as a C program built with
that MPI instead (native.py, kernels.c).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

KINDS = ("pingpong", "multipair", "kernels", "noise", "stream", "cg")

# Settings that make Open MPI work in containers and VMs (see docs/how-to/measure-a-machine.md).
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


# Message sizes travel as C ints (the timed loop, MPI counts).
MAX_MESSAGE_BYTES = 2**31 - 1


def _defaults(kind: str) -> dict:
    """The kernel's parameters and defaults, read from kernels.py's source
    (importing it would start MPI in this process)."""
    import ast

    tree = ast.parse((Path(__file__).parent / "kernels.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kind)
    args = fn.args.args[1:]  # after comm
    # (our own source's constant expressions, such as 4 << 20)
    value = lambda d: eval(compile(ast.Expression(d), "kernels.py", "eval"), {"__builtins__": {}})  # noqa: E731, S307
    return {a.arg: value(d) for a, d in zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults)}


def check_params(kind: str, params: dict) -> None:
    """Refuses, before any process starts, a parameter the kernel does not
    take or a value it cannot measure with: counts and sizes are whole
    numbers ≥ 1 (sizes below 2^31), times finite and ≥ 0."""
    import math

    defaults = _defaults(kind)
    for key, value in params.items():
        if key not in defaults:
            raise MeasureError(f"--set {key}: {kind} takes {', '.join(defaults)}")
        default = defaults[key]
        what = f"--set {key}={value!r}"
        if isinstance(default, str):
            if not isinstance(value, str):
                raise MeasureError(f"{what}: a name is expected (default {default!r})")
            continue
        values = value if isinstance(value, list) and default is None else [value]
        for v in values:
            if isinstance(default, int) or default is None:
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise MeasureError(f"{what}: a whole number ≥ 1 is expected")
                if "bytes" in key or key == "sizes":
                    if v > MAX_MESSAGE_BYTES:
                        raise MeasureError(f"{what}: message sizes must be below 2^31 bytes")
            elif isinstance(default, float):
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise MeasureError(f"{what}: a finite number is expected")
                if key != "scalar" and v < 0:
                    raise MeasureError(f"{what}: must be ≥ 0")


_wheel_mpiexec = mpiexec  # (launch's argument of the same name hides it)


def launch(kind: str, ranks: int, params: dict, out: Path, timeout: float = 3600, *, mpicc: str | None = None,
           mpiexec: str | None = None, note: Callable[[str], None] | None = None) -> Path:
    """Runs one measurement kind on `ranks` processes; returns the output
    directory. With `mpicc` or `mpiexec` (the application's MPI), the C
    kernels built with that MPI run instead of mpi4py (native.py); `note`
    receives what was assumed (a tool taken from the other's directory)."""
    if kind not in KINDS:
        raise MeasureError(f"unknown kind {kind!r} (choose from {', '.join(KINDS)})")
    native = mpicc is not None or mpiexec is not None
    if native:
        from idlewave.measure import native as c_kernels

        if kind not in c_kernels.KINDS:
            raise MeasureError(f"{kind} runs on mpi4py only: --mpicc and --mpiexec measure {', '.join(c_kernels.KINDS)}")
    check_params(kind, params)
    tools = c_kernels.prepare(mpicc, mpiexec, note) if native else None
    out = Path(out)
    if out.is_dir() and next(out.iterdir(), None) is not None and not (out / "machine.json").is_file():
        raise MeasureError(f"--out {out}: holds files of something else; a measurement writes into a new or empty "
                           "directory, or one it wrote before")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MeasureError(f"--out {out}: cannot create the directory: {e.strerror or e}") from None
    if tools is not None:
        return c_kernels.launch(kind, ranks, params, out, tools, timeout, note)
    args = [sys.executable, "-m", "idlewave.measure.worker", kind, json.dumps(params), str(out)]
    if under_mpi():
        from idlewave.measure.worker import run

        run(kind, params, out)
        return out
    cmd = [_wheel_mpiexec(), "--oversubscribe", "-n", str(ranks), *args]
    env = {**os.environ, **MPI_ENV}
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MeasureError(f"{kind} did not finish within {timeout:.0f} s") from None
    if p.returncode != 0:
        tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-12:])
        raise MeasureError(f"{kind} failed under mpiexec (exit {p.returncode}):\n{tail}")
    return out
