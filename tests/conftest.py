import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def as_at_a_terminal() -> None:
    """For `preexec_fn`: Ctrl-C's default action in a child, as a shell gives
    a command it starts. A runner that starts the tests as a background job
    hands them SIGINT ignored, and a program started so rightly keeps
    ignoring it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(*args, check=True, env=None):
    """Runs the installed console script in a process of its own; returns the
    CompletedProcess. For what only a process shows: signals and Ctrl-C,
    environment variables read at start-up (PYTHONPATH, completion), the
    console script itself, a child's output on the inherited stdout."""
    exe = Path(sys.executable).parent / "idlewave"
    p = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and p.returncode != 0:
        raise AssertionError(f"idlewave {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def invoke_cli(*args, check=True, env=None):
    """`idlewave ARGS` in this process, through Typer's CliRunner: the console
    script's function (idlewave.cli.main: its exit codes and one-line
    errors) with argv, stdout, stderr and `env` in os.environ swapped for the
    call; returns a CompletedProcess like `run_cli`, without the half-second
    start of a Python process. An exception that escapes is exit code 1 and
    its traceback on stderr, as in a process."""
    import signal
    import traceback
    from unittest import mock

    from typer.testing import CliRunner

    import idlewave.cli
    from idlewave.cli import common

    argv = ["idlewave", *map(str, args)]
    sigint = signal.getsignal(signal.SIGINT)  # main() leaves Ctrl-C ending the process at once: put back after
    # COLUMNS is read when a console is made, at start-up in a process: here it is given to idlewave's consoles
    width = int(env["COLUMNS"]) if env and "COLUMNS" in env else None
    code = 0
    with CliRunner().isolation(env=env) as (stdout, stderr, _), mock.patch.object(sys, "argv", argv), \
            mock.patch.object(sys.modules["__main__"], "__package__", None), \
            mock.patch.object(common.out, "_width", width or common.out._width), \
            mock.patch.object(common.err, "_width", width or common.err._width):
        # (no __package__: Click names the program from argv[0], not `python -m pytest`)
        try:
            idlewave.cli.main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
        except Exception:
            code = 1
            traceback.print_exc()
        finally:
            signal.signal(signal.SIGINT, sigint)
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = stdout.getvalue().decode(), stderr.getvalue().decode()
    p = subprocess.CompletedProcess(argv, code, out, err)
    if check and code != 0:
        raise AssertionError(f"idlewave {' '.join(argv[1:])} failed ({code}):\n{out}\n{err}")
    return p


@pytest.fixture
def cli():
    """`idlewave ARGS` in this process (`invoke_cli`); `cli_process` where a process of its own is the point."""
    return invoke_cli


@pytest.fixture
def cli_process():
    """`idlewave ARGS` as a process of its own (`run_cli`)."""
    return run_cli


BIN = Path(sys.executable).parent


def built_once(tmp_path_factory, name: str, make) -> Path:
    """`make(directory)` once for the whole run: under pytest-xdist the first
    worker to need it builds it in the directory the workers share, the
    others wait for it and take the same file."""
    import fcntl

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # pytest-of-USER/pytest-N, above each worker's popen-gwK
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = root / f"{name}.built"
        if done.exists():
            return Path(done.read_text())
        (root / name).mkdir(exist_ok=True)
        path = Path(make(root / name))
        done.write_text(str(path))
        return path


@pytest.fixture(scope="session")
def lib(tmp_path_factory):
    """The PMPI tracer, built once for the run."""
    from idlewave.trace import build

    return built_once(tmp_path_factory, "lib", build)


def preempted(out: Path) -> bool:
    """A ping-pong measurement a loaded machine disturbed: the fastest
    repetitions of 1-32 B (the same few µs on an idle machine) more than 3x
    apart, in pingpong.parquet or exchange.parquet. On a 2-core machine an
    oversubscribed rank loses the core for whole milliseconds, at any size."""
    import polars as pl

    for name in ("pingpong.parquet", "exchange.parquet"):
        d = pl.read_parquet(out / name).filter(pl.col("size_bytes") <= 32)
        best = d.group_by("size_bytes").agg(pl.col("time_s").min())["time_s"]
        if best.max() > 3 * best.min():
            return True
    return False


@pytest.fixture(scope="session")
def debian_lib(tmp_path_factory):
    """The PMPI tracer for Debian's Open MPI (C and Fortran), built once for the run."""
    import shutil

    from idlewave.trace import build

    deb = Path("/usr/bin")
    missing = [p for p in ("mpifort", "mpicc", "mpiexec") if not (deb / p).exists()]
    if missing or not shutil.which("gfortran"):
        pytest.skip(f"Fortran tests need Debian's gfortran and Open MPI (missing: {', '.join(missing) or 'gfortran'}); "
                    "`make system-deps` installs them")
    return built_once(tmp_path_factory, "deblib", lambda d: build(d, str(deb / "mpicc")))


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


def pytest_collection_modifyitems(config, items):
    """Every test is `unit` or `integration` (its file's `pytestmark`, docs/maintaining.md "Tests"):
    a test without either would fall outside the tiers unnoticed."""
    unmarked = [item.nodeid for item in items if not any(item.iter_markers("unit")) and not any(item.iter_markers("integration"))]
    if unmarked:
        raise pytest.UsageError("tests without a `unit` or `integration` marker (set `pytestmark` in the file):\n  "
                                + "\n  ".join(unmarked[:20]))
