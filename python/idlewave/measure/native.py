"""``idlewave measure KIND --mpicc PATH --mpiexec PATH``: the measurements
with the application's own MPI library.

mpi4py is bound to the MPI it was built with, so the default path measures
that library only. Here the kernels run as a C program (kernels.c, the
ports of kernels.py's functions) built with the given mpicc and launched
with the given mpiexec, or, when a user's launcher (mpiexec, srun) started
idlewave, run by each rank's Python as a child process that joins the
launcher's job. Nothing here imports mpi4py: the Python processes never
start MPI. Rank 0's program writes CSV; rank 0's Python turns it into the
Parquet files and machine.json of the mpi4py path.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from idlewave.measure import MeasureError, resolved_defaults, run_job, under_mpi
from idlewave.results import write_json, write_parquet, write_text

KINDS = ("pingpong", "multipair", "kernels", "noise")

HERE = Path(__file__).parent
# kernels.c includes pingpong.c (the timed loop both paths share): both key the cache.
SOURCES = (HERE / "kernels.c", HERE / "pingpong.c")
CFLAGS = ("-O2",)

# What the C program prints before each message meant for the user (kernels.c: PREFIX).
PREFIX = "idlewave kernels: "

# The tables of kernels.py, column by column: the CSV files of kernels.c
# read with these types become the same Parquet files.
TABLES: dict[str, dict[str, dict[str, type[pl.DataType]]]] = {
    "pingpong": {"pingpong": {"link": pl.String, "size_bytes": pl.Int64, "rep": pl.Int64, "time_s": pl.Float64},
                 "exchange": {"link": pl.String, "size_bytes": pl.Int64, "rep": pl.Int64, "time_s": pl.Float64}},
    "multipair": {"multipair": {"pairs": pl.Int64, "size_bytes": pl.Int64, "rep": pl.Int64, "time_s": pl.Float64}},
    "kernels": {"kernels": {"kernel": pl.String, "mode": pl.String, "size_bytes": pl.Int64, "n": pl.Int64, "rep": pl.Int64,
                            "time_s": pl.Float64, "overlap_s": pl.Float64, "trailing_s": pl.Float64}},
    "noise": {"detours": {"rank": pl.Int64, "start_ns": pl.Int64, "duration_ns": pl.Int64},
              "fwq": {"rank": pl.Int64, "sample": pl.Int64, "ns": pl.Int64}},
}

# The first line of `noise`'s trace.txt, as kernels.py writes it.
TRACE_HEADER = "# idlewave noise trace (selfish, rank 0): start<TAB>duration in ns\n"

# The settings the mpi4py path runs with in containers and VMs (MPI_ENV),
# for both Open MPI generations: running as root, and no single-copy
# transfers through CMA (Open MPI 5: smsc; 4: the vader BTL's mechanism),
# which a container's ptrace rules may forbid. Values the user exported win.
CONTAINER_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_smsc": "^cma",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
}

# Where a launcher tells a process its rank and the job's size.
RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")


def _env_int(names: tuple[str, ...]) -> int | None:
    for name in names:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def launcher_rank() -> int:
    """This process's rank in the user's launcher's job (0 when none says)."""
    rank = _env_int(RANK_VARS)
    return 0 if rank is None else rank


# ---------------------------------------------------------------- tools


def _executable(path: str, option: str) -> str:
    found = shutil.which(os.path.expanduser(path))
    if found is None:
        p = Path(path).expanduser()
        if os.sep not in path and not p.exists():
            raise MeasureError(f"{option} {path}: not found on PATH")
        if not p.exists():
            raise MeasureError(f"{option} {path}: no such file")
        raise MeasureError(f"{option} {path}: not an executable file")
    return os.path.abspath(found)


def _beside(directory: Path, names: tuple[str, ...]) -> str | None:
    for name in names:
        candidate = directory / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def resolve(mpicc: str | None, mpiexec: str | None, need_mpiexec: bool = True) -> tuple[str, str | None, list[str]]:
    """The absolute mpicc and mpiexec, one taken from the other's directory
    when it was not given; and notes that say what was taken from where."""
    notes = []
    for option, value in (("--mpicc", mpicc), ("--mpiexec", mpiexec)):
        if value is not None and not value.strip():
            raise MeasureError(f"{option}: an empty path")
    cc = _executable(mpicc, "--mpicc") if mpicc is not None else None
    run = _executable(mpiexec, "--mpiexec") if mpiexec is not None else None
    if cc is None:
        assert run is not None
        directory = Path(run).parent
        cc = _beside(directory, ("mpicc",))
        if cc is None:
            raise MeasureError(f"--mpiexec {run} was given without --mpicc, and there is no mpicc beside it in {directory}: "
                               "give --mpicc PATH (the C compiler wrapper of the same MPI)")
        notes.append(f"--mpicc not given: using {cc}, beside --mpiexec")
    if run is None and need_mpiexec:
        directory = Path(cc).parent
        run = _beside(directory, ("mpiexec", "mpirun"))
        if run is None:
            raise MeasureError(f"--mpicc {cc} was given without --mpiexec, and there is no mpiexec or mpirun beside it in "
                               f"{directory}: give --mpiexec PATH (the launcher of the same MPI)")
        notes.append(f"--mpiexec not given: using {run}, beside --mpicc")
    return cc, run, notes


# ---------------------------------------------------------------- build


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "idlewave"


def compiler_identity(mpicc: str) -> str:
    """What the program is built with: the real file behind mpicc (Open MPI's
    wrappers are links to one opal_wrapper) and the command line it runs
    (`-showme` for Open MPI, `-show` for MPICH and its derivatives)."""
    ident = [os.path.realpath(mpicc)]
    for flag in ("-showme", "-show"):
        try:
            p = subprocess.run([mpicc, flag], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if p.returncode == 0 and p.stdout.strip():
            ident.append(p.stdout.strip())
            break
    return "\n".join(ident)


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _prefix_hint(mpicc: str) -> str:
    """Why an Open MPI wrapper may look for its headers in the wrong place:
    another Open MPI's launcher exported OPAL_PREFIX, which every Open MPI
    wrapper follows."""
    prefix = os.environ.get("OPAL_PREFIX")
    if not prefix or Path(prefix).resolve() == Path(mpicc).resolve().parent.parent:
        return ""
    return (f"\nOPAL_PREFIX={prefix} is set (the launcher of another Open MPI sets it for its ranks): start idlewave "
            "with the launcher of the MPI that --mpicc belongs to, or without a launcher")


def build(mpicc: str) -> Path:
    """The C kernels built with `mpicc`, once per source and compiler: a
    cache in $XDG_CACHE_HOME/idlewave (~/.cache/idlewave), filled
    atomically; processes that build at the same time (every rank under a
    launcher) take turns, and all but the first find the program built."""
    digest = hashlib.sha256()
    for src in SOURCES:
        digest.update(src.read_bytes())
    digest.update("\0".join([compiler_identity(mpicc), *CFLAGS]).encode())
    key = digest.hexdigest()[:16]
    cache = cache_dir()
    exe = cache / f"kernels-{key}"
    if exe.is_file():
        return exe
    try:
        cache.mkdir(parents=True, exist_ok=True)
        lock = open(cache / f".kernels-{key}.lock", "w")  # held for the whole build
    except OSError as e:
        raise MeasureError(f"cannot use the build cache {cache}: {e.strerror or e}") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.is_file():
            return exe
        fd, name = tempfile.mkstemp(prefix=f".kernels-{key}.", suffix=".tmp", dir=cache)
        os.close(fd)
        tmp = Path(name)
        try:
            try:
                p = subprocess.run([mpicc, *CFLAGS, "-o", str(tmp), str(SOURCES[0])], capture_output=True, text=True, timeout=600)
            except OSError as e:
                raise MeasureError(f"--mpicc {mpicc}: cannot run: {e.strerror or e}") from None
            except subprocess.TimeoutExpired:
                raise MeasureError(f"--mpicc {mpicc}: the build did not finish within 600 s") from None
            if p.returncode != 0:
                raise MeasureError(f"--mpicc {mpicc} could not build the C kernels (exit {p.returncode}):\n"
                                   f"{_tail(p.stderr or p.stdout)}{_prefix_hint(mpicc)}")
            os.chmod(tmp, 0o755)
            os.replace(tmp, exe)
        finally:
            tmp.unlink(missing_ok=True)
    return exe


# ---------------------------------------------------------------- run


def arguments(kind: str, params: dict) -> list[str]:
    """The key=value arguments of kernels.c: every parameter, defaults filled."""
    defaults = resolved_defaults(kind)
    out = []
    for key, default in defaults.items():
        value = params.get(key, default)
        if isinstance(default, list):
            text = ",".join(str(int(v)) for v in (value if isinstance(value, list) else [value]))
        elif isinstance(default, float):
            text = repr(float(value))
        else:
            text = str(int(value))
        out.append(f"{key}={text}")
    return out


def physical_cores() -> int:
    """Cores this process may run on, hyperthreads of one core counted once
    (Open MPI's default slots are cores)."""
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:
        return os.cpu_count() or 1
    cores = set()
    for cpu in cpus:
        try:
            cores.add(Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list").read_text().strip())
        except OSError:
            cores.add(str(cpu))
    return max(len(cores), 1)


def accepts_oversubscribe(mpiexec: str, env: dict) -> bool:
    """Whether the launcher takes --oversubscribe (Open MPI's do; MPICH's
    Hydra has no such option and places any number of ranks anyway)."""
    try:
        p = subprocess.run([mpiexec, "--oversubscribe", "-n", "1", "true"], env=env, capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


def _failure(kind: str, where: str, p: subprocess.CompletedProcess) -> MeasureError:
    text = f"{p.stderr or ''}\n{p.stdout or ''}"
    ours = list(dict.fromkeys(line[len(PREFIX):] for line in text.splitlines() if line.startswith(PREFIX)))
    detail = "\n".join(ours[:6]) if ours else _tail(text, 12)
    return MeasureError(f"{kind} failed under {where} (exit {p.returncode}):\n{detail}")


@dataclass
class Tools:
    """The application's MPI, resolved and the kernels built with it."""

    mpicc: str
    mpiexec: str | None  # None under a user's launcher
    exe: Path
    external: bool  # started by a user's launcher
    rank: int  # in that launcher's job (0 otherwise)


def prepare(mpicc: str | None, mpiexec: str | None, note: Callable[[str], None] | None = None) -> Tools:
    """Finds the tools and builds the kernels, before anything is written;
    `note` (rank 0's) hears what was assumed."""
    external = under_mpi()
    rank = launcher_rank() if external else 0
    cc, run, notes = resolve(mpicc, mpiexec, need_mpiexec=not external)
    if external and mpiexec:
        notes.append("started by a launcher: --mpiexec is not used (the launcher's job runs the measurement)")
        run = None
    if note is not None and rank == 0:
        for n in notes:
            note(n)
    return Tools(cc, run, build(cc), external, rank)


def launch(kind: str, ranks: int, params: dict, out: Path, tools: Tools, timeout: float = 3600,
           note: Callable[[str], None] | None = None) -> Path:
    """Runs `kind` as the C program: under `tools.mpiexec` on `ranks`
    processes, or as this rank's process of the user's launcher's job when
    that launcher started idlewave. Rank 0 writes the results."""
    if kind not in KINDS:
        raise MeasureError(f"{kind} runs on mpi4py only: --mpicc and --mpiexec measure {', '.join(KINDS)}")
    env = {**os.environ}
    for key, value in CONTAINER_ENV.items():
        env.setdefault(key, value)
    measured_at = datetime.now(UTC).isoformat(timespec="seconds")
    raw = out / f".c-{kind}-{uuid.uuid4().hex[:12]}"  # rank 0's program creates it, once every rank has started
    cmd = [str(tools.exe), kind, *arguments(kind, params), f"out={raw}"]
    try:
        if tools.external:
            size = _env_int(SIZE_VARS)
            if size is not None:
                cmd.append(f"expect={tools.rank}/{size}")
            # the launcher's file descriptors (MPICH's PMI_FD) stay open for the program, in the launcher's process group
            p = run_job(kind, cmd, env, timeout, own_group=False, close_fds=False)
            if p.returncode != 0:
                raise _failure(kind, "the launcher", p)
            if tools.rank != 0:
                return out
        else:
            assert tools.mpiexec is not None
            oversubscribe = ranks > physical_cores() and accepts_oversubscribe(tools.mpiexec, env)
            p = run_job(kind, [tools.mpiexec, *(["--oversubscribe"] if oversubscribe else []), "-n", str(ranks), *cmd], env,
                        timeout)
            if p.returncode != 0:
                raise _failure(kind, tools.mpiexec, p)
        convert(kind, raw, out, {"kind": kind, "params": params, "measured_at": measured_at, "kernels": "C",
                                 "mpicc": tools.mpicc, "mpiexec": tools.mpiexec, "under_launcher": tools.external,
                                 "mpi_env": {k: env[k] for k in CONTAINER_ENV if k.startswith("OMPI_MCA_")}}, note)
    finally:
        shutil.rmtree(raw, ignore_errors=True)
    return out


# ---------------------------------------------------------------- results


def _machine_tsv(path: Path) -> tuple[dict[str, str], list[str]]:
    values: dict[str, str] = {}
    hosts: dict[int, str] = {}
    for line in path.read_text().splitlines():
        key, _, rest = line.partition("\t")
        if key == "host":
            rank, _, name = rest.partition("\t")
            hosts[int(rank)] = name
        else:
            values[key] = rest
    return values, [hosts[r] for r in sorted(hosts)]


def header_mismatch(header: str, library: str) -> bool:
    """Whether the program ran on another library than the headers it was
    compiled with (Open MPI: another major.minor; MPICH: another version)."""
    h = re.match(r"Open MPI v(\d+\.\d+)", header)
    if h:
        lib = re.match(r"Open MPI v(\d+\.\d+)", library)
        return lib is None or lib[1] != h[1]
    h = re.match(r"MPICH Version:\s*(\S+)", header)
    lib = re.match(r"MPICH Version:\s*(\S+)", library)
    return bool(h and lib and h[1] != lib[1])


def convert(kind: str, raw: Path, out: Path, meta: dict, note: Callable[[str], None] | None = None) -> None:
    """The program's CSV and machine.tsv → the Parquet files and machine.json of the mpi4py path."""
    if not (raw / "machine.tsv").is_file():
        raise MeasureError(f"{kind}: the C program ended without writing its results into {raw}")
    frames = {}
    for name, schema in TABLES[kind].items():
        try:
            frames[name] = pl.read_csv(raw / f"{name}.csv", schema=schema, glob=False)
        except (OSError, pl.exceptions.PolarsError) as e:
            raise MeasureError(f"{kind}: cannot read the C program's {name}.csv: {e}") from None
    values, hosts = _machine_tsv(raw / "machine.tsv")
    for name, frame in frames.items():
        write_parquet(out / f"{name}.parquet", frame)
    if kind == "noise":
        rank0 = frames["detours"].filter(pl.col("rank") == 0)
        write_text(out / "trace.txt", TRACE_HEADER + "".join(f"{s}\t{l}\n" for s, l in rank0.select("start_ns", "duration_ns").iter_rows()))
    library, header = values.get("mpi_library", ""), values.get("mpi_header", "")
    if header_mismatch(header, library) and note is not None:
        note(f"warning: the C kernels were compiled with the headers of {header} but ran on {library.split(',')[0]}: another MPI library "
             "was loaded at run time (LD_LIBRARY_PATH, or a launcher of another MPI); machine.json names the one that ran")
    desc = {
        "ranks": len(hosts),
        "nodes": len(set(hosts)),
        "hosts": sorted(set(hosts)),
        "rank_hosts": hosts,
        "ranks_per_host": dict(sorted(Counter(hosts).items())),
        "mpi_library": library,
        "mpi_version": values.get("mpi_version"),
        "mpi_header": header,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": int(values["cpu_count"]) if values.get("cpu_count", "").lstrip("-").isdigit() else None,
        "hostname": hosts[0] if hosts else None,
        "wtick_s": float(values["wtick_s"]) if "wtick_s" in values else None,
        **meta,
    }
    if kind in ("pingpong", "multipair"):
        desc["timer"] = "C"  # as the mpi4py path names its C loop
    write_json(out / "machine.json", desc)
