"""Robust comparison of noisy timings (HMM paper §4): cumulative sums of
sorted T_k^max and their percentage differences, fast-regime means, band
depth of per-rank CDFs (functional boxplots), two-sample KS tests."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.stats import ks_2samp
from statsmodels.graphics.functional import banddepth


def cumulative_sorted(tmax: np.ndarray) -> np.ndarray:
    """S_K = Σ_{k ≤ K} of T^max sorted ascending (Fig. 11/13)."""
    return np.cumsum(np.sort(np.asarray(tmax, dtype=float)))


def percent_difference(a: np.ndarray, b: np.ndarray) -> float:
    """How much less (negative) or more time method a takes than b in total, %."""
    return float((np.sum(a) / np.sum(b) - 1) * 100)


def fast_mean(times: np.ndarray, labels: np.ndarray) -> float:
    """Mean of the samples in regime 0 (the fastest)."""
    sel = np.asarray(times)[np.asarray(labels) == 0]
    return float(sel.mean()) if sel.size else float("nan")


def cdf_curves(T: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Per-rank empirical CDFs evaluated on a common grid (ranks × grid)."""
    T = np.sort(np.asarray(T, dtype=float), axis=1)
    return np.stack([np.searchsorted(row, grid, side="right") / row.size for row in T])


def band_depth(curves: np.ndarray) -> np.ndarray:
    """Modified band depth of each curve (statsmodels), for functional boxplots."""
    if curves.shape[0] < 3:
        return np.ones(curves.shape[0])
    return banddepth(curves, method="MBD")


def ks_tests(samples: dict[str, np.ndarray]) -> list[dict]:
    """Two-sample Kolmogorov–Smirnov test for every pair."""
    out = []
    for (a, x), (b, y) in itertools.combinations(samples.items(), 2):
        r = ks_2samp(np.ravel(x), np.ravel(y))
        out.append({"a": a, "b": b, "statistic": float(r.statistic), "pvalue": float(r.pvalue)})
    return out
