"""Benchmark of regime extraction at the HMM paper's scale: fit (20 ranks ×
8,192 iterations, 3 regimes) and Viterbi decode of 1,792 ranks × 8,192
iterations; one JSON line with the wall times."""

from __future__ import annotations

import json
import time

import numpy as np

from idlewave.stats.regimes import decode, fit


def synthetic(ranks: int, iters: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mu, sd, stay = np.array([1.79e-3, 1.89e-3, 2.89e-3]), np.array([5.9e-5, 5.5e-5, 6e-4]), 0.98
    trans = np.full((3, 3), (1 - stay) / 2) + np.eye(3) * (stay - (1 - stay) / 2)
    states = np.zeros(iters, dtype=np.int64)
    u = rng.random(iters)
    cum = np.cumsum(trans, axis=1)
    for k in range(1, iters):
        states[k] = np.searchsorted(cum[states[k - 1]], u[k])
    return np.abs(mu[states] + sd[states] * rng.standard_normal((ranks, iters)))


def main(ranks: int = 1792, iters: int = 8192) -> None:
    T = synthetic(ranks, iters)
    t0 = time.perf_counter()
    f = fit(T, 3)
    t1 = time.perf_counter()
    labels = decode(f, T)
    t2 = time.perf_counter()
    print(json.dumps({"case": "regimes_1792x8192", "samples": int(T.size), "fit_s": round(t1 - t0, 2),
                      "decode_s": round(t2 - t1, 2), "total_s": round(t2 - t0, 2),
                      "regime_shares": np.bincount(labels.ravel(), minlength=3).tolist()}))


if __name__ == "__main__":
    main()
