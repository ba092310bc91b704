"""`idlewave simulate`, `init` and `schema`: a scenario started from a template, checked and run.
Its commands are listed in idlewave/cli/root.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from idlewave import _engine
from idlewave.cli.common import QUIET, err, fail, out, run_with_progress, scenario_sets
from idlewave.cli.explain import show_explanation
from idlewave.results import ResultsError, exit_code, finite, unreplaceable
from idlewave.scenario import ScenarioError, describe_noise, describe_workloads, schema
from idlewave.units import fmt_bytes, fmt_rate, fmt_time


def simulate(
    scenario: Path | None = typer.Argument(None, help="Scenario TOML file."),
    out_dir: Path | None = typer.Option(None, "--out", help="Write ranks.parquet, timers.parquet, summary.json here."),
    seed: int | None = typer.Option(None, "--seed", help="Override the scenario's seed."),
    sets: list[str] | None = typer.Option(None, "--set", metavar="KEY.PATH=VALUE",
                                          help="Override a scenario value (repeatable), e.g. --set workload.ranks=64 "
                                               "--set network.L_s=5e-6; a TOML value, else a string."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    list_: bool = typer.Option(False, "--list", help="List workloads and noise sources with their parameters."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
    timeline: bool = typer.Option(False, "--timeline", help="Also write timeline.json (Perfetto) and timeline.png into --out."),
    explain_run: bool = typer.Option(False, "--explain",
                                     help="Keep the critical path: the makespan by cause and its derivatives (explain.json)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the memory the run is estimated to need (per rank and in "
                                 "all), the limit and whether it would be refused; simulate nothing."),
):
    """Run one scenario."""
    from idlewave.simulation import simulate as run_scenario

    if list_:
        from idlewave.platform import presets

        if scenario is not None:
            fail(f"--list lists the workloads, noise kinds and platforms, and runs nothing: drop {scenario} (or --list)")

        listing = {"workloads": describe_workloads(), "noise": describe_noise(),
                   "platforms": [{"kind": k, "description": v, "params": {}} for k, v in presets().items()]}
        if as_json:
            print(json.dumps(listing, indent=2))
        else:
            for section, items in listing.items():
                table_name = {"workloads": "[workload] kind", "noise": "[[noise]] kind", "platforms": "[network] platform"}[section]
                t = Table(title=escape(f"{section}: {table_name} in a scenario"), show_lines=True, title_justify="left")
                t.add_column("kind", style="cyan", no_wrap=True)
                t.add_column("what it is")
                t.add_column("parameters (defaults)")
                for it in items:
                    params = "\n".join(f"{k} = {v!r}" for k, v in it["params"].items())
                    t.add_row(it["kind"], it["description"], params)
                out.print(t)
        return
    if scenario is None:
        fail("give a scenario file (or --list to see the workloads)")
    if seed is not None and not 0 <= seed < 2**64:
        fail(f"--seed: must be between 0 and 2^64 - 1, got {seed}")
    overrides = scenario_sets(sets)
    if seed is not None and "seed" in overrides:
        fail("--seed and --set seed=… both set the seed: give one")
    if dry_run:  # nothing is run or written (--timeline and --explain add to the estimate)
        show_estimate(scenario, as_json, timeline, explain_run, overrides)
        if out_dir is not None and not quiet:  # (the rest of the command line as the run will have it)
            err.print(f"note: --dry-run: nothing was written to {escape(str(out_dir))}", highlight=False, soft_wrap=True)
        return
    if timeline and out_dir is None:
        fail("--timeline writes into the --out directory; give --out")
    if out_dir is not None and (why := unreplaceable(out_dir)) is not None:
        fail(f"--out {why}")
    try:
        result = run_with_progress(
            lambda cb: run_scenario(scenario, seed=seed, progress=cb, timeline=timeline, explain=explain_run,
                                    overrides=overrides), quiet)
    except FileNotFoundError as e:
        fail(f"{e.filename}: no such file")
    except (ScenarioError, _engine.SimulationError) as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail("interrupted; nothing was written", code=130)
    if out_dir is not None:
        try:
            result.write(out_dir)
        except ResultsError as e:
            fail(str(e), code=exit_code(e))
    if as_json:
        summary = {**result.summary, **({"explain": result.explain.to_json()} if result.explain else {})}
        print(json.dumps(finite(summary), indent=2, allow_nan=False))
    else:
        show_summary(result.summary, out_dir)
        if result.explain is not None:
            show_explanation(result.explain)
    if not as_json:
        for w in result.summary.get("warnings", []):
            err.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)
    if result.summary.get("timeline_truncated"):
        from idlewave.timeline import DEFAULT_SPANS

        err.print(f"[yellow]warning:[/] the timeline holds the first {DEFAULT_SPANS:,} spans only; the run has more "
                  "(timeline.json covers its start)", highlight=False)


def show_estimate(scenario: Path, as_json: bool, timeline: bool, explain_run: bool, overrides: dict | None = None) -> None:
    """`simulate --dry-run`: the memory estimate the run is checked against, and the verdict."""
    from idlewave.simulation import estimate_memory

    try:
        e = estimate_memory(scenario, timeline=timeline, explain=explain_run, overrides=overrides)
    except FileNotFoundError as ex:
        fail(f"{ex.filename}: no such file")
    except (ScenarioError, _engine.SimulationError) as ex:
        fail(str(ex))
    if as_json:
        print(json.dumps(e, indent=2))
        return
    t = Table(show_header=False, box=None)

    def size(b: int) -> str:
        return fmt_bytes(b, binary=True)

    if e["ranks"]:
        t.add_row("ranks", f"{e['ranks']:,}")
    if e["estimated_memory_bytes"] is not None:
        per_rank = f" ({e['bytes_per_rank']:,.0f} bytes per rank)" if e["bytes_per_rank"] is not None else ""
        t.add_row("estimated memory", f"{size(e['estimated_memory_bytes'])}{per_rank}")
    if e["max_memory_bytes"] is not None:
        t.add_row("limit", f"{size(e['max_memory_bytes'])} ({e['limit']})")
    else:
        t.add_row("limit", "none known (available memory unknown)")
    t.add_row("verdict", "refused" if e["refused"] else "fits: it would run")
    out.print(t)
    if e["refused"]:
        err.print(f"[yellow]would be refused:[/] {escape(e['refused'])}", highlight=False)


def show_summary(s: dict, out_dir: Path | None) -> None:
    t = Table(show_header=False, box=None)
    t.add_row("ranks × iterations", f"{s['ranks']:,} × {s['iterations']:,}")
    t.add_row("makespan", fmt_time(s["makespan_s"], 9))
    if "iteration_s" in s:
        it = s["iteration_s"]
        t.add_row("iteration time", f"mean {fmt_time(it['mean'], 6)}, p95 {fmt_time(it['p95'], 6)}, max {fmt_time(it['max'], 6)}")
    t.add_row("events", f"{s['events']:,} in {fmt_time(s['wall_s'])} ({fmt_rate(s['events_per_s'] or 0, 'events/s')})")
    estimated = f" (estimated {fmt_bytes(s['estimated_memory_bytes'], binary=True)})" if s.get("estimated_memory_bytes") else ""
    t.add_row("peak engine memory", f"{fmt_bytes(s['peak_memory_bytes'], binary=True)}{estimated}")
    out.print(t)
    jobs = [k[len("job_"):-len("_slowdown")] for k in s if k.startswith("job_") and k.endswith("_slowdown")]
    if jobs:  # jobs sharing the machine: each together and alone
        j = Table(title="jobs", title_justify="left")
        shared = any(f"job_{name}_link_delay_s" in s for name in jobs)
        for col in ("job", "ranks", "makespan", "alone", "slowdown", *(("held back most by",) if shared else ())):
            j.add_column(col, justify="left" if col in ("job", "held back most by") else "right")
        for name in jobs:
            worst = s.get(f"job_{name}_links_held_back") or []
            # the link that cost the job's messages the most time beyond their time alone, summed over them
            held = (f"{worst[0]['link']} ({fmt_time(worst[0]['delay_s'], 4)}; all links "
                    f"{fmt_time(s[f'job_{name}_link_delay_s'], 4)}, alone {fmt_time(s[f'job_{name}_link_delay_alone_s'], 4)})"
                    if worst else "-")
            j.add_row(escape(name), f"{s[f'job_{name}_ranks']:,.0f}", fmt_time(s[f"job_{name}_makespan_s"], 6),
                      fmt_time(s[f"job_{name}_alone_s"], 6), f"{s[f'job_{name}_slowdown']:.3f}×",
                      *((escape(held),) if shared else ()))
        out.print(j)
    if out_dir is not None:  # a line of its own: a table cell would cut a long path
        out.print(f"results: {out_dir}", markup=False, highlight=False, soft_wrap=True)
    if "traced_makespan_s" in s:  # a trace replayed: what it predicts beside what was traced
        from idlewave.cli.trace import traced_vs_predicted

        out.print(traced_vs_predicted(s))


def init(
    name: str | None = typer.Argument(None, help="A template (`--list`), or a workload kind such as bsp or krylov."),
    output: str | None = typer.Option(None, "-o", "--output", help="File to write (default NAME.toml here; "
                                      "DIR/ with its slash: DIR/NAME.toml)."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing files."),
    list_: bool = typer.Option(False, "--list", help="List the templates."),
    as_json: bool = typer.Option(False, "--json", help="Print the list (or what was written) as JSON."),
    quiet: bool = QUIET,
):
    """Start a scenario or a study from a commented template (the shipped examples)."""
    from idlewave.templates import TemplateError, templates, write

    if list_ or name is None:
        known = templates()
        if as_json:
            print(json.dumps({k: {"file": str(p), "what": w} for k, (p, w) in known.items()}, indent=2))
            return
        t = Table(title="Templates: idlewave init NAME", title_justify="left")
        t.add_column("name", style="cyan", no_wrap=True)
        t.add_column("what it is")
        for k, (_, w) in known.items():
            t.add_row(k, escape(w))
        out.print(t)
        return
    # a path ending in a slash names a directory (Path would drop the slash and write a file of its name)
    target = Path(output or ".") / f"{name}.toml" if not output or output.endswith(("/", os.sep)) else Path(output)
    try:
        written = write(name, target, force)
    except TemplateError as e:
        fail(str(e))
    except OSError as e:
        fail(f"{target}: cannot write: {e.strerror or e}", code=1)
    if as_json:
        print(json.dumps({"written": [str(p) for p in written]}))
    else:
        out.print("wrote " + ", ".join(str(p) for p in written) + f"; run it with idlewave "
                  f"{'sweep' if name.startswith('study-') else 'simulate'} {target}", markup=False, highlight=False, soft_wrap=True)


def schema_cmd(
    as_json: bool = typer.Option(True, "--json", hidden=True, help="Accepted: the schema is JSON."),
    quiet: bool = QUIET,
):
    """Print the scenario's JSON Schema (for editors that validate TOML, e.g. Taplo or Even Better TOML)."""
    sys.stdout.write(json.dumps(schema(), indent=2) + "\n")
