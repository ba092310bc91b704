"""Regime extraction (HMM paper §2.2, Algorithm 1, §3.1): pick ~20 ranks,
half equidistant in the ranking by median time and half by 95th
percentile, take up to `max_iterations` iterations, fit a Gaussian HMM
(hmmlearn) to the log times (or the times, `space="linear"`, as the paper)
from data-driven starts (k-means, quantiles, jittered quantiles) keeping
the best likelihood, and decode every rank's sequence with Viterbi.
Regimes are sorted fast → slow, so labels agree across methods fitted
separately. The number of regimes is chosen by BIC (AIC also reported)
over 1..6 unless given, among the models whose every state lasts (expected
dwell of at least 3 iterations): a state the chain leaves at once holds
outliers or a heavy tail, not a regime. A Gaussian mixture (scikit-learn)
is the non-temporal alternative.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hmmlearn.hmm import GaussianHMM
from sklearn.cluster import KMeans
from sklearn.mixture import GaussianMixture

from idlewave.stats.data import DataError

# hmmlearn logs every unvisited state and non-improving step; restarts handle both
logging.getLogger("hmmlearn").setLevel(logging.ERROR)


@dataclass
class Fit:
    n_regimes: int
    mu: np.ndarray  # sorted fast -> slow
    sigma: np.ndarray
    transmat: np.ndarray
    startprob: np.ndarray
    log_likelihood: float
    criteria: dict = field(default_factory=dict)  # n -> {"bic":, "aic":}
    model: Any = None
    order: Any = None  # model state -> sorted regime
    loc: float = 0.0  # the model sees (T' - loc) / scale, T' = log T or T (space)
    scale: float = 1.0
    space: str = "linear"

    def summary(self, T: np.ndarray, labels: np.ndarray) -> dict:
        """Per regime: the fitted emission's μ and σ (in log space, the
        fitted log-normal's mean and standard deviation) and the mean, sd and
        share of the samples `labels` puts in it (None where it holds none)."""
        T, labels = np.asarray(T, dtype=float).ravel(), labels.ravel()
        share = np.bincount(labels, minlength=self.n_regimes) / labels.size

        def moments(i: int) -> tuple[float | None, float | None]:
            x = T[labels == i]
            if not x.size:
                return None, None
            top = float(np.max(np.abs(x)))
            if 0 < top and not 1e-100 < top < 1e100:  # squares would overflow (sd inf) or underflow (sd 0): scaled
                y = x / top
                return float(y.mean()) * top, float(y.std()) * top
            return float(x.mean()), float(x.std())

        regimes = []
        for i in range(self.n_regimes):
            mean, sd = moments(i)
            regimes.append({"regime": i, "mean": mean, "sd": sd, "mu": float(self.mu[i]),
                            "sigma": float(self.sigma[i]), "share": float(share[i])})
        return {
            "n_regimes": self.n_regimes,
            "criteria": {str(k): v for k, v in self.criteria.items()},
            "log_likelihood": self.log_likelihood,
            "regimes": regimes,
            "transmat": self.transmat.tolist(),
        }


def representative_ranks(T: np.ndarray, count: int = 20) -> np.ndarray:
    """`count` ranks: half equidistant in the ranking by median time, half
    by 95th percentile, so that ranks with a rare slow regime (their median
    unchanged) are among them."""
    if T.shape[0] <= count:
        return np.arange(T.shape[0])

    def spread(order: np.ndarray, k: int) -> list[int]:
        return [int(r) for r in order[np.round(np.linspace(0, len(order) - 1, k)).astype(int)]]

    picked = spread(np.argsort(np.median(T, axis=1), kind="stable"), count - count // 2)
    by_tail = np.argsort(np.quantile(T, 0.95, axis=1), kind="stable")
    rest = by_tail[~np.isin(by_tail, picked)]
    return np.array(sorted(picked + spread(rest, count - len(picked))))


def _hmm(n: int, X: np.ndarray, lengths: list[int], seed: int, restarts: int, jittered: bool = False) -> GaussianHMM:
    """Best of `restarts` fits started from the data's quantiles (jittered
    after the first start). X is standardized (hmmlearn's covariance prior
    would otherwise swamp the variances of times in seconds)."""
    rng = np.random.default_rng(seed)
    x = X[:, 0]
    qs = np.quantile(x, (np.arange(n) + 0.5) / n)
    edges = np.quantile(x, np.linspace(0, 1, n + 1))
    spread = np.diff(edges)
    var0 = np.array([np.var(x[(x >= edges[i]) & (x <= edges[i + 1])]) for i in range(n)])
    floor = max(np.var(x) * 1e-6, 1e-30)
    # data-driven starts: k-means centres (clusters of any share), then the
    # quantiles (equal shares), then jittered quantiles
    starts = [np.sort(KMeans(n, n_init=4, random_state=seed).fit(X).cluster_centers_[:, 0])] if n > 1 else []
    starts.append(qs)
    best, best_key = None, (False, -np.inf)
    for r in range(max(restarts, len(starts))):
        means = starts[r] if r < len(starts) else np.sort(qs + rng.normal(0, 0.25, n) * np.maximum(spread, np.sqrt(floor)))
        # tol: the EM stops once the log-likelihood gains less than 1e-5 per sample
        # short runs from every start, then the best one run to convergence
        m = GaussianHMM(n_components=n, covariance_type="diag", n_iter=SHORT_RUN, tol=1e-5 * len(X), init_params="",
                        params="stmc", random_state=int(rng.integers(2**31)), min_covar=floor, covars_prior=1e-12)
        m.startprob_ = np.full(n, 1.0 / n)
        m.transmat_ = np.full((n, n), 0.1 / max(n - 1, 1)) + np.eye(n) * (0.9 - 0.1 / max(n - 1, 1)) if n > 1 else np.ones((1, 1))
        m.means_ = means.reshape(-1, 1)
        m.covars_ = np.maximum(var0, floor).reshape(-1, 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                m.fit(X, lengths)
            except ValueError:
                continue
            if not all(np.isfinite(a).all() for a in (m.startprob_, m.transmat_, m.means_, m.covars_)):
                continue  # a degenerate restart (e.g. a state collapsed on identical times)
            # a state the data never visits ends with an empty transition row
            rows = m.transmat_.sum(axis=1)
            if (rows == 0).any():
                t = m.transmat_.copy()
                t[rows == 0] = np.eye(n)[rows == 0]
                m.transmat_ = t
            try:
                ll = m.score(X, lengths)
            except ValueError:
                continue
        # the best likelihood among fits whose states all last, else among all
        key = (_persistent(m), ll)
        if np.isfinite(ll) and (best is None or key > best_key):
            best, best_key = m, key
    if best is None and not jittered:
        # Simulated timings often repeat exactly (a regime of identical
        # times has no variance for EM to work with): retry on the data with
        # a seeded jitter far below its spread.
        noise = np.random.default_rng(seed).normal(0, 1e-4, X.shape)
        return _hmm(n, X + noise, lengths, seed, restarts, jittered=True)
    if best is None:
        raise DataError(f"the HMM with {n} regimes could not be fitted (degenerate data?)")
    if not best.monitor_.converged:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            longer = copy.deepcopy(best)
            longer.n_iter = FULL_RUN - SHORT_RUN
            try:
                longer.fit(X, lengths)
                if all(np.isfinite(a).all() for a in (longer.transmat_, longer.means_, longer.covars_)) and \
                        _persistent(longer) >= _persistent(best) and longer.score(X, lengths) >= best.score(X, lengths):
                    best = longer
            except ValueError:
                pass
    return best


def _space(T: np.ndarray, space: str) -> np.ndarray:
    """The values the HMM sees: log times (timings are positive and skewed
    right, a regime's spread grows with its mean) or the times themselves."""
    if space == "log":
        if (T <= 0).any():
            raise DataError("log-space regimes need positive times: for data with zeros use --space linear "
                            "(space='linear' in Python)")
        return np.log(T)
    if space != "linear":
        raise DataError(f"space must be 'log' or 'linear', got {space!r}")
    return T


# EM iterations of each start, and of the best start's run to convergence.
SHORT_RUN = 20
FULL_RUN = 100

# A regime lasts: the chain stays in it for at least 3 iterations on average
# (a state split off a regime, alternating with it, stays about 2).
MIN_DWELL = 3.0


def _persistent(m: GaussianHMM) -> bool:
    """Whether every state's expected dwell 1/(1 − a_ii) reaches MIN_DWELL."""
    return bool((np.diag(m.transmat_) >= 1 - 1 / MIN_DWELL).all())


def _centre_and_spread(a: np.ndarray) -> tuple[float, float]:
    """Mean and standard deviation (1 where there is no spread), taken on
    values scaled to at most 1 so that the squares of times near the float
    range do not overflow."""
    top = float(np.abs(a).max()) or 1.0
    y = a / top
    return float(y.mean()) * top, float(y.std()) * top or 1.0


# CPU seconds of one EM iteration per sample: c1·K + c2·K² for K states
# (hmmlearn, fitted to 0.30, 0.74 and 1.85 s for 8, 16 and 32 states on
# 40,000 samples).
EM_SECONDS_PER_SAMPLE = (7.7e-7, 2.1e-8)
# Fits that may take longer than this are announced (`note`).
ANNOUNCE_SECONDS = 300.0


def _sweep_restarts(candidates: list[int], restarts: int) -> int:
    """Restarts per candidate count: all of them for a given count; a sweep
    over counts takes fewer (the chosen count gets them all after it)."""
    return restarts if len(candidates) == 1 else min(restarts, 2)


def expected_seconds(samples: int, candidates: list[int], restarts: int) -> float:
    """About how long fitting takes at most (every EM run to its iteration
    limit; most converge sooner): every candidate's short runs, then the
    chosen one's run to convergence (and its restarts when the sweep used
    fewer)."""
    c1, c2 = EM_SECONDS_PER_SAMPLE

    def per_iteration(n: int) -> float:
        return samples * (c1 * n + c2 * n * n)

    sweep = _sweep_restarts(candidates, restarts)
    last = max(candidates)
    return sum(sweep * SHORT_RUN * per_iteration(n) for n in candidates) + \
        (FULL_RUN + (restarts - sweep) * SHORT_RUN) * per_iteration(last)


def fit(T: np.ndarray, n_regimes: int | None = None, *, max_regimes: int = 6, ranks: int = 20,
        max_iterations: int = 8192, restarts: int = 5, seed: int = 0, criterion: str = "bic",
        space: str = "log", note: Callable[[str], None] | None = None, step: Callable[[str], None] | None = None) -> Fit:
    """Algorithm 1's fitting steps on T[p, k] (a single series for T^max);
    `note` hears of a fit that may take more than five minutes; `step(what)`
    of each of its `fit_steps` steps as it begins."""
    T = np.asarray(T, dtype=float)
    sub = T[representative_ranks(T, ranks)][:, :max_iterations] if T.shape[0] > 1 else T[:, :max_iterations]
    sub = _space(sub, space)
    loc, scale = _centre_and_spread(sub)
    X = (sub.reshape(-1, 1) - loc) / scale
    lengths = [sub.shape[1]] * sub.shape[0]
    candidates = [n_regimes] if n_regimes else list(range(1, max_regimes + 1))
    if n_regimes is not None and not 1 <= n_regimes <= 64:
        raise DataError(f"the number of regimes must be between 1 and 64, got {n_regimes}")
    distinct = len(np.unique(X))
    need = max(candidates)
    if distinct == 1 and X.shape[0] >= 10:
        raise DataError(f"all {X.shape[0]} samples are equal: there are no regimes to tell apart")
    if X.shape[0] < 10 * need or distinct < need:
        which = f"{need} regimes" if n_regimes else f"a choice among 1 to {need} regimes (give --regimes N for fewer)"
        raise DataError(f"{X.shape[0]} samples ({distinct} distinct) are too few for {which}; it needs at least "
                        f"{10 * need} samples and {need} distinct values")
    seconds = expected_seconds(X.shape[0], candidates, restarts)
    if note and seconds > ANNOUNCE_SECONDS:
        note(f"fitting {which_counts(candidates)} to {X.shape[0]:,} samples takes up to about {seconds / 60:.0f} CPU "
             f"minutes (fewer regimes with --regimes, or fewer --restarts, are faster; Ctrl-C stops)")
    models, crit = {}, {}
    sweep = _sweep_restarts(candidates, restarts)
    for n in candidates:
        if step:
            step(f"fitting {n} regime{'s' if n > 1 else ''}")
        m = _hmm(n, X, lengths, seed + n, sweep)
        models[n] = m
        crit[n] = {"bic": float(m.bic(X, lengths)), "aic": float(m.aic(X, lengths)), "persistent": _persistent(m)}
    # a state the chain leaves at once is not a regime but isolated values
    # (outliers, a heavy tail): counts with such a state are not chosen
    admissible = [n for n in crit if crit[n]["persistent"]] or [1]
    chosen = n_regimes or min(admissible, key=lambda n: crit[n][criterion])
    if step:
        step(f"refitting {chosen} regimes")
    m = models[chosen] if sweep == restarts else _hmm(chosen, X, lengths, seed + chosen, restarts)
    order = np.argsort(m.means_[:, 0])
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(chosen)
    mean, sd = loc + scale * m.means_[order, 0], scale * np.sqrt(m.covars_[order, 0, 0])
    if space == "log":  # each regime's log-normal mean and standard deviation, in time units
        mean, sd = np.exp(mean + sd**2 / 2), np.exp(mean + sd**2 / 2) * np.sqrt(np.expm1(sd**2))
    return Fit(chosen, mean, sd, m.transmat_[np.ix_(order, order)], m.startprob_[order], float(m.score(X, lengths)),
               crit, m, rank_of, loc, scale, space)


def fit_steps(n_regimes: int | None, max_regimes: int = 6) -> int:
    """How many times `fit` calls its `step`: each count of regimes tried, and the final fit."""
    return (1 if n_regimes else max_regimes) + 1


def which_counts(candidates: list[int]) -> str:
    return f"{candidates[0]} regimes" if len(candidates) == 1 else f"1 to {max(candidates)} regimes"


def decode(f: Fit, T: np.ndarray) -> np.ndarray:
    """Viterbi regimes (0 = fastest) of every rank's whole sequence."""
    T = np.asarray(T, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        states = f.model.predict((_space(T, f.space).reshape(-1, 1) - f.loc) / f.scale, [T.shape[1]] * T.shape[0])
    return f.order[states].reshape(T.shape)


def gmm(T: np.ndarray, n_regimes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-temporal alternative: (mu, sigma, labels) of a Gaussian mixture, fast → slow."""
    raw = np.asarray(T, dtype=float).reshape(-1, 1)
    loc, scale = _centre_and_spread(raw)
    x = (raw - loc) / scale
    qs = np.quantile(x[:, 0], (np.arange(n_regimes) + 0.5) / n_regimes).reshape(-1, 1)
    g = GaussianMixture(n_regimes, means_init=qs, random_state=seed, reg_covar=1e-9).fit(x)
    order = np.argsort(g.means_[:, 0])
    rank_of = np.empty_like(order)
    rank_of[order] = np.arange(n_regimes)
    labels = rank_of[g.predict(x)].reshape(np.shape(T))
    return loc + scale * g.means_[order, 0], scale * np.sqrt(g.covariances_[order].ravel()), labels
