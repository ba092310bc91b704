"""`idlewave regimes`: regimes of noisy timings (idlewave.stats).
Its commands are listed in idlewave/cli/root.py."""

from __future__ import annotations

import re
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from idlewave.cli.common import Steps, err, fail, not_holding_an_input, out, print_json
from idlewave.results import unreplaceable
from idlewave.units import fmt_time

#: A wide table's column of an iteration: a number (0, 1, 2, …, or a CSV
#: without a header: its first row), or a name and a number (it0, column_1, …).
_ITERATION = re.compile(r"^(\D*?)_?(\d+)$")


def _iteration_labels(names: list[str]) -> bool:
    """Whether `names` name a column per iteration."""
    def number(name: str) -> bool:
        try:
            float(re.sub(r"_duplicated_\d+$", "", name))  # (polars renames a repeated header)
        except ValueError:
            return False
        return True

    if all(number(c) for c in names):
        return True
    found = [_ITERATION.match(c) for c in names]
    return all(found) and len({m[1] for m in found if m}) == 1


def _not_timings(path: Path) -> str | None:
    """Why `path` is not timings T[p, k] as `regimes` reads them, or None:
    a sweep's output directory, or a table that is neither long (rank,
    iteration and a time) nor wide (a row per rank, a column per iteration),
    which the reader would take for a matrix of times all the same (a
    ping-pong's sizes and times, a sweep's table). What else is wrong, the
    reader says (idlewave.stats.load)."""
    import polars as pl

    from idlewave.inputs import describe_columns

    if path.is_dir():
        if not (path / "timers.parquet").exists() and (path / "sweep.parquet").exists():
            return (f"{path}: a sweep's output, not timings T[p, k]: give one of its points' result directories "
                    f"({path / 'points'}/ID) or a table of times")
        return None
    if not path.is_file() or path.suffix == ".npy":
        return None
    try:
        if path.suffix == ".parquet":
            schema = dict(pl.read_parquet_schema(path))
        else:
            schema = dict(pl.scan_csv(path, comment_prefix="#", glob=False).collect_schema())
    except BaseException as e:  # unreadable: the reader says why (polars panics on some damaged files)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        return None
    columns = list(schema)
    if {"rank", "iteration"} <= set(columns) or {"rank", "sample", "ns"} <= set(columns):
        return None  # long: the reader checks its time column
    wide = [c for c in columns if c != "rank"]
    if wide and _iteration_labels(wide):
        return None
    numbers = "numbers in every column of " if any(not schema[c].is_numeric() for c in wide) else ""
    return (f"{path}: not timings T[p, k] (rank × iteration): expected {numbers}a wide table (a row per rank, a "
            "column per iteration: 0, 1, 2, … or it0, it1, …) or a long table (rank, iteration and time columns); "
            f"it {describe_columns(columns)}")


def regimes(
    data: list[Path] = typer.Argument(..., help="T[p, k]: Parquet/CSV (long rank, iteration, time — or wide), .npy, or result directories."),
    out_dir: Path = typer.Option(Path("regimes-out"), "--out", help="Output directory."),
    n_regimes: int | None = typer.Option(None, "--regimes", help="Number of regimes (default: chosen by BIC over 1..6)."),
    timer: str | None = typer.Option(None, "--timer", help="Timer to use from a result directory or long table "
                                     "(default: matvec if there is one, else iteration)."),
    use_max: bool = typer.Option(False, "--max", help="Fit T_k^max = max_p T[p,k] (Remark 1)."),
    names: list[str] | None = typer.Option(None, "--name", help="A label per input (default: file names)."),
    seed: int = typer.Option(0, "--seed"),
    restarts: int = typer.Option(5, "--restarts", min=1),
    space: str = typer.Option("log", "--space", help="Fit log times (default: skewed, heavy-tailed timings) or linear times."),
    no_figures: bool = typer.Option(False, "--no-figures"),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no notes on stderr (errors and warnings still)."),
):
    """Regimes of noisy timings (HMM paper Algorithm 1) and their comparison across inputs.

    On a terminal, the progress counts k of N steps (each count of regimes
    tried per input, decoding, figures) with the time elapsed and left."""
    from idlewave.stats import DataError, analyze, load

    if not 0 <= seed < 2**32:  # scikit-learn's range for a seed
        fail(f"--seed must be from 0 to 2^32 - 1, got {seed}")
    labels = names or [p.stem if p.is_file() else p.name for p in data]
    if len(labels) != len(data) or len(set(labels)) != len(labels):
        fail("give one distinct --name per input")
    for label in labels:  # a name becomes a file name inside --out
        if not label or label in (".", "..") or "/" in label or "\\" in label or label.startswith("."):
            fail(f"--name {label!r}: a name is used as a file name inside --out; no '/', no leading '.'")
    not_holding_an_input(out_dir, "--out", data)
    if (why := unreplaceable(out_dir)) is not None:  # before the fit, not after
        fail(f"--out {why}")
    steps = Steps(1, quiet, first="reading the inputs")
    try:
        steps.__enter__()
        steps("reading the inputs", k=1)
        sets = {}
        for n, p in zip(labels, data):
            if (why := _not_timings(p)) is not None:
                fail(why)
            sets[n] = load(p, timer)
        extra = {}
        for n, p in zip(labels, data):
            if p.is_dir() and (p / "timers.parquet").exists():
                try:
                    extra[n] = (load(p, "t_in")[0], load(p, "t_out")[0])
                except DataError:
                    pass
        summary = analyze(sets, out_dir, n_regimes=n_regimes, seed=seed, restarts=restarts, use_max=use_max,
                          figures_on=not no_figures, extra={k: v for k, v in extra.items() if v[0].size}, space=space,
                          note=None if quiet else lambda m: err.print(f"note: {m}", markup=False, highlight=False),
                          progress=lambda what, k, n: steps(what, k=k + 1, total=n + 1))
        steps.finish()
    except DataError as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail(f"interrupted; {out_dir} is as it was (nothing of this run was written)", code=130)
    finally:
        steps.__exit__(None, None, None)
    if as_json:
        print_json(summary)
        return
    for name, s in summary["datasets"].items():
        t = Table(title=escape(f"{name}: {s['n_regimes']} regimes ({s['series']})"), title_justify="left")
        for c in ("regime", "mean", "sd", "share", "fitted μ", "fitted σ"):
            t.add_column(c, justify="left" if c == "regime" else "right")
        for r in s["regimes"]:
            mean, sd = ("-", "-") if r["mean"] is None else (fmt_time(r["mean"], 4), fmt_time(r["sd"]))
            t.add_row(str(r["regime"]), mean, sd, f"{r['share']:.2f}", fmt_time(r["mu"], 4), fmt_time(r["sigma"]))
        out.print(t)
    if summary["comparisons"]:
        if "note" in summary["comparisons"]:
            out.print(f"note: {escape(summary['comparisons']['note'])}")
        for k in summary["comparisons"]["ks"]:
            out.print(f"KS {k['a']} vs {k['b']}: D = {k['statistic']:.3f}, p = {k['pvalue']:.3g}", markup=False, soft_wrap=True)
    out.print(f"results: {out_dir}", markup=False, soft_wrap=True)
