"""`idlewave goal convert`: GOAL schedules between text and LogGOPSim's binary layout."""

from __future__ import annotations

from pathlib import Path

import typer

from idlewave import _engine
from idlewave.cli.common import QUIET, fail, out, print_json

goal_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown",
                       help="GOAL schedules: convert between text and LogGOPSim's binary layout (`txt2bin`'s).")


def convert(
    src: Path = typer.Argument(..., help="A GOAL schedule: text, or binary (recognised by its magic number, 4223)."),
    dst: Path = typer.Option(..., "-o", "--output", help="Where to write it (replaced atomically)."),
    to: str = typer.Option("", "--to", help="binary or text (default: the other format than SRC's)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was converted as JSON."),
    quiet: bool = QUIET,
):
    """Convert a GOAL schedule between text and LogGOPSim's binary layout:
    the binary is byte for byte what LogGOPSim's `txt2bin` writes for the same
    text, and LogGOPSim, ATLAHS and idlewave read it; idlewave reads either
    format wherever it takes a GOAL file."""
    from idlewave.results import ResultsError, _atomic

    if not src.is_file():
        fail(f"{src}: no such file" if not src.exists() else f"{src}: a GOAL schedule must be a regular file")
    if to not in ("", "binary", "text"):
        fail(f"--to: {to!r} is not a GOAL format (binary, text)")
    if to == "":
        with open(src, "rb") as f:
            to = "text" if int.from_bytes(f.read(8).ljust(8, b"\0"), "little") == 4223 else "binary"
    found: dict = {}

    def write(tmp: Path) -> None:
        found["was"], found["ranks"], found["ops"] = _engine.goal_convert(str(src), str(tmp), to)

    try:
        _atomic(dst, write)
    except _engine.SimulationError as e:
        fail(str(e), code=1)
    except ResultsError as e:
        fail(str(e), code=1)
    doc = {"input": str(src), "input_format": found["was"], "output": str(dst), "output_format": to,
           "ranks": found["ranks"], "ops": found["ops"], "bytes": dst.stat().st_size}
    if as_json:
        print_json(doc)
    else:
        out.print(f"{src} ({found['was']}) -> {dst} ({to}): {found['ranks']:,} ranks, {found['ops']:,} ops, "
                  f"{doc['bytes']:,} bytes", markup=False, highlight=False, soft_wrap=True)


goal_app.command()(convert)
