"""`idlewave validate`: measured against predicted for a real program."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

import typer
from rich.markup import escape

from idlewave.cli.common import Steps, err, fail, out, print_json


class Buffers(StrEnum):
    """Where --calibrate's ping-pong messages come from."""

    memory = "memory"
    cache = "cache"


def validate(
    command: list[str] = typer.Argument(..., help="The program and its arguments, after --."),
    platform: str | None = typer.Option(None, "--platform", help="Preset or platform file to predict with "
                                        "(e.g. from `idlewave measure pingpong` + `idlewave fit postal` on the "
                                        "program's MPI), or --calibrate."),
    calibrate: bool = typer.Option(False, "--calibrate", help="Measure the platform now with the program's MPI "
                                   "(`idlewave measure pingpong` on 2 ranks, then `idlewave fit postal`, into "
                                   "OUT/measure/ and OUT/platform.toml) and predict with it, instead of --platform."),
    max_error: float | None = typer.Option(None, "--max-error", min=0.0, help="With --calibrate: the fit's bound on "
                                           "its RMS relative error per protocol and size range (`fit postal "
                                           "--max-error`; default 0.1)."),
    force_fit: bool = typer.Option(False, "--force-fit", help="With --calibrate: predict with the fit even if "
                                   "`fit postal` refuses it (`fit postal --force`: the platform file says it was "
                                   "forced, and validate.json has \"platform_forced\": true)."),
    buffers: Buffers | None = typer.Option(None, "--buffers", help="With --calibrate: where the ping-pong's "
                                    "messages come from. memory: each a fresh slot of two 256 MiB regions, out of "
                                    "the cache, as an application's buffers mostly are (`measure pingpong --set "
                                    "span_bytes=268435456`; the default); cache: one buffer, as `measure pingpong` by default."),
    ranks: int = typer.Option(..., "-n", "--ranks", min=1, help="MPI processes."),
    mpiexec: str | None = typer.Option(None, "--mpiexec", help="The launcher of the program's MPI (default: the one "
                                       "beside --mpicc, else this Python's, else PATH's)."),
    mpicc: str | None = typer.Option(None, "--mpicc", help="The compiler wrapper of the program's MPI, to build "
                                     "the tracer (default: the one beside --mpiexec)."),
    repeat: int = typer.Option(5, "--repeat", "-k", min=1, help="Untraced runs (their median and spread)."),
    traced_runs: int = typer.Option(3, "--traced-runs", "-t", min=1, help="Traced runs (time in MPI: their median "
                                    "and spread; the median run is compared call by call)."),
    timeout: float = typer.Option(3600.0, "--timeout", min=1.0, help="Seconds one run may take (then its whole MPI "
                                 "job is ended)."),
    out_dir: Path = typer.Option(Path("validate-out"), "--out", help="Where the trace, the runs' output, the "
                                 "replay and validate.json go."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no notes on stderr."),
    check: bool = typer.Option(True, "--check-platform/--no-check-platform", help="Before the untraced runs and "
                               "after the traced ones, a ping-pong of about a second with the program's MPI, against "
                               "the platform's one-way times: warns when the platform does not describe the machine "
                               "as it is, or when the machine changed speed in between."),
):
    """Run a program K times untraced and T times traced, replay the traces on
    a platform, and compare measured with predicted: total time and time in
    MPI (mean per rank), then by MPI call, largest error first.

    Example: `idlewave validate --calibrate -n 2 -- ./app input`"""
    from idlewave._engine import SimulationError
    from idlewave.interrupts import MESSAGE, Signalled, signals_end_the_job
    from idlewave.results import unreplaceable, write_json
    from idlewave.scenario import ScenarioError
    from idlewave.trace.replay import replay
    from idlewave.validate import (
        CALIBRATION_SPAN_BYTES,
        WORK_MARKER,
        Traced,
        ValidateError,
        calibrate_platform,
        check_platform,
        compare,
        find_mpi,
        predicted_total_s,
        refuse_work,
        run_program,
        start_work,
        work_dir,
    )

    if not command:
        fail("give the program to run after --, e.g. `idlewave validate --platform P -n 2 -- ./app`")
    if platform is not None and calibrate:
        fail("give --platform or --calibrate, not both")
    if platform is None and not calibrate:
        fail("give --platform P (a preset or a platform file), or --calibrate to measure one now with the program's MPI")
    if max_error is not None and not calibrate:
        fail("--max-error bounds --calibrate's fit: give it with --calibrate")
    if max_error is not None and not math.isfinite(max_error):  # (Click's bound lets nan and inf through)
        fail(f"--max-error: must be a finite number ≥ 0, got {max_error}")
    if not math.isfinite(timeout) or timeout <= 0:
        fail(f"--timeout: must be a finite number of seconds ≥ 1, got {timeout}")
    if buffers is not None and not calibrate:
        fail("--buffers says how --calibrate measures: give it with --calibrate")
    if force_fit and not calibrate:
        fail("--force-fit forces --calibrate's fit: give it with --calibrate")
    if (why := unreplaceable(out_dir)) is not None:
        fail(f"--out {why}")
    # built beside --out and put in its place once complete: a failed run leaves its logs in OUT.partial
    # (named in the error), never a half-written OUT; only a directory validate made is ever replaced
    if out_dir.name in ("", ".."):
        fail(f"--out {out_dir}: name the directory itself (validate builds OUT.partial beside it, then renames it OUT)")
    work = work_dir(out_dir)
    if (why := refuse_work(work)) is not None:
        fail(f"--out {out_dir}: {why}")
    if platform is not None:
        try:  # the platform is checked before the program runs, not after
            from idlewave.scenario import validate as check_scenario

            check_scenario({"network": {"platform": platform}})
        except ScenarioError as e:
            fail(f"--platform: {e.message}" if e.key == "network.platform" else str(e))
    say = (lambda _: None) if quiet or as_json else (lambda m: err.print(f"[dim]{escape(m)}[/]", highlight=False))

    def kept() -> str:  # where a failed run's logs are, once validate has made its work directory
        if not (work / WORK_MARKER).is_file():
            return ""
        return f"\nthe runs' logs so far are in {work}/ (the next validate with --out {out_dir} replaces it)"

    try:
        # SIGTERM and SIGHUP (and Ctrl-C) end the MPI job running (launcher and ranks) before validate exits
        with signals_end_the_job():
            mpi = find_mpi(mpiexec, mpicc)
            say(f"MPI: {mpi.version} ({mpi.mpiexec}, {mpi.mpicc}: {mpi.chosen})")
            if ranks > (__import__("os").cpu_count() or 1):
                err.print(f"[yellow]warning:[/] {ranks} ranks on {__import__('os').cpu_count()} cores: an oversubscribed run's "
                          "times say nothing about a machine with a core per rank", highlight=False)
            start_work(work)
            # one progress line on a terminal (K untraced runs, T traced, T replays: run k of N, elapsed, ETA);
            # elsewhere (a log) one line per run, as before; nothing with --quiet or --json
            checks = []
            with Steps(repeat + 2 * traced_runs + 2 * check + calibrate, quiet or as_json, first="building the tracer") as steps:
                step: Callable[[str], None] = say if steps.bar is None else steps
                if platform is None:
                    step("calibrating (idlewave measure pingpong, idlewave fit postal)")
                    span = 0 if buffers is Buffers.cache else CALIBRATION_SPAN_BYTES
                    platform = str(calibrate_platform(mpi, work, timeout, max_error, force_fit, span))
                if check:
                    step("checking the platform (a ping-pong)")
                    checks.append(check_platform(mpi, platform, work, "before", timeout))
                runs, dirs = run_program(mpi, ranks, command, work, repeat, timeout, step, traced_runs)
                if check:
                    step("checking the platform again (a ping-pong)")
                    checks.append(check_platform(mpi, platform, work, "after", timeout))
                replays = []
                for k, d in enumerate(dirs):
                    step(f"replaying trace {k + 1} of {len(dirs)}")
                    replays.append(replay(d, base={"network": {"platform": platform}}, by_call=True))
            traced = Traced.median_of([r.summary["traced_mpi_s"] for r in replays],
                                      [r.summary["replayed_mpi_s"] for r in replays],
                                      [predicted_total_s(r.summary, r.trace_report, w)
                                       for r, w in zip(replays, runs.traced_walls_s)])
            r = replays[traced.chosen]
            runs.traced_wall_s = runs.traced_walls_s[traced.chosen]
            dirs[traced.chosen].rename(work / "trace")  # the compared run's trace; the others stay as traced-K
    except ValidateError as e:
        fail(str(e) + kept())
    except (SimulationError, ScenarioError) as e:
        fail(str(e) + kept())
    except OSError as e:  # a write that failed
        fail(f"--out {out_dir}: {e.strerror or e}{kept()}", code=1)
    except (KeyboardInterrupt, Signalled) as e:  # the job running was ended first (run_program), as `measure` does
        if where := kept():
            err.print(escape(where.strip()), highlight=False, soft_wrap=True)
        if isinstance(e, KeyboardInterrupt):
            fail("interrupted", code=130)  # (143 after SIGTERM where Ctrl-C is answered: idlewave.cli.root)
        err.print(f"[bold red]error:[/] {MESSAGE.removeprefix('error: ')}", highlight=False)
        raise typer.Exit(128 + e.signum) from None
    result = compare(runs, r.summary, r.trace_report, traced, checks)
    result["compared_traced_run"] = traced.chosen + 1
    library = (r.summary.get("mpi_library") or "").splitlines()[0:1]
    result["mpi"] = {"mpiexec": mpi.mpiexec, "mpicc": mpi.mpicc, "launcher": mpi.version,
                     "library": library[0].split(", package")[0].strip() if library else ""}
    # a measured platform is in OUT once the results are in place
    result["platform"] = str((out_dir / "platform.toml").resolve()) if calibrate else platform
    if calibrate:
        result["platform_forced"] = bool(json.loads((work / "fit.json").read_text()).get("forced"))
        if result["platform_forced"] and not quiet:
            err.print("[yellow]warning:[/] the calibrated fit was refused and used anyway (--force-fit): the "
                      f"predictions are only as good as {escape(str(out_dir / 'fit.json'))} says", highlight=False)
    result["command"] = command
    try:
        r.scenario["workload"]["dir"] = str((out_dir / "trace").resolve())  # where the trace will be
        r.scenario.setdefault("network", {})["platform"] = result["platform"]
        r.write(work / "replay")
        write_json(work / "validate.json", result)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        work.rename(out_dir)
        (out_dir / WORK_MARKER).unlink()  # a result now, no longer validate's work directory
    except OSError as e:
        fail(f"--out {out_dir}: cannot write the results: {e.strerror or e}", code=1)
    if as_json:
        print_json(result)
        return
    show(result)
    out.print(f"results: {escape(str(out_dir))}/validate.json", highlight=False)


def show(v: dict) -> None:
    from rich.table import Table

    from idlewave.results import seconds

    m, p, e = v["measured"], v["predicted"], v["error"]
    runs = len(m["total_runs_s"])
    pct = lambda x: "—" if x is None else f"{x:+.1%}"  # noqa: E731
    t = Table(title=f"{v['ranks']} ranks, {escape(v['mpi']['library'] or v['mpi']['launcher'])}", title_justify="left")
    for col in ("", "measured", "predicted", "error"):
        t.add_column(col, justify="left" if not col else "right")
    totals = p.get("total_runs_s") or [p["total_s"]]
    t.add_row("total time", f"{seconds(m['total_s'])} (median of {runs}, {seconds(m['total_min_s'])}…{seconds(m['total_max_s'])})",
              seconds(p["total_s"]) if len(totals) == 1 else
              f"{seconds(p['total_s'])} (median of {len(totals)} traced, {seconds(min(totals))}…{seconds(max(totals))})",
              pct(e["total_s"]))
    t.add_row("  MPI_Init…Finalize", f"{seconds(m['span_s'])} (traced run)", seconds(p["span_s"]), "")
    if m.get("tracer_s"):
        t.add_row("  tracer's own time", f"{seconds(m['tracer_s'])} (taken out of the trace)", "", "")
    n = len(m["mpi_runs_s"])
    t.add_row("time in MPI, mean per rank",
              f"{seconds(m['mpi_s'])} (traced run)" if n == 1 else
              f"{seconds(m['mpi_s'])} (median of {n} traced, {seconds(m['mpi_min_s'])}…{seconds(m['mpi_max_s'])})",
              seconds(p["mpi_s"]) if n == 1 else
              f"{seconds(p['mpi_s'])} ({seconds(p['mpi_min_s'])}…{seconds(p['mpi_max_s'])})", pct(e["mpi_s"]))
    if "platform_check" in v:
        for when in ("before", "after"):
            if (c := v["platform_check"].get(when)) is None:
                continue
            ratios = ", ".join(f"{b['ratio']:.2f}× at {b['sizes']}" for b in c["bands"])
            t.add_row(f"ping-pong / platform, {when}", ratios, "", "")
    if m["polls_s"] or m["unmodelled_s"]:
        t.add_row("  charged as computation", f"{seconds(m['polls_s'] + m['unmodelled_s'])} (failed polls, calls not modelled)", "", "")
    out.print(t)
    which = f", traced run {v['compared_traced_run']} of {n}" if n > 1 and "compared_traced_run" in v else ""
    calls = Table(title=f"By MPI call{which} (seconds are means per rank)", title_justify="left")
    for col in ("call", "calls", "bytes", "measured", "predicted", "error"):
        calls.add_column(col, justify="left" if col == "call" else "right")
    for row in v["by_call"]:
        err_ = (row["predicted_s"] - row["measured_s"]) / row["measured_s"] if row["measured_s"] > 0 else None
        calls.add_row(escape(row["call"]), f"{row['calls']:,}", f"{row['bytes']:,}", seconds(row["measured_s"]),
                      seconds(row["predicted_s"]), pct(err_))
    out.print(calls)
    for w in v["warnings"]:
        out.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)
