"""`idlewave trace build|replay|export|import`: the PMPI tracer and replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from idlewave.cli_common import fail, out

trace_app = typer.Typer(no_args_is_help=True, help="Trace MPI runs (PMPI, LD_PRELOAD) and replay them in the simulator.")


@trace_app.command("build")
def build_cmd(
    out_dir: Path = typer.Option(Path("."), "-o", "--out", help="Where to put libidlewave-trace.so."),
    mpicc: Optional[str] = typer.Option(None, "--mpicc", help="The MPI compiler wrapper of your application's MPI."),
):
    """Compile the PMPI tracer with your mpicc."""
    from idlewave.trace import TraceError, build

    try:
        lib = build(out_dir, mpicc)
    except TraceError as e:
        fail(str(e))
    out.print(f"built {lib}\nrun:  IDLEWAVE_TRACE_DIR=trace mpiexec -x LD_PRELOAD={lib.resolve()} -x IDLEWAVE_TRACE_DIR -n N ./app")


def _goal(trace_dir: Path, algorithms: list[str], scale_to: Optional[int], compute_scale: float) -> str:
    from idlewave.trace import TraceError, extrapolate, read, to_goal

    algs = {}
    for a in algorithms or []:
        k, sep, v = a.partition("=")
        if not sep:
            fail(f"--algorithm expects collective=algorithm, got {a!r}")
        algs[k] = v
    try:
        traces = read(trace_dir)
        if scale_to:
            traces = extrapolate(traces, scale_to)
        return to_goal(traces, algs, compute_scale)
    except (TraceError, Exception) as e:  # the engine's SimulationError for bad algorithm names, too
        fail(str(e))


@trace_app.command("export")
def export_cmd(
    trace_dir: Path = typer.Argument(..., help="Directory of rank-*.iwt files."),
    output: Path = typer.Option(..., "-o", "--output", help="GOAL file to write."),
    algorithm: Optional[list[str]] = typer.Option(None, "--algorithm", help="collective=algorithm, e.g. allreduce=ring."),
    scale_to: Optional[int] = typer.Option(None, "--scale-to", help="Extrapolate to this many ranks."),
):
    """Write the trace as a GOAL schedule (LogGOPSim's format)."""
    from idlewave.results import write_text

    write_text(output, _goal(trace_dir, algorithm, scale_to, 1.0))
    out.print(f"wrote {output}")


@trace_app.command("replay")
def replay_cmd(
    trace_dir: Path = typer.Argument(..., help="Directory of rank-*.iwt files."),
    platform: Optional[str] = typer.Option(None, "--platform", help="Preset or platform file to replay on."),
    algorithm: Optional[list[str]] = typer.Option(None, "--algorithm", help="collective=algorithm, e.g. allreduce=ring."),
    scale_to: Optional[int] = typer.Option(None, "--scale-to", help="Extrapolate a periodic pattern to this many ranks."),
    compute_scale: float = typer.Option(1.0, "--compute-scale", help="Multiply the computation between MPI calls."),
    scenario: Optional[Path] = typer.Option(None, "--scenario", help="Take [network], [[noise]] and seed from this scenario TOML."),
    out_dir: Path = typer.Option(Path("replay-out"), "--out"),
    as_json: bool = typer.Option(False, "--json"),
):
    """Replay a trace in the simulator (optionally on another platform, with other algorithms, at another scale)."""
    import idlewave
    from idlewave.results import write_text
    from idlewave.trace import read

    goal = out_dir / "trace.goal"
    write_text(goal, _goal(trace_dir, algorithm, scale_to, compute_scale))
    scn = {"workload": {"kind": "goal", "path": str(goal.resolve())}}
    if scenario:
        from idlewave.scenario import ScenarioError, load_scenario

        try:
            base = load_scenario(scenario)
        except (ScenarioError, OSError) as e:
            fail(str(e))
        scn.update({k: base[k] for k in ("seed", "network", "noise")})
    if platform:
        scn["network"] = {**scn.get("network", {}), "platform": platform}
    try:
        r = idlewave.simulate(scn)
    except Exception as e:
        fail(str(e))
    traced = [float(t["t1"][-1] - t["t1"][0]) for t in read(trace_dir)]
    summary = {"ranks": r.summary["ranks"], "replayed_makespan_s": r.summary["makespan_s"],
               "traced_makespan_s": max(traced), "events": r.summary["events"], "goal": str(goal)}
    r.write(out_dir)
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        for k, v in summary.items():
            out.print(f"{k:22s} {v}")


@trace_app.command("import")
def import_cmd(
    source: Path = typer.Argument(..., help="An OTF2 archive: its directory or traces.otf2 (Score-P)."),
    out_dir: Path = typer.Option(Path("imported-trace"), "--out", help="Where to write rank-*.iwt."),
):
    """Import an OTF2 trace (Score-P) into idlewave's trace format, for replay and export."""
    from idlewave.trace import TraceError
    from idlewave.trace.otf2_import import read_otf2, write_iwt

    try:
        traces = read_otf2(source)
    except TraceError as e:
        fail(str(e))
    write_iwt(traces, out_dir)
    out.print(f"imported {len(traces)} ranks into {out_dir}")
