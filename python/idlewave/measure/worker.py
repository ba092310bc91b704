"""The MPI side of ``idlewave measure``: run as
``python -m idlewave.measure.worker KIND PARAMS_JSON OUTDIR`` on every rank."""

from __future__ import annotations

import json
import platform
import socket
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from mpi4py import MPI

from idlewave.measure import WORKER_PREFIX
from idlewave.results import write_json, write_parquet, write_text


def machine(comm) -> dict:
    names = comm.allgather(MPI.Get_processor_name())
    return {
        "ranks": comm.Get_size(),
        "nodes": len(set(names)),
        "hosts": sorted(set(names)),
        "rank_hosts": names,
        "ranks_per_host": dict(sorted(Counter(names).items())),
        "mpi_library": MPI.Get_library_version().splitlines()[0].strip().strip("\x00"),
        "mpi_version": "{}.{}".format(*MPI.Get_version()),
        "mpi4py": __import__("mpi4py").__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": __import__("os").cpu_count(),
        "hostname": socket.gethostname(),
        "wtick_s": MPI.Wtick(),
    }


def run(kind: str, params: dict, out: Path) -> None:
    from idlewave.measure import kernels

    comm = MPI.COMM_WORLD
    measured_at = datetime.now(UTC).isoformat(timespec="seconds")
    frames = getattr(kernels, kind)(comm, **params)
    desc = {**machine(comm), "measured_at": measured_at}
    if "timer" in frames:
        desc["timer"] = frames.pop("timer")  # which loop timed the messages: C or mpi4py
    if comm.Get_rank() == 0:
        for name, rows in frames.items():
            if isinstance(rows, str):
                write_text(out / name, rows)
            else:
                write_parquet(out / f"{name}.parquet", pl.DataFrame(rows))
        write_json(out / "machine.json", {**desc, "kind": kind, "params": params})
    comm.Barrier()


def main() -> None:
    """`run`; a failure is one line on stderr after WORKER_PREFIX (which launch
    shows, not a traceback), then the job is aborted (the other ranks may be
    waiting for this one in a collective)."""
    kind, params, out = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    try:
        run(kind, params, out)
        return
    except SystemExit as e:  # a kernel's refusal: its message
        if e.code is None or isinstance(e.code, int):
            raise
        message = str(e.code)
    except Exception as e:
        message = f"{type(e).__name__}: {e}"
    sys.stderr.write(f"{WORKER_PREFIX}{message}\n")
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)


if __name__ == "__main__":
    main()
