"""Bounds on what nonblocking collectives can gain (Widener et al., the
noise/nonblocking-collectives paper §2.1, §3.2, §4.1).

An execution is a sequence of work intervals W_1..W_k and communication
intervals c_1..c_{k-1} (collective or point-to-point) with noise effects
n_i. Blocking: T_s = W_k + Σ (c_i + n_i + W_i) (Eq. 1). Nonblocking, each
collective overlapping the work interval before it:
T̂_s = W_k + Σ_coll max(c_i + n_i, W_i) + Σ_p2p (c_i + n_i + W_i).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from idlewave import _engine


@dataclass(frozen=True)
class Interval:
    """Work W_i followed by communication c_i (with noise effect n_i)."""

    work: float
    comm: float = 0.0
    noise: float = 0.0
    collective: bool = True


def blocking_time(intervals: Sequence[Interval], last_work: float) -> float:
    """Eq. (1): T_s = W_k + Σ_{i<k} (c_i + n_i + W_i)."""
    return last_work + sum(iv.comm + iv.noise + iv.work for iv in intervals)


def nonblocking_time(intervals: Sequence[Interval], last_work: float) -> float:
    """Eq. (2): collectives overlap the work interval that precedes them."""
    return last_work + sum(
        max(iv.comm + iv.noise, iv.work) if iv.collective else iv.comm + iv.noise + iv.work for iv in intervals
    )


def speedup(intervals: Sequence[Interval], last_work: float) -> float:
    """Eq. (3) (and its noisy form of §4.1): T_s / T̂_s."""
    return blocking_time(intervals, last_work) / nonblocking_time(intervals, last_work)


def bound(beta: float, inflation: float = 1.0) -> dict:
    """Upper bounds on the speedup for computation-to-communication ratio β.

    Low noise (inflation 1): Eq. (4) (1+β)/β and Eq. (5) 1+β; the smaller
    holds. With noise inflating communication by γ = Σ(c_i+n_i)/Σc_i:
    Eq. (6) 1 + β/γ and Eq. (7) 1 + γ/β.
    """
    if not (beta > 0 and math.isfinite(beta)):  # β = ∞ makes Eq. (4) ∞/∞
        raise ValueError(f"beta must be a finite number > 0, got {beta}")
    if not (inflation >= 1 and math.isfinite(inflation)):
        raise ValueError(f"the noise inflation Σ(c+n)/Σc is a finite number ≥ 1, got {inflation}")
    eq6 = 1 + beta / inflation
    eq7 = 1 + inflation / beta
    return {
        "beta": beta,
        "inflation": inflation,
        "eq4": (1 + beta) / beta,
        "eq5": 1 + beta,
        "eq6": eq6,
        "eq7": eq7,
        "max_speedup": min(eq6, eq7),
        "tighter": "eq6" if eq6 <= eq7 else "eq7",
    }


# Table 1 of the paper: computation-to-communication ratio on 1024 nodes.
TABLE1_BETA = dict(_engine.table1_beta())  # Table 1, as the skeleton workload uses it


def table1() -> list[dict]:
    """Table 1: β and the maximum speedup min(Eq. 4, Eq. 5), to two decimals as printed."""
    return [{"application": app, "beta": b, "max_speedup": round(bound(b)["max_speedup"], 2)} for app, b in TABLE1_BETA.items()]
