"""The hyperbolic performance model of the 2-D grid paper (§4.3):
y = a·η / (η + d), fitted by weighted log least squares
argmin Σ (1/η_i) · (log f(η_i)/g(η_i))², or approximated quickly by
a ≈ max g and d ≈ the η_i whose g is closest to a/2; compared with the
one-sided asymptotic model y = a − c/η fitted by the same objective.
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
    if not (np.isfinite(eta).all() and np.isfinite(g).all()):  # NaN passes the sign test below
        raise ValueError("eta and the observed performance must be finite numbers (no NaN, infinity or empty cell)")
    if (eta <= 0).any() or (g <= 0).any():
        raise ValueError("eta and the observed performance must be positive (the fit is in log space)")
    if np.unique(eta).size < 2:
        raise ValueError(f"need at least two distinct eta values, got only {eta[0]:g}: a curve is not fixed by one point")
    return eta, g


# The asymptote a lies between half the best observation and this many
# times it, the knee d within this factor of the observed η range: a fit
# pressed against either bound is degenerate (the data do not pin it).
A_RANGE = 10.0
D_RANGE = 1e3
# A fit farther than this from the observation at the largest η is flagged.
MAX_MISS = 0.2


def _weights(eta: np.ndarray) -> np.ndarray:
    """The paper's 1/η weights, rescaled to sum to the number of points
    (the minimiser is unchanged; the cost compares across data sets)."""
    w = 1.0 / eta
    return w * (eta.size / w.sum())


def fit(eta, g) -> dict:
    """Weighted log least squares (the paper's objective), started from the
    quick approximation, with a and d bounded (A_RANGE, D_RANGE). A fit at
    a bound is reported as degenerate, with why, instead of a number
    nothing in the data supports."""
    eta, g = _check(eta, g)
    a0, d0 = quick_fit(eta, g)
    w = np.sqrt(_weights(eta))

    def residual(p):
        a, d = np.exp(p)
        return w * np.log(hyperbolic(eta, a, d) / g)

    lo = np.log([0.5 * g.max(), eta.min() / D_RANGE])
    hi = np.log([A_RANGE * g.max(), eta.max() * D_RANGE])
    x0 = np.clip(np.log([a0, max(d0, 1e-300)]), lo + 1e-9, hi - 1e-9)
    sol = least_squares(residual, x0=x0, bounds=(lo, hi), method="trf")
    a, d = (float(x) for x in np.exp(sol.x))
    at = np.isclose(sol.x, lo, rtol=0, atol=1e-6) | np.isclose(sol.x, hi, rtol=0, atol=1e-6)
    why = []
    if at[0]:
        why.append(f"the asymptote a is at its bound ({a:.4g}; observed up to {g.max():.4g}): the data do not "
                   "approach saturation" if a > g.max() else f"the asymptote a is at its bound ({a:.4g})")
    if at[1]:
        why.append(f"the knee d is at its bound ({d:.4g}; η observed from {eta.min():.4g} to {eta.max():.4g})")
    top = eta.argmax()
    miss = hyperbolic(eta[top], a, d) / g[top] - 1
    if abs(miss) > MAX_MISS:
        # the 1/η weights favour small η: a sharp knee leaves the plateau unfitted
        why.append(f"the fit misses the largest-η observation by {miss:+.0%} (a sharper knee than a hyperbola)")
    return {"a": a, "d": d, "quick_a": a0, "quick_d": d0, "cost": float(np.sum(residual(sol.x) ** 2)),
            "quick_cost": float(np.sum(residual(np.log([a0, d0])) ** 2)), "degenerate": "; ".join(why) or None}


def asymptotic_fit(eta, g) -> dict:
    """The one-sided asymptotic model y = a − c/η, fitted with the same
    weighted log objective as the hyperbolic one (a fair comparison),
    keeping a − c/η > 0 at every observed η."""
    eta, g = _check(eta, g)
    w = np.sqrt(_weights(eta))
    design = np.column_stack([np.ones_like(eta), -1.0 / eta])
    (a_lin, c_lin), *_ = np.linalg.lstsq(design, g, rcond=None)
    # parametrise by a > 0 and the share s = c/(a·η_min) < 1, so the model stays positive
    s0 = float(np.clip(c_lin / (max(a_lin, 1e-300) * eta.min()), -1e6, 1 - 1e-6)) if a_lin > 0 else 0.0

    def model(p):
        a, s = np.exp(p[0]), p[1]
        return a * (1 - s * eta.min() / eta)

    def residual(p):
        return w * np.log(model(p) / g)

    x0 = [np.log(max(a_lin, g.max()) if a_lin > 0 else g.max()), min(s0, 1 - 1e-6)]
    sol = least_squares(residual, x0=x0, bounds=([-np.inf, -np.inf], [np.inf, 1 - 1e-9]), method="trf")
    a, s = float(np.exp(sol.x[0])), float(sol.x[1])
    return {"a": a, "c": a * s * float(eta.min()), "cost": float(np.sum(residual(sol.x) ** 2))}


def compare(eta, g) -> dict:
    """Both models on the same data, fitted and scored with the same weighted log objective."""
    h, s = fit(eta, g), asymptotic_fit(eta, g)
    return {"hyperbolic": h, "asymptotic": s, "better": "hyperbolic" if h["cost"] <= s["cost"] else "asymptotic"}
