"""`idlewave measure KIND`: real-MPI measurements, and the comparison of
measured kernels with the simulator's prediction."""

from __future__ import annotations

import ast
import contextlib
import json
import os
from pathlib import Path

import typer
from rich.table import Table

from idlewave.cli.common import QUIET, err, fail, out, print_json

measure_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Real-MPI measurements (runs itself under mpiexec): pingpong, multipair, kernels, noise, stream, cg; compare.")

HELP = {
    "pingpong": "ping-pong 1 B … max_bytes for the on-node and off-node pair of rank 0, then the same pairs sending at once "
                "(exchange.parquet) (max_bytes, reps, iterations, delay_s; span_bytes > 0: messages from memory, each a fresh "
                "slot of two regions this large; 0: one buffer, in the cache)",
    "multipair": "1..P/2 simultaneous pairs for the node bandwidth (max_bytes, min_bytes, reps, iterations)",
    "kernels": "blocking/nonblocking allreduce and 3-D halo between two busy-waits (sizes, halo_n, overlap_s, trailing_s, iterations, reps, test_chunks)",
    "noise": "selfish detours and FWQ per rank; trace.txt for the simulator (duration_s, threshold_ns, fwq_work, fwq_samples)",
    "stream": "STREAM Triad + r±1 exchange with and without barriers; P_D (elements, iterations, message_bytes)",
    "cg": "CG on 3-D Poisson with Algorithm 2 MatVec: fixed_alpha, dynamic_alpha, mpi_test (n, iterations, hiding, alpha0, theta, epsilon_s, test_chunk)",
}


def _params(sets: list[str]) -> dict:
    """--set key=value, each value a Python literal (a list: [8,1024], or 8,1024) or else a name."""
    params: dict = {}
    for s in sets or []:
        key, sep, value = s.partition("=")
        if not sep or not key:
            fail(f"--set expects key=value, got {s!r}")
        if key in params:
            fail(f"--set {key}: given twice ({key}={params[key]!r} and {s}); give it once")
        try:
            params[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            params[key] = value
        if isinstance(params[key], tuple):  # sizes=8,1024
            params[key] = list(params[key])
    return params


def _note(text: str) -> None:
    """What the C path assumed or found (a tool taken from beside the other, another library at run time)."""
    err.print(text if text.startswith("warning: ") else f"note: {text}", highlight=False, markup=False, soft_wrap=True)


def _run(kind: str, ranks: int, out_dir: Path, sets: list[str], as_json: bool = False, mpicc: str | None = None,
         mpiexec: str | None = None, quiet: bool = False) -> None:
    from idlewave.interrupts import MESSAGE, Signalled, signals_end_the_job
    from idlewave.measure import MeasureError, OutNotWritten, check, launch, under_mpi

    if ranks < 1:
        fail("--ranks must be at least 1")
    params = _params(sets)
    note = (lambda t: _note(t) if t.startswith("warning: ") else None) if quiet else _note
    try:
        check(kind, params, ranks)  # (launch checks again: here before --out's temporary directory)
        if under_mpi():  # every rank of the user's launcher runs this: rank 0 writes into --out itself
            _in_place(out_dir, lambda d: launch(kind, ranks, params, d, mpicc=mpicc, mpiexec=mpiexec, note=note))
        else:
            with signals_end_the_job():
                _written_whole(out_dir, lambda d: launch(kind, ranks, params, d, mpicc=mpicc, mpiexec=mpiexec, note=note))
    except MeasureError as e:
        fail(str(e), code=1 if isinstance(e, OutNotWritten) else 2)
    except Signalled as e:
        err.print(f"[bold red]error:[/] {MESSAGE.removeprefix('error: ')}", highlight=False)
        raise typer.Exit(128 + e.signum) from None
    rank = next((os.environ[v] for v in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID") if v in os.environ), "0")
    if under_mpi() and rank != "0":
        return  # started by the user's launcher: rank 0 reports
    files = sorted(p.name for p in out_dir.iterdir() if not p.name.startswith("."))
    if as_json:
        print(json.dumps({"kind": kind, "out": str(out_dir), "files": files}))
        return
    out.print(f"{kind}: wrote {', '.join(files)} in {out_dir}", markup=False, soft_wrap=True)


def _refuse_out(out_dir: Path) -> None:
    """--out must be a new or empty directory, or one a measurement wrote (its machine.json)."""
    from idlewave.measure import MeasureError

    if out_dir.exists() and not out_dir.is_dir():
        raise MeasureError(f"--out {out_dir}: cannot create the directory: it exists and is not a directory")
    if out_dir.is_dir() and next(out_dir.iterdir(), None) is not None and not (out_dir / "machine.json").is_file():
        raise MeasureError(f"--out {out_dir}: holds files of something else; a measurement writes into a new or empty "
                           "directory, or one it wrote before")


def _in_place(out_dir: Path, measure) -> None:
    """`measure(out_dir)`; a directory it created is removed again, if empty, when it fails."""
    _refuse_out(out_dir)
    existed = out_dir.exists()
    try:
        measure(out_dir)
    except BaseException:
        if not existed:
            with contextlib.suppress(OSError):
                out_dir.rmdir()
        raise


def _written_whole(out_dir: Path, measure) -> None:
    """`measure(tmp)` into a temporary directory beside `out_dir`, whose files
    then go into `out_dir`: a measurement that fails (a failed launch, a
    kernel's error, Ctrl-C) leaves --out as it was, and no empty directory.
    A new --out takes the temporary directory's name at once; into an earlier
    measurement's, each file is renamed over its namesake (machine.json last),
    and the files of another kind measured there before stay."""
    import shutil
    import tempfile

    from idlewave.measure import OutNotWritten

    _refuse_out(out_dir)
    parent = out_dir.absolute().parent
    missing = [d for d in [parent, *parent.parents] if not d.exists()]
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.absolute().name}.", suffix=".tmp", dir=parent))
    except OSError as e:
        _remove_empty(missing)
        raise OutNotWritten(f"--out {out_dir}: cannot create the directory: {e.strerror or e}") from None
    try:
        measure(tmp)
        try:
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o777 & ~mask)  # mkdtemp's 0700 is for the temporary name only
            if not out_dir.exists():
                os.replace(tmp, out_dir)
            else:
                names = sorted((p.name for p in tmp.iterdir() if not p.name.startswith(".")), key=lambda n: n == "machine.json")
                for name in names:
                    os.replace(tmp / name, out_dir / name)
        except OSError as e:
            raise OutNotWritten(f"--out {out_dir}: cannot write the measurement: {e.strerror or e}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if not out_dir.exists():
            _remove_empty(missing)


def _remove_empty(dirs: list[Path]) -> None:
    """The directories this command created for --out (deepest first), while empty."""
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            break


def _command(kind: str):
    def cmd(
        out_dir: Path = typer.Option(Path(f"measure-{kind}"), "--out", help="Output directory."),
        ranks: int = typer.Option(2, "--ranks", "-n", help="MPI processes on this machine (oversubscribed if more than "
                                  "cores; at most 16 per CPU: for more, start idlewave with your own mpiexec or srun)."),
        sets: list[str] | None = typer.Option(None, "--set", help="A parameter, key=value (repeatable)."),
        as_json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
        mpicc: str | None = typer.Option(None, "--mpicc", metavar="PATH", help="Measure with this MPI: the C kernels built with its compiler wrapper (pingpong, multipair, kernels, noise)."),
        mpiexec: str | None = typer.Option(None, "--mpiexec", metavar="PATH", help="The launcher of the same MPI (default: the one beside --mpicc)."),
        quiet: bool = QUIET,
    ):
        _run(kind, ranks, out_dir, sets or [], as_json, mpicc, mpiexec, quiet)

    cmd.__doc__ = HELP[kind]
    return cmd


for _kind in HELP:
    measure_app.command(_kind)(_command(_kind))


@measure_app.command("compare")
def compare_cmd(
    kernels_dir: Path = typer.Argument(..., help="Output of `idlewave measure kernels`."),
    platform: Path = typer.Option(..., "--platform", help="Platform TOML (e.g. from `idlewave fit postal`)."),
    out_dir: Path = typer.Option(Path("measure-compare"), "--out"),
    as_json: bool = typer.Option(False, "--json"),
    quiet: bool = QUIET,
):
    """Measured kernels against the simulator's prediction: compare.parquet and compare.png."""
    from idlewave.measure.compare import compare

    for name in ("kernels.parquet", "machine.json"):
        if not (kernels_dir / name).is_file():
            fail(f"{kernels_dir}: no {name} (run `idlewave measure kernels --out {kernels_dir}` first)")
    if not platform.is_file():
        fail(f"--platform {platform}: {'not a file' if platform.exists() else 'no such file'}")
    try:
        table = compare(kernels_dir, str(platform.resolve()), out_dir)
    except Exception as e:  # scenario and simulation errors carry user-facing messages
        fail(str(e))
    if as_json:
        print_json(table.to_dicts())
        return
    from idlewave.units import fmt_bytes, fmt_time

    t = Table("kernel", "mode", "size", "measured", "predicted", "error")
    for col in t.columns[2:]:
        col.justify = "right"
    for r in table.iter_rows(named=True):
        t.add_row(r["kernel"], r["mode"], fmt_bytes(r["size_bytes"], binary=True), fmt_time(r["measured_s"]), fmt_time(r["predicted_s"]),
                  f"{r['error_pct']:+.1f}%")
    out.print(t)
    out.print(f"figure: {out_dir / 'compare.png'}", markup=False, soft_wrap=True)
