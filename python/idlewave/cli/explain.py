"""`idlewave explain`: what bounds a run, and how much more latency it tolerates."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from idlewave import _engine
from idlewave.cli.common import Steps, err, fail, out, print_json, scenario_sets
from idlewave.results import ResultsError, UnreadableResult, exit_code, read_json
from idlewave.units import fmt_time


def show_explanation(x, tolerances: dict | None = None) -> None:
    """The makespan by cause, the derivatives and (if given) the tolerances."""
    from idlewave.explain import CAUSES, PARAMS, increase

    total = x.makespan_s
    t = Table(title=escape(f"What bounds this run: {CAUSES[x.bound()]} (critical path ends on rank {x.raw['last_rank']})"),
              title_justify="left")
    t.add_column("cause")
    t.add_column("time", justify="right")
    t.add_column("share", justify="right")
    for k, v in x.causes_s().items():
        if v > 0:
            t.add_row(CAUSES[k], fmt_time(v, 4), f"{v / total:.1%}" if total else "-")
    t.add_row("makespan", fmt_time(total, 6), "100%", style="bold")
    out.print(t)
    d = Table(title="Derivatives of the makespan: time added per unit of each parameter", title_justify="left")
    d.add_column("parameter")
    d.add_column("dT/dθ", justify="right")
    d.add_column("meaning")
    for p, n in x.derivatives().items():
        unit = PARAMS[p][1]
        d.add_row(p, f"{n:,}", f"+1 ps of {p} adds {n:,} ps" + (" (per byte)" if unit == "bytes" else ""))
    out.print(d)
    waits = x.raw.get("waits_total_s") or x.wait_totals_s()
    if waits:
        out.print("Time ranks sat idle, summed over ranks: "
                  f"{fmt_time(waits['late_sender'], 4)} waiting for late senders, {fmt_time(waits['late_receiver'], 4)} for "
                  f"late receivers (rendezvous), {fmt_time(waits['collective'], 4)} inside collectives for late members "
                  f"(collective imbalance), {fmt_time(waits['other'], 4)} for anything else (waits.parquet: per rank, and on whom)")
    route = x.route_summary() if x.route is not None else x.raw.get("route")
    if route:
        longest = ", ".join(f"rank {r['rank']} {r['share']:.1%}" for r in route["longest_on"])
        out.print(f"The critical path runs through {route['segments']:,} stretches on {route['ranks']:,} ranks; "
                  f"longest on {longest} of the makespan (route.parquet: each stretch, its times and causes)")
        if route.get("from_s", 0) > 0:
            out.print(f"The route is partial: it starts at {fmt_time(route['from_s'], 6)} (earlier stretches were dropped "
                      "to bound memory; the breakdown above still covers the whole run)")
    links = x.links_on_path()
    if links:
        worst = ", ".join(f"{escape(k['link'])} {fmt_time(k['wait_s'], 4)} ({k['messages']:,} messages)" for k in links["links"])
        out.print(f"On shared links the critical path spent {fmt_time(links['wait_s'], 4)} ({links['share']:.1%} of the "
                  f"makespan, within the penalties above) beyond its NICs' (s - 1)·G, on links narrower than a NIC "
                  f"or shared; longest on {worst} (route.parquet: the link of each stretch)")
    if tolerances:
        tt = Table(title="Tolerance: the largest increase for which the makespan grows by at most", title_justify="left")
        tt.add_column("parameter")
        slowdowns = sorted({f for v in tolerances.values() for f in v})
        for f in slowdowns:
            tt.add_column(f"{f:.0%}", justify="right")
        for p, v in tolerances.items():
            tt.add_row(p, *(("no limit found" if math.isinf(v[f]) else increase(p, v[f])) for f in slowdowns))
        out.print(tt)


def show_link_sensitivity(rows: list[dict], base_s: float) -> None:
    """The makespan with each shared-link bandwidth a step higher and lower."""
    t = Table(title="Sensitivity to the shared links' bandwidth (re-simulated)", title_justify="left")
    for col in ("bandwidth", "links", "value", "makespan +step", "makespan -step", "elasticity"):
        t.add_column(col, justify="left" if col in ("bandwidth", "links") else "right", overflow="fold")
    for r in rows:
        step = r["step"]
        change = {k: (r[k] / base_s - 1) if base_s else 0.0 for k in ("makespan_higher_s", "makespan_lower_s")}
        t.add_row(r["key"], r["links"], f"{r['bandwidth_bytes_per_s']:.4g} B/s",
                  f"{change['makespan_higher_s']:+.2%} (+{step:.0%})", f"{change['makespan_lower_s']:+.2%} (-{step:.0%})",
                  f"{r['elasticity']:+.3f}")
    out.print(t)
    out.print("(elasticity: the makespan's relative change per relative change of the bandwidth; -1 where those links "
              "alone set the pace, 0 where they do not limit it)")


def _resimulating(base_s: float, total: int, quiet: bool, first: str):
    """k of N runs of the tolerance search on a terminal's stderr, with the
    time elapsed and left: which parameter, and what the last run gave."""
    from idlewave.explain import increase

    steps = Steps(total, quiet, first=first)
    done = {"runs": 0}

    def progress(param: str, delta: float, makespan_s: float, runs: int) -> None:
        done["runs"] += 1
        steps(f"{param} {increase(param, delta)}: {makespan_s / base_s - 1:+.2%}", k=done["runs"] + 1)

    return steps, progress


def _check_same_scenario(out_dir: Path | None, scenario: dict) -> None:
    """An explanation goes beside its own run: not into the result of another
    scenario, whose summary would then be read with it."""
    held = out_dir / "scenario.json" if out_dir is not None else None
    if held is None or not held.is_file():
        return
    try:
        same = json.loads(held.read_text()) == json.loads(json.dumps(scenario))
    except (OSError, ValueError):
        same = False
    if not same:
        fail(f"--out {out_dir}: holds the result of another scenario (its scenario.json); write the explanation to a "
             "new directory, or explain that result itself")


def _check_same_run(result_dir: Path, makespan_ps: int) -> None:
    """A result explained by running its scenario again must come out the
    same: a file the scenario reads (partners, mapping, GOAL, noise trace)
    may have changed since."""
    said = read_json(result_dir / "summary.json").get("makespan_ps")
    if said is not None and said != makespan_ps:
        fail(f"{result_dir}: its scenario now runs in {makespan_ps * 1e-12:.6g} s, but the result says "
             f"{said * 1e-12:.6g} s: a file the scenario reads has changed since; simulate it again with --explain",
             code=1)


def explain(
    target: Path = typer.Argument(..., help="A result directory (from `simulate --out`) or a scenario TOML file."),
    params: list[str] | None = typer.Option(None, "--params", "--param", help="A parameter to find the tolerance of "
                                            "(L, o, g, G, O; repeatable, or comma-separated; default L and G). "
                                            "Giving it asks for the tolerance search."),
    tolerance: bool | None = typer.Option(None, "--tolerance/--no-tolerance",
                                          help="Re-simulate to find the tolerances and the makespan curve (about 38 "
                                               "runs per parameter; the count is said first). Default: no search, "
                                               "unless --params is given."),
    sets: list[str] | None = typer.Option(None, "--set", metavar="KEY.PATH=VALUE",
                                          help="Override a scenario value (repeatable), e.g. --set network.L_s=5e-6; "
                                               "a TOML value, else a string. With a scenario file, not a result directory."),
    out_dir: Path | None = typer.Option(None, "--out", help="Write explain.json and figures here (default: the result directory)."),
    as_json: bool = typer.Option(False, "--json", help="Print the explanation as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no notes on stderr (errors and warnings still)."),
):
    """Explain a run: the makespan split along the critical path by cause and
    its derivatives in L, o, g, G and O (one simulation of a scenario file,
    none of an explained result). With --tolerance (or --params): how much
    more L (or G) it tolerates before it slows by 1%, 5% or 10%, found by
    re-simulating (tens of runs per parameter, counted k of N with the time
    left)."""
    from idlewave import explain as ex
    from idlewave.scenario import ScenarioError, load_scenario
    from idlewave.simulation import simulate

    if any(not p.strip() for v in params or [] for p in v.split(",")):
        fail(f"--params {','.join(params or [])!r}: an empty name; give names separated by commas, e.g. --params L,G")
    wanted = list(dict.fromkeys(p.strip() for v in params or ["L,G"] for p in v.split(",") if p.strip()))
    search = tolerance if tolerance is not None else bool(params)
    overrides = scenario_sets(sets)
    unknown = [p for p in wanted if p not in ex.PARAMS]
    if unknown:
        fail(f"--params: unknown parameter {unknown[0]!r} (known: {', '.join(ex.PARAMS)})")
    if out_dir is not None and out_dir.is_dir() and next(out_dir.iterdir(), None) is not None \
            and not any((out_dir / m).is_file() for m in ("summary.json", "explain.json")):
        fail(f"{out_dir}: is not an idlewave result directory; explain writes explain.json and its figures into "
             "a result, a directory it wrote before, or a new or empty one")
    try:
        if target.is_dir():
            if overrides:
                fail("--set changes a scenario: give the scenario file (a result directory is explained as it ran)")
            if not (target / "scenario.json").exists():
                fail(f"{target}: not a result directory (no scenario.json); give one written by `simulate --out`")
            scenario, x = ex.read(target)
            out_dir = out_dir or target
        elif target.exists():
            scenario, x = load_scenario(target, overrides), None
        else:
            fail(f"{target}: no such file or directory")
        _check_same_scenario(out_dir, scenario)  # before the run: its result would go beside another's
        if x is None:
            x = simulate(scenario, explain=True).explain
            assert x is not None  # asked for
            if target.is_dir():
                _check_same_run(target, x.raw["makespan_ps"])
        assert x is not None
        tolerances, curves, runs = {}, {}, {}
        sensitivity = []
        bandwidths = ex.link_bandwidths(scenario)
        if bandwidths:
            if not quiet:
                err.print(f"shared links: {2 * len(bandwidths)} more runs for the makespan's sensitivity to "
                          f"{', '.join('.'.join(p) for p, _, _ in bandwidths)} (each {ex.LINK_STEP:.0%} higher and lower)",
                          highlight=False, markup=False, soft_wrap=True)
            sensitivity = ex.link_sensitivity(scenario, x.makespan_s)
        if search:
            started = time.monotonic()
            total = ex.estimated_runs(len(wanted))
            if not quiet:
                err.print(f"tolerance search: about {total} runs of the scenario ({', '.join(wanted)}; "
                          f"{fmt_time(x.makespan_s)} simulated each, longer as the parameters grow); Ctrl-C stops",
                          highlight=False, markup=False, soft_wrap=True)
            steps, progress = _resimulating(x.makespan_s, total, quiet, f"{wanted[0]}: first run" if wanted else "")
            with steps:
                for p in wanted:
                    runs[p] = ex.Runs(scenario, p, x.makespan_s, progress)
                    tolerances[p] = ex.tolerance(scenario, x, p, runs=runs[p])
                    # the curve up to twice the largest tolerance found (under noise the first-order
                    # estimate can be 100 times it), or to twice the estimate
                    found = max((v for v in tolerances[p].values() if 0 < v < math.inf), default=None)
                    top = 2 * found if found else 2 * (x.first_order_tolerance(p, 0.10) or 0)
                    if top:
                        curves[p] = ex.curve(runs[p], [top * k / 8 for k in range(9)])
                steps.finish()
            resimulated = {p: len(r.seen) - 1 for p, r in runs.items()}
            spreads = {p: r.spread() for p, r in runs.items()}
            took = time.monotonic() - started
    except (ScenarioError, _engine.SimulationError, ex.ExplainError) as e:
        fail(str(e))
    except UnreadableResult as e:  # a damaged result: an error while working, as report and analyze say
        fail(str(e), code=1)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{target}: cannot read the result: {e}")
    except KeyboardInterrupt:
        fail("interrupted", code=130)
    unbounded = "no limit found up to 1000x the makespan"
    doc = {**x.to_json(),
           **({"link_sensitivity": sensitivity} if sensitivity else {}),
           "tolerance": {p: {str(f): (unbounded if math.isinf(v) else v) for f, v in t.items()}
                         for p, t in tolerances.items()},
           "curves": {p: [{"value": v, "makespan_s": m} for v, m in c] for p, c in curves.items()},
           **({"resimulations": resimulated, "non_monotonic_by": spreads, "noisy": bool(scenario.get("noise"))}
              if search else {})}
    if out_dir is not None:
        from idlewave.results import write_json

        existed = out_dir.is_dir()
        before = set(out_dir.iterdir()) if existed else set()
        try:
            write_json(out_dir / "explain.json", doc)
            tables = ex.write_tables(x, out_dir)
            for p in wanted or ["L"]:
                figures = ex.figures(x, curves.get(p), p, out_dir)
        except OSError as e:  # a ResultsError names the file; nothing new is left behind
            if out_dir.is_dir():
                for f in set(out_dir.iterdir()) - before:
                    f.unlink(missing_ok=True)
                if not existed and next(out_dir.iterdir(), None) is None:
                    out_dir.rmdir()
            fail(str(e) if isinstance(e, ResultsError) else f"{out_dir}: cannot write: {e.strerror or e}",
                 code=exit_code(e))
    if as_json:
        print_json(doc)
    else:
        show_explanation(x, tolerances)
        if sensitivity:
            show_link_sensitivity(sensitivity, x.makespan_s)
        if search:
            note = ex.non_monotonic_note(spreads, bool(scenario.get("noise")))
            if note:
                out.print(note)
            out.print(f"(tolerances found by {sum(resimulated.values()):,} re-simulations in {fmt_time(took)}; "
                      "without --tolerance and --params they are skipped)")
        elif not quiet:
            err.print("no tolerance search (how much more L or G the run tolerates): --tolerance runs it, "
                      f"about {ex.estimated_runs(len(wanted))} runs", highlight=False, markup=False, soft_wrap=True)
        if out_dir is not None:
            names = [f.name for f in [*tables, *figures] if not f.name.startswith("t_of_")]
            out.print(f"written: {out_dir / 'explain.json'}, " + ", ".join(names) + "".join(f", t_of_{p}.png" for p in curves), markup=False, soft_wrap=True)
