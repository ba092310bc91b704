"""`idlewave report`: one self-contained HTML page from results.
Its commands are listed in idlewave/cli/root.py."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from idlewave.cli.common import QUIET, err, fail, not_an_input, out


def report(
    directory: Path = typer.Argument(..., help="A directory of results (simulate --out, sweep, regimes, measure compare)."),
    output: Path | None = typer.Option(None, "-o", "--output", help="HTML file (default DIR/report.html)."),
    as_json: bool = typer.Option(False, "--json", help="Print the page's path as JSON."),
    png: bool = typer.Option(False, "--png", help="Figures as PNG images (default: SVG, inline)."),
    quiet: bool = QUIET,
):
    """One self-contained HTML page from results.

    A damaged result below DIR is left out with a warning (on the page and
    here) and the exit code is 1; a damaged DIR itself is an error (exit 1, no page); a DIR
    without results is a usage error (exit 2)."""
    from idlewave.report import build

    if output is not None:
        not_an_input(output, "-o", [directory], keep=(".html",))
    left_out: list[str] = []

    def warn(message: str) -> None:
        left_out.append(message)
        err.print(f"[bold yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)

    try:
        path = build(directory, output, warn=warn, figures="png" if png else "svg")
    except FileNotFoundError as e:
        fail(str(e))
    if as_json:
        print(json.dumps({"report": str(path), "left_out": left_out}))
    else:
        out.print(f"report: {path}", markup=False, soft_wrap=True)
    if left_out:  # the page is written but incomplete: a script must notice, as with a sweep's failed points
        fail(f"{len(left_out)} result(s) under {directory} could not be read and are left out of {path}", code=1)
