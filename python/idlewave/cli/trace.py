"""`idlewave trace build|replay|export|import`: the PMPI tracer and replay."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import typer
from rich.markup import escape

from idlewave.cli.common import QUIET, err, fail, out, output_file, print_json, scenario_sets
from idlewave.overrides import apply
from idlewave.results import seconds, unreplaceable
from idlewave.units import fmt_bytes

#: The most ranks a replay or an export extrapolates to (the engine counts ranks in 32 bits).
MAX_RANKS = 2**32 - 1

trace_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Trace MPI runs (PMPI, LD_PRELOAD) and replay them in the simulator.")


@trace_app.command("build")
def build_cmd(
    out_dir: Path = typer.Option(Path("."), "--out", help="Directory to put libidlewave-trace.so in."),
    mpicc: str | None = typer.Option(None, "--mpicc", help="The MPI compiler wrapper of your application's MPI."),
    as_json: bool = typer.Option(False, "--json", help="Print the library's path as JSON."),
    legacy_out: Path | None = typer.Option(None, "-o", hidden=True),
    quiet: bool = QUIET,
):
    """Compile the PMPI tracer with your mpicc."""
    from idlewave.trace import TraceError, build_tracer

    if legacy_out is not None:
        # -o names a file everywhere else (fit, init, report, trace export); kept here for old scripts
        err.print("note: `trace build -o DIR` is deprecated; use --out DIR (-o names a file elsewhere)", highlight=False)
        out_dir = legacy_out

    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: exists and is not a directory; name the directory to put the library in")
    try:
        b = build_tracer(out_dir, mpicc)
    except TraceError as e:
        fail(str(e))
    except OSError as e:  # a read-only or full disk: a write that failed
        fail(f"--out {out_dir}: cannot write the tracer: {e.strerror or e}", code=1)
    lib = b.library
    if as_json:
        print(json.dumps({"library": str(lib.resolve()), "mpicc": b.mpicc, "mpicc_chosen": b.chosen, "mpi": b.mpi,
                          "mpi_library": b.mpi_library, "mpi_library_dirs": b.mpi_dirs, "mpicc_note": b.describe(),
                          "compiled": b.compiled}))
        return
    out.print(f"using {escape(b.describe())}", highlight=False, soft_wrap=True)
    done = "built" if b.compiled else "up to date (built from the same source, mpicc and flags)"
    out.print(f"{done}: {lib}\nrun:  IDLEWAVE_TRACE_DIR=trace mpiexec -x LD_PRELOAD={lib.resolve()} -x IDLEWAVE_TRACE_DIR -n N ./app", markup=False, soft_wrap=True)


def _replay_options(algorithm: list[str] | None) -> list[str]:
    chosen: dict[str, str] = {}
    for a in algorithm or []:
        if "=" not in a:
            fail(f"--algorithm expects collective=algorithm, got {a!r}")
        name = a.split("=", 1)[0].strip()
        if name in chosen and chosen[name] != a:  # (the last one was taken, silently)
            fail(f"--algorithm: {chosen[name]!r} and {a!r} both choose {name}'s algorithm: give one")
        chosen[name] = a
    return list(algorithm or [])


@trace_app.command("export")
def export_cmd(
    trace_dirs: list[Path] = typer.Argument(..., help="Directory of rank-*.iwt files; several: traces of one program "
                                            "at different sizes, whose growth --scale-to fits (`trace model`)."),
    output: Path = typer.Option(..., "-o", "--output", help="GOAL file to write."),
    algorithm: list[str] | None = typer.Option(None, "--algorithm", help="collective=algorithm, e.g. allreduce=ring."),
    scale_to: int | None = typer.Option(None, "--scale-to", min=1, max=MAX_RANKS, help="Extrapolate to this many ranks."),
    grid: str | None = typer.Option(None, "--grid", help="Extrapolate to this process grid, e.g. 64x64."),
    strong: bool = typer.Option(False, "--strong", help="Strong scaling: halo sizes ∝ surface, compute ∝ volume."),
    weak: bool = typer.Option(False, "--weak", help="Weak scaling (with several traces: the largest's, instead of "
                              "what they show)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
    quiet: bool = QUIET,
):
    """Write the replay's schedule as a GOAL file (LogGOPSim's format), streamed."""
    import tempfile

    from idlewave._engine import SimulationError
    from idlewave.scenario import ScenarioError
    from idlewave.trace.replay import export_goal

    output_file(output, "-o", trace_dirs)
    with tempfile.TemporaryDirectory(prefix="idlewave-fitted-") as tmp:
        trace_dir, _ = _fitted(trace_dirs, scale_to, grid, weak, strong, Path(tmp) / "fitted-trace", output)
        try:
            ranks, ops = export_goal(trace_dir, output, algorithms=_replay_options(algorithm), scale_to=scale_to,
                                     grid=grid, strong=strong)
        except OSError as e:  # a read-only or full disk: a write that failed
            fail(str(e), code=1)
        except (SimulationError, ScenarioError) as e:
            if (why := _failed_write(e, output)) is not None:  # a full disk under the engine
                fail(why, code=1)
            fail(_in_fitted(str(e), trace_dir, trace_dirs))
        except KeyboardInterrupt:
            fail("interrupted; nothing was written", code=130)
    if as_json:
        print(json.dumps({"goal": str(output), "ranks": ranks, "ops": ops}))
        return
    out.print(f"wrote {output} ({ranks} ranks, {ops} ops)", markup=False, soft_wrap=True)


def _in_fitted(message: str, trace_dir: Path, dirs: list[Path]) -> str:
    """An error of the replay or export that names the template fitted from
    several traces (a file idlewave wrote and removes, which the user never
    saw: a record of it meant nothing to them), said to be in it and why it
    may be wrong there: the loops' extra iterations repeat the last traced one."""
    if len(dirs) < 2 or str(trace_dir) not in message:
        return message
    return (f"{message} (in the largest trace as fitted for the target, a file removed again: its loops repeat their "
            "last traced iteration or run fewer than traced; replay the largest trace alone to see whether it replays "
            "as traced)")


def _failed_write(e: Exception, output: Path) -> str | None:
    """The engine's failed write of the GOAL file (`writing the GOAL file:
    REASON (os error N)`, or an error naming its temporary name) as
    `OUTPUT: cannot write: REASON`; None for any other error."""
    import os
    import re

    text, path = str(e), getattr(e, "path", None)
    temporary = (path is not None and Path(path).name.startswith(f".{output.name}.")
                 and Path(path).resolve().parent == output.resolve().parent)
    if not (text.startswith("writing the GOAL file: ") or temporary):
        return None
    code = re.search(r"\(os error (\d+)\)$", text)
    return f"{output}: cannot write: {os.strerror(int(code[1])) if code else text.rsplit(': ', 1)[-1]}"


@trace_app.command("replay")
def replay_cmd(
    trace_dirs: list[Path] = typer.Argument(..., help="Directory of rank-*.iwt files; several: traces of one program "
                                            "at different sizes, whose growth --scale-to fits (`trace model`)."),
    platform: str | None = typer.Option(None, "--platform", help="Preset or platform file to replay on."),
    algorithm: list[str] | None = typer.Option(None, "--algorithm", help="collective=algorithm, e.g. allreduce=ring."),
    scale_to: int | None = typer.Option(None, "--scale-to", min=1, max=MAX_RANKS, help="Extrapolate to this many ranks: on the traced "
                                        "Cartesian grid, or a rank-periodic pattern."),
    grid: str | None = typer.Option(None, "--grid", help="Extrapolate to this process grid, e.g. 64x64 "
                                    "(default: MPI_Dims_create's grid of --scale-to ranks)."),
    strong: bool = typer.Option(False, "--strong", help="Strong scaling on the grid: halo sizes ∝ subdomain "
                                "surface, compute ∝ volume (default: weak scaling, or with several traces what they show)."),
    weak: bool = typer.Option(False, "--weak", help="Weak scaling: every rank keeps its traced messages and computation "
                              "(with several traces: the largest's, instead of what they show)."),
    compute_scale: float = typer.Option(1.0, "--compute-scale", help="Multiply the computation between MPI calls."),
    scenario: Path | None = typer.Option(None, "--scenario", help="Take [network], [[noise]] and seed from this scenario TOML."),
    sets: list[str] | None = typer.Option(None, "--set", metavar="KEY.PATH=VALUE",
                                          help="Override a value of network, noise, seed or limits (repeatable; over "
                                               "--scenario), e.g. --set network.L_s=5e-6; a TOML value, else a string."),
    seed: int | None = typer.Option(None, "--seed"),
    out_dir: Path = typer.Option(Path("replay-out"), "--out"),
    as_json: bool = typer.Option(False, "--json"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
    explain: bool = typer.Option(False, "--explain", help="Keep the critical path: what bounds the replayed run "
                                 "(explain.json, waits.parquet; see `idlewave explain`)."),
):
    """Replay a trace in the simulator (optionally on another platform, with other algorithms, at another scale).

    The replay predicts the run on dedicated cores with the given network. Calls it
    does not model (RMA, I/O, …) are charged as computation of their traced length
    and listed; the result is then marked approximate."""
    from idlewave._engine import SimulationError
    from idlewave.scenario import ScenarioError, load_scenario
    from idlewave.trace.replay import replay

    if not (math.isfinite(compute_scale) and compute_scale >= 0):
        fail(f"--compute-scale must be a finite number ≥ 0, got {compute_scale}")
    if (why := unreplaceable(out_dir)) is not None:
        fail(f"--out {why}")
    overrides = scenario_sets(sets)
    if bad := [k for k in overrides if k.split(".")[0] not in ("seed", "network", "noise", "limits")]:
        fail(f"--set {bad[0]}: a replay takes network, noise, seed and limits from a scenario (the workload is the trace)")
    trace_dir, model = _fitted(trace_dirs, scale_to, grid, weak, strong, out_dir.with_name(f".{out_dir.name}.fitted-trace"),
                               out_dir)
    fitted = trace_dir if model is not None and trace_dir != model.dirs[-1] else None
    try:
        base: dict = {}
        if scenario or overrides:
            try:
                base = load_scenario(scenario, overrides) if scenario else apply({}, overrides, lambda k, m: fail(f"--set {k}: {m}"))
            except (ScenarioError, OSError) as e:
                fail(str(e))
        if platform:
            base["network"] = {**base.get("network", {}), "platform": platform}
        try:
            from idlewave.cli.common import run_with_progress

            r = run_with_progress(lambda cb: replay(trace_dir, algorithms=_replay_options(algorithm), scale_to=scale_to,
                                                    compute_scale=compute_scale, base=base, seed=seed, grid=grid,
                                                    strong=strong, explain=explain, progress=cb), quiet)
        except (SimulationError, ScenarioError) as e:
            fail(_in_fitted(str(e), trace_dir, trace_dirs))
        except KeyboardInterrupt:
            fail("interrupted; nothing was written", code=130)
        if model is not None:
            how = "as the traces show" if not (weak or strong) else f"--{'weak' if weak else 'strong'} on the largest (the traces show {model.scaling})"
            r.summary["extrapolation"] = f"{model.describe()}, extrapolated {how}; {r.summary['extrapolation']}"
            r.summary["scaling"] = model.scaling
            r.summary["traces"] = [str(d) for d in model.dirs]
            if fitted is not None:
                r.scenario["workload"]["dir"] = str((out_dir / "fitted-trace").resolve())
        r.write(out_dir)
        if fitted is not None:
            shutil.rmtree(out_dir / "fitted-trace", ignore_errors=True)
            Path(trace_dir).rename(out_dir / "fitted-trace")  # the template at the target's numbers, beside the results
            # listed as idlewave's in the result's manifest: else the same replay into the same --out again was
            # refused, the result holding a 'fitted-trace' that "idlewave did not write there"
            from idlewave.results import note_in_manifest

            note_in_manifest(out_dir / "fitted-trace")
        s, rep = r.summary, r.trace_report
        if as_json:
            x = {"explain": r.explain.to_json()} if r.explain is not None else {}
            print_json({**s, "unmodelled": rep["unmodelled"], "zero_cost": rep["zero_cost"], **x})
            return
        _print_replay(s, rep)
        if r.explain is not None:
            from idlewave.cli.explain import show_explanation

            show_explanation(r.explain)
    finally:  # a replay that failed leaves no fitted template behind (one that ran moved it into --out)
        if fitted is not None and Path(fitted).exists():
            shutil.rmtree(fitted, ignore_errors=True)


def _print_replay(s: dict, rep: dict) -> None:
    from rich.table import Table

    out.print(f"replayed {s['ranks']} ranks ({s['traced_ranks']} traced, {s['records']:,} records"
              f"{', ' + s['mpi_library'].split(',')[0] if s['mpi_library'] else ''})", markup=False)
    if s["extrapolation"]:  # may name the traces' directories: never markup
        out.print(f"  extrapolated    {s['extrapolation']}", markup=False)
    rules = {"openmpi": "Open MPI's", "mpich": "MPICH's"}[s["collective_rules"]]
    out.print(f"  collectives     {rules} rules (where --algorithm gives none)")
    clock = {"cpu": "thread CPU time (IDLEWAVE_TRACE_CLOCK=cpu)", "mixed": "thread CPU time on some ranks, the wall "
             "clock on others"}.get(s.get("trace_clock", "wall"), "the wall clock")
    out.print(f"  computation     timed by {clock}", highlight=False)
    if rep.get("tracer_s"):
        out.print(f"  tracer's time   {seconds(sum(rep['tracer_s']) / len(rep['tracer_s']))} per traced rank, taken out "
                  "of the trace by the tracer", highlight=False)
    out.print(traced_vs_predicted(s))
    out.print(f"  events          {s['events']:,}   failed polls {s['failed_polls']:,} (charged as computation)")
    out.print(f"  messages        {s['messages']:,} ({fmt_bytes(s['bytes'])}, {s['bytes']:,} bytes)")
    if s["extrapolation"] and s["classes"]:
        out.print(_classes_table(s["classes"]))
    for title, rows in (("Not modelled (charged as computation of their traced length)", rep["unmodelled"]),
                        ("Replayed at no cost", rep["zero_cost"])):
        if not rows:
            continue
        if s["extrapolation"]:  # the footers count the traced ranks' calls, not those replayed at scale
            title += f", as traced on the {s['traced_ranks']} traced ranks"
        t = Table(title=title, title_justify="left")
        for col in ("call", "calls", "time, all ranks", "share of traced time"):
            t.add_column(col, justify="left" if col == "call" else "right")
        for name, calls, secs, share in rows:
            t.add_row(name, f"{calls:,}", seconds(secs), f"{100 * share:.2f}%")
        out.print(t)
    for w in s["warnings"]:
        out.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)
    if not s["approximate"]:
        out.print("every traced call was modelled")


def _existing(dirs: list[Path]) -> None:
    """Every trace directory given is there, checked before any is read: all
    that are not named at once, not the first after the others' fits."""
    bad = [f"{d}: {'not a directory' if d.exists() else 'no such directory'}" for d in dirs if not d.is_dir()]
    if bad:
        fail("; ".join(bad))


def _fitted(dirs: list[Path], scale_to: int | None, grid: str | None, weak: bool, strong: bool, where: Path,
            output: Path):
    """The trace to replay or export, and the model of several traces (None
    for one): with several and neither --weak nor --strong, their template
    at the target's numbers, written to `where` (trace/multi.py) beside
    `output` (named in a failed write)."""
    from idlewave.trace.format import TraceError
    from idlewave.trace.multi import build, write_template

    if weak and strong:
        fail("--weak and --strong: give one")
    if scale_to is not None and grid is not None:  # said here in the flags' names (the engine names its keys)
        try:
            ranks = math.prod(_grid_dims(grid))
        except ValueError:
            fail(f"--grid {grid}: expected sizes joined by 'x', e.g. 64x64")
        if ranks != scale_to:
            fail(f"--scale-to {scale_to} disagrees with --grid {grid} ({ranks} ranks): give one, or both for the same size")
    _existing(dirs)
    if len(dirs) == 1:
        return dirs[0], None
    if scale_to is None and grid is None:
        fail("several traces: give --scale-to N (or --grid) to extrapolate them to")
    try:
        model = build(dirs)
        if (weak or strong) and model.loops:
            fail(f"--{'weak' if weak else 'strong'} replays the largest trace alone with its own loop counts, but the "
                 f"traces have loops that run more or fewer times with the size ({model.loops[0].describe(model.sizes)}"
                 f"{f'; and {len(model.loops) - 1} more' if len(model.loops) > 1 else ''}): leave it out to use the fitted "
                 "counts")
        if weak or strong:
            return model.dirs[-1], model
        dims = _grid_dims(grid) if grid else None
        try:
            return write_template(model, scale_to or math.prod(dims or []), where, dims), model
        except OSError as e:  # a failed write (a full disk, a file in place of a directory): exit 1, naming the output
            fail(f"{output}: cannot write: {e.strerror or e}", code=1)
    except (TraceError, OSError) as e:  # a ModelError is a TraceError
        fail(str(e))
    except ValueError:
        fail(f"--grid {grid}: expected sizes joined by 'x', e.g. 64x64")


def _grid_dims(grid: str) -> list[int]:
    """A grid given as AxB[xC] (ValueError if it is not one)."""
    sizes = [int(x) for x in grid.replace("×", "x").lower().split("x")]
    if not sizes or min(sizes) < 1:
        raise ValueError(grid)
    return sizes


@trace_app.command("model")
def model_cmd(
    trace_dirs: list[Path] = typer.Argument(..., help="Traces of one program at different sizes (directories)."),
    as_json: bool = typer.Option(False, "--json", help="Print the model as JSON."),
    quiet: bool = QUIET,
):
    """Fit how a program's traces grow with the number of ranks: per rank class
    of the largest trace, its computation and every message size that changes,
    as c·p^i·log2(p)^j or c0 + c1·p^i·log2(p)^j, with the error predicting each
    traced size from the others, or, for sizes that follow the grid, as rules
    in the ranks along each dimension. Smaller traces with too few ranks along
    a dimension are left out, saying why. `trace replay DIR… --scale-to N`
    uses it."""
    from rich.table import Table

    from idlewave.trace.format import TraceError
    from idlewave.trace.multi import build

    _existing(trace_dirs)
    try:
        m = build(trace_dirs)
    except (TraceError, OSError) as e:  # a ModelError is a TraceError
        fail(str(e))
    if as_json:
        print_json(m.to_json())
        return
    kept = "as traced (weak scaling)" if m.alone else "at every size"
    out.print(f"{m.describe()}; {m.constant_bytes:,} message records keep their bytes {kept}", highlight=False,
              markup=False)
    from idlewave.trace.multi import class_name

    used = [m.sizes[-1]] if m.alone else m.sizes
    t = Table(title=f"Per rank class of the {m.sizes[-1]}-rank trace (the first of its ranks; their ranks in the "
              f"traces at {', '.join(map(str, used))})", title_justify="left")
    for col in ("class", "ranks", "in the traces", "computation", "rule", "error", "message sizes that change"):
        t.add_column(col, justify="left" if col in ("class", "rule", "message sizes that change") else "right")
    classes: dict[str, list] = {}
    for r in m.ranks:
        classes.setdefault(class_name(r.rank, m.dims[-1]), []).append(r)
    for name, members in classes.items():
        r = members[0]
        varying = sorted({(r.calls[k], b.describe()) for k, b in r.bytes.items()})
        shown = "; ".join(f"{c}: {d}" for c, d in varying[:2]) + (f"; … ({len(varying)} rules)" if len(varying) > 2 else "")
        t.add_row(name, str(len(members)), ", ".join(map(str, r.ranks)), ", ".join(seconds(c) for c in r.computed_s),
                  escape(r.compute.describe()) + " s", "—" if m.alone else f"{max(x.compute.error for x in members):.1%}",
                  escape(shown or "none"))
    out.print(t)
    if m.loops:
        t = Table(title="Loops that run more or fewer times with the size (every rank's)", title_justify="left")
        for col in ("loop", "calls", *(f"at {p}" for p in m.sizes), "rule", "error"):
            t.add_column(col, justify="left" if col in ("loop", "calls", "rule") else "right")
        for loop in m.loops:
            t.add_row(f"rank 0's call {loop.first}", escape(", ".join(loop.body[:4]) + (f", … ({len(loop.body)})" if len(loop.body) > 4 else "")),
                      *map(str, loop.counts), escape(loop.rule.describe()),
                      "exact" if loop.exact else f"{loop.rule.error:.1%}")
        out.print(t)


def _classes_table(classes: list[dict], shown: int = 12):
    """Per rank class, the classes whose ranks spend longest in MPI first."""
    from rich.table import Table

    rows = sorted(classes, key=lambda c: -c["mpi_s"])
    t = Table(title="By rank class (the ranks that replay one traced rank; per rank, their mean)"
              + (f", {shown} of {len(rows)} classes with the most time in MPI" if len(rows) > shown else ""),
              title_justify="left")
    for col in ("traced rank", "ranks", "messages", "bytes", "in MPI", "computing"):
        t.add_column(col, justify="right")
    for c in rows[:shown]:
        per = max(c["ranks"], 1)  # the JSON has the class's totals; the table, like its times, per rank
        t.add_row(str(c["traced_rank"]), f"{c['ranks']:,}", f"{c['messages'] / per:,.1f}", f"{c['bytes'] / per:,.0f}",
                  seconds(c["mpi_s"]), seconds(c["calc_s"]))
    return t


def traced_vs_predicted(s: dict):
    """The replay's makespan and time in MPI beside the traced run's (at
    the traced size: an extrapolation has no traced counterpart)."""
    from rich.table import Table

    same = not s["extrapolation"]
    t = Table(title="Traced and predicted" if same else f"Predicted at {s['ranks']:,} ranks; traced at {s['traced_ranks']:,}",
              title_justify="left")
    for col in ("", "traced", "predicted", "error"):
        t.add_column(col, justify="left" if not col else "right")

    def row(name: str, traced: float, predicted: float) -> None:
        error = f"{(predicted - traced) / traced:+.1%}" if same and traced > 0 else ""
        t.add_row(name, seconds(traced), seconds(predicted), error)

    row("makespan (MPI_Init…Finalize)", s["traced_makespan_s"], s["makespan_s"])
    row("time in MPI, mean per rank", s["traced_mpi_s"], s["replayed_mpi_s"])
    return t


@trace_app.command("import")
def import_cmd(
    source: Path = typer.Argument(..., help="An OTF2 archive (its directory or traces.otf2, Score-P), or a "
                                            "directory of liballprof traces (pmpi-trace-rank-<r>.txt)."),
    out_dir: Path = typer.Option(Path("imported-trace"), "--out", help="Where to write rank-*.iwt."),
    fmt: str = typer.Option("auto", "--format", help="otf2, liballprof, or auto (liballprof where SOURCE holds "
                                                     "pmpi-trace-rank-0.txt, else OTF2)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
    quiet: bool = QUIET,
):
    """Import an OTF2 trace (Score-P) or liballprof traces (LogGOPSim's and
    ATLAHS's PMPI tracer) into idlewave's trace format, for replay and export."""
    from idlewave.trace import TraceError

    if fmt not in ("auto", "otf2", "liballprof"):
        fail(f"--format: {fmt!r} is not a trace format (otf2, liballprof, auto)")
    if not source.exists():
        fail(f"{source}: no such file or directory")
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: exists and is not a directory; name a new or empty directory, or an earlier trace")
    if fmt == "auto":
        fmt = "liballprof" if (source / "pmpi-trace-rank-0.txt").is_file() else "otf2"
    try:
        if fmt == "liballprof":
            from idlewave.trace import liballprof_import

            records, notes = liballprof_import.read_liballprof(source)
            liballprof_import.write_iwt(records, out_dir)
            ranks = len(records)
        else:
            from idlewave.trace.otf2_import import read_otf2, write_iwt

            traces, notes = read_otf2(source)
            write_iwt(traces, out_dir)
            ranks = len(traces)
    except TraceError as e:
        fail(str(e))
    except OSError as e:  # a read-only or full disk: a write that failed
        fail(f"--out {out_dir}: cannot write the trace: {e.strerror or e}", code=1)
    for note in [] if quiet else notes:
        err.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    if as_json:
        print(json.dumps({"ranks": ranks, "out": str(out_dir), "notes": notes}))
        return
    out.print(f"imported {ranks} ranks into {out_dir}", markup=False, soft_wrap=True)
