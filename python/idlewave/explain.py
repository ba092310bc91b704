"""What bounds a run: the critical path's split of the makespan by cause,
the makespan's derivatives in L, o, g, G and O, and how much more latency
(or per-byte cost) a run tolerates before it slows by 1%, 5% or 10%.

The engine keeps the path (``[record] explain``, ``simulate --explain``);
see ``src/engine/explain.rs`` for how and ``docs/explain.md`` for the
meaning of each number.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

#: The engine's causes, as a reader names them.
CAUSES = {
    "compute": "computation",
    "cpu_overhead": "CPU overhead (o, O)",
    "nic_gap": "NIC gaps (g, G)",
    "wire_latency": "wire latency (L, hops)",
    "penalty": "platform penalties",
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

#: Slowdowns the tolerances are given for.
SLOWDOWNS = (0.01, 0.05, 0.10)


class ExplainError(ValueError):
    """A run that cannot be explained as asked; the message says why."""


@dataclass
class Explanation:
    """The engine's answer (``Result.explain``) in seconds, with helpers."""

    raw: dict

    @property
    def makespan_s(self) -> float:
        return self.raw["makespan_ps"] * 1e-12

    def causes_s(self) -> dict[str, float]:
        return {k: v * 1e-12 for k, v in self.raw["causes_ps"].items()}

    def derivatives(self) -> dict[str, int]:
        """dT/dθ for each parameter, summed over link classes (a count of
        messages, overheads or gaps, or bytes for G and O)."""
        return {p: sum(c[p] for c in self.raw["counts"].values()) for p in PARAMS}

    def by_class(self) -> dict[str, dict[str, int]]:
        """The derivatives per link class, classes with none left out."""
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
        return {
            **self.raw,
            "makespan_s": self.makespan_s,
            "causes_s": self.causes_s(),
            "derivatives": self.derivatives(),
            "bound_by": self.bound(),
        }


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
    from idlewave.simulation import simulate

    s = copy.deepcopy(scenario)
    s.setdefault("record", {})["timers"] = False
    return simulate(s).summary["makespan_s"]


def tolerance(scenario: dict, explanation: Explanation, param: str = "L",
              slowdowns: tuple[float, ...] = SLOWDOWNS, rel_tol: float = 0.01) -> dict[float, float | None]:
    """The largest increase of `param` for which the makespan grows by at
    most each slowdown, found by re-simulating: bracketed from the
    first-order estimate, then bisected to `rel_tol` of the answer. None
    where the parameter is not on the critical path (no increase slows the
    run while the path stays; the search stops at 1000× the makespan)."""
    base = explanation.makespan_s
    out: dict[float, float | None] = {}
    for f in slowdowns:
        limit = base * (1 + f)
        first = explanation.first_order_tolerance(param, f)
        if first is None:
            out[f] = None
            continue
        lo, hi = 0.0, first
        while _makespan(perturbed(scenario, param, hi)) <= limit:  # the path may change: widen
            lo, hi = hi, hi * 2
            if hi > 1000 * base:
                break
        while hi - lo > rel_tol * max(lo, first):
            mid = (lo + hi) / 2
            if _makespan(perturbed(scenario, param, mid)) <= limit:
                lo = mid
            else:
                hi = mid
        out[f] = lo
    return out


def curve(scenario: dict, param: str, deltas: list[float]) -> list[tuple[float, float]]:
    """(θ, makespan) for θ = the scenario's value + each delta."""
    key = PARAMS[param][0]
    return [(scenario["network"][key] + d, _makespan(perturbed(scenario, param, d))) for d in deltas]


def read(result_dir: Path) -> tuple[dict, Explanation | None]:
    """A result directory's scenario and, if the run was explained, its explanation."""
    scenario = json.loads((result_dir / "scenario.json").read_text())
    path = result_dir / "explain.json"
    return scenario, (Explanation(json.loads(path.read_text())) if path.exists() else None)


def figures(explanation: Explanation, t_of_param: list[tuple[float, float]] | None, param: str, out: Path) -> list[Path]:
    """A stacked bar of the makespan by cause (breakdown.png) and, given
    re-simulated points, the makespan against the parameter (t_of_L.png)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from idlewave.results import write_file

    written = []
    causes = {k: v for k, v in explanation.causes_s().items() if v > 0}
    fig, ax = plt.subplots(figsize=(7, 1.8 + 0.1 * len(causes)), layout="constrained")
    left = 0.0
    scale, unit = _time_unit(explanation.makespan_s)
    for i, (k, v) in enumerate(causes.items()):
        ax.barh([0], [v * scale], left=[left * scale], color=f"C{i}", label=f"{CAUSES[k]}: {v * scale:.3g} {unit}")
        left += v
    ax.set_yticks([])
    ax.set_xlabel(f"makespan [{unit}]")
    ax.set_title("What bounds this run: the critical path by cause")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=2, frameon=False, fontsize="small")
    path = out / "breakdown.png"
    write_file(path, lambda tmp: fig.savefig(tmp, format="png", dpi=150))
    plt.close(fig)
    written.append(path)
    if t_of_param:
        xs, ts = zip(*t_of_param)
        fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
        xscale, xunit = (1e6, "µs") if param in ("L", "o", "g") else (1e9, "ns/byte")
        ax.plot([x * xscale for x in xs], [t * scale for t in ts], "o-")
        ax.set_xlabel(f"{param} [{xunit}]")
        ax.set_ylabel(f"makespan [{unit}]")
        ax.set_title(f"Makespan against {param} (re-simulated)")
        ax.grid(alpha=0.3)
        path = out / f"t_of_{param}.png"
        write_file(path, lambda tmp: fig.savefig(tmp, format="png", dpi=150))
        plt.close(fig)
        written.append(path)
    return written


def _time_unit(seconds: float) -> tuple[float, str]:
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if seconds * scale >= 1:
            return scale, unit
    return 1e9, "ns"
