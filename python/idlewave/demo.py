"""`idlewave demo`: a small study with embedded defaults and no input files.

A BSP code (compute → halo exchange with both neighbours, optionally a
barrier) on 256 ranks, under the noise types of the noise/nonblocking-
collectives paper (system noise, a daemon, uncoordinated checkpoints, scaled
to a short run) and a single long delay that launches an idle wave.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from idlewave.results import write_json
from idlewave.simulation import simulate

RANKS = 256
ITERATIONS = 200
COMPUTE_S = 100e-6

NOISE = {
    "none": [],
    # selfish-style OS noise: frequent short detours
    "system": [{"kind": "poisson", "rate_hz": 1000.0, "duration_s": 5e-6}],
    # a daemon: 2.5 ms every 100 ms (10 Hz), as in the paper
    "daemon": [{"kind": "periodic", "period_s": 0.1, "duration_s": 2.5e-3}],
    # uncoordinated checkpoints, scaled down: 1 ms every 20 ms, each rank at its own phase
    "checkpoint": [{"kind": "checkpoint", "interval_s": 20e-3, "duration_s": 1e-3}],
    # one 2 ms delay on one rank: an idle wave
    "one delay": [{"kind": "single", "rank": RANKS // 2, "start_s": 1e-3, "duration_s": 2e-3}],
}


def scenario(noise: list, barrier: bool) -> dict:
    return {
        "seed": 1,
        "noise": noise,
        "workload": {
            "kind": "bsp",
            "ranks": RANKS,
            "iterations": ITERATIONS,
            "compute_s": COMPUTE_S,
            "distances": [1],
            "message_bytes": 8192,
            "periodic": True,
            "barrier": barrier,
        },
    }


def run_demo(out: Path, console: Console, quiet: bool = False) -> dict:
    rows = []
    baseline = {}
    for barrier in (False, True):
        for name, noise in NOISE.items():
            r = simulate(scenario(noise, barrier))
            tag = f"{name.replace(' ', '-')}{'-barrier' if barrier else ''}"
            r.write(out / tag)
            if name == "none":
                baseline[barrier] = r.summary["makespan_s"]
            rows.append(
                {
                    "noise": name,
                    "barrier": barrier,
                    "makespan_s": r.summary["makespan_s"],
                    "slowdown": r.summary["makespan_s"] / baseline[barrier],
                    "iteration_mean_s": r.summary["iteration_s"]["mean"],
                    "iteration_p95_s": r.summary["iteration_s"]["p95"],
                    "events": r.summary["events"],
                    "results": str(out / tag),
                }
            )
    summary = {"ranks": RANKS, "iterations": ITERATIONS, "compute_s": COMPUTE_S, "runs": rows}
    write_json(out / "summary.json", summary)
    if not quiet:
        t = Table(title=f"BSP loop, {RANKS} ranks × {ITERATIONS} iterations, {COMPUTE_S * 1e6:g} µs compute")
        for col in ("noise", "barrier", "makespan [ms]", "slowdown", "iteration mean [µs]", "p95 [µs]"):
            t.add_column(col, justify="right")
        for row in rows:
            t.add_row(
                row["noise"],
                "yes" if row["barrier"] else "no",
                f"{row['makespan_s'] * 1e3:.3f}",
                f"{row['slowdown']:.3f}×",
                f"{row['iteration_mean_s'] * 1e6:.2f}",
                f"{row['iteration_p95_s'] * 1e6:.2f}",
            )
        console.print(t)
        console.print(f"results in {out}/ (one directory per run, summary.json)")
    return summary
