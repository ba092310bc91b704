"""Calibration: postal α, β per protocol from ping-pong data (the protocol
limits found as breakpoints, or given), the node bandwidth for the max-rate
model from multi-pair data, and a platform TOML the simulator reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from idlewave.models.postal import LinkModel, Protocol

PROTOCOLS = ("short", "eager", "rendezvous")


@dataclass
class ProtocolFit:
    link: LinkModel
    rms_relative_error: float
    breakpoints_found: bool


# How the repetitions of one size are combined before fitting.
PER_SIZE = ("median", "mean", "min", "all")


def per_size(sizes, times, statistic: str = "median") -> tuple[np.ndarray, np.ndarray]:
    """One time per size: the repetitions' median (default: robust to the
    spikes a shared machine adds to a few of them), mean or minimum; or
    every sample as it is (`all`)."""
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if statistic not in PER_SIZE:
        raise ValueError(f"the per-size statistic must be one of {', '.join(PER_SIZE)}, got {statistic!r}")
    if statistic == "all" or n.shape != t.shape:
        return n, t
    uniq, group = np.unique(n, return_inverse=True)
    groups = [t[group == k] for k in range(uniq.size)]
    if statistic == "median":
        return uniq, np.array([np.median(g) for g in groups])
    return uniq, np.array([g.mean() if statistic == "mean" else g.min() for g in groups])


def _segment(sizes: np.ndarray, times: np.ndarray) -> tuple[Protocol, float]:
    """Least squares of t = α + β·n weighted by 1/t (relative errors), with
    α, β ≥ 0 (a latency or a per-byte cost is never negative); returns the SSE."""
    w = 1.0 / times
    design = np.column_stack([np.ones_like(sizes), sizes]) * w[:, None]
    (alpha, beta), _ = nnls(design, times * w)
    resid = (alpha + beta * sizes - times) * w
    return Protocol(float(alpha), float(beta)), float(resid @ resid)


def fit_protocols(sizes, times, short_max: int | None = None, eager_max: int | None = None, min_points: int = 3) -> ProtocolFit:
    """Three affine pieces (short, eager, rendezvous). Without limits, every
    pair of breakpoints between distinct sizes is tried (each piece with at
    least `min_points` sizes) and the least relative error wins."""
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if n.shape != t.shape:
        raise ValueError("need matching size and time columns")
    if n.size < 2:
        raise ValueError(f"{n.size} row(s) of size and time: fitting needs at least two")
    if (t <= 0).any() or (n < 0).any():
        raise ValueError("times must be positive and sizes non-negative")
    for name, limit in (("short-max", short_max), ("eager-max", eager_max)):
        if limit is not None and limit < 0:
            raise ValueError(f"--{name} must be at least 0, got {limit}")
    if short_max is not None and eager_max is not None and short_max >= eager_max:
        raise ValueError(f"--short-max ({short_max}) must be below --eager-max ({eager_max})")
    order = np.argsort(n, kind="stable")
    n, t = n[order], t[order]
    uniq = np.unique(n)
    found = short_max is None or eager_max is None
    if found and len(uniq) < 3 * min_points:
        raise ValueError(f"{len(uniq)} distinct size(s): finding the protocol limits needs at least {3 * min_points} "
                         f"({min_points} per protocol); give --short-max and --eager-max to fit fewer")
    if found:
        # search the limits not given (a given one is kept as it is)
        k = len(uniq)
        firsts = [short_max] if short_max is not None else [int(uniq[i - 1]) for i in range(min_points, k + 1)]
        seconds = [eager_max] if eager_max is not None else [int(uniq[j - 1]) for j in range(1, k + 1)]
        best = None
        for lim1 in firsts:
            for lim2 in seconds:
                if lim2 <= lim1:
                    continue
                parts = [(n <= lim1), (n > lim1) & (n <= lim2), (n > lim2)]
                if any(np.unique(n[m]).size < min_points for m in parts):
                    continue
                fits = [_segment(n[m], t[m]) for m in parts]
                sse = sum(f[1] for f in fits)
                if best is None or sse < best[0]:
                    best = (sse, lim1, lim2, [f[0] for f in fits])
        if best is None:
            given = "" if short_max is None and eager_max is None else " with the limit given"
            raise ValueError(f"need at least {min_points} distinct sizes in each protocol to find the limits{given}")
        sse, short_max, eager_max, protos = best
    else:
        parts = [(n <= short_max), (n > short_max) & (n <= eager_max), (n > eager_max)]
        if any(m.sum() < 2 for m in parts):
            raise ValueError("each protocol needs at least two sizes in the data")
        fits = [_segment(n[m], t[m]) for m in parts]
        sse, protos = sum(f[1] for f in fits), [f[0] for f in fits]
    assert short_max is not None and eager_max is not None  # found above when not given
    link = LinkModel(protos[0], protos[1], protos[2], int(short_max), int(eager_max))
    return ProtocolFit(link, float(np.sqrt(sse / n.size)), found)


def node_bandwidth(pairs, sizes, times) -> float:
    """Largest aggregate off-node bandwidth of a multi-pair ping-pong:
    pairs × bytes / one-way time (bytes/s)."""
    p, n, t = (np.asarray(x, dtype=float) for x in (pairs, sizes, times))
    return float(np.max(p * n / t))


def platform_toml(off: LinkModel, on: LinkModel | None = None, *, ranks_per_node: int = 1,
                  node_bw: float = 0.0, source: str = "", note: str = "") -> str:
    """A platform file: postal α, β as L, G with o = g = 0."""

    def link(lk: LinkModel, prefix: str) -> list[str]:
        e, s, r = lk.eager, lk.short, lk.rendezvous
        lines = [f"[{prefix}]" if prefix != "network" else "[network]", "o_s = 0.0", "g_s = 0.0", "O_s_per_byte = 0.0",
                 f"L_s = {e.alpha:.6e}", f"G_s_per_byte = {max(e.beta, 0.0):.6e}", f"S_bytes = {lk.eager_max}"]
        lines += ["", f"[{prefix}.short]", f"max_bytes = {lk.short_max}", f"L_s = {s.alpha:.6e}", f"G_s_per_byte = {max(s.beta, 0.0):.6e}"]
        lines += ["", f"[{prefix}.rendezvous]", f"L_s = {r.alpha:.6e}", f"G_s_per_byte = {max(r.beta, 0.0):.6e}"]
        return lines

    head = ["# Postal parameters fitted by idlewave fit" + (f" from {source}" if source else ""),
            "# T = alpha + beta*n per protocol: L = alpha, G = beta, o = g = 0."] + ([f"# {note}"] if note else [])
    body = link(off, "network")
    body.insert(7, f"ranks_per_node = {ranks_per_node}")
    if node_bw > 0:
        body.insert(8, f"node_bandwidth_bytes_per_s = {node_bw:.6e}")
    if on is not None:
        body += [""] + link(on, "network.intra_node")
    return "\n".join(head + body) + "\n"
