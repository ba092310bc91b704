"""`idlewave goal`: GOAL schedules between text and LogGOPSim's binary layout, and a scenario's
workload written as one (to run it in LogGOPSim or ATLAHS)."""

from __future__ import annotations

from pathlib import Path

import typer

from idlewave import _engine
from idlewave.cli.common import QUIET, fail, not_an_input, out, output_file, print_json, scenario_sets

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
    from idlewave.results import ResultsError, _atomic, exit_code

    if not src.is_file():
        fail(f"{src}: no such file" if not src.exists() else f"{src}: a GOAL schedule must be a regular file")
    if to not in ("", "binary", "text"):
        fail(f"--to: {to!r} is not a GOAL format (binary, text)")
    output_file(dst, "-o", [src])
    if to == "":
        with open(src, "rb") as f:
            to = "text" if int.from_bytes(f.read(8).ljust(8, b"\0"), "little") == 4223 else "binary"
    found: dict = {}

    def write(tmp: Path) -> None:
        try:
            found["was"], found["ranks"], found["ops"] = _engine.goal_convert(str(src), str(tmp), to)
        except _engine.SimulationError as e:
            raise _write_error(e, tmp) from None

    try:
        _atomic(dst, write)
    except ResultsError as e:  # a write that failed, or an output refused
        fail(str(e), code=exit_code(e))
    except _engine.SimulationError as e:  # a damaged schedule
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
    from idlewave.results import ResultsError, _atomic, exit_code
    from idlewave.scenario import ScenarioError, load

    if to not in ("binary", "text"):
        fail(f"--to: {to!r} is not a GOAL format (binary, text)")
    output_file(dst, "-o", [scenario])
    try:
        scn = load(scenario, scenario_sets(sets))
    except ScenarioError as e:
        fail(str(e))
    checked = scn.to_dict()
    if checked.get("jobs"):
        fail(f"{scenario}: jobs: a scenario of [[jobs]] has no one workload to write; put the job's workload in a "
             "scenario's [workload] of its own and export that")
    not_an_input(dst, "-o", _files_named(checked))  # a partner file, a mapping, a noise trace…
    workload = checked.get("workload", {})
    if workload.get("kind") == "goal":
        fail(f"{scenario}: workload: the scenario already is a GOAL schedule ({workload.get('path')}); "
             "`idlewave goal convert` converts it between text and binary")
    found: dict = {}

    def write(tmp: Path) -> None:
        try:
            found["ranks"], found["ops"] = _engine.export_goal_file(scn, str(tmp), to)
        except _engine.SimulationError as e:
            raise _write_error(e, tmp) from None

    try:
        _atomic(dst, write)
    except ResultsError as e:  # a write that failed, or an output refused
        fail(str(e), code=exit_code(e))
    except _engine.SimulationError as e:  # a workload with no GOAL form: a refusal
        fail(f"{scenario}: workload: {e}")
    doc = {"scenario": str(scenario), "output": str(dst), "output_format": to, "ranks": found["ranks"],
           "ops": found["ops"], "bytes": dst.stat().st_size}
    if as_json:
        print_json(doc)
    else:
        out.print(f"{scenario} -> {dst} ({to}): {found['ranks']:,} ranks, {found['ops']:,} ops, {doc['bytes']:,} bytes",
                  markup=False, highlight=False, soft_wrap=True)


def _files_named(doc) -> list[Path]:
    """The files a checked scenario names (absolute paths of files that exist)."""
    if isinstance(doc, dict):
        return [f for v in doc.values() for f in _files_named(v)]
    if isinstance(doc, list):
        return [f for v in doc for f in _files_named(v)]
    return [Path(doc)] if isinstance(doc, str) and Path(doc).is_absolute() and Path(doc).is_file() else []


def _write_error(e: Exception, tmp: Path) -> Exception:
    """The engine's failed write of `tmp` ("TMP: cannot write: REASON (os
    error N)") as the OSError it is, which `_atomic` reports naming the
    output (not its temporary name); any other error as it is."""
    import os
    import re

    code = re.search(r"\(os error (\d+)\)$", str(e))
    if code is None or not str(e).startswith(f"{tmp}: cannot write: "):
        return e
    return OSError(int(code[1]), os.strerror(int(code[1])))


goal_app.command()(convert)
goal_app.command()(export)
