"""What bounds a run: the critical path's split of the makespan by cause,
the makespan's derivatives in L, o, g, G and O, and how much more latency
(or per-byte cost) a run tolerates before it slows by 1%, 5% or 10%.

The engine keeps the path (``[record] explain``, ``simulate --explain``);
see ``src/probes/explain.rs`` for how and ``docs/explain.md`` for the
meaning of each number.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from idlewave.results import series_colour, time_unit

#: The engine's causes, as a reader names them.
CAUSES = {
    "compute": "computation",
    "cpu_overhead": "CPU overhead (o, O)",
    "nic_gap": "NIC gaps (g, G)",
    "wire_latency": "wire latency (L, hops)",
    "penalty": "platform penalties and shared links",
    "noise": "noise detours",
    "memory_contention": "memory-bandwidth contention",
}

#: Each parameter: its scenario key under [network], and what one unit of its count is.
PARAMS = {
    "L": ("L_s", "messages"),
    "o": ("o_s", "overheads"),
    "g": ("g_s", "gaps"),
    "G": ("G_s_per_byte", "bytes"),
    "O": ("O_s_per_byte", "bytes"),
}

#: What ended a rank's wait (the columns of waits.parquet, with _s).
WAITS = {
    "late_sender": "late sender",
    "late_receiver": "late receiver (rendezvous)",
    "collective": "collective imbalance",
    "other": "other",
}

#: Slowdowns the tolerances are given for.
SLOWDOWNS = (0.01, 0.05, 0.10)

#: The engine's resolution (s, or s per byte): no smaller increase runs.
PS = 1e-12

#: How many times a tolerance is checked below and searched again, at most.
CHECK_ROUNDS = 4


class ExplainError(ValueError):
    """A run that cannot be explained as asked; the message says why."""


@dataclass
class Explanation:
    """The engine's answer (``Result.explain``) in seconds, with helpers.
    ``waits`` holds per-rank arrays of what each rank waited for, ``route``
    the critical path's stretches on each rank (both as the engine gave
    them, or read back from waits.parquet and route.parquet)."""

    raw: dict
    waits: dict | None = None
    route: pl.DataFrame | None = None
    #: Seconds each rank sat idle per iteration (ranks × iterations), where
    #: the run recorded its timers (the ``waiting`` timer).
    by_iteration: np.ndarray | None = None

    @classmethod
    def of_engine(cls, raw: dict) -> Explanation:
        raw = dict(raw)
        waits = raw.pop("waits", None)
        route = raw.pop("route", None)
        return cls(raw, {k: np.asarray(v) for k, v in waits.items()} if waits is not None else None,
                   _route_frame(route) if route is not None else None)

    def route_summary(self, top: int = 5) -> dict:
        """The route in brief: its segments, the ranks it crosses, and the
        ranks it spends longest on with their share of the makespan."""
        if self.route is None or self.route.height == 0:
            return {}
        # each rank's seconds summed in the route's order (a float sum in a hash
        # group_by's order can differ in its last bits from run to run)
        per_rank = (self.route.group_by("rank", maintain_order=True).agg(pl.col("duration_s").sum())
                    .sort(["duration_s", "rank"], descending=[True, False]))
        return {
            "segments": self.route.height,
            "ranks": per_rank.height,
            # above 0 where the engine dropped the route's start to bound memory
            "from_s": float(self.route["start_s"][0]),
            "longest_on": [{"rank": int(r), "s": float(t), "share": float(t) / self.makespan_s if self.makespan_s else 0.0}
                           for r, t in per_rank.head(top).iter_rows()],
        }

    def links_on_path(self, top: int = 5) -> dict:
        """With shared links: how long the critical path's messages spent on
        their links beyond their NICs' (s − 1)·G (links narrower than a NIC,
        or shared), in all and for the links that cost them the most, each
        with the number of its messages on the path that waited there."""
        if self.route is None or "link" not in self.route.columns:
            return {}
        waited = self.route.filter(pl.col("link").is_not_null())
        if waited.height == 0:
            return {}
        per_link = (waited.group_by("link", maintain_order=True)
                    .agg(pl.col("link_wait_s").sum(), pl.len().alias("messages"))
                    .sort(["link_wait_s", "link"], descending=[True, False]))
        total = float(waited["link_wait_s"].sum())
        return {
            "wait_s": total,
            "share": total / self.makespan_s if self.makespan_s else 0.0,
            "links": [{"link": str(k), "wait_s": float(t), "messages": int(n)} for k, t, n in per_link.head(top).iter_rows()],
        }

    def waits_frame(self) -> pl.DataFrame | None:
        """One row per rank: seconds its CPU sat idle until a message arrived
        (late sender), until a receiver matched its rendezvous send (late
        receiver), until either happened inside a collective (collective
        imbalance) or for anything else, and its longest wait and on whom."""
        if self.waits is None:
            return None
        w = self.waits
        return pl.DataFrame({
            "rank": np.arange(len(w["late_sender_ps"]), dtype=np.uint32),
            **{f"{k}_s": w[f"{k}_ps"] * 1e-12 for k in WAITS},
            "longest_wait_s": w["longest_ps"] * 1e-12,
            "longest_wait_on": w["longest_on"].astype(np.uint32),
        })

    def wait_totals_s(self) -> dict[str, float]:
        """The waits summed over ranks, by kind."""
        if self.waits is None:
            return {}
        return {k: float(self.waits[f"{k}_ps"].sum()) * 1e-12 for k in WAITS}

    @property
    def makespan_s(self) -> float:
        return self.raw["makespan_ps"] * 1e-12

    def causes_s(self) -> dict[str, float]:
        return {k: v * 1e-12 for k, v in self.raw["causes_ps"].items()}

    def derivatives(self) -> dict[str, int]:
        """dT/dθ for each parameter, over all link classes (a count of
        messages, overheads or gaps, or bytes for G and O), in PARAMS order
        (the JSON holds them sorted by name)."""
        d = self.raw["derivatives"]
        return {p: d[p] for p in PARAMS if p in d}

    def by_class(self) -> dict[str, dict[str, int]]:
        """The derivatives per link class (L, o, g, G; O is kept for all
        classes together), classes with none left out."""
        return {k: v for k, v in self.raw["counts"].items() if any(v.values())}

    def bound(self) -> str:
        """The cause holding the largest share of the makespan."""
        causes = self.raw["causes_ps"]
        return max(causes, key=causes.get)

    def first_order_tolerance(self, param: str, slowdown: float) -> float | None:
        """How much θ may grow before the makespan grows by `slowdown` if the
        critical path stayed as it is. Where the runtime is the maximum over
        paths it is convex in θ, so this bounds the tolerance from above;
        `tolerance` re-simulates for the answer. None: θ is not on the path."""
        n = self.derivatives()[param]
        return slowdown * self.makespan_s / n if n else None

    def to_json(self) -> dict:
        waits = {"waits_total_s": self.wait_totals_s()} if self.waits is not None else {}
        route = {"route": self.route_summary()} if self.route is not None else {}
        links = self.links_on_path()
        return {
            **self.raw,
            **waits,
            **route,
            **({"links_on_path": links} if links else {}),
            "makespan_s": self.makespan_s,
            "causes_s": self.causes_s(),
            "derivatives": self.derivatives(),
            "bound_by": self.bound(),
        }


#: The engine's "no iteration" (a GOAL file or a trace, or timers off).
_NO_ITERATION = 2**32 - 1


def _route_frame(route: dict) -> pl.DataFrame:
    """One row per stretch of the critical path on one rank, in time order:
    the rank's iteration when the path arrived (null where unknown), when it
    arrived and left, and its seconds by cause there."""
    start, end = np.asarray(route["start_ps"]), np.asarray(route["end_ps"])
    return pl.DataFrame({
        "segment": np.arange(len(start), dtype=np.uint32),
        "rank": np.asarray(route["rank"], dtype=np.uint32),
        "iteration": pl.Series(np.asarray(route["iteration"], dtype=np.uint32)).replace(_NO_ITERATION, None),
        "start_s": start * 1e-12,
        "end_s": end * 1e-12,
        "duration_s": (end - start) * 1e-12,
        **{f"{c}_s": np.asarray(route[f"{c}_ps"]) * 1e-12 for c in CAUSES},
        # the shared link the stretch's arrival waited on (null: none), and how long
        **({"link": pl.Series(route["link"], dtype=pl.Utf8),
            "link_wait_s": np.asarray(route["link_wait_ps"]) * 1e-12} if "link" in route else {}),
    })


def write_tables(x: Explanation, out: Path) -> list[Path]:
    """waits.parquet and route.parquet, for what the explanation has."""
    from idlewave.results import write_parquet

    tables = {"waits.parquet": x.waits_frame(), "route.parquet": x.route}
    written = []
    for name, frame in tables.items():
        if frame is not None:
            write_parquet(out / name, frame)
            written.append(out / name)
    return written


#: The bandwidths of shared links a run's sensitivity is measured for:
#: (where the key is in the scenario, what its links are).
LINK_BANDWIDTHS = (
    (("network", "links", "bandwidth_bytes_per_s"), "links between switches"),
    (("network", "links", "global_bandwidth_bytes_per_s"), "a dragonfly's global links"),
    (("network", "node_bandwidth_bytes_per_s"), "nodes' links"),
)

#: The step of the sensitivity runs: each bandwidth 10% higher, then lower.
LINK_STEP = 0.10


def link_bandwidths(scenario: dict) -> list[tuple[tuple[str, ...], str, float]]:
    """The shared links' bandwidths a scenario sets (key path, what, value),
    if its links are shared (``[network.links] model = "flow"``)."""
    net = scenario.get("network", {})
    if net.get("links", {}).get("model") != "flow":
        return []
    found: list[tuple[tuple[str, ...], str, float]] = []
    for path, what in LINK_BANDWIDTHS:
        node: object = scenario
        for k in path:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, (int, float)) and node > 0:
            found.append((path, what, float(node)))
    return found


def link_sensitivity(scenario: dict, base_s: float, progress=None) -> list[dict]:
    """How the makespan moves with each shared-link bandwidth the scenario
    sets: re-simulated with it LINK_STEP higher and lower (two runs each;
    max–min sharing makes the makespan piecewise in a bandwidth, so both
    sides are given, and the elasticity from their difference).
    `progress(key, makespan_s)` hears of each run."""
    rows = []
    for path, what, value in link_bandwidths(scenario):
        key = ".".join(path)
        times = {}
        for sign in (1, -1):
            s = copy.deepcopy(scenario)
            node = s
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = value * (1 + sign * LINK_STEP)
            times[sign] = _makespan(s)
            if progress is not None:
                progress(key, times[sign])
        rows.append({
            "key": key,
            "links": what,
            "bandwidth_bytes_per_s": value,
            "step": LINK_STEP,
            "makespan_higher_s": times[1],
            "makespan_lower_s": times[-1],
            # d ln T / d ln B: -1 where the links alone set the pace, 0 where they do not
            "elasticity": (times[1] - times[-1]) / (2 * LINK_STEP * base_s) if base_s > 0 else 0.0,
        })
    return rows


def perturbed(scenario: dict, param: str, delta: float) -> dict:
    """The scenario with `delta` (seconds, or seconds per byte) added to
    parameter `param` of its LogGOPS network."""
    net = scenario["network"]
    if net.get("platform") or net.get("intra_node") or net.get("intra_socket"):
        raise ExplainError(
            "tolerances re-simulate with one LogGOPS network; this scenario has a platform or per-class links "
            "(its derivatives per link class are in explain.json)"
        )
    key = PARAMS[param][0]
    out = copy.deepcopy(scenario)
    out["network"][key] = net[key] + delta
    return out


def _makespan(scenario: dict) -> float:
    """The makespan (s), or infinity where the perturbed run passes the
    engine's limits: its time limit, or a parameter's largest value (a
    value error of the scenario check: the search only increases it). For
    a tolerance search both mean "slower than any limit asked for"."""
    from idlewave import _engine
    from idlewave.scenario import ScenarioError
    from idlewave.simulation import simulate

    s = copy.deepcopy(scenario)
    s.setdefault("record", {})["timers"] = False
    try:
        return simulate(s).summary["makespan_s"]
    except _engine.TimeLimitError:
        return math.inf
    except ScenarioError as e:
        if e.kind == "value":
            return math.inf
        raise

class Runs:
    """The makespans re-simulated so far with one parameter increased (by 0:
    the run itself), so that no increase runs twice and each slowdown's
    search starts from what the smaller ones found. `progress(param, delta,
    makespan_s, runs)` hears of each new run."""

    def __init__(self, scenario: dict, param: str, base_s: float, progress=None):
        self.scenario, self.param, self.progress = scenario, param, progress
        self.seen: dict[float, float] = {0.0: base_s}

    def __call__(self, delta: float) -> float:
        if delta not in self.seen:
            self.seen[delta] = _makespan(perturbed(self.scenario, self.param, delta))
            if self.progress is not None:
                self.progress(self.param, delta, self.seen[delta], len(self.seen) - 1)
        return self.seen[delta]

    def spread(self) -> float:
        """How far the makespan falls from monotonic in the parameter, as a
        share of the run's: the most by which a smaller increase ran longer
        than a larger one (0 if none did)."""
        worst, highest = 0.0, -math.inf
        for _, m in sorted(self.seen.items()):
            worst, highest = max(worst, highest - m), max(highest, m)
        return worst / self.seen[0.0]

    def bracket(self, floor: float, limit: float) -> tuple[float, float | None]:
        """(lo, hi) among the runs so far: hi the smallest increase above
        `floor` that passed `limit` (None: none did), lo the largest from
        `floor` up to hi that stayed within it (`floor` has run)."""
        over = [d for d, m in self.seen.items() if d > floor and m > limit]
        hi = min(over) if over else None
        lo = max(d for d, m in self.seen.items() if floor <= d and (hi is None or d < hi) and m <= limit)
        return lo, hi


def estimated_runs(params: int, slowdowns: int = len(SLOWDOWNS), rel_tol: float = 0.01) -> int:
    """About how many re-simulations `tolerance` and the curve take for
    `params` parameters, said before the search starts: per slowdown, a
    bisection to `rel_tol` and three checks; per parameter, the curve's
    eight points (a run 1,024 ranks long took 75 for L and G: this says 76)."""
    return params * (slowdowns * (math.ceil(math.log2(1 / rel_tol)) + 3) + 8)


def tolerance(scenario: dict, explanation: Explanation, param: str = "L",
              slowdowns: tuple[float, ...] = SLOWDOWNS, rel_tol: float = 0.01, runs: Runs | None = None) -> dict[float, float]:
    """The largest increase of `param` for which the makespan grows by at
    most each slowdown, found by re-simulating: bracketed from the
    first-order estimate, then bisected to `rel_tol` of the answer;
    infinity where no increase up to 1000× the makespan slows the run that
    much. A parameter the path does not cross now (a zero count) may still
    slow the run once another path becomes critical: its search grows from
    a millionth of slowdown × makespan by factors of 16. Under noise the
    runtime need not grow monotonically with the parameter; each answer is
    an increase that keeps the slowdown within its limit, at least as large
    as the answer for the smaller slowdowns, and below the smallest
    increase tried that passed the limit; three increases between it and
    the previous answer are checked, and where one passes the limit the
    search goes on below it (up to CHECK_ROUNDS times; `Runs.spread` says
    how far from monotonic the runs were). `runs`: the runs so far, to
    reuse and add to."""
    base = explanation.makespan_s
    if base <= 0:
        raise ExplainError("the run takes no time, so no slowdown is relative to it: tolerances need a makespan above 0")
    runs = runs or Runs(scenario, param, base)
    out: dict[float, float] = {}
    below = 0.0  # the answer for the previous (smaller) slowdown
    for f in sorted(slowdowns):
        if math.isinf(below):
            out[f] = below
            continue
        limit = base * (1 + f)
        first = explanation.first_order_tolerance(param, f)
        lo, hi = runs.bracket(below, limit)
        if hi is None:  # nothing tried slows the run this much
            if first is not None:  # widen from the estimate (the path may change)
                hi, grow = max(first, lo), 2.0
            else:
                # from far below, by factors: an increase far past the answer (f·T per byte of G)
                # makes a run long, and under noise as slow as its simulated time is long
                hi, grow = max(lo, 1e-6 * f * base, PS), 16.0
            while hi <= 1000 * base and runs(hi) <= limit:
                lo, hi = hi, hi * grow
            if hi > 1000 * base:
                out[f] = below = math.inf
                continue
        for _ in range(CHECK_ROUNDS):
            lo, hi = _narrow(runs, limit, lo, hi, rel_tol * 1e-6 * (first or f * base), rel_tol)
            # Where the runtime is not monotonic (noise), a smaller increase may pass the limit the
            # bisection kept within: check some between the last answer and this one.
            checks = [below + (lo - below) * k / 4 for k in (1, 2, 3)] if lo - below >= 4 * PS else []
            over = [d for d in checks if runs(d) > limit]
            if not over:
                break
            lo, hi = runs.bracket(below, limit)
            assert hi is not None  # the increases just checked
        out[f] = below = lo
    return out


def increase(param: str, delta: float) -> str:
    """An increase of a parameter in the unit a reader knows it by."""
    unit, scale = ("µs", 1e6) if param in ("L", "o", "g") else ("ps/byte", 1e12)
    return f"+{delta * scale:.4g} {unit}"


def non_monotonic_note(spreads: dict[str, float], noisy: bool) -> str | None:
    """What a reader of the tolerances must know where the runtime is not
    monotonic in a parameter (`Runs.spread` of each), or may not be (noise)."""
    shown = [f"{spread:.2%} for {p}" for p, spread in spreads.items() if spread > 0]
    if not shown and not noisy:
        return None
    seen = (f"among the runs tried, a larger increase ran shorter than a smaller one by up to {', '.join(shown)} "
            "of the makespan, and between them it may jump further") if shown else "between the runs tried it may jump"
    return (f"Not monotonic: {seen} (noise detours land elsewhere as the times move, and the order of events "
            "changes). Each tolerance keeps within its limit at the increase given and at every increase tried "
            "below it, but it is not a threshold: a smaller increase not tried may pass the limit.")


def _narrow(runs: Runs, limit: float, lo: float, hi: float, least: float, rel_tol: float) -> tuple[float, float]:
    """Bisects [lo, hi] (lo within `limit`, hi past it) to `rel_tol` of lo
    (an answer below `least` counts as none); far from the answer by
    factors, as the estimate it starts from can be orders of magnitude off
    (under noise, or at a zero count)."""
    while hi - lo > max(rel_tol * lo, least, PS):
        if lo == 0:
            mid = max(hi / 16, PS)
        elif hi > 4 * lo:
            mid = math.sqrt(lo * hi)
        else:
            mid = (lo + hi) / 2
        if runs(mid) <= limit:
            lo = mid
        else:
            hi = mid
    return lo, hi


def curve(runs: Runs, deltas: list[float]) -> list[tuple[float, float]]:
    """(θ, makespan) for θ = the scenario's value + each delta."""
    value = runs.scenario["network"][PARAMS[runs.param][0]]
    return [(value + d, runs(d)) for d in deltas]


def read(result_dir: Path) -> tuple[dict, Explanation | None]:
    """A result directory's scenario and, if the run was explained, its
    explanation. A table that cannot be read, a damaged scenario.json or
    explain.json is an UnreadableResult naming it, and
    a scenario.json that is no scenario a ScenarioError at the file (never the
    default scenario run in its place)."""
    from idlewave.results import UnreadableResult, read_json
    from idlewave.scenario import validate

    held = result_dir / "scenario.json"
    scenario = read_json(held)
    if "workload" not in scenario:
        raise UnreadableResult(f"{held}: not the scenario of a result (it has no workload): the file is damaged or "
                               "was not written by idlewave")
    validate(scenario, str(held))  # checked as the file it is: its errors name it
    path = result_dir / "explain.json"
    if not path.exists():
        return scenario, None
    x = Explanation(read_json(path))
    try:
        _read_tables(x, result_dir)
    except (pl.exceptions.PolarsError, KeyError, ValueError) as e:  # a damaged input: exit 1, as a damaged explain.json
        raise UnreadableResult(f"{result_dir}: a table of the explained run cannot be read: {e}") from None
    return scenario, x


def _schema(path: Path) -> dict:
    """A Parquet file's columns, read from the file itself (polars would take
    brackets in its name for a glob pattern)."""
    with open(path, "rb") as f:
        return dict(pl.read_parquet_schema(f))


def _read_tables(x: Explanation, result_dir: Path) -> None:
    if (result_dir / "waits.parquet").exists():
        w = pl.read_parquet(result_dir / "waits.parquet", glob=False)
        missing = [f"{k}_s" for k in WAITS if f"{k}_s" not in w.columns]
        if missing:
            raise ValueError(f"waits.parquet has no {', '.join(missing)} (written by an older idlewave? explain the run again)")
        x.waits = {f"{k}_ps": np.rint(w[f"{k}_s"].to_numpy() * 1e12).astype(np.uint64) for k in WAITS}
        x.waits["longest_ps"] = np.rint(w["longest_wait_s"].to_numpy() * 1e12).astype(np.uint64)
        x.waits["longest_on"] = w["longest_wait_on"].to_numpy()
    if (result_dir / "route.parquet").exists():
        x.route = pl.read_parquet(result_dir / "route.parquet", glob=False)
    timers = result_dir / "timers.parquet"
    if timers.exists() and "waiting_s" in _schema(timers):
        t = pl.read_parquet(timers, columns=["rank", "iteration", "waiting_s"], glob=False).sort(["rank", "iteration"])
        ranks, iters = t["rank"].n_unique(), t["iteration"].n_unique()
        x.by_iteration = t["waiting_s"].to_numpy().reshape(ranks, iters)


def figures(explanation: Explanation, t_of_param: list[tuple[float, float]] | None, param: str, out: Path) -> list[Path]:
    """A stacked bar of the makespan by cause (breakdown.png) and, given
    re-simulated points, the makespan against the parameter (t_of_L.png)."""
    from idlewave.results import pyplot

    plt = pyplot()

    from idlewave.results import save_figure

    written = []
    causes = {k: v for k, v in explanation.causes_s().items() if v > 0}
    fig, ax = plt.subplots(figsize=(7, 1.9 + 0.3 * -(-len(causes) // 2)), layout="constrained")
    left = 0.0
    scale, unit = time_unit(explanation.makespan_s)
    for k, v in causes.items():
        ax.barh([0], [v * scale], left=[left * scale], color=_COLOUR[k], label=f"{CAUSES[k]}: {v * scale:.3g} {unit}")
        left += v
    ax.set_yticks([])
    ax.set_xlabel(f"makespan [{unit}]")
    ax.set_title("What bounds this run: the critical path by cause")
    fig.legend(loc="outside lower center", ncol=2, frameon=False, fontsize="small")
    written.append(save_figure(fig, out / "breakdown.png", also=("svg",)))
    frame = explanation.waits_frame()
    if frame is not None and frame.height > 1:
        written.append(_waits_figure(frame, out))
    if explanation.route is not None and explanation.route.height > 0:
        written.append(_route_figure(explanation.route, explanation.makespan_s, out))
    m = explanation.by_iteration
    if m is not None and m.ndim == 2 and min(m.shape) > 1:
        written.append(_waits_by_iteration_figure(m, out))
    if t_of_param:
        xs, ts = zip(*t_of_param)
        fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
        xscale, xunit = (1e6, "µs") if param in ("L", "o", "g") else (1e9, "ns/byte")
        ax.plot([x * xscale for x in xs], [t * scale for t in ts], "o-")
        ax.set_xlabel(f"{param} [{xunit}]")
        ax.set_ylabel(f"makespan [{unit}]")
        ax.set_title(f"Makespan against {param} (re-simulated)")
        ax.grid(alpha=0.3)
        written.append(save_figure(fig, out / f"t_of_{param}.png", also=("svg",)))
    return written


def _waits_figure(frame: pl.DataFrame, out: Path) -> Path:
    """Per rank (or per block of ranks beyond 256), the idle time by what ended it."""
    import matplotlib.pyplot as plt

    from idlewave.results import save_figure

    kinds = {f"{k}_s": label for k, label in WAITS.items()}
    n = frame.height
    per = max(1, -(-n // 256))
    blocks = frame.with_columns((pl.col("rank") // per).alias("block")).group_by("block", maintain_order=True).agg(
        [pl.col(k).mean() for k in kinds]).sort("block")
    total = max(float(frame.select(pl.sum_horizontal(list(kinds))).max().item()), 1e-300)
    scale, unit = time_unit(total)
    fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    bottom = np.zeros(blocks.height)
    x = blocks["block"].to_numpy() * per
    for k, label in kinds.items():
        v = blocks[k].to_numpy() * scale
        ax.bar(x, v, width=per, bottom=bottom, color=series_colour(k[:-2]), label=label, align="edge")
        bottom += v
    ax.set_xlabel("rank" if per == 1 else f"rank (mean over blocks of {per})")
    ax.set_ylabel(f"idle [{unit}]")
    ax.set_title("What each rank waited for")
    fig.legend(loc="outside lower center", ncol=4, frameon=False, fontsize="small")
    return save_figure(fig, out / "waits.png", also=("svg",))


#: One colour per cause, the same in every figure.
_COLOUR = {k: series_colour(k) for k in CAUSES}


#: Routes longer than this are drawn without their jumps between ranks
#: (they would cover the stretches).
_JOINED_UP_TO = 200


def _route_figure(route: pl.DataFrame, makespan_s: float, out: Path) -> Path:
    """The critical path through the ranks over time: each stretch on a
    rank drawn in the colour of the cause it spent most on there."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    from idlewave.results import save_figure

    scale, unit = time_unit(makespan_s)
    causes = route.select([f"{c}_s" for c in CAUSES]).to_numpy()
    main = [list(CAUSES)[i] for i in causes.argmax(axis=1)]
    rank = route["rank"].to_numpy()
    start, end = route["start_s"].to_numpy() * scale, route["end_s"].to_numpy() * scale
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    joined = route.height <= _JOINED_UP_TO
    if joined:
        ax.vlines(start[1:], rank[:-1], rank[1:], color="0.6", lw=0.6)
    ax.hlines(rank, start, end, colors=[_COLOUR[c] for c in main], lw=3 if joined else 5)
    ax.set_xlabel(f"time [{unit}]")
    ax.set_ylabel("rank")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    title = f"The critical path's route: {route.height:,} stretches on {len(set(rank.tolist())):,} ranks"
    ax.set_title(title if joined else f"{title}\n(jumps between ranks not drawn above {_JOINED_UP_TO} stretches)",
                 fontsize="medium")
    shown = [c for c in CAUSES if c in set(main)]
    handles = [Line2D([], [], color=_COLOUR[c], lw=3) for c in shown]
    fig.legend(handles, [f"mostly {CAUSES[c]}" for c in shown], loc="outside lower center", ncol=min(3, len(shown)),
               frameon=False, fontsize="small")
    return save_figure(fig, out / "route.png", also=("svg",))


#: Heatmap cells at most along each axis (beyond, ranks or iterations are
#: averaged in blocks, as the axis label says).
_CELLS = 256


def _waits_by_iteration_figure(m: np.ndarray, out: Path) -> Path:
    """Idle time per rank and iteration: where and when ranks waited."""
    import matplotlib.pyplot as plt

    from idlewave.results import save_figure

    def blocks(a: np.ndarray, axis: int) -> tuple[np.ndarray, int]:
        per = -(-a.shape[axis] // _CELLS)
        if per == 1:
            return a, 1
        pad = (-a.shape[axis]) % per
        widths = [(0, 0), (0, 0)]
        widths[axis] = (0, pad)
        padded = np.pad(a, widths, constant_values=np.nan)
        shape = (padded.shape[0] // per, per, padded.shape[1]) if axis == 0 else (padded.shape[0], padded.shape[1] // per, per)
        return np.nanmean(padded.reshape(shape), axis=axis + 1), per

    shown, per_rank = blocks(np.nan_to_num(m, nan=0.0), 0)
    shown, per_iter = blocks(shown, 1)
    scale, unit = time_unit(max(float(shown.max()), 1e-300))
    fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
    image = ax.imshow(shown * scale, aspect="auto", origin="lower", interpolation="nearest", cmap="magma", vmin=0,
                      extent=(0, m.shape[1], 0, m.shape[0]))
    fig.colorbar(image, ax=ax, label=f"idle [{unit}]" + (" (block mean)" if per_rank * per_iter > 1 else ""))
    ax.set_xlabel("iteration" if per_iter == 1 else f"iteration (blocks of {per_iter})")
    ax.set_ylabel("rank" if per_rank == 1 else f"rank (blocks of {per_rank})")
    ax.set_title("When and where ranks waited: idle time per rank and iteration")
    return save_figure(fig, out / "waits_by_iteration.png", also=("svg",))


