"""`idlewave goal`: GOAL schedules between text and LogGOPSim's binary layout, and a scenario's
workload written as one (to run it in LogGOPSim or ATLAHS)."""

from __future__ import annotations

from pathlib import Path

import typer

from idlewave import _engine
from idlewave.cli.common import QUIET, fail, out, print_json, scenario_sets

goal_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown",
                       help="GOAL schedules: convert between text and LogGOPSim's binary layout (`txt2bin`'s); "
                            "export a scenario's workload as one.")


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
    except (_engine.SimulationError, ResultsError) as e:
        fail(str(e), code=1)
    doc = {"input": str(src), "input_format": found["was"], "output": str(dst), "output_format": to,
           "ranks": found["ranks"], "ops": found["ops"], "bytes": dst.stat().st_size}
    if as_json:
        print_json(doc)
    else:
        out.print(f"{src} ({found['was']}) -> {dst} ({to}): {found['ranks']:,} ranks, {found['ops']:,} ops, "
                  f"{doc['bytes']:,} bytes", markup=False, highlight=False, soft_wrap=True)


def export(
    scenario: Path = typer.Argument(..., help="A scenario TOML with a built-in [workload]."),
    dst: Path = typer.Option(..., "-o", "--output", help="Where to write the schedule (replaced atomically)."),
    to: str = typer.Option("text", "--to", help="text or binary (LogGOPSim's layout, as `txt2bin` writes it)."),
    sets: list[str] = typer.Option(None, "--set", help="Override a scenario key: --set workload.ranks=4096 (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
    quiet: bool = QUIET,
):
    """Write a scenario's built-in workload as a GOAL schedule that LogGOPSim, ATLAHS and idlewave run
    to the same end times (each rank's ops in order; noise and the network stay in the scenario).
    Workloads with no GOAL form (memory phases, polling, nonblocking collectives) are refused, saying why."""
    from idlewave.results import ResultsError, _atomic
    from idlewave.scenario import ScenarioError, load

    if to not in ("binary", "text"):
        fail(f"--to: {to!r} is not a GOAL format (binary, text)")
    try:
        scn = load(scenario, scenario_sets(sets))
    except ScenarioError as e:
        fail(str(e))
    if scn.to_dict().get("jobs"):
        fail(f"{scenario}: jobs: a scenario of [[jobs]] has no one workload to write; put the job's workload in a "
             "scenario's [workload] of its own and export that")
    found: dict = {}

    def write(tmp: Path) -> None:
        found["ranks"], found["ops"] = _engine.export_goal_file(scn, str(tmp), to)

    try:
        _atomic(dst, write)
    except (_engine.SimulationError, ResultsError) as e:
        fail(str(e), code=1)
    doc = {"scenario": str(scenario), "output": str(dst), "output_format": to, "ranks": found["ranks"],
           "ops": found["ops"], "bytes": dst.stat().st_size}
    if as_json:
        print_json(doc)
    else:
        out.print(f"{scenario} -> {dst} ({to}): {found['ranks']:,} ranks, {found['ops']:,} ops, {doc['bytes']:,} bytes",
                  markup=False, highlight=False, soft_wrap=True)


goal_app.command()(convert)
goal_app.command()(export)
