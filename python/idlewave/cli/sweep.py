"""`idlewave sweep`: many scenarios on Dask, and the strategies ranked.
Its commands are listed in idlewave/cli/root.py."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from idlewave.cli.common import err, fail, out, progress_bar, scenario_sets
from idlewave.results import ResultsError, exit_code, finite
from idlewave.scenario import ScenarioError
from idlewave.units import fmt_time


def sweep(
    study: Path = typer.Argument(..., help="Study TOML: [base] scenario (or base = file), [grid] and/or [[points]]."),
    out_dir: Path = typer.Option(Path("sweep-out"), "--out"),
    sets: list[str] | None = typer.Option(None, "--set", metavar="KEY.PATH=VALUE",
                                          help="Override a value of the study's base scenario (repeatable; each point's "
                                               "own values go over it), e.g. --set network.L_s=5e-6."),
    scheduler: str | None = typer.Option(None, "--scheduler", help="Address of a running Dask scheduler (default: a local cluster)."),
    workers: int | None = typer.Option(None, "--workers", min=1,
                                       help="Local cluster workers (default 2; at most 2 per CPU available to the "
                                            "command)."),  # idlewave.sweep.WORKERS_PER_CPU
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome (and the strategy ranking) as JSON."),
    worker_timeout: float = typer.Option(60.0, "--worker-timeout", min=0.1,  # idlewave.sweep.WORKER_TIMEOUT_S
                                         help="Seconds to wait for a Dask worker: at the start on --scheduler, and "
                                              "whenever the scheduler has had none since (a lost worker); then the "
                                              "sweep stops (exit code 2), keeping the finished points."),
):
    """Run many scenarios on Dask; each point is written as it finishes, finished points are skipped.

    With `strategy = "key"` and `replications = N` in the study, rank the
    strategies per condition with confidence intervals (ranking.json, ranking.png).

    Points are planned as they go to the workers: the first starts within
    seconds and the progress counts k of N points, up to 2,000,000 points
    (a larger study is refused, with advice). A scheduler that cannot be
    reached, or does not answer as a Dask scheduler, within 10 s is an error
    (exit code 2), as is one without a worker for --worker-timeout seconds;
    rerunning the sweep then skips every point written.

    A seeded sweep writes the same bytes run after run, with any number of
    workers, locally or on a scheduler, except two timing fields of each
    point's summary.json: wall_s and events_per_s (wall-clock time)."""
    from idlewave.results import check_writable
    from idlewave.sweep import WORKERS_PER_CPU, max_local_workers, not_a_sweep_output, run_sweep

    if worker_timeout != worker_timeout or worker_timeout == float("inf"):
        fail(f"--worker-timeout: must be a finite number of seconds ≥ 0.1, got {worker_timeout}")
    if scheduler is not None and not scheduler.strip():
        fail("--scheduler: an empty address; give a Dask scheduler's (tcp://host:port), or leave --scheduler out for "
             "a local cluster")
    if scheduler is None and workers is not None and workers > max_local_workers():
        # refused before a cluster starts: 100,000 workers were started one by one, and SIGTERM waited for them
        fail(f"--workers {workers}: a local cluster has at most {max_local_workers()} workers here ({WORKERS_PER_CPU} "
             "per CPU available to the command); for more, start them on a cluster and give its --scheduler")
    overrides = scenario_sets(sets)
    if (why := not_a_sweep_output(out_dir)) is not None:
        fail(f"--out {why}")
    try:
        check_writable(out_dir / "study.json")  # a read-only disk: said before a cluster starts
        if quiet or not err.is_terminal:
            frame = run_sweep(study, out_dir, scheduler, workers, worker_timeout=worker_timeout, base_overrides=overrides)
        else:
            with progress_bar(err, transient=False) as bar:
                task = bar.add_task("sweep: points", total=None)
                frame = run_sweep(study, out_dir, scheduler, workers, lambda i, n: bar.update(task, completed=i, total=n),
                                  worker_timeout, base_overrides=overrides)
    except ResultsError as e:  # a write that failed, or an --out refused
        fail(str(e), code=exit_code(e))
    except (ScenarioError, FileNotFoundError) as e:
        fail(str(e))
    except OSError as e:  # e.g. a scheduler that cannot be reached
        fail(f"sweep: {e}")
    except KeyboardInterrupt:
        fail(f"interrupted; the points finished so far are kept in {out_dir / 'points'}, and running the sweep "
             "again skips them", code=130)
    failed = frame.filter(frame["status"] == "failed").height if "status" in frame.columns else 0
    reused = json.loads((out_dir / "study.json").read_text()).get("reused", 0)
    ranking = json.loads((out_dir / "ranking.json").read_text()) if (out_dir / "ranking.json").exists() else None
    if as_json:
        print(json.dumps(finite({"points": frame.height, "failed": failed, "reused": reused, "out": str(out_dir),
                                 "ranking": ranking}), indent=2, allow_nan=False))
    else:
        if ranking:
            show_ranking(ranking)
        out.print(f"{frame.height} points ({failed} failed, {reused} reused from an earlier run of the same scenario) in "
                  f"{out_dir}; table: {out_dir / 'sweep.parquet'}", markup=False, soft_wrap=True)
    if failed:
        err.print(f"{failed} of {frame.height} points failed (their error.json says why)")
        raise typer.Exit(1)


def show_ranking(ranking: dict) -> None:
    """Per condition, the strategies ranked, with intervals and the verdicts in words."""
    def pm(mean, half, time=True):
        if mean is None:
            return "-"
        if time:  # idlewave.units: 1.234 ms ± 12 µs
            return fmt_time(mean, 4) + ("" if half is None else f" ± {fmt_time(half, 2)}")
        return f"{mean:.4g}" + ("" if half is None else f" ± {half:.2g}")

    for c in ranking["conditions"]:
        cond = ", ".join(f"{k} = {v}" for k, v in c["condition"].items()) or "all points"
        t = Table(title=escape(f"{ranking['strategy']} ranked: {cond} ({ranking['level']:.0%} CI)"), title_justify="left")
        for col in ("rank", "strategy", "makespan", "slowest rank's iteration", "slower than the best"):
            t.add_column(escape(col), justify="left" if col == "strategy" else "right")
        for r in c["ranking"]:
            t.add_row(str(r["rank"]), escape(r["strategy"]), pm(r["makespan_mean_s"], r["makespan_ci_s"]),
                      pm(r["slowest_iteration_mean_s"], r["slowest_iteration_ci_s"]),
                      pm(r.get("slower_than_best"), r.get("slower_than_best_ci"), False) + ("×" if "slower_than_best" in r else ""))
        out.print(t)
        for r in c["ranking"][1:]:
            if "verdict" in r:
                out.print("  " + escape(r["verdict"]))
