"""`idlewave sweep STUDY.toml`: many scenarios on Dask distributed.

A study has a base scenario (`[base]`, or `base = "scenario.toml"`) and
points: the cartesian product of `[grid]` (key path → list of values) and/or
an explicit `[[points]]` list of overrides. Each point runs as one task on a
local cluster (default) or an existing scheduler, and writes its result into
`OUT/points/<id>/` as it finishes (summary.json last, atomically); a failed
point writes `error.json` and the others go on. Re-running skips finished
points. `OUT/sweep.parquet` tabulates every point at the end.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
import tomllib
from pathlib import Path

import polars as pl

from idlewave.overrides import apply
from idlewave.results import write_json, write_parquet
from idlewave.scenario import ScenarioError, validate


def load_study(path: str | Path) -> tuple[dict, list[dict], str]:
    """(base scenario, list of override dicts, name)."""
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ScenarioError(f"{p}: {e}") from None
    unknown = set(raw) - {"name", "base", "grid", "points"}
    if unknown:
        raise ScenarioError(f"{p}: unknown key(s) {', '.join(sorted(unknown))} (allowed: name, base, grid, points)")
    base = raw.get("base", {})
    if isinstance(base, str):
        base = tomllib.loads((p.parent / base).read_text())
    grid = raw.get("grid", {})
    if not isinstance(grid, dict) or any(not isinstance(v, list) or not v for v in grid.values()):
        raise ScenarioError(f"{p}: [grid] maps key paths to non-empty lists of values")
    points = [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())] if grid else []
    extra = raw.get("points", [])
    if not isinstance(extra, list):
        raise ScenarioError(f"{p}: points must be an array of tables ([[points]])")
    points += [dict(_flatten(x)) for x in extra]
    if not points:
        points = [{}]
    return base, points, raw.get("name", p.stem)


def _flatten(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flatten(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def point_id(overrides: dict) -> str:
    text = json.dumps(overrides, sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def scenario_of(base: dict, overrides: dict, base_dir: Path) -> dict:
    def fail(key: str, msg: str):
        raise ScenarioError(f"grid key {key!r}: {msg}")

    return validate(apply(base, overrides, fail), "<sweep point>", base_dir=base_dir)


def run_point(scn: dict, out: str) -> dict:
    """One point (runs on a worker): its result, or its error, written atomically."""
    from idlewave.simulation import simulate

    d = Path(out)
    start = time.perf_counter()
    try:
        r = simulate(scn)
    except Exception as e:  # recorded, not raised: one failure must not stop the study
        write_json(d / "error.json", {"error": str(e), "type": type(e).__name__})
        return {"status": "failed", "error": str(e)}
    r.write(d)
    return {"status": "done", "wall_s": time.perf_counter() - start}


def run_sweep(study: str | Path, out: str | Path, scheduler: str | None = None, workers: int | None = None,
              progress=None) -> pl.DataFrame:
    from distributed import Client, LocalCluster, as_completed

    study = Path(study)
    base, points, name = load_study(study)
    out = Path(out)
    todo, table = [], []
    for ov in points:
        pid = point_id(ov)
        d = out / "points" / pid
        write_json(d / "point.json", {"id": pid, "overrides": ov})
        if (d / "summary.json").exists():
            continue
        (d / "error.json").unlink(missing_ok=True)
        try:
            scn = scenario_of(base, ov, study.parent)
        except ScenarioError as e:  # an invalid point is a failed point; the others still run
            write_json(d / "error.json", {"error": str(e), "type": "ScenarioError"})
            continue
        todo.append((pid, scn, str(d)))
    if todo:
        cluster = None
        if scheduler:
            client = Client(scheduler)
        else:
            cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
        try:
            futures = {client.submit(run_point, scn, d, key=f"idlewave-{pid}", pure=False): pid for pid, scn, d in todo}
            for i, fut in enumerate(as_completed(futures), 1):
                fut.result()
                if progress:
                    progress(i, len(todo))
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    for ov in points:
        pid = point_id(ov)
        d = out / "points" / pid
        row = {"id": pid, **{k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in ov.items()}}
        if (d / "summary.json").exists():
            s = json.loads((d / "summary.json").read_text())
            row |= {"status": "done", "makespan_s": s["makespan_s"], "events": s["events"],
                    "iteration_mean_s": (s.get("iteration_s") or {}).get("mean")}
        else:
            err = json.loads((d / "error.json").read_text())["error"] if (d / "error.json").exists() else "not run"
            row |= {"status": "failed", "error": err}
        table.append(row)
    frame = pl.DataFrame(table, infer_schema_length=None)
    write_parquet(out / "sweep.parquet", frame)
    write_json(out / "study.json", {"name": name, "points": len(points), "study": str(study.resolve())})
    return frame


__all__ = ["load_study", "run_sweep", "run_point", "point_id"]
