"""`idlewave bench`: the engine's benchmark cases and the CPU time of `idlewave --help`.
Its commands are listed in idlewave/cli/root.py."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import typer

from idlewave import _engine
from idlewave.cli.common import QUIET, fail


def bench(
    case: list[str] = typer.Option(None, "--case", help="Run only these cases (repeatable); also the smaller "
                                   "cases run only by name: " + ", ".join(_engine.bench_cases(smaller=True)) + "."),
    repeat: int = typer.Option(1, "--repeat", min=1, max=100, help="Run each case this many times and print the "
                               "median of each rate, with the range of events_per_cpu_s."),
    as_json: bool = typer.Option(True, "--json", hidden=True, help="Accepted: bench prints JSON lines only."),
    quiet: bool = QUIET,
):
    """Engine benchmark: one JSON line per case (events/s, bytes/rank), and the CPU time of `idlewave --help` (case cli_help)."""
    known = [*_engine.bench_cases(), HELP_CASE]
    smaller = _engine.bench_cases(smaller=True)
    unknown = [c for c in case or [] if c not in known and c not in smaller]
    if unknown:  # every name checked before the first case runs
        fail(f"--case: unknown bench case{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
             f"(known: {', '.join(known)}; by name only: {', '.join(smaller)})")
    cases = case or known
    for c in cases:
        try:
            runs = [help_cpu() if c == HELP_CASE else dict(_engine.bench_case(c)) for _ in range(repeat)]
        except _engine.SimulationError as e:
            fail(str(e))
        print(json.dumps(median_of_runs(runs)), flush=True)


HELP_CASE = "cli_help"


def help_cpu() -> dict:
    """The CPU time (user + system) of `idlewave --help` in a new process: the
    start-up every command pays before it does anything (imports, Typer)."""
    import resource
    import subprocess

    script = Path(sys.executable).parent / "idlewave"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "idlewave"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([*cmd, "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"case": HELP_CASE, "help_cpu_s": round(cpu, 3)}


def median_of_runs(runs: list[dict]) -> dict:
    """One line for repeated runs of a bench case: each figure that varies
    from run to run (times and rates) as its median, and the range of
    events_per_cpu_s. A median of three holds against one run slowed by
    another process; the range shows how much the host's load moved it."""
    line = dict(runs[0])
    if len(runs) == 1:
        return line
    for key, value in runs[0].items():
        if isinstance(value, float) and any(r[key] != value for r in runs):
            line[key] = statistics.median(r[key] for r in runs)
    cpu = [r["events_per_cpu_s"] for r in runs if "events_per_cpu_s" in r]
    line["runs"] = len(runs)
    if cpu:
        line["events_per_cpu_s_range"] = [min(cpu), max(cpu)]
    return line
