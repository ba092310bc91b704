"""`idlewave regimes`: fit, decode, tables, comparisons and figures for one
or more timing sets (methods or runs), written to a directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from idlewave.results import write_dir, write_json, write_parquet
from idlewave.stats import compare, figures
from idlewave.stats.data import DataError
from idlewave.stats.regimes import decode, fit, fit_steps, gmm


def analyze(datasets: dict[str, np.ndarray], out: str | Path, *, n_regimes: int | None = None, seed: int = 0,
            restarts: int = 5, use_max: bool = False, figures_on: bool = True, extra: dict | None = None,
            space: str = "log", note: Callable[[str], None] | None = None,
            progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Per dataset: Algorithm 1 (or the T^max series, Remark 1), regimes of
    every sample, regime table, GMM alternative; across datasets: KS tests,
    cumulative sums and percentage differences, fast-regime means.

    `out` is written whole (results.write_dir): a failure (bad data, a full
    or read-only disk, an interrupt) leaves the previous result, or nothing.
    `progress(what, k, n)`: step k of n begins."""
    summary: dict = {}
    write_dir(Path(out), lambda tmp: summary.update(_analyze(
        datasets, tmp, n_regimes=n_regimes, seed=seed, restarts=restarts, use_max=use_max, figures_on=figures_on,
        extra=extra, space=space, note=note, progress=progress)))
    return summary


def _analyze(datasets: dict[str, np.ndarray], out: Path, *, n_regimes: int | None, seed: int, restarts: int,
             use_max: bool, figures_on: bool, extra: dict | None, space: str, note: Callable[[str], None] | None,
             progress: Callable[[str, int, int], None] | None = None) -> dict:
    summary: dict[str, dict] = {"datasets": {}, "comparisons": {}}
    tmax = {}
    # per dataset: the fit's steps, then decoding, then the figures; then the comparison
    total = len(datasets) * (fit_steps(n_regimes) + 1 + figures_on) + (len(datasets) > 1)
    done = [0]

    def step(what: str) -> None:
        done[0] += 1
        if progress:
            progress(what, done[0], total)

    for name, T in datasets.items():
        where = f"{name}: " if len(datasets) > 1 else ""
        d = out / name if len(datasets) > 1 else out
        d.mkdir(parents=True, exist_ok=True)
        series = T.max(axis=0, keepdims=True) if use_max else T
        def fit_step(what: str, where: str = where) -> None:
            step(where + what)

        try:
            f = fit(series, n_regimes, seed=seed, restarts=restarts, space=space, note=note, step=fit_step)
        except DataError as e:
            raise DataError(f"{name}: {e}") from None
        step(f"{where}decoding")
        labels = decode(f, series)
        mu, sigma, glabels = gmm(series, f.n_regimes, seed)
        ranks, iters = series.shape
        frame = pl.DataFrame({"rank": np.repeat(np.arange(ranks, dtype=np.uint32), iters),
                              "iteration": np.tile(np.arange(iters, dtype=np.uint32), ranks),
                              "time": series.ravel(), "regime": labels.ravel().astype(np.uint8)})
        write_parquet(d / "regimes.parquet", frame)
        s = f.summary(series, labels)
        s["gmm"] = [{"regime": i, "mu": float(mu[i]), "sigma": float(sigma[i]),
                     "share": float(np.mean(glabels == i))} for i in range(f.n_regimes)]
        s["ranks"], s["iterations"], s["series"] = ranks, iters, "max over ranks" if use_max else "per rank"
        s["space"] = space
        tm = T.max(axis=0)
        tmax[name] = tm
        s["fast_regime_mean"] = compare.fast_mean(series, labels)
        s["mean"] = float(series.mean())
        if figures_on:
            step(f"{where}figures")
            figs = figures.heatmap(T, d) + figures.cdf_boxplot(T, d)
            if not use_max:
                figs += figures.regime_cdfs(series, labels, d)
            median_rank = int(np.argsort(np.median(series, axis=1))[ranks // 2])
            figs += figures.regime_series(series[median_rank], labels[median_rank], d)
            if extra and name in extra:
                t_in, t_out = extra[name]
                figs += figures.in_out_scatter(t_in, t_out, d)
            s["figures"] = figs
        write_json(d / "summary.json", s)
        summary["datasets"][name] = s
    if len(datasets) > 1:
        step("comparing the inputs")
        names = list(datasets)
        # totals compare like with like: over the iterations every input has
        common = min(t.size for t in tmax.values())
        totals = {n: t[:common] for n, t in tmax.items()}
        summary["comparisons"] = {
            "ks": compare.ks_tests({n: tmax[n] for n in names}),
            "iterations_compared": common,
            "percent_difference_total_tmax": {f"{a} vs {b}": compare.percent_difference(totals[a], totals[b])
                                              for a in names for b in names if a != b},
            "fast_regime_mean": {n: summary["datasets"][n]["fast_regime_mean"] for n in names},
        }
        if any(t.size != common for t in tmax.values()):
            counts = ", ".join(f"{n} {t.size}" for n, t in tmax.items())
            summary["comparisons"]["note"] = (f"the inputs have different iteration counts ({counts}): totals and "
                                              f"cumulative sums compare the first {common} iterations of each")
        tmax = totals
        if figures_on:
            summary["comparisons"]["figures"] = figures.cumulative(tmax, out)
        write_json(out / "summary.json", summary)
    return summary
