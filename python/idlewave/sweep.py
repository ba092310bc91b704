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
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from pathlib import Path

import polars as pl

from idlewave import _engine
from idlewave.overrides import apply
from idlewave.ranking import LEVEL, figure, rank, slowest_iteration_mean
from idlewave.results import write_dir, write_json, write_parquet
from idlewave.scenario import ScenarioError, read_toml, validate

STUDY_KEYS = ("name", "base", "grid", "points", "replications", "strategy")


class SchedulerError(OSError):
    """A scheduler that cannot be reached; the message says which and why."""


def load_study(path: str | Path) -> tuple[dict, list[dict], str, Path]:
    """(base scenario, list of override dicts, name, the directory the base's
    relative paths start from: the base file's, or the study's for an
    inline [base]); see `study_options`."""
    p = Path(path)
    raw = read_toml(p, "study")
    unknown = set(raw) - set(STUDY_KEYS)
    if unknown:
        raise ScenarioError(f"{p}: unknown key(s) {', '.join(sorted(unknown))} (allowed: {', '.join(STUDY_KEYS)})")
    base = raw.get("base", {})
    base_dir = p.parent
    if isinstance(base, str):
        base_dir = (p.parent / base).parent
        base = read_toml(p.parent / base)
    if not isinstance(base, dict):
        raise ScenarioError(f"{p}: base is a scenario table ([base]) or a scenario file name")
    grid = raw.get("grid", {})
    if not isinstance(grid, dict) or any(not isinstance(v, list) or not v for v in grid.values()):
        raise ScenarioError(f"{p}: [grid] maps key paths to non-empty lists of values")
    points = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())] if grid else []
    extra = raw.get("points", [])
    if not isinstance(extra, list) or not all(isinstance(x, dict) for x in extra):
        raise ScenarioError(f"{p}: points must be an array of tables ([[points]])")
    points += [dict(_flatten(x)) for x in extra]
    if not points:
        points = [{}]
    return base, points, raw.get("name", p.stem), base_dir


def study_options(path: str | Path, points: list[dict]) -> tuple[int, str | None]:
    """The study's replications (≥ 1) and strategy key (a swept key), checked."""
    p = Path(path)
    raw = read_toml(p, "study")
    reps = raw.get("replications", 1)
    if not isinstance(reps, int) or isinstance(reps, bool) or not 1 <= reps <= 10_000:
        raise ScenarioError(f"{p}: replications must be a whole number from 1 to 10000, got {reps!r}")
    strategy = raw.get("strategy")
    if strategy is not None:
        if not isinstance(strategy, str) or not all(strategy in pt for pt in points):
            raise ScenarioError(f"{p}: strategy must name a key that every point sets (a [grid] key), got {strategy!r}")
    if reps > 1 and any("seed" in pt for pt in points):
        raise ScenarioError(f"{p}: replications set each point's seed; drop 'seed' from [grid] and [[points]]")
    return reps, strategy


def _flatten(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flatten(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


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
    where = f"{study or 'study'} (point {json.dumps(overrides, default=str)})"

    def fail(key: str, msg: str):
        raise ScenarioError(f"{where}: grid key {key!r}: {msg}")

    return validate(apply(base, overrides, fail), where, base_dir=base_dir)


def _holds(d: Path, scn: dict) -> bool:
    """Whether point directory `d` holds a finished run of scenario `scn`
    (not whatever else was written there)."""
    try:
        return (d / "summary.json").is_file() and json.loads((d / "scenario.json").read_text()) == scn
    except (OSError, ValueError):
        return False


def run_point(scn: dict, out: str, point: dict | None = None) -> dict:
    """One point (runs on a worker): its result, or its error, written as one
    directory. A point already written is not run again: Dask re-runs the
    tasks whose answers a lost worker held, and those had finished."""
    from idlewave.simulation import simulate

    d = Path(out)
    if _holds(d, scn):
        return {"status": "done", "wall_s": 0.0, "written_before": True}
    start = time.perf_counter()
    try:
        r = simulate(scn)
    except Exception as e:  # recorded, not raised: one failure must not stop the study
        _write_error(d, point or {}, e)
        return {"status": "failed", "error": str(e)}
    r.write(d, {"point.json": point or {}})
    return {"status": "done", "wall_s": time.perf_counter() - start}


def _write_error(d: Path, point: dict, e: Exception) -> None:
    def fill(tmp: Path) -> None:
        write_json(tmp / "point.json", point)
        write_json(tmp / "error.json", {"error": str(e), "type": type(e).__name__})

    write_dir(d, fill)


def run_sweep(study: str | Path, out: str | Path, scheduler: str | None = None, workers: int | None = None,
              progress=None) -> pl.DataFrame:
    from distributed import Client, LocalCluster, as_completed

    study = Path(study)
    base, points, name, base_dir = load_study(study)
    replications, strategy = study_options(study, points)
    if replications > 1:
        first = base.get("seed", 1)
        points = [{**pt, "seed": first + r, "replica": r} for pt in points for r in range(replications)]
    # workers write the points: an absolute path means the same place for
    # them as for us (on a cluster, `out` must be on a file system they share)
    out = Path(out).resolve()
    todo, table, reused = [], [], 0
    ids = []
    for ov in points:
        try:
            scn = scenario_of(base, {k: v for k, v in ov.items() if k != "replica"}, base_dir, study)
        except ScenarioError as e:  # an invalid point is a failed point; the others still run
            pid = "invalid-" + hashlib.sha1(json.dumps(ov, sort_keys=True, default=str).encode()).hexdigest()[:12]
            ids.append(pid)
            _write_error(out / "points" / pid, {"id": pid, "overrides": ov}, e)
            continue
        pid = point_id(scn)
        ids.append(pid)
        d = out / "points" / pid
        if _holds(d, scn):
            reused += 1
            continue
        todo.append((pid, scn, str(d), {"id": pid, "overrides": ov}))
    if todo:
        cluster = None
        if scheduler:
            try:
                client = Client(scheduler, timeout="10s")
            except (OSError, TimeoutError, ValueError) as e:
                raise SchedulerError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from None
        else:
            cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
        try:
            futures = {client.submit(run_point, scn, d, point, key=f"idlewave-{pid}", pure=False): pid for pid, scn, d, point in todo}
            for i, fut in enumerate(as_completed(futures), 1):
                fut.result()
                # its answer is ours now: a worker lost later has nothing of it to redo
                fut.release()
                if progress:
                    progress(i, len(todo))
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    for ov, pid in zip(points, ids):
        d = out / "points" / pid
        row = {"id": pid, **{k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in ov.items()}}
        if (d / "summary.json").exists():
            s = json.loads((d / "summary.json").read_text())
            row |= {"status": "done", "makespan_s": s["makespan_s"], "events": s["events"],
                    "iteration_mean_s": (s.get("iteration_s") or {}).get("mean"),
                    "slowest_iteration_mean_s": slowest_iteration_mean(d)}
        else:
            err = json.loads((d / "error.json").read_text())["error"] if (d / "error.json").exists() else "not run"
            row |= {"status": "failed", "error": err}
        table.append(row)
    frame = pl.DataFrame(table, infer_schema_length=None)
    if "replica" not in frame.columns:
        frame = frame.with_columns(pl.lit(0).alias("replica"))
    write_parquet(out / "sweep.parquet", frame)
    if strategy is not None and "makespan_s" in frame.columns and frame.filter(pl.col("status") == "done").height:
        result = rank(frame, strategy)
        write_json(out / "ranking.json", {"strategy": strategy, "replications": replications, "level": LEVEL,
                                          "conditions": result})
        figure(result, strategy, out)
    write_json(out / "study.json", {"name": name, "points": len(points), "reused": reused, "study": str(study.resolve())})
    return frame


__all__ = ["load_study", "run_sweep", "run_point", "point_id"]
