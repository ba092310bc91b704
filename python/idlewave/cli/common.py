"""What every command group shares: the consoles, the one way to fail, the progress line,
--quiet and --json, and the reader of measurement tables."""

from __future__ import annotations

import importlib
import sys
import time
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from idlewave.units import fmt_count, fmt_rate, fmt_time

if TYPE_CHECKING:
    from pathlib import Path

    import polars as pl

out = Console(emoji=False)  # ":100:" in a file:line is a position, never an emoji code
err = Console(stderr=True, emoji=False)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a user-facing error and exit (2: bad input)."""
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)  # messages name [tables]
    raise typer.Exit(code)


def not_an_input(output: Path, option: str, inputs: list[Path], keep: tuple[str, ...] = ()) -> None:
    """Refuses an output that would replace what the command reads: one of
    `inputs`, or a file that exists inside an input directory (a file with a
    suffix in `keep` there is the command's own earlier output)."""
    target = output.resolve()
    for source in inputs:
        at = source.resolve()
        inside = at.is_dir() and at in target.parents and target.is_file() and target.suffix not in keep
        if target == at or inside:
            fail(f"{option} {output}: it would replace {'the input' if target == at else 'a file of the input'} {source}; "
                 "write elsewhere")


def not_holding_an_input(out_dir: Path, option: str, inputs: list[Path]) -> None:
    """Refuses an output directory (replaced whole when written) that is one
    of `inputs` or holds one: writing it would delete what the command reads."""
    target = out_dir.resolve()
    for source in inputs:
        at = source.resolve()
        if target == at or target in at.parents:
            fail(f"{option} {out_dir}: it would replace {'the input' if target == at else 'the directory of the input'} "
                 f"{source}; write elsewhere")


def output_file(output: Path, option: str, inputs: list[Path]) -> None:
    """Refuses, before any work, a one-file output that cannot take its
    place: one that would replace what the command reads (`not_an_input`),
    or a directory, FIFO or device (a file never replaces one)."""
    not_an_input(output, option, inputs)
    if output.exists() and not output.is_file():
        kind = "a directory" if output.is_dir() else "not a regular file"
        fail(f"{option} {output}: exists and is {kind}; it is not replaced (name a file to write)")


def lazy(name: str) -> ModuleType:
    """A module that is imported on first attribute access, so that
    `idlewave --help` does not load numpy, polars or scipy.

    It is imported the ordinary way, then: a Ctrl-C in the middle undoes the
    import (the stdlib's LazyLoader would leave a half-initialised module in
    sys.modules, and everything importing it later would meet "module
    'polars' has no attribute 'DataFrame'")."""
    if name in sys.modules:
        return sys.modules[name]
    return _Lazy(name)


class _Lazy(ModuleType):
    def __getattr__(self, attr: str):
        return getattr(importlib.import_module(self.__name__), attr)


def print_json(data, indent: int | None = 2, **kw) -> None:
    """Prints `data` as valid JSON on stdout: a NaN or an infinity is null,
    with a warning on stderr naming where (results.json_text)."""
    from idlewave.results import json_text

    print(json_text(data, indent, warn=lambda m: err.print(f"[yellow]warning:[/] {escape(m)}", highlight=False,
                                                          soft_wrap=True), **kw), flush=True)


#: The fixed part of a progress line (docs/cli-conventions.md): the count
#: ("k/N" up to 9,999,999/9,999,999, or a percentage), a bar, the time
#: elapsed, "ETA" and the time left; what runs takes the rest of the line,
#: cut with "…" (at 80 columns, 32 characters after "k/N", 43 after a percentage), so that the count and the
#: times are never squeezed out.
COUNT_WIDTH, BAR_WIDTH, TIME_WIDTH = 15, 10, 7
FIXED_WIDTH = BAR_WIDTH + TIME_WIDTH + len("ETA") + TIME_WIDTH + 5  # and the count; 5 gaps


def progress_bar(console: Console | None = None, *, transient: bool = True, percent: bool = False):
    """The one progress line of every command: "k/N" (or the percentage
    done), a bar, the time elapsed, "ETA h:mm:ss", then what runs, printed
    literally and cut to fit the terminal (80 columns: one line)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.table import Column

    console = console or err

    def fixed(width: int) -> Column:
        return Column(min_width=width, no_wrap=True, justify="right")

    width = 4 if percent else COUNT_WIDTH
    count = TaskProgressColumn(table_column=fixed(width)) if percent else MofNCompleteColumn(table_column=fixed(width))
    description = Column(width=max(8, console.width - width - FIXED_WIDTH - 1), no_wrap=True, overflow="ellipsis")
    return Progress(count, BarColumn(bar_width=BAR_WIDTH), TimeElapsedColumn(table_column=fixed(TIME_WIDTH)), TextColumn("ETA"),
                    TimeRemainingColumn(table_column=fixed(TIME_WIDTH)),
                    TextColumn("{task.description}", markup=False, table_column=description), console=console, transient=transient)


class Steps:
    """k of N steps of a long command, shown on stderr on a terminal (nothing
    with --quiet, --json or stderr redirected): `step(what)` says the next
    step begins, `done()` (or leaving the `with`) ends the line."""

    def __init__(self, total: int, quiet: bool = False, console: Console | None = None, first: str = "starting"):
        console = console or err
        self.total, self.k = total, 0
        self.bar = None if quiet or not console.is_terminal else progress_bar(console)
        if self.bar is not None:
            self.task = self.bar.add_task(first, total=total)

    def __enter__(self) -> Steps:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, what: str, k: int | None = None, total: int | None = None) -> None:
        """Step `k` (default: the next) of `total` (default: as before) begins: `what`."""
        self.k = self.k + 1 if k is None else k
        if total is not None:
            self.total = total
        self.total = max(self.total, self.k)  # an estimate that fell short grows, never shows k > N
        if self.bar is not None:
            self.bar.update(self.task, description=what, completed=self.k - 1, total=self.total)

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=self.total)


def scenario_sets(sets: list[str] | None, flag: str = "--set") -> dict:
    """`--set key.path=value`, repeatable, as overrides of a scenario
    (idlewave.overrides.apply): the value is read as TOML (5e-6, true,
    "text", [1, 2], {kind = "x"}), and as a plain string where it is not."""
    import tomllib

    overrides: dict = {}
    for s in sets or []:
        key, sep, value = s.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            fail(f"{flag} expects key.path=value (e.g. {flag} network.L_s=5e-6), got {s!r}")
        if "[" in key:  # (it was refused as an unknown key, with the list's own name among those allowed)
            table = key.split("[", 1)[0]
            fail(f"{flag} {key}: a key path names tables and keys, not entries of a list such as {table}: set the "
                 f"whole list, e.g. {flag} '{table}=[{{...}}]', or edit the scenario")
        try:
            overrides[key] = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            overrides[key] = value.strip()
    return overrides


#: --quiet on every command (docs/cli-conventions.md): no progress, notes or
#: chatter on stderr; errors and warnings still print. A command that prints
#: none accepts it all the same, so that a script can pass it everywhere.
QUIET = typer.Option(False, "--quiet", "-q", help="No progress and no notes on stderr (errors and warnings still print).")

#: --json of `idlewave model …` and `idlewave fit …`.
JSON = typer.Option(False, "--json", help="Print JSON.")


def run_with_progress(run, quiet: bool):
    """Runs `run(progress_callback)` with a live line: simulated time,
    events/s and, where the program knows how far it is (its ranks'
    iterations), the percentage done and the time left."""
    if quiet or not sys.stderr.isatty():
        return run(None)
    start = time.perf_counter()
    with progress_bar(err, percent=True) as bar:
        task = bar.add_task("simulating", total=None)

        def update(sim_s: float, events: int, done: float | None = None) -> bool:
            rate = events / max(time.perf_counter() - start, 1e-9)
            text = f"simulated {fmt_time(sim_s)} · {fmt_count(events)} events · {fmt_rate(rate, 'events/s')}"
            if done is None:
                bar.update(task, description=text)
            else:
                bar.update(task, description=text, total=1.0, completed=done)
            return True

        return run(update)


def read_table(path: Path, needed: list[str], positive: tuple[str, ...] = ()) -> pl.DataFrame:
    """A measurement table with the `needed` numeric columns, every value
    finite (and above 0 in the `positive` ones), or a clear error naming
    the first bad row (`idlewave model hyperbolic`, `idlewave fit postal`)."""
    import numpy as np
    import polars as pl

    from idlewave.inputs import describe_columns

    if path.is_dir():
        fail(f"{path}: a directory, not a table (CSV or Parquet)")
    if not path.exists():
        fail(f"{path}: no such file")
    try:
        frame = pl.read_parquet(path, glob=False) if path.suffix == ".parquet" else pl.read_csv(path, comment_prefix="#", glob=False)
    except (OSError, pl.exceptions.PolarsError) as e:
        fail(f"{path}: {e}")
    twice = [c.rsplit("_duplicated_", 1)[0] for c in frame.columns if "_duplicated_" in c]  # (polars renames a repeated one)
    if twice:
        fail(f"{path}: column {twice[0]} appears more than once: which one is meant?")
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        fail(f"{path}: missing column(s) {', '.join(missing)} ({describe_columns(frame.columns)})")
    if frame.height == 0:
        fail(f"{path}: no measurements (the table has a header and no rows)")
    for c in needed:
        try:
            values = frame[c].cast(pl.Float64, strict=True).to_numpy()
        except pl.exceptions.PolarsError:
            fail(f"{path}: column {c} must hold numbers, got {frame[c].dtype}")
        bad = ~np.isfinite(values) | ((values <= 0) if c in positive else False)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            rule = "a positive number" if c in positive else "a finite number"
            fail(f"{path}: {c} must be {rule}, got {frame[c][i]} in data row {i + 1}")
    return frame
