"""Which strategy wins: a sweep's strategies ranked per condition, with
confidence intervals over replications.

A study names its strategy axis (``strategy = "workload.algorithm"``, a key
of ``[grid]``) and how many times each point runs (``replications = 5``,
seeds ``seed``, ``seed + 1``, …; the same seeds for every strategy, so the
comparison is paired). Every other swept key is a condition. Per condition
the strategies are ranked by mean makespan, each with the 95% confidence
interval of the mean (Student's t over the replications) on the makespan and
on the slowest rank's mean iteration time, and the winner is compared with
each other strategy as the mean of the per-seed ratios T_other / T_winner,
with its interval: "A is 1.23 ± 0.04× faster than B".
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from idlewave.units import fmt_si, fmt_time

#: Confidence level of every interval.
LEVEL = 0.95


def interval(values: np.ndarray) -> tuple[float, float | None]:
    """Mean and half-width of its `LEVEL` confidence interval (None with one value)."""
    n = len(values)
    mean = float(np.mean(values))
    if n < 2:
        return mean, None
    from scipy import stats

    half = float(stats.t.ppf((1 + LEVEL) / 2, n - 1) * np.std(values, ddof=1) / math.sqrt(n))
    return mean, half


#: A sweep table's columns that are a point's results (and its id), not swept keys; besides them, a
#: scenario with jobs has each job's figures (`job_column`).
MEASURED = ("id", "status", "makespan_s", "events", "iteration_mean_s", "slowest_iteration_mean_s", "error")
#: The figures of each job kept in a sweep's table, as the summary names them (job_<name>_<figure>).
JOB_FIGURES = ("makespan_s", "slowdown")


def job_column(name: str) -> bool:
    """Whether a sweep table's column is one job's figure (swept keys are dotted paths, never job_…)."""
    return name.startswith("job_") and name.endswith(tuple(f"_{f}" for f in JOB_FIGURES))


def measured(name: str) -> bool:
    """Whether a sweep table's column is a result rather than a swept key."""
    return name in MEASURED or job_column(name)


def _label(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def rank(frame: pl.DataFrame, strategy: str) -> list[dict]:
    """Per condition (the other swept keys), the strategies ranked; `frame`
    is a sweep table with `replica`, `makespan_s` and
    `slowest_iteration_mean_s` columns."""
    done = frame.filter(pl.col("status") == "done") if "status" in frame.columns else frame
    conditions = [c for c in done.columns if not measured(c) and c not in ("replica", "seed", strategy)]
    out = []
    groups = done.group_by(conditions, maintain_order=True) if conditions else [((), done)]
    for key, part in groups:
        cond = dict(zip(conditions, key if isinstance(key, tuple) else (key,)))
        rows: list[dict[str, Any]] = []
        for (s,), runs in part.group_by([strategy], maintain_order=True):
            runs = runs.sort("replica")
            m, h = interval(runs["makespan_s"].to_numpy())
            it = (runs["slowest_iteration_mean_s"].drop_nulls().to_numpy() if "slowest_iteration_mean_s" in runs.columns
                  else np.array([]))
            im, ih = interval(it) if len(it) else (None, None)
            rows.append({"strategy": _label(s), "replications": runs.height, "makespan_mean_s": m, "makespan_ci_s": h,
                         "slowest_iteration_mean_s": im, "slowest_iteration_ci_s": ih,
                         "_by_replica": dict(zip(runs["replica"].to_list(), runs["makespan_s"].to_list()))})
        rows.sort(key=lambda r: r["makespan_mean_s"])
        best = rows[0]
        for r in rows:
            r["rank"] = rows.index(r) + 1
            if r is best:
                continue
            common = sorted(set(best["_by_replica"]) & set(r["_by_replica"]))
            ratios = np.array([r["_by_replica"][i] / best["_by_replica"][i] for i in common])
            if len(ratios):
                rm, rh = interval(ratios)
                r["slower_than_best"] = rm
                r["slower_than_best_ci"] = rh
                r["verdict"] = verdict(best["strategy"], r["strategy"], rm, rh, len(ratios))
        for r in rows:
            del r["_by_replica"]
        out.append({"condition": {k: _label(v) for k, v in cond.items()}, "ranking": rows})
    return out


def verdict(a: str, b: str, ratio: float, half: float | None, n: int) -> str:
    """The comparison in words."""
    if half is None:
        return f"{a} is {ratio:.3g}× faster than {b} (one replication: no interval)"
    if ratio - half <= 1.0:
        return f"{a} and {b} cannot be told apart: {ratio:.3g} ± {half:.2g}× ({LEVEL:.0%} CI, {n} seeds)"
    return f"{a} is {ratio:.3g} ± {half:.2g}× faster than {b} ({LEVEL:.0%} CI over {n} seeds, makespan)"


def condition_label(condition: dict) -> str:
    """A short label for an axis: each key's last part and a short form of its
    value (a noise list by its sources' kinds and main figures)."""
    import textwrap

    def short(v) -> str:
        try:
            v = json.loads(v) if isinstance(v, str) else v
        except ValueError:
            return str(v)
        if isinstance(v, list):
            return " + ".join(short(x) for x in v) if v else "none"
        if isinstance(v, dict):
            figures = [fmt_si(v[k], "Hz") for k in ("rate_hz",) if k in v] + [fmt_time(v[k]) for k in ("duration_s",) if k in v]
            return " ".join([str(v.get("kind", "table")), *figures])
        return str(v)

    text = "\n".join(f"{k.split('.')[-1]}: {short(v)}" for k, v in condition.items()) or "all points"
    return "\n".join(textwrap.fill(line, 24) for line in text.splitlines())


def slowest_iteration_mean(point_dir: Path) -> float | None:
    """The mean over iterations of the slowest rank's iteration time."""
    t = point_dir / "timers.parquet"
    if not t.exists():
        return None
    frame = pl.read_parquet(t, glob=False)
    if "iteration_s" not in frame.columns or frame.height == 0:
        return None
    # the mean over iterations in iteration order: a float sum in the order a
    # hash group_by happens to give differed in its last bits from run to run
    per = (frame.group_by("iteration", maintain_order=True).agg(pl.col("iteration_s").max()).sort("iteration")
           ["iteration_s"].drop_nans().drop_nulls())
    return float(per.to_numpy().mean()) if per.len() else None


def figure(result: list[dict], strategy: str, out: Path) -> Path:
    """A grouped bar chart: per condition, each strategy's mean makespan with its interval."""
    from idlewave.results import save_figure

    return save_figure(draw(result, strategy), out / "ranking.png")


def draw(result: list[dict], strategy: str):
    """The figure of `figure`, not yet written (the report shows it as SVG);
    each strategy in its colour of every figure (series_colour)."""
    from idlewave.results import pyplot

    plt = pyplot()

    from idlewave.results import series_colour, time_unit

    strategies = sorted({r["strategy"] for c in result for r in c["ranking"]})
    labels = [condition_label(c["condition"]) for c in result]
    if len(set(labels)) < len(labels):  # short labels collide: number them, the table has the full conditions
        labels = [f"{i + 1}: {x}" for i, x in enumerate(labels)]
    top = max(r["makespan_mean_s"] + (r["makespan_ci_s"] or 0) for c in result for r in c["ranking"])
    scale, unit = time_unit(top)
    width = 0.8 / len(strategies)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.6 * len(result) * len(strategies) + 3), 4), layout="constrained")
    for i, s in enumerate(strategies):
        xs, ys, es = [], [], []
        for j, c in enumerate(result):
            r = next((r for r in c["ranking"] if r["strategy"] == s), None)
            if r is not None:
                xs.append(j + (i - (len(strategies) - 1) / 2) * width)
                ys.append(r["makespan_mean_s"] * scale)
                es.append((r["makespan_ci_s"] or 0) * scale)
        ax.bar(xs, ys, width, yerr=es, capsize=3, label=s, color=series_colour(s))
    ax.set_xticks(range(len(result)), labels)
    ax.set_ylabel(f"makespan [{unit}]")
    n = max(r["replications"] for c in result for r in c["ranking"])
    ax.set_title(f"Mean makespan ± {LEVEL:.0%} CI ({n} seeds)", fontsize="medium")
    fig.legend(loc="outside right upper", frameon=False, fontsize="small", title=strategy.split(".")[-1])
    return fig
