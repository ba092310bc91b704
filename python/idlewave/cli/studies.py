"""`idlewave demo` and `idlewave reproduce`: the studies of idlewave.studies, run and printed.
Its commands are listed in idlewave/cli/root.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from idlewave import _engine
from idlewave.cli.common import Steps, err, fail, out, print_json
from idlewave.scenario import ScenarioError
from idlewave.units import fmt_bytes, fmt_time


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


def reproduce(
    names: list[str] = typer.Argument(None, help="Studies to run (default: all); `--list` names them."),
    out_dir: Path = typer.Option(Path("reproduce-out"), "--out", help="Where to write each study's JSON and figure."),
    ranks: list[str] | None = typer.Option(None, "--ranks", help="A scale (repeatable, or comma-separated: --ranks 1024 "
                                           "--ranks 4096 or --ranks 1024,4096; default: the study's; chebfd and "
                                           "grid-broadcasts take one, krylov-kernels none)."),
    iterations: int = typer.Option(None, "--iterations", min=1, help="Iterations per run (default: the study's; "
                                   "chebfd: the polynomial degree; grid-broadcasts takes none)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the noise (default 1; noise-apps and noise-collectives only)."),
    seeds: int | None = typer.Option(None, "--seeds", help="Run the seeds from --seed on, this many, and judge each "
                                     "claim per seed: 'holds for k of n seeds' (noise-collectives only; default 1)."),
    taper: float | None = typer.Option(None, "--taper", help="Run on shared links: a fat tree tapered TAPER:1, its links "
                                       "as fast as a NIC, shared max-min fairly (krylov-kernels and grid-broadcasts only; "
                                       "see docs/links.md)."),
    list_: bool = typer.Option(False, "--list", help="List the studies and exit."),
    table: bool = typer.Option(False, "--table", help="Run every study over 5 noise seeds and several sizes and write "
                               "the Reproductions table: per claim of the papers what they say, what we get, where it "
                               "was checked and the verdict (OUT/reproductions.md and .json; about an hour on 2 cores)."),
    quick: bool = typer.Option(False, "--quick", help="With --table: 2 seeds and small sizes, to check that it runs "
                               "(about two minutes on 2 cores; its verdicts mean little)."),
    embed: Path | None = typer.Option(None, "--embed", help="With --table: also write the table into this Markdown "
                                      "file, between its markers (docs/reproductions.md)."),
    resume: bool = typer.Option(False, "--resume", help="With --table: take the runs already in OUT/reproductions.json "
                                "(of the same plan) instead of running them again, after an interruption or when "
                                "claims were added; never after the model changed."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress and no notes on stderr."),
):
    """Run a paper's study as the paper ran it and print, per figure, what the paper says, what we get and the verdict."""
    from idlewave.results import check_writable
    from idlewave.studies import reproduce as rp
    from idlewave.studies.shared_links import SharedLinks

    if list_:
        _list(names, as_json, (("--table", table), ("--quick", quick), ("--embed", embed), ("--resume", resume),
                               ("--ranks", ranks), ("--iterations", iterations), ("--seed", seed), ("--seeds", seeds),
                               ("--taper", taper)))
        return
    if table or quick or resume or embed is not None:
        not_here = [flag for flag, v in (("a study's name", names), ("--ranks", ranks), ("--iterations", iterations),
                                      ("--seed", seed), ("--seeds", seeds), ("--taper", taper)) if v]
        if not table:
            fail(f"{'--quick' if quick else '--resume' if resume else '--embed'} goes with --table")
        if not_here:
            fail(f"--table runs every study at its own seeds and sizes; it takes no {', '.join(not_here)} "
                 "(--quick for a short check)")
        _table(out_dir, quick, embed, resume, as_json, quiet)
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
        if error := rp.flag_error(name, scales, iterations, seed, taper, seeds):
            fail(error + ("" if names else " (with no study named, every study runs; name the ones to run)"))
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: exists and is not a directory; each study writes a directory inside it")
    for name in studies:  # said before the first run; nothing is created until a study runs
        if (out_dir / name).exists() and not (out_dir / name).is_dir():
            fail(f"--out {out_dir}: {out_dir / name} exists and is not a directory; the study {name} writes a "
                 "directory there")
        try:
            check_writable(out_dir / name / f"{name}.json")
        except OSError as e:  # a read-only or full disk: a write that failed
            fail(f"--out {out_dir}: cannot create {out_dir / name}: {e.strerror or e}", code=1)
    links = None if taper is None else SharedLinks(taper=taper)
    results = {}
    # on a terminal one progress line over every study's rows (row k of N, elapsed, ETA, the row last done);
    # elsewhere (a log) one line per finished row; nothing with --quiet or --json
    total = sum(rp.rows_expected(name, scales or rp.DEFAULTS[name][0], seeds or 1) for name in studies)
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
            new = _missing(out_dir / name)  # what the study creates: removed again if it fails
            try:
                results[name] = rp.run_study(name, out_dir / name, scales or default_ranks, iterations or default_iterations,
                                             1 if seed is None else seed, on_row=done(name), links=links, seeds=seeds or 1)
            except ScenarioError as e:  # a bound flag_error does not know: name the flag, not the study's internal scenario
                _remove(new)
                flag = {"seed": "--seed", "workload.ranks": "--ranks", "workload.iterations": "--iterations"}.get(e.key)
                fail(f"{flag}: {str(e).removeprefix(f'{e.source}: {e.key}: ')} ({name})" if flag else f"{name}: {e}")
            except _engine.SimulationError as e:
                _remove(new)
                fail(f"{name}: {e}")
            except OSError as e:  # e.g. a full disk: a write that failed
                _remove(new)
                fail(f"--out {out_dir / name}: cannot write the study's results: {e.strerror or e}", code=1)
            except BaseException:  # Ctrl-C
                _remove(new)
                raise
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
            if "links" in result:
                out.print(f"{name}, on a {result['links']['label']}:", highlight=False)
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


def _list(names: list[str] | None, as_json: bool, flags: tuple) -> None:
    """`reproduce --list [NAME…]`: the studies (those named), what each runs."""
    from idlewave.studies import reproduce as rp

    unknown = [n for n in names or [] if n not in rp.STUDIES]
    if unknown:
        fail(f"unknown study {unknown[0]!r} (known: {', '.join(rp.STUDIES)})")
    given = [flag for flag, v in flags if v]
    if given:
        fail(f"--list lists the studies and runs none; it takes no {', '.join(given)}")
    shown = {name: rp.STUDIES[name] for name in names or rp.STUDIES}
    if as_json:
        print_json({name: {"what": what} for name, what in shown.items()})
        return
    for name, what in shown.items():
        out.print(f"{name}: {what}", highlight=False, markup=False)


def _missing(d: Path) -> list[Path]:
    """`d` and its parents that do not exist yet, the outermost last."""
    missing = []
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    return missing


def _remove(new: list[Path]) -> None:
    """Removes what a study that failed created: the outermost directory
    of `new` that it made, with what it wrote inside."""
    import shutil

    made = [d for d in new if d.is_dir()]
    if made:
        shutil.rmtree(made[-1], ignore_errors=True)


def _read_embed(embed: Path) -> str:
    """The Markdown file --embed names, as text: a regular file of at most
    table.MAX_EMBED_BYTES in UTF-8, or a one-line error naming --embed (a
    FIFO or a device is refused, never waited on or read without end)."""
    from idlewave.inputs import read_bytes
    from idlewave.studies import table as tb

    try:
        if embed.is_file() and embed.stat().st_size > tb.MAX_EMBED_BYTES:
            fail(f"--embed {embed}: {fmt_bytes(embed.stat().st_size, binary=True)}, more than the "
                 f"{fmt_bytes(tb.MAX_EMBED_BYTES, binary=True)} read (a Markdown page to embed the table in)")
        data = read_bytes(embed, "Markdown file")
    except OSError as e:  # read_bytes' own messages name the file
        fail(f"--embed {embed}: {e.strerror}" if e.strerror else f"--embed {e}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:  # position only: never the file's contents
        fail(f"--embed {embed}: not UTF-8 text (byte {e.start}); the table is embedded in a Markdown file")


def _table(out_dir: Path, quick: bool, embed: Path | None, resume: bool, as_json: bool, quiet: bool) -> None:
    """`reproduce --table`: every study run over the plan's seeds and sizes, each claim judged."""
    from idlewave.results import check_writable, write_json, write_text
    from idlewave.studies import claims as cl
    from idlewave.studies import table as tb

    plan = tb.QUICK if quick else tb.FULL
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: exists and is not a directory; the table and its runs are written inside it")
    text = _read_embed(embed) if embed is not None else ""
    try:
        check_writable(out_dir / "reproductions.json")
    except OSError as e:  # a read-only or full disk: a write that failed
        fail(f"--out {out_dir}: {e.strerror or e}", code=1)
    if embed is not None and tb.END not in text.partition(tb.BEGIN)[2]:  # both markers, in order
        fail(f"--embed {embed}: it has no generated table to replace (a line {tb.BEGIN!r}, then {tb.END!r})")
    done = tb.load_runs(out_dir / "reproductions.json", plan) if resume else {}
    if resume and not done and not (quiet or as_json):
        err.print(f"--resume: no runs of this plan in {out_dir / 'reproductions.json'} (none there, or of another "
                  "plan): running them all", highlight=False, markup=False)
    steps = Steps(sum(tb.job_key(j) not in done for j in tb.jobs(plan)), quiet or as_json, first="first run")
    if done and not (quiet or as_json):
        err.print(f"{len(done)} runs taken from {out_dir / 'reproductions.json'} (the same plan); "
                  f"{steps.total} to run", highlight=False, markup=False)

    def finished(job: tb.Job, k: int, n: int) -> None:
        what = f"{job[0]} " + ", ".join(f"{a} {v}" for a, v in job[1].items())
        if steps.bar is None and not (quiet or as_json):  # a log: one line per run finished
            err.print(f"  {k}/{n} done: {what}", highlight=False, markup=False)
        elif k < n:
            steps(f"{k}/{n} done: {what}")

    try:
        with steps:
            steps("first run")
            runs = tb.collect(plan, done, on_job=finished,
                              save=lambda so_far: write_json(out_dir / "reproductions.json", tb.results(plan, so_far)))
    except OSError as e:  # e.g. a full disk while saving the runs so far
        fail(f"--out {out_dir}: cannot write the runs: {e.strerror or e}", code=1)
    try:
        claims = cl.judge_all(runs)
    except (KeyError, StopIteration) as e:  # rows of an older version taken with --resume
        fail(f"the runs do not fit today's claims ({type(e).__name__}: {e}): "
             + ("some were taken with --resume from an older version; run without --resume" if done else
                "a claim reads a row its study does not give"))
    md = tb.render(claims)
    try:
        write_json(out_dir / "reproductions.json", tb.results(plan, runs, claims))
        write_text(out_dir / "reproductions.md", md + "\n")
        if embed is not None:
            write_text(embed, tb.embed(embed, md, text))
    except OSError as e:  # a write that failed
        fail(f"cannot write the table: {e.strerror or e}", code=1)
    if as_json:
        print_json({"plan": plan.describe(), "claims": claims})
        return
    for c in claims:
        out.print(f"{c['paper']}, {c['result']}: {c['verdict']}", highlight=False, markup=False)
    out.print(f"{tb.tally(claims)}; the table: {out_dir / 'reproductions.md'}"
              + (f", and in {embed}" if embed is not None else ""), highlight=False, markup=False)


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
    on = f", on a {result['links']['label']}" if "links" in result else ""
    t = Table(title=f"krylov-kernels: time per iteration (1 ms overlapped, 0.1 ms after{on})")
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
            # per scale, the value, or its range over the seeds
            spans = [[r["speedup"] for r in rows if r["collective"] == coll and r["noise"] == noise and r["ranks"] == p]
                     for p in scales]
            t.add_row(noise, f"{coll} ({algorithm})",
                      *(f"{min(v):.2f}" if len(v) == 1 else f"{min(v):.2f}–{max(v):.2f}" for v in spans))
    out.print(t)
    for v in result["verdicts"]:
        out.print(f"  {v['figure']} ({v['noise']}): {v['verdict']}. The paper: {v['paper']}", highlight=False)
    out.print(f"figure: {result['figure']}", highlight=False, markup=False, soft_wrap=True)
