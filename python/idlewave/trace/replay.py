"""Replay of a traced run in the simulator. The engine reads the trace as it
runs (src/trace/): gaps between MPI calls become computation, point-to-point
calls keep their peers, tags and sizes, waits become dependencies, and
collectives expand into the chosen algorithms' messages. What it cannot
model is charged as computation of its measured length and reported."""

from __future__ import annotations

import json
import os
from pathlib import Path

from idlewave import _engine

# A trace that spent this many times more time inside MPI than the replay
# predicts was probably not run on dedicated cores; a replay that spends this
# many times more than the trace ran on a slower network (see `honesty`).
MPI_EXCESS_RATIO = 2.0
# Calls replayed at no cost (communicator creation, probes, …) are named in a
# warning once they hold this share of the traced time: the makespan misses it.
FREE_SHARE_NOTED = 0.05


def workload(trace_dir: str | Path, algorithms: list[str] | None = None, scale_to: int | None = None,
             compute_scale: float = 1.0, grid: str | None = None, strong: bool = False) -> dict:
    """The scenario's `[workload]` table of a trace replay (`grid`, `strong`:
    Cartesian extrapolation: README, "Your code at scale")."""
    w = {"kind": "trace", "dir": str(Path(trace_dir).resolve()), "algorithms": list(algorithms or []),
         "compute_scale": compute_scale, "scale_to": scale_to or 0}
    if grid:
        w["grid"] = grid
    if strong:
        w["strong"] = True
    return w


def replay(trace_dir: str | Path, *, algorithms: list[str] | None = None, scale_to: int | None = None,
           compute_scale: float = 1.0, base: dict | None = None, seed: int | None = None,
           grid: str | None = None, strong: bool = False, explain: bool = False, by_call: bool = False,
           progress=None):
    """Runs the replay; `base` gives the scenario's network, noise and seed;
    `by_call`: the report's `by_call` rows attribute the replay's time in MPI
    to the traced calls (a replay as traced only); `progress` as simulate's.
    Returns the Result, with `.trace_report` (what was not modelled) and
    summary keys comparing the traced and replayed time inside MPI (`summarise`)."""
    from idlewave.simulation import simulate

    scn = {k: v for k, v in (base or {}).items() if k in ("seed", "network", "noise", "limits")}
    scn["workload"] = workload(trace_dir, algorithms, scale_to, compute_scale, grid, strong)
    if by_call:
        scn["workload"]["by_call"] = True
    return simulate(scn, seed=seed, explain=explain, progress=progress)


def summarise(report: dict, finish_times_s) -> dict:
    """The replay's summary figures and warnings from the engine's trace report."""
    traced = report["traced_ranks"]
    # extrapolated: the simulated ranks are not the traced ones, so their mean is reported, not compared
    compared = range(report["ranks"] if report["extrapolation"] else traced)
    replayed_mpi = [float(finish_times_s[r]) - report["calc_s"][r] for r in compared]
    traced_mpi = report["traced_mpi_s"]
    mean = lambda v: sum(v) / len(v) if v else 0.0  # noqa: E731
    out = {
        "traced_ranks": traced,
        "extrapolation": report["extrapolation"],
        "collective_rules": report["collective_rules"],
        "mpi_library": report["library"],
        # what the traced gaps between calls measure: "wall", or "cpu" (IDLEWAVE_TRACE_CLOCK=cpu)
        "trace_clock": report.get("trace_clock", "wall"),
        "records": report["records"],
        "traced_makespan_s": max(report["traced_span_s"], default=0.0),
        "traced_mpi_s": mean(traced_mpi),
        "replayed_mpi_s": mean(replayed_mpi),
        "messages": report.get("messages", 0),
        "bytes": report.get("bytes", 0),
        # per rank class: the simulated ranks that replay one traced rank
        "classes": report.get("classes", []),
        "approximate": bool(report["unmodelled"]) or report["unresolved_wildcards"] > 0 or report["resized_v_collectives"] > 0,
        "unmodelled_calls": sum(n for _, n, _, _ in report["unmodelled"]),
        "unmodelled_share": sum(share for *_, share in report["unmodelled"]),
        "failed_polls": report["polls"],
        "cancelled_requests": report["cancelled"],
        "unresolved_wildcards": report["unresolved_wildcards"],
        "resized_v_collectives": report["resized_v_collectives"],
        # extrapolated: no traced counterpart to compare the replay's time in MPI with
        "warnings": honesty(report, mean(traced_mpi), None if report["extrapolation"] else mean(replayed_mpi)),
    }
    return out


def honesty(report: dict, traced_mpi: float, replayed_mpi: float | None) -> list[str]:
    """What a reader must know before trusting the replayed numbers
    (`replayed_mpi` None: nothing to compare, as for an extrapolation)."""
    warn = []
    if report["unmodelled"]:
        names = ", ".join(n for n, *_ in report["unmodelled"][:4])
        on = f" on the {report['traced_ranks']} traced ranks" if report["extrapolation"] else ""
        warn.append(f"approximate: {sum(n for _, n, _, _ in report['unmodelled'])} calls{on} the replay does not model "
                    f"({names}{', …' if len(report['unmodelled']) > 4 else ''}) were charged as computation of their traced length")
    if report["resized_v_collectives"]:
        warn.append(f"approximate: {report['resized_v_collectives']} v-collective calls had per-member counts that differ; "
                    "at the new size every member took the count of its class's member in the trace")
    if report["unresolved_wildcards"]:
        warn.append(f"approximate: {report['unresolved_wildcards']} receives with MPI_ANY_TAG never completed in the trace "
                    "and were left out (their match is unknown)")
    free_share = sum(share for *_, share in report["zero_cost"])
    if free_share >= FREE_SHARE_NOTED:
        names = ", ".join(n for n, *_ in report["zero_cost"][:3])
        warn.append(f"{100 * free_share:.0f}% of the traced time was spent in calls replayed at no cost ({names}"
                    f"{', …' if len(report['zero_cost']) > 3 else ''}): the predicted makespan leaves that time out")
    span = max(report["traced_span_s"], default=0.0)
    if replayed_mpi is None:
        return warn
    if traced_mpi > MPI_EXCESS_RATIO * replayed_mpi and traced_mpi > 0.01 * span:
        warn.append(f"the traced run spent {traced_mpi:.4g} s per rank inside MPI, the replay predicts {replayed_mpi:.4g} s "
                    f"({traced_mpi / max(replayed_mpi, 1e-12):.1f}×): the replay assumes dedicated cores and the given network; "
                    "the trace was probably taken on shared or oversubscribed cores, or a slower network")
    elif replayed_mpi > MPI_EXCESS_RATIO * traced_mpi and replayed_mpi > 0.01 * span:
        warn.append(f"the replay spends {replayed_mpi:.4g} s per rank inside MPI where the traced run spent "
                    f"{traced_mpi:.4g} s ({replayed_mpi / max(traced_mpi, 1e-12):.1f}×): the network it replays on "
                    "(LogGOPSim's defaults unless --platform or a scenario's [network] gives one) is slower than the "
                    "traced machine's; to predict that machine, replay on its platform (`idlewave measure pingpong`, "
                    "then `idlewave fit postal`)")
    return warn


def export_goal(trace_dir: str | Path, path: str | Path, *, algorithms: list[str] | None = None,
                scale_to: int | None = None, compute_scale: float = 1.0, grid: str | None = None,
                strong: bool = False) -> tuple[int, int]:
    """Writes the replay's schedule as a GOAL file (LogGOPSim's format),
    streamed and atomically; returns (ranks, ops)."""
    from idlewave.results import write_file
    from idlewave.scenario import validate

    spec = validate({"workload": workload(trace_dir, algorithms, scale_to, compute_scale, grid, strong)})["workload"]
    w = {k: v for k, v in spec.items() if k != "kind"}
    counts: list[tuple[int, int]] = []
    write_file(Path(path), lambda tmp: counts.append(_engine.trace_export_goal(json.dumps(w), os.fspath(tmp))))
    return counts[0]
