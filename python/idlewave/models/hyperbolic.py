"""The hyperbolic performance model of the 2-D grid paper (§4.3):
y = a·η / (η + d), fitted by weighted log least squares
argmin Σ (1/η_i) · (log f(η_i)/g(η_i))², or approximated quickly by
a ≈ max g and d ≈ the η_i whose g is closest to a/2; compared with the
one-sided asymptotic model y = a − c/η.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares


def hyperbolic(eta, a: float, d: float):
    eta = np.asarray(eta, dtype=float)
    return a * eta / (eta + d)


def quick_fit(eta, g) -> tuple[float, float]:
    """Eq. (1), (2): a = max g, d = argmin_η |g − a/2|."""
    eta, g = np.asarray(eta, float), np.asarray(g, float)
    a = float(g.max())
    d = float(eta[np.argmin(np.abs(g - a / 2))])
    return a, d


def _check(eta, g):
    eta, g = np.asarray(eta, float), np.asarray(g, float)
    if eta.shape != g.shape or eta.size < 2:
        raise ValueError("need at least two (eta, performance) points of equal length")
    if (eta <= 0).any() or (g <= 0).any():
        raise ValueError("eta and the observed performance must be positive (the fit is in log space)")
    return eta, g


def fit(eta, g) -> dict:
    """Weighted log least squares, started from the quick approximation."""
    eta, g = _check(eta, g)
    a0, d0 = quick_fit(eta, g)
    w = np.sqrt(1.0 / eta)

    def residual(p):
        a, d = np.exp(p)
        return w * np.log(hyperbolic(eta, a, d) / g)

    sol = least_squares(residual, x0=np.log([a0, max(d0, 1e-300)]), method="lm")
    a, d = (float(x) for x in np.exp(sol.x))
    return {"a": a, "d": d, "quick_a": a0, "quick_d": d0, "cost": float(np.sum(residual(sol.x) ** 2)),
            "quick_cost": float(np.sum(residual(np.log([a0, d0])) ** 2))}


def asymptotic_fit(eta, g) -> dict:
    """The one-sided asymptotic model y = a − c/η, least squares in log space."""
    eta, g = _check(eta, g)
    design = np.column_stack([np.ones_like(eta), -1.0 / eta])
    (a, c), *_ = np.linalg.lstsq(design, g, rcond=None)
    pred = a - c / eta
    ok = pred > 0
    cost = float(np.sum((1.0 / eta[ok]) * np.log(pred[ok] / g[ok]) ** 2)) if ok.all() else float("inf")
    return {"a": float(a), "c": float(c), "cost": cost}


def compare(eta, g) -> dict:
    """Both models on the same data, with their weighted log costs."""
    h, s = fit(eta, g), asymptotic_fit(eta, g)
    return {"hyperbolic": h, "asymptotic": s, "better": "hyperbolic" if h["cost"] <= s["cost"] else "asymptotic"}
