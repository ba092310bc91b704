"""Running one scenario and holding its results."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from idlewave import _engine
from idlewave.explain import Explanation
from idlewave.results import write_dir, write_json, write_parquet
from idlewave.scenario import ScenarioError, checked, engine_errors, load


@dataclass
class Result:
    """What one simulation produced.

    ``finish_times_s[r]`` is when rank r finished; ``timers[name]`` is a
    ranks × iterations matrix of durations in seconds (NaN where a rank never
    ran that region); ``summary`` is the JSON summary.
    """

    scenario: dict
    finish_times_s: np.ndarray
    timers: dict[str, np.ndarray]
    summary: dict
    finish_times_ps: np.ndarray | None = field(repr=False, default=None)
    timeline: dict | None = field(repr=False, default=None)
    #: Trace replays: what the replay did not model, traced time in MPI (engine's report).
    trace_report: dict | None = field(repr=False, default=None)
    #: The critical path, if asked for (see idlewave.explain).
    explain: Explanation | None = field(repr=False, default=None)

    def ranks_frame(self) -> pl.DataFrame:
        return pl.DataFrame(
            {"rank": np.arange(len(self.finish_times_s), dtype=np.uint32), "finish_s": self.finish_times_s}
        )

    def timers_frame(self) -> pl.DataFrame:
        """One row per (rank, iteration), one column per timer, in seconds."""
        if not self.timers:
            return pl.DataFrame({"rank": [], "iteration": []}, schema={"rank": pl.UInt32, "iteration": pl.UInt32})
        ranks, iters = next(iter(self.timers.values())).shape
        cols = {
            "rank": np.repeat(np.arange(ranks, dtype=np.uint32), iters),
            "iteration": np.tile(np.arange(iters, dtype=np.uint32), ranks),
        }
        for name, m in self.timers.items():
            cols[f"{name}_s"] = m.reshape(-1)
        return pl.DataFrame(cols)

    def write(self, out: str | Path, extra: dict[str, dict] | None = None) -> Path:
        """Writes ranks.parquet, timers.parquet, scenario.json and summary.json
        (and `extra` JSON files by name) as one directory `out`, complete or
        not at all (see results.write_dir)."""

        def fill(d: Path) -> None:
            for name, data in (extra or {}).items():
                write_json(d / name, data)
            self._fill(d)

        return write_dir(Path(out), fill)

    def _fill(self, out: Path) -> None:
        write_parquet(out / "ranks.parquet", self.ranks_frame())
        write_parquet(out / "timers.parquet", self.timers_frame())
        write_json(out / "scenario.json", self.scenario)
        if self.timeline is not None:
            from idlewave.timeline import write as write_timeline

            write_timeline(self.timeline, len(self.finish_times_s), out, self.scenario.get("name", ""))
        if self.trace_report is not None:
            write_json(out / "trace_report.json", self.trace_report)
        if self.explain is not None:
            from idlewave.explain import write_tables

            write_json(out / "explain.json", self.explain.to_json())
            write_tables(self.explain, out)
        write_json(out / "summary.json", self.summary)


Progress = Callable[[float, int], bool]

_numpy_api = False


def numpy_api_ready() -> None:
    """Lets the engine look numpy's C API up now, with Ctrl-C held back.

    The engine (rust-numpy) does it the first time it returns an array: it
    imports numpy's core and reads its version, Python code that a pending
    Ctrl-C interrupts, and then it panics ("Failed to access NumPy array API
    capsule"). A run interrupted in its last moments ended so. A tiny run
    here does the look-up once per process, where an interrupt waits until
    it is over."""
    global _numpy_api
    if _numpy_api:
        return
    from idlewave.interrupts import held

    with held():
        run = _engine.simulate(checked({"workload": {"kind": "bsp", "ranks": 2, "iterations": 1}}))
        _ = run.finish_times_s  # the engine's Result makes its arrays when asked: the look-up is here
        _numpy_api = True


def simulate(scenario: str | Path | dict, *, seed: int | None = None, progress: Progress | None = None,
             timeline: bool = False, explain: bool = False, overrides: dict | None = None) -> Result:
    """Runs a scenario: a TOML path, or a dict in the scenario file's layout.

    ``explain`` (or ``[record] explain``) keeps the critical path: ``Result.explain``.

    ``progress(sim_time_s, events)`` is called every ~1M events; return False to stop.
    A callback taking a third argument also gets the share of the work done
    (0 to 1, from the ranks' iterations), or None where the program does not know it.
    ``overrides`` (``{"network.L_s": 5e-6}``, idlewave.overrides.apply) go
    over the scenario, as ``--set`` on the command line; ``seed`` over them.
    Raises ScenarioError for bad input and SimulationError for runs that cannot
    complete (deadlock, unmatched messages, too large for memory).
    """
    overrides = {**(overrides or {}), **({"seed": seed} if seed is not None else {})} or None
    source = "<scenario>"
    if isinstance(scenario, (str, Path)):
        source = str(scenario)
        checked_scn = load(scenario, overrides)
    elif isinstance(scenario, dict):
        checked_scn = checked(dict(scenario), "<scenario>", overrides=overrides)
    else:  # dict() would make an empty list the default scenario
        raise ScenarioError(f"<scenario>: expected a scenario file's path or a dict, got {type(scenario).__name__}",
                            source="<scenario>", kind="type")
    scn = checked_scn.to_dict()
    spans = 0
    if timeline:
        from idlewave.timeline import DEFAULT_SPANS

        spans = DEFAULT_SPANS
    numpy_api_ready()
    with engine_errors(source):
        # the checked Scenario itself: the engine runs it without reading it again
        run = _engine.simulate(checked_scn, progress, spans, explain, _takes_done(progress))
    timers = run.timers
    summary = _summary(scn, run, timers)
    result = Result(scn, run.finish_times_s, timers, summary, run.finish_times_ps)
    trace_report = run.trace_report
    if trace_report is not None:
        from idlewave.trace.replay import summarise

        result.trace_report = trace_report
        summary.update(summarise(trace_report, result.finish_times_s))
    for warning in _network_warnings(scn, summary["ranks"]):
        summary.setdefault("warnings", []).append(warning)
    held_back = run.held_back
    if held_back is not None:
        # the links that held messages back the most; per job, its own (under the key the engine names)
        summary["links_held_back"] = held_back["all"]
        for job in held_back["jobs"]:
            summary[job["key"]] = job["links"]
    explained = run.explain
    if explained is not None:
        result.explain = Explanation.of_engine(explained)
        result.explain.by_iteration = timers.get("waiting")
        summary["bound_by"] = result.explain.bound()
    result.timeline = run.timeline
    if result.timeline is not None:
        summary["timeline_truncated"] = bool(result.timeline["truncated"])
    return result


def _network_warnings(scn: dict, ranks: int) -> list[str]:
    """What the network of a run that completed did not do as its keys suggest."""
    out = []
    net = scn.get("network", {})
    per_node = net.get("ranks_per_node", 1)
    if net.get("off_node_measured") is False and ranks > per_node:
        out.append(
            f"the platform measured no message between nodes (off_node_measured = false): this run of "
            f"{ranks:,} ranks, {per_node} per node, sends messages between nodes at values nobody "
            "measured (the engine's defaults unless the scenario gives them)")
    topology, links = net.get("topology", {}), net.get("links", {})
    if links.get("model", "none") == "none":
        # the engine reads [network.links] only to share the links ("flow"): every other key is idle
        # (a sweep over model = ["none", "flow"] gives them to both)
        from idlewave.scenario import default

        idle = default("network.links")
        for key, value in links.items():
            if key != "model" and key in idle and value != idle[key]:
                shown = f'"{value}"' if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else value
                out.append(f"network.links.{key} = {shown} has no effect with model = \"none\": links are not shared "
                           "(model = \"flow\" shares them)")
    routing = links.get("routing")
    if topology.get("kind") == "dragonfly" and links.get("model") == "flow" and routing in ("valiant", "ugal"):
        listed = [n for j in scn.get("jobs", []) for n in j.get("nodes", [])]
        nodes = max(max(listed, default=-1) + 1, math.ceil(ranks / per_node))
        per_group = topology["nodes_per_router"] * topology["routers_per_group"]
        groups = math.ceil(nodes / per_group)
        if groups <= 2:
            out.append(
                f"network.links.routing = \"{routing}\" detours through a third group of the dragonfly, but "
                f"the run's {nodes:,} nodes fill {groups} group{'s' if groups > 1 else ''} of {per_group:,} "
                "nodes: every route was minimal")
    return out


def estimate_memory(scenario: str | Path | dict, *, timeline: bool = False, explain: bool = False,
                    overrides: dict | None = None) -> dict:
    """What a run of the scenario is estimated to need, without running it
    (the estimate `simulate` checks before it allocates): ``ranks``,
    ``estimated_memory_bytes`` and ``bytes_per_rank`` (None for a GOAL file,
    whose ranks are known once it is read), ``max_memory_bytes`` and
    ``limit`` (what that limit is; None where none is known), and
    ``refused``: the message the run would be refused with, or None."""
    if isinstance(scenario, (str, Path)):
        source, scn = str(scenario), load(scenario, overrides)
    else:
        source, scn = "<scenario>", checked(dict(scenario), "<scenario>", overrides=overrides)
    spans = 0
    if timeline:
        from idlewave.timeline import DEFAULT_SPANS

        spans = DEFAULT_SPANS
    with engine_errors(source):
        e = dict(_engine.estimate_memory(scn, spans, explain))
    if e["ranks"] == 0:  # a GOAL file: estimated from its size, its ranks known once it is read
        e["ranks"] = None
    total, ranks = e["estimated_memory_bytes"], e["ranks"]
    e["bytes_per_rank"] = total / ranks if total is not None and ranks else None
    return e


def spmv_partners(scenario: str | Path | dict) -> str:
    """The partner file of a banded ``spmv`` scenario (rows, bandwidth): each
    rank's partners with the x elements sent and received, and its local and
    remote nonzeros. Edit it, or write one for any other matrix, and point
    ``partners_file`` at it."""
    scn = load(scenario) if isinstance(scenario, (str, Path)) else checked(dict(scenario))
    return _engine.spmv_partners_text(scn)


def _takes_done(progress: Progress | None) -> bool:
    """Whether a progress callback takes the share done as a third argument."""
    if progress is None:
        return False
    try:
        params = inspect.signature(progress).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _summary(scn: dict, run: _engine.Result, timers: dict[str, np.ndarray]) -> dict:
    wall = run.wall_s
    s = {
        "name": scn.get("name", ""),
        "seed": scn["seed"],
        "workload": "jobs" if scn.get("jobs") else scn["workload"]["kind"],
        "ranks": run.ranks,
        "iterations": run.iterations,
        "makespan_s": run.makespan_s,
        "makespan_ps": run.makespan_ps,
        "events": run.events,
        **({"algorithm": run.algorithm} if run.algorithm is not None else {}),  # the one `auto` chose, for a collective loop
        "wall_s": wall,
        "events_per_s": run.events / wall if wall > 0 else None,
        "peak_memory_bytes": run.peak_memory_bytes,
        # what the run was estimated to need, and checked against, before it allocated
        **({"estimated_memory_bytes": run.estimated_memory_bytes} if run.estimated_memory_bytes is not None else {}),
        "engine_version": _engine.__version__,
        **run.derived,
    }
    for name, m in timers.items():
        finite = m[np.isfinite(m)]
        if finite.size:
            s[f"{name}_s"] = {
                "mean": float(finite.mean()),
                "p50": float(np.percentile(finite, 50)),
                "p95": float(np.percentile(finite, 95)),
                "max": float(finite.max()),
            }
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in s.items()}

