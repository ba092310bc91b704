"""`idlewave analyze …`: measurements on results (idle-wave speed and decay, wavefronts, P_D)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from idlewave import _engine
from idlewave.cli.common import QUIET, fail, out, print_json
from idlewave.scenario import ScenarioError
from idlewave.units import fmt_rate, fmt_time

analyze_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Measurements on results: idle-wave speed and decay, computational wavefronts, desynchronization P_D.")


def _analysis(run) -> dict:
    from idlewave.analyze import AnalysisError

    try:
        return run()
    except (AnalysisError, ScenarioError, _engine.SimulationError) as e:
        fail(str(e))


@analyze_app.command("idle-wave")
def analyze_idle_wave(
    result: Path = typer.Argument(..., help="A result directory (idlewave simulate --out)."),
    threshold: float = typer.Option(0.1, "--threshold", help="Extra waiting, as a fraction of the delay, that marks a rank reached."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    quiet: bool = QUIET,
):
    """Speed (ranks/s) and decay of the idle wave a one-off delay launched."""
    from idlewave.analyze import idle_wave

    if not 0 < threshold < 1:  # (nan too)
        fail(f"--threshold: a fraction of the delay, above 0 and below 1, got {threshold}")
    r = _analysis(lambda: idle_wave(result, threshold))
    if as_json:
        print_json(r)
        return
    t = Table(show_header=False, box=None)
    t.add_row("source", f"rank {r['source_rank']}, delay {fmt_time(r['delay_s'])}")
    t.add_row("speed", f"{fmt_rate(r['speed_ranks_per_s'], 'ranks/s')} ({r['speed_ranks_per_iteration']:.3g} ranks per "
                       f"iteration of {fmt_time(r['period_s'])})")
    t.add_row("reached", f"{r['ranks_reached']} of {r['ranks'] - 1} ranks")
    t.add_row("decay", f"{r['decay_per_rank']:.4g} per rank (ln of the extra waiting)")
    out.print(t)


@analyze_app.command("pd")
def analyze_pd(
    barrier_dir: Path = typer.Argument(..., help="Result of the run with a barrier each iteration."),
    free_dir: Path = typer.Argument(..., help="Result of the same run without barriers."),
    barrier_cost: float | None = typer.Option(None, "--barrier-cost", help="Seconds per barrier to subtract (default: simulate a noiseless barrier on the same network)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    quiet: bool = QUIET,
):
    """Desynchronization speedup P_D (idle-waves paper Eq. 1), barrier cost subtracted."""
    from idlewave.analyze import pd

    r = _analysis(lambda: pd(barrier_dir, free_dir, barrier_cost))
    if as_json:
        print_json(r)
        return
    t = Table(show_header=False, box=None)
    t.add_row("P_D", f"{r['pd']:.4g}")
    t.add_row("with barriers", f"{fmt_time(r['runtime_barrier_s'], 4)}, minus {r['iterations']:,} × "
                               f"{fmt_time(r['barrier_cost_s'])} barrier cost")
    t.add_row("without", fmt_time(r["runtime_free_s"], 4))
    out.print(t)


@analyze_app.command("wavefront")
def analyze_wavefront(
    result: Path = typer.Argument(..., help="A result directory (idlewave simulate --out)."),
    first: int | None = typer.Option(None, "--first", help="First iteration of the window (default: half the run)."),
    last: int | None = typer.Option(None, "--last", help="Iteration after the window (default: the run's end)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    quiet: bool = QUIET,
):
    """The computational wavefront per ccNUMA domain: ranks computing at once, spread, lock step."""
    from idlewave.analyze import wavefront

    r = _analysis(lambda: wavefront(result, first, last))
    if as_json:
        print_json(r)
        return
    first_it, last_it = r["iterations"]
    sat = r["saturation_ranks"]
    out.print(f"iterations {first_it:,}–{last_it - 1:,}, {fmt_time(r['period_s'])} each; {r['ranks_per_domain']} ranks per "
              f"{r['domain']}" + (f", memory bandwidth saturated by {sat:.3g} ranks" if sat else ""))
    t = Table(r["domain"], "ranks", "computing at once", "spread", "state")
    per = r["ranks_per_domain"]
    for d, (a, s, lock) in enumerate(zip(r["active"], r["spread_s"], r["lock_step"], strict=True)):
        lag = " (lagging)" if d == r["lagging_domain"] else ""
        t.add_row(str(d), f"{d * per}–{(d + 1) * per - 1}", f"{a:.2f}", fmt_time(s),
                  ("lock step" if lock else "wavefront") + lag)
    out.print(t)
