"""`idlewave sweep STUDY.toml`: many scenarios on Dask distributed.

A study has a base scenario (`[base]`, or `base = "scenario.toml"`) and
points: the cartesian product of `[grid]` (key path → list of values) and/or
an explicit `[[points]]` list of overrides. Each point runs as one task on a
local cluster (default) or an existing scheduler, and writes its result into
`OUT/points/<id>/` as it finishes (summary.json last, atomically); a failed
point writes `error.json` and the others go on. Re-running skips finished
points. `OUT/sweep.parquet` tabulates every point at the end.

`replications = N` runs every point N times with seeds seed, seed + 1, …
(a `replica` column), and `strategy = "key"` names the swept key whose
values are the strategies to rank: `OUT/ranking.json` and `ranking.png`
then say, per condition, which strategy wins and by how much (see
idlewave.ranking).

Reliability (docs/sweeps.md):

- Points are planned as they go to the workers, a few more than the workers
  have threads at a time: the first starts within seconds and the progress
  counts k of N, however large the study, up to MAX_POINTS (a larger study
  is refused at once, with advice).
- A seeded sweep writes the same bytes run after run, with any number of
  workers and on any scheduler, except the TIMING_FIELDS: the table is in
  the study's order, every float is summed in a fixed order.
- A scheduler given with --scheduler must answer as a Dask scheduler within
  CONNECT_TIMEOUT_S and have a worker within the worker timeout; a sweep
  whose scheduler has had no worker for that long (the last one lost) stops.
  Each is a SchedulerError saying what was kept: every point finished is
  written, and running the sweep again skips it.
- What would fail every point, or run something else than asked, is
  refused before anything runs: what the study file holds (idlewave.study:
  a key no scenario has, a nan or inf, seeds past 2^64 - 1, a study with
  nothing to run), an --out that is not a sweep's (`not_a_sweep_output`),
  more local workers than the CPUs take (`max_local_workers`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import polars as pl

from idlewave import _engine
from idlewave.overrides import apply
from idlewave.ranking import LEVEL, figure, job_column, rank, slowest_iteration_mean
from idlewave.results import RESULT_MARKERS, RefusedOutput, write_dir, write_json, write_parquet
from idlewave.scenario import ScenarioError, validate
from idlewave.study import MAX_POINTS, BaseFile, Points, check_seeds, check_sets, load_study, study_options

#: Seconds to reach a scheduler given with --scheduler and have it answer as one.
CONNECT_TIMEOUT_S = 10.0

#: Seconds a sweep waits for a worker (the default of --worker-timeout): at
#: the start on a scheduler given with --scheduler, and whenever the
#: scheduler has had no worker since (one lost).
WORKER_TIMEOUT_S = 60.0

#: Workers a local cluster may have per CPU this process may run on
#: (`max_local_workers`): each is a process running one point at a time, so
#: more bring nothing but memory and start-up time (100,000 were tried).
WORKERS_PER_CPU = 2


#: What a sweep writes into its --out (and `idlewave report` beside it): a
#: directory holding anything else is not a sweep's output and is refused.
SWEEP_FILES = ("points", "study.json", "sweep.parquet", "ranking.json", "ranking.png", "report.html")

#: The fields that say how long something took (wall-clock time) and so
#: differ between runs; every other byte a seeded sweep writes is the same
#: from run to run, whatever the number of workers or the scheduler.
TIMING_FIELDS = ("summary.json: wall_s", "summary.json: events_per_s")


class SchedulerError(OSError):
    """A scheduler that cannot be reached, does not answer as a Dask
    scheduler, or has no worker for too long; the message says which and
    what was kept."""


def max_local_workers() -> int:
    """The most workers a local cluster may have: WORKERS_PER_CPU per CPU this
    process may run on (its affinity, which a batch job or a container sets),
    and at least the default, 2."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (not Linux)
        cpus = os.cpu_count() or 1
    return max(2, WORKERS_PER_CPU * cpus)


def not_a_sweep_output(out: str | Path) -> str | None:
    """Why a sweep may not write into `out`, or None: it must be absent, an
    empty directory or a sweep's own output (SWEEP_FILES, one of points/ and
    study.json among them: a sweep interrupted before its end has only its
    points), so that a sweep never adds its files to a user's directory or
    another command's result. Files the user added to a sweep's output (a
    note, a figure) stay, and the sweep is resumed: it writes only its own."""
    out = Path(out)
    if not out.exists() and not out.is_symlink():
        return None
    if not out.is_dir():
        return f"{out}: exists and is not a directory"

    def temporary(name: str) -> bool:  # a write under way, or a probe (results.check_writable)
        return name.startswith(".idlewave-probe.") or (name.endswith(".tmp") and name.startswith(tuple(f".{f}." for f in SWEEP_FILES)))

    try:
        names = sorted(p.name for p in out.iterdir() if not temporary(p.name))
    except OSError as e:
        return f"{out}: cannot list it to see that it is a sweep's output: {e.strerror or e}"
    if not names:
        return None
    theirs = [n for n in names if n not in SWEEP_FILES]
    kinds_ok = (not (out / "points").exists() or (out / "points").is_dir()) and all(
        (out / n).is_file() for n in names if n != "points" and n in SWEEP_FILES)
    result = [m for m in RESULT_MARKERS if m in names]
    if kinds_ok and not result and ("points" in names or "study.json" in names):
        return None
    if result:
        what = f"another command's result (it holds {result[0]})"
    elif theirs:
        what = f"not a sweep's output (it holds {theirs[0]!r}{', among others' if len(names) > 1 else ''})"
    else:
        what = f"not a sweep's output (it holds {names[0]!r}{', among others' if len(names) > 1 else ''} and no points)"
    return (f"{out}: is {what}, and a sweep adds its points/, study.json and sweep.parquet to what is there; choose a "
            "new or empty directory, or the --out of an earlier run of the same sweep to resume it")


def point_id(scenario: dict) -> str:
    """A point's key: its whole checked scenario, the engine version and the
    files it reads (size and modification time), so a changed base, default,
    engine or input file never reuses an old result."""
    text = json.dumps({"scenario": scenario, "engine": _engine.__version__, "files": _input_files(scenario)},
                      sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _input_files(scenario: dict) -> dict[str, list[int]]:
    """Every file the checked scenario names (its paths are absolute) with
    its size and modification time; a directory (a trace) by its files'."""
    found: dict[str, list[int]] = {}

    def visit(v) -> None:
        if isinstance(v, dict):
            for x in v.values():
                visit(x)
        elif isinstance(v, list):
            for x in v:
                visit(x)
        elif isinstance(v, str) and os.path.isabs(v):
            p = Path(v)
            for f in sorted(p.iterdir()) if p.is_dir() else [p]:
                if f.is_file():
                    st = f.stat()
                    found[str(f)] = [st.st_size, st.st_mtime_ns]

    visit(scenario)
    return found


def scenario_of(base: dict, overrides: dict, base_dir: Path, study: Path | None = None) -> dict:
    """A point's checked scenario; its errors name the study and the point's overrides."""
    point = json.dumps(overrides, default=str)
    if isinstance(base, BaseFile):
        try:
            return _engine.Scenario(base.text, base.source, str(base_dir), overrides).to_dict()
        except ScenarioError as e:
            # the error as the base file's own reads, then which point met it
            raise ScenarioError(f"{e} [point {point} of {study or 'the study'}]", source=e.source, key=e.key,
                                line=e.line, column=e.column, kind=e.kind, message=e.message) from None
    where = f"{study or 'study'} (point {point})"

    def fail(key: str, msg: str):
        raise ScenarioError(f"{where}: grid key {key!r}: {msg}")

    return validate(apply(base, overrides, fail), where, base_dir=base_dir)


def _holds(d: Path, scn: dict) -> bool:
    """Whether point directory `d` holds a finished run of scenario `scn`
    (not whatever else was written there)."""
    try:
        if not (d / "summary.json").is_file() or json.loads((d / "scenario.json").read_text()) != scn:
            return False
        summary = json.loads((d / "summary.json").read_text())  # a damaged one: the point runs again
        return isinstance(summary, dict) and {"makespan_s", "events"} <= summary.keys()
    except (OSError, ValueError):
        return False


def run_point(scn: dict, out: str, point: dict | None = None) -> dict:
    """One point (runs on a worker): its result, or its error, written as one
    directory; returns its row of the sweep's table (`point_row`). A point
    already written is not run again: Dask re-runs the tasks whose answers a
    lost worker held, and those had finished."""
    from idlewave.simulation import simulate

    d = Path(out)
    if not _holds(d, scn):
        try:
            r = simulate(scn)
        except Exception as e:  # recorded, not raised: one failure must not stop the study
            _write_error(d, point or {}, e)
            return point_row(d)
        r.write(d, {"point.json": point or {}})
    return point_row(d)


def point_row(d: Path) -> dict:
    """A point's columns in the sweep's table, from what its directory holds
    (the same whether it ran now, on whichever worker, or in an earlier run)."""
    if (d / "summary.json").exists():
        s = json.loads((d / "summary.json").read_text())
        return {"status": "done", "makespan_s": s["makespan_s"], "events": s["events"],
                "iteration_mean_s": (s.get("iteration_s") or {}).get("mean"),
                "slowest_iteration_mean_s": slowest_iteration_mean(d),
                **{k: v for k, v in sorted(s.items()) if job_column(k)}}
    err = json.loads((d / "error.json").read_text())["error"] if (d / "error.json").exists() else "not run"
    return {"status": "failed", "error": err}


def _write_error(d: Path, point: dict, e: Exception) -> None:
    def fill(tmp: Path) -> None:
        write_json(tmp / "point.json", point)
        write_json(tmp / "error.json", {"error": str(e), "type": type(e).__name__})

    write_dir(d, fill)


def run_sweep(study: str | Path, out: str | Path, scheduler: str | None = None, workers: int | None = None,
              progress=None, worker_timeout: float = WORKER_TIMEOUT_S, base_overrides: dict | None = None) -> pl.DataFrame:
    """Runs a study's points (see the module's doc); `progress(done, total)`
    is called as points finish or are found written, from (0, total) on;
    `base_overrides` (`--set`) go over the study's base, under each point's.

    Points are planned as they are sent to the workers, a few at a time, so
    the first starts within seconds however many the study has. Raises
    SchedulerError (keeping every point finished) when the scheduler cannot
    be reached or is not one, or has had no worker for `worker_timeout` s."""
    import distributed  # noqa: F401  (the 'sweep' extra: missing, it is said before anything else)

    if scheduler is not None and not scheduler.strip():
        raise SchedulerError("an empty scheduler address: give a Dask scheduler's (tcp://host:port), or none for a "
                             "local cluster")
    if scheduler is None and workers is not None and not 1 <= workers <= max_local_workers():
        raise ValueError(f"workers: a local cluster has from 1 to {max_local_workers()} workers ({WORKERS_PER_CPU} per "
                         f"CPU available), got {workers}")
    study = Path(study)
    base, points, name, base_dir = load_study(study)
    if (why := not_a_sweep_output(out)) is not None:
        raise RefusedOutput(why)
    if base_overrides:
        check_sets(base_overrides)
        def refuse(key: str, msg: str) -> None:
            raise ScenarioError(f"--set {key}: {msg}", source=str(study), key=key)

        base = apply(base, base_overrides, refuse)  # (a plain dict now: the point's errors name the study)
    replications, strategy = study_options(study, points)
    check_seeds(study, base, replications, base_overrides or {})
    if replications > 1:
        points = Points(points.grid, points.extra, replications, base.get("seed", 1))
    # workers write the points: an absolute path means the same place for
    # them as for us (on a cluster, `out` must be on a file system they share)
    out = Path(out).resolve()
    total = len(points)
    ids: list[str] = []  # by point index
    rows: dict[str, tuple] = {}  # by point id: its `_ROW` values
    reused = 0
    done = 0
    if progress:
        progress(0, total)

    def plan(i: int) -> tuple[str, dict, dict] | None:
        """Point i's id, scenario and point.json, or None when it needs no run."""
        nonlocal reused, done
        ov = points[i]
        try:
            scn = scenario_of(base, {k: v for k, v in ov.items() if k != "replica"}, base_dir, study)
        except ScenarioError as e:  # an invalid point is a failed point; the others still run
            pid = "invalid-" + hashlib.sha1(json.dumps(ov, sort_keys=True, default=str).encode()).hexdigest()[:12]
            ids.append(pid)
            _write_error(out / "points" / pid, {"id": pid, "overrides": ov}, e)
            rows[pid] = _compact(point_row(out / "points" / pid))
            done += 1
            return None
        pid = point_id(scn)
        ids.append(pid)
        if pid in rows or _holds(out / "points" / pid, scn):
            if pid not in rows:
                reused += 1
                rows[pid] = _compact(point_row(out / "points" / pid))
            done += 1
            return None
        return pid, scn, {"id": pid, "overrides": ov}

    i = 0
    first = None
    while i < total and first is None:  # no cluster until a point needs one
        first = plan(i)
        i += 1
        if progress and first is None:
            progress(done, total)
    if first is not None:
        with _client(scheduler, workers, worker_timeout) as client:
            _run(client, out, plan, first, i, total, rows, progress, lambda: done, scheduler or "the local cluster",
                 worker_timeout)
            done = total
    frame = _table(points, ids, rows)
    write_parquet(out / "sweep.parquet", frame)
    if strategy is not None and "makespan_s" in frame.columns and frame.filter(pl.col("status") == "done").height:
        result = rank(frame, strategy)
        write_json(out / "ranking.json", {"strategy": strategy, "replications": replications, "level": LEVEL,
                                          "conditions": result})
        figure(result, strategy, out)
    write_json(out / "study.json", {"name": name, "points": total, "reused": reused, "study": str(study.resolve())})
    return frame


def _run(client, out: Path, plan, first, i: int, total: int, rows: dict, progress, planned_done, where: str,
         worker_timeout: float) -> None:
    """Sends the points from `first` (point i - 1) on to the workers, a few
    more than they have threads at a time, and records each as it finishes."""
    from distributed import wait
    from distributed.scheduler import KilledWorker

    running: dict = {}  # future -> point id
    sent: set[str] = set()
    finished = 0
    window, checked = 8, 0.0
    no_worker_since: float | None = None
    nxt = first

    def kept() -> int:
        """Points done: those answered, and those written by workers lost before they could say so."""
        return finished + planned_done() + sum((out / "points" / pid / "summary.json").exists() for pid in running.values())

    while True:
        now = time.monotonic()
        if now - checked > 1.0:  # as many in flight as keeps every worker busy, and is there one?
            checked = now
            try:
                nthreads = sum(client.nthreads().values())
            except Exception:  # the scheduler went away: counted as no worker
                nthreads = 0
            window = max(8, 2 * nthreads)
            if nthreads:
                no_worker_since = None
            elif no_worker_since is None:
                no_worker_since = now
            elif now - no_worker_since > worker_timeout:
                raise SchedulerError(f"{where} has had no worker for {worker_timeout:g} s (--worker-timeout): "
                                     f"{kept()} of {total} points are done and kept in {out / 'points'}; run the sweep "
                                     "again, with workers, to do the rest")
        budget = 50  # planning takes time: look at the answers between batches
        while (nxt is not None or i < total) and len(running) < window and budget:
            if nxt is None:
                nxt = plan(i)
                i += 1
                if nxt is None:
                    if progress:
                        progress(finished + planned_done(), total)
                    continue
            pid, scn, point = nxt
            nxt = None
            budget -= 1
            if pid in sent:  # the same scenario twice: one run
                continue
            sent.add(pid)
            running[client.submit(run_point, scn, str(out / "points" / pid), point, key=f"idlewave-{pid}", pure=False)] = pid
        if not running:
            if nxt is None and i >= total:
                return
            continue
        try:
            ready = wait(list(running), timeout=0.5, return_when="FIRST_COMPLETED").done
        except TimeoutError:
            continue
        got = 0
        for fut in ready:
            pid = running[fut]
            d = out / "points" / pid
            # the answer is read from the point's directory, not fetched from the worker: one lost
            # meanwhile would leave the fetch waiting (Dask would run the task again, on no worker)
            if fut.status in ("pending", "lost"):  # its worker was lost since: Dask runs it again
                continue
            if fut.status == "error":
                e = fut.exception()
                if not isinstance(e, KilledWorker):
                    raise SchedulerError(f"{where} lost point {pid} ({type(e).__name__}: {e}): {kept()} of {total} "
                                         f"points are done and kept in {out / 'points'}; run the sweep again to do the "
                                         "rest")
                # the point took its worker down, again and again (memory?)
                _write_error(d, {"id": pid}, RuntimeError(f"the worker running this point died every time it ran it "
                                                          f"(out of memory?): {e}"))
            elif fut.status != "finished":  # cancelled: the scheduler restarted or forgot it
                raise SchedulerError(f"{where} lost point {pid} ({fut.status}): {kept()} of {total} points are done "
                                     f"and kept in {out / 'points'}; run the sweep again to do the rest")
            rows[pid] = _compact(point_row(d))
            del running[fut]
            # its answer is ours now: a worker lost later has nothing of it to redo
            fut.release()
            finished += 1
            got += 1
            if progress:
                progress(finished + planned_done(), total)
        if got:
            no_worker_since = None


#: A point's columns in the table, as `point_row` gives them (its jobs' figures after them).
_ROW = ("status", "makespan_s", "events", "iteration_mean_s", "slowest_iteration_mean_s", "error")


def _compact(row: dict) -> tuple:
    return (*(row.get(k) for k in _ROW), tuple((k, v) for k, v in row.items() if job_column(k)))


def _expand(values: tuple) -> dict:
    row = dict(zip(_ROW, values))
    if row["status"] == "done":
        del row["error"]
        return row | dict(values[len(_ROW)])
    return {"status": row["status"], "error": row["error"]}


def _table(points: Points, ids: list[str], rows: dict[str, tuple]) -> pl.DataFrame:
    """The sweep's table: one row per point, in the study's order; built in
    chunks so that a large study never holds all its rows as dicts."""
    frames = []
    chunk = 100_000
    for lo in range(0, len(ids), chunk):
        part = []
        for j in range(lo, min(lo + chunk, len(ids))):
            ov, pid = points[j], ids[j]
            part.append({"id": pid, **{k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in ov.items()},
                         **_expand(rows[pid])})
        frames.append(pl.DataFrame(part, infer_schema_length=None))
    frame = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    if "replica" not in frame.columns:
        frame = frame.with_columns(pl.lit(0).alias("replica"))
    return frame


@contextlib.contextmanager
def _client(scheduler: str | None, workers: int | None, worker_timeout: float):
    """A Dask client: on the scheduler at `scheduler` (checked to be one and
    to have a worker within `worker_timeout` s), or on a local cluster."""
    import dask
    from distributed import Client, LocalCluster

    from idlewave.interrupts import held

    cluster = client = None
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": f"{CONNECT_TIMEOUT_S:g}s"}):
            if scheduler:
                _check_scheduler(scheduler)
                try:
                    client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S:g}s")
                except Exception as e:  # OSError, TimeoutError, ValueError, and whatever a stranger's answer causes
                    raise SchedulerError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
            else:
                # Ctrl-C and SIGTERM wait until the cluster has started (a few seconds: --workers
                # is bounded): one interrupted while its workers start cannot be closed (and Dask's
                # exit hook says so with a traceback)
                with held(), _workers_ignore_ctrl_c():
                    try:
                        cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True,
                                               dashboard_address=None)
                        client = Client(cluster)
                    except (OSError, RuntimeError, TimeoutError) as e:
                        # a full or read-only temporary directory: the workers cannot start
                        raise SchedulerError(f"cannot start a local Dask cluster: {e} (is the temporary directory "
                                             f"{tempfile.gettempdir()} full or read-only?)") from None
        if scheduler:
            try:
                client.wait_for_workers(1, timeout=worker_timeout)
            except TimeoutError:
                raise SchedulerError(f"the Dask scheduler at {scheduler} has no worker, and none joined within "
                                     f"{worker_timeout:g} s (--worker-timeout); start workers "
                                     f"(dask worker {scheduler}) and run the sweep again") from None
        yield client
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def _workers_ignore_ctrl_c():
    """Worker processes started meanwhile ignore SIGINT from their first
    instruction: a Ctrl-C at the terminal signals every process of the
    command, and each worker would print a traceback; the command answers
    it and closes the cluster, which stops them. (Python processes start
    with SIGINT raising KeyboardInterrupt unless it is ignored when they
    start: they start through `sh`, which ignores it, then runs Python.)"""
    import multiprocessing.spawn
    import shlex

    before = multiprocessing.spawn.get_executable()
    if os.name != "posix" or before is None:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="idlewave-") as tmp:
        exe = Path(tmp) / "python"
        exe.write_text(f"#!/bin/sh\ntrap '' INT\nexec {shlex.quote(os.fsdecode(before))} \"$@\"\n")
        exe.chmod(0o755)
        multiprocessing.spawn.set_executable(str(exe))
        try:
            yield
        finally:
            multiprocessing.spawn.set_executable(before)


def _check_scheduler(address: str) -> None:
    """Whether a TCP address answers as a Dask scheduler does: with a small
    handshake message (8 bytes of length, then that many bytes that frame
    themselves). Dask itself would take the first 8 bytes of anything for a
    length and try to allocate it (a MemoryError, or gigabytes)."""
    import socket
    import struct

    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port

    try:
        protocol, loc = parse_address(address)
        if protocol != "tcp":
            return  # tls, ucx, …: Dask's own checks
        host, port = parse_host_port(loc)
    except (ValueError, TypeError) as e:
        raise SchedulerError(f"{address}: not a scheduler address (tcp://host:port): {e}") from None
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    other = "it answered with something else than a Dask handshake"

    class Closed(Exception):
        pass

    def read(sock: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            sock.settimeout(max(deadline - time.monotonic(), 0.01))
            more = sock.recv(min(n - len(data), 1 << 16))
            if not more:
                raise Closed
            data += more
        return data

    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except OSError as e:
        raise SchedulerError(f"cannot reach the Dask scheduler at {address}: {e.strerror or e}") from None
    why = None
    try:
        with sock:
            (size,) = struct.unpack("<Q", read(sock, 8))
            if not 16 <= size <= 1 << 20:  # a handshake is a few hundred bytes
                why = other
            else:
                (frames,) = struct.unpack_from("<Q", read(sock, size))
                if not 1 <= frames <= 64 or 8 * (frames + 1) > size:
                    why = other
    except Closed:
        why = "it closed the connection without a Dask handshake"
    except TimeoutError:
        why = f"no Dask handshake within {CONNECT_TIMEOUT_S:g} s"
    except OSError as e:
        why = f"the connection failed: {e.strerror or e}"
    if why is not None:
        raise SchedulerError(f"{address} is not a Dask scheduler: {why}")


__all__ = ["load_study", "run_sweep", "run_point", "point_id", "Points", "SchedulerError", "MAX_POINTS", "TIMING_FIELDS"]
