"""Measurements on results: idle-wave speed and decay, and the
desynchronization speedup P_D (idle-waves paper Eq. 1).

Both work on a result directory written by ``idlewave simulate --out`` (or
on a :class:`idlewave.Result`), using the per-(rank, iteration) timers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from idlewave.results import UnreadableResult, read_json, read_parquet


class AnalysisError(ValueError):
    """Results that cannot give the asked-for quantity; the message says why."""


@dataclass
class Loaded:
    scenario: dict
    summary: dict
    timers: dict[str, np.ndarray]  # name -> ranks x iterations, seconds


def load(source) -> Loaded:
    """A result directory, or a Result from idlewave.simulate. A missing file
    is an AnalysisError (the wrong directory given); a damaged one an
    UnreadableResult naming it (idlewave.results)."""
    if hasattr(source, "timers") and hasattr(source, "scenario"):
        return Loaded(source.scenario, source.summary, dict(source.timers))
    d = Path(source)
    if d.exists() and not d.is_dir():
        raise AnalysisError(f"{d}: not a result directory (a file: give the directory `idlewave simulate --out` wrote)")
    try:
        summary = read_json(d / "summary.json")
        scenario = read_json(d / "scenario.json")
        frame = read_parquet(d / "timers.parquet")
    except FileNotFoundError as e:
        raise AnalysisError(f"{d}: not a complete result directory ({Path(e.filename).name} missing)") from None
    ranks, iters = summary.get("ranks"), summary.get("iterations")
    if not (isinstance(ranks, int) and isinstance(iters, int) and ranks >= 0 and iters >= 0
            and isinstance(summary.get("makespan_s"), (int, float))):
        raise UnreadableResult(f"{d / 'summary.json'}: lacks the counts and makespan idlewave writes "
                               "('ranks', 'iterations', 'makespan_s')")
    columns = [c for c in frame.columns if c.endswith("_s")]  # none where [record] timers = false
    if columns and (not {"rank", "iteration"} <= set(frame.columns) or frame.height != ranks * iters):
        raise UnreadableResult(f"{d / 'timers.parquet'}: not one row per rank and iteration "
                               f"({frame.height} rows for the {ranks} × {iters} that summary.json gives)")
    if columns:
        frame = frame.sort(["rank", "iteration"])
    timers = {c[:-2]: frame[c].to_numpy().reshape(ranks, iters) for c in columns}
    return Loaded(scenario, summary, timers)


def _name(source, otherwise: str) -> str:
    """How messages name a result: its directory, or (a Result in memory) `otherwise`."""
    return otherwise if hasattr(source, "summary") else str(source)


def _waiting(res: Loaded) -> np.ndarray:
    for name in ("comm", "wait_in", "iteration"):
        if name in res.timers:
            return res.timers[name]
    raise AnalysisError("the result has no per-iteration timers (was [record] timers = false?)")


# Without a scenario's single detour, the delay taken as the wave's source
# must exceed every other rank's extra computation this many times.
KICK_FACTOR = 3.0


def idle_wave(source, threshold_fraction: float = 0.1) -> dict:
    """Speed (ranks/s) and decay of an idle wave launched by a one-off delay.

    The source is the rank of the scenario's ``single`` noise (else the rank
    with the largest extra computation). A rank is reached in the first
    iteration whose waiting time exceeds its own median by more than
    `threshold_fraction` of the injected delay; the wave's speed is the
    least-squares slope of distance against the time that iteration ends,
    per direction. The decay is the slope of ln(extra waiting) against
    distance (per rank; 0 for an undamped wave).
    """
    res = load(source)
    wait = _waiting(res)
    if wait.size == 0:
        raise AnalysisError(f"{_name(source, 'the result')}: the run has {wait.shape[0]} ranks × {wait.shape[1]} "
                            "iterations; an idle wave needs iterations to travel through")
    if "iteration" not in res.timers:
        raise AnalysisError("the result needs the 'iteration' timer")
    ends = np.nancumsum(res.timers["iteration"], axis=1)  # iterations run back to back from t = 0
    p = wait.shape[0]
    single = [n for n in res.scenario.get("noise", []) if n["kind"] == "single"]
    extra = wait - np.nanmedian(wait, axis=1, keepdims=True)
    if single:
        src, delay = single[0]["rank"], single[0]["duration_s"]
    else:
        compute = res.timers.get("compute", res.timers["iteration"])
        excess = compute - np.nanmedian(compute, axis=1, keepdims=True)
        src = int(np.nanargmax(np.nanmax(excess, axis=1)))
        delay = float(np.nanmax(excess))
        others = np.delete(excess, src, axis=0)
        # a one-off kick stands out of the run's own fluctuations
        if others.size and delay > 0 and delay < KICK_FACTOR * float(np.nanmax(others)):
            raise AnalysisError(
                f"no one-off delay launches an idle wave here: the largest extra computation ({delay:.3g} s, rank "
                f"{src}) is within {KICK_FACTOR:g}x of other ranks' ({float(np.nanmax(others)):.3g} s); inject one "
                "with a [[noise]] of kind \"single\"")
    if not delay > 0:
        raise AnalysisError("no delay found to launch an idle wave")
    threshold = threshold_fraction * delay
    reached, amplitude = {}, {}
    for r in range(p):
        if r == src:
            continue
        hit = np.flatnonzero(extra[r] > threshold)
        if hit.size:
            reached[r] = float(ends[r, hit[0]])
            amplitude[r] = float(np.nanmax(extra[r]))
    speeds = {}
    for name, side in (("up", [r for r in reached if r > src]), ("down", [r for r in reached if r < src])):
        if len(side) >= 2:
            dist = np.abs(np.asarray(side) - src, dtype=float)
            times = np.asarray([reached[r] for r in side])
            slope = np.polyfit(times, dist, 1)[0]
            speeds[name] = float(slope)
    if not speeds:
        raise AnalysisError(f"the wave from rank {src} reached fewer than two ranks on either side")
    if any(v <= 0 for v in speeds.values()):
        raise AnalysisError(f"no idle wave travels away from rank {src}: ranks further away were reached earlier "
                            f"(speed by direction {', '.join(f'{k} {v:.3g}' for k, v in speeds.items())} ranks/s)")
    dist = np.asarray([abs(r - src) for r in amplitude], dtype=float)
    amp = np.asarray(list(amplitude.values()))
    decay = float(-np.polyfit(dist, np.log(amp), 1)[0]) if len(amp) >= 2 else 0.0
    period = float(np.nanmedian(res.timers["iteration"]))
    return {
        "source_rank": int(src),
        "delay_s": float(delay),
        "speed_ranks_per_s": float(np.mean(list(speeds.values()))),
        "speed_by_direction": speeds,
        "ranks_reached": len(reached),
        "ranks": p,
        "decay_per_rank": decay,
        "period_s": period,
        "speed_ranks_per_iteration": float(np.mean(list(speeds.values())) * period),
    }


def barrier_cost(scenario: dict) -> float:
    """Seconds one barrier takes on the scenario's network and rank count,
    balanced and noiseless (the microbenchmark the paper subtracts)."""
    from idlewave.simulation import simulate

    ranks = scenario["workload"].get("ranks")
    if ranks is None:
        raise AnalysisError("the barrier run's workload has no rank count")
    micro = {"seed": scenario["seed"], "network": scenario["network"],
             "workload": {"kind": "collective", "collective": "barrier", "ranks": ranks, "iterations": 1}}
    return simulate(micro).summary["makespan_s"]


def _differences(a: dict, b: dict, prefix: str) -> list[str]:
    """The keys whose values differ between two scenario tables, with both values (shortened)."""
    def show(v) -> str:
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."

    first = [k for k in ("kind", "ranks", "iterations") if k in a.keys() | b.keys()]  # the telling ones
    keys = first + sorted((a.keys() | b.keys()) - set(first))
    return [f"{prefix}.{k} ({show(a.get(k))} vs {show(b.get(k))})" for k in keys if a.get(k) != b.get(k)]


def _comparable(b: Loaded, f: Loaded, b_name: str, f_name: str) -> None:
    """P_D compares one program with a barrier each iteration against the
    same program without (Eq. 1): refuse any other pair, naming what is wrong,
    rather than subtract a barrier cost from a run that has none or divide
    runtimes of unrelated runs."""
    wb, wf = b.scenario.get("workload") or {}, f.scenario.get("workload") or {}
    if "barrier" not in wb:
        raise AnalysisError(f"{b_name}: its workload ({wb.get('kind')!r}) has no barrier option; P_D compares a run of "
                            "bsp, spmv, stream_triad, chebfd or dense2d with workload.barrier = true against the same "
                            "run with barrier = false")
    if wb["barrier"] is not True:
        hint = (f"; {f_name} is the one with barriers: give it first (analyze pd BARRIER_DIR FREE_DIR)"
                if wf.get("barrier") is True else "")
        raise AnalysisError(f"{b_name}: has no barriers (workload.barrier = false), but the first result must be the run "
                            f"with a barrier each iteration{hint}")
    if wf.get("barrier") is True:
        raise AnalysisError(f"{f_name}: has barriers too (workload.barrier = true); the second result must be the same "
                            "run without barriers")
    rest = {k: v for k, v in wb.items() if k != "barrier"}, {k: v for k, v in wf.items() if k != "barrier"}
    differ = _differences(*rest, "workload")
    for table in ("network", "noise"):
        differ += _differences({table: b.scenario.get(table)}, {table: f.scenario.get(table)}, "scenario")
    differ += _differences({k: b.summary.get(k) for k in ("ranks", "iterations")},
                           {k: f.summary.get(k) for k in ("ranks", "iterations")}, "summary")
    if differ:
        shown = ", ".join(differ[:4]) + (f" and {len(differ) - 4} more" if len(differ) > 4 else "")
        raise AnalysisError(f"{b_name} and {f_name} are not the same run apart from the barrier: {shown} differ")


def pd(barrier_source, free_source, barrier_cost_s: float | None = None) -> dict:
    """P_D = (P_free − P_barrier) / P_barrier with P ∝ 1/runtime and the
    pure barrier cost (iterations × one noiseless barrier, or the given
    per-barrier cost) subtracted from the barrier run's runtime. The two
    runs must be the same apart from the barrier (see _comparable)."""
    if barrier_cost_s is not None and not (math.isfinite(barrier_cost_s) and barrier_cost_s >= 0):
        raise AnalysisError(f"--barrier-cost: seconds per barrier, a finite number >= 0, got {barrier_cost_s}")
    b, f = load(barrier_source), load(free_source)
    _comparable(b, f, _name(barrier_source, "the run with barriers"), _name(free_source, "the run without"))
    iters = b.summary["iterations"]
    per = barrier_cost(b.scenario) if barrier_cost_s is None else barrier_cost_s
    t_barrier = b.summary["makespan_s"] - iters * per
    t_free = f.summary["makespan_s"]
    if not t_barrier > 0 and barrier_cost_s is not None:
        raise AnalysisError(f"--barrier-cost {barrier_cost_s} s: {iters} barriers of it take longer than the barrier "
                            f"run's makespan ({b.summary['makespan_s']} s); give the cost of one barrier")
    if not (t_barrier > 0 and t_free > 0):
        raise AnalysisError(f"runtimes must be positive (barrier run without barriers: {t_barrier}, free run: {t_free})")
    return {
        "pd": t_barrier / t_free - 1.0,
        "runtime_barrier_s": b.summary["makespan_s"],
        "barrier_cost_s": per,
        "runtime_barrier_minus_cost_s": t_barrier,
        "runtime_free_s": t_free,
        "iterations": iters,
    }


# A domain whose ranks start an iteration within this fraction of the
# iteration time of each other computes in lock step.
LOCK_STEP_FRACTION = 0.05


def _domains(res: Loaded) -> tuple[int, str]:
    """Ranks per ccNUMA domain and what they are: the platform's sockets,
    else its nodes, else the whole run (one domain). Ranks fill domains in
    rank order, so other mappings are refused."""
    net = res.scenario.get("network") or {}
    kind = (net.get("mapping") or {}).get("kind", "block")
    if kind != "block":
        raise AnalysisError(f"network.mapping.kind = {kind!r}: the wavefront per domain needs the ranks placed in rank "
                            "order (mapping \"block\")")
    for key, what in (("ranks_per_socket", "socket"), ("ranks_per_node", "node")):
        if isinstance(net.get(key), int) and net[key] > 0:
            return net[key], what
    return res.summary["ranks"], "run"


def wavefront(source, first: int | None = None, last: int | None = None) -> dict:
    """The computational wavefront (idle-waves paper §3.1.1) per ccNUMA
    domain over iterations [first, last) (default: the second half).

    Iteration k of a rank starts when its iteration k − 1 ends (the
    iterations run back to back from t = 0) and computes first. Per domain:
    `active`, the mean number of its ranks computing at once over the window
    (time-weighted; compare with the summary's `memory_saturation_ranks`);
    `spread_s`, how far apart its ranks start an iteration (median over the
    window of max − min, the wavefront's extent: smaller is steeper);
    `lock_step`, spread below LOCK_STEP_FRACTION of the iteration time. The
    lagging rank starts most iterations last; its domain is the lagging one.
    """
    res = load(source)
    if "compute" not in res.timers or "iteration" not in res.timers:
        raise AnalysisError("the wavefront needs the 'iteration' and 'compute' timers (a stream_triad or bsp run "
                            "with [record] timers = true)")
    it, comp = res.timers["iteration"], res.timers["compute"]
    ranks, iters = it.shape
    first = iters // 2 if first is None else first
    last = iters if last is None else last
    if not 0 <= first < last <= iters:
        raise AnalysisError(f"iterations [{first}, {last}) are not a window of the run's {iters} iterations")
    per, what = _domains(res)
    if ranks % per:
        raise AnalysisError(f"{ranks} ranks do not fill {what}s of {per} ranks")
    starts = np.concatenate([np.zeros((ranks, 1)), np.nancumsum(it, axis=1)], axis=1)
    t0, t1 = float(starts[:, first].max()), float(starts[:, last].min())
    if not t1 > t0:
        raise AnalysisError(f"iterations [{first}, {last}) are too few: no moment in them when every rank is inside")
    begin = starts[:, first:last]
    computing = np.clip(begin + comp[:, first:last], t0, t1) - np.clip(begin, t0, t1)
    active = computing.sum(axis=1).reshape(-1, per).sum(axis=1) / (t1 - t0)
    by_domain = begin.reshape(-1, per, last - first)
    spread = np.median(by_domain.max(axis=1) - by_domain.min(axis=1), axis=1)
    period = float(np.nanmedian(it[:, first:last]))
    lagging = int(np.bincount(np.argmax(begin, axis=0), minlength=ranks).argmax())
    return {
        "domain": what,
        "ranks_per_domain": per,
        "iterations": [first, last],
        "period_s": period,
        "saturation_ranks": res.summary.get("memory_saturation_ranks"),
        "active": [float(a) for a in active],
        "spread_s": [float(s) for s in spread],
        "lock_step": [bool(s < LOCK_STEP_FRACTION * period) for s in spread],
        "lagging_rank": lagging,
        "lagging_domain": lagging // per,
    }
