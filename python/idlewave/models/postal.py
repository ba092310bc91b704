"""The postal model with penalties (Krylov paper §5): T = α + β·n per
protocol (short / eager / rendezvous) and per link class (on-node,
off-node), plus

* max-rate: off-node bytes of a node share min(β_node, ppn·β_core):
  T = α + ppn·n / min(B_node, ppn·B_core) (B = bandwidth);
* hops: T_hop·n_hops, added to the first message of a series;
* congestion: (stalls/byte)·n·ppn·T_stall, times n_hops when combined with hops;
* synchronization: the wait at a collective, median (first quartile for
  nonblocking solvers) against max computation since the last sync;
* overlap: a nonblocking routine's penalties overlap the computation
  between its start and its wait; a blocking series of short/eager
  messages overlaps its penalties with the postal cost of every message
  after the first (pipelining).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Protocol:
    alpha: float  # s
    beta: float  # s per byte

    def time(self, n: float) -> float:
        return self.alpha + self.beta * n


@dataclass(frozen=True)
class LinkModel:
    """One link class: the three protocols and their limits."""

    short: Protocol
    eager: Protocol
    rendezvous: Protocol
    short_max: int = 1024
    eager_max: int = 8192

    def protocol(self, n: float) -> tuple[str, Protocol]:
        if n <= self.short_max:
            return "short", self.short
        if n <= self.eager_max:
            return "eager", self.eager
        return "rendezvous", self.rendezvous

    def time(self, n: float) -> float:
        return self.protocol(n)[1].time(n)

    @classmethod
    def uniform(cls, alpha: float, beta: float, eager_max: int = 8192) -> LinkModel:
        p = Protocol(alpha, beta)
        return cls(p, p, p, 0, eager_max)


@dataclass(frozen=True)
class PostalPlatform:
    on_node: LinkModel
    off_node: LinkModel
    ppn: int = 1
    node_bandwidth: float = 0.0  # bytes/s; 0 = no max-rate limit
    hop_latency: float = 0.0  # s per hop
    t_stall: float = 0.0  # s per stall
    stalls_per_byte: float = 0.0
    flop_time: float = 0.0  # s per flop (reductions)

    @classmethod
    def from_network(cls, net: dict) -> PostalPlatform:
        """From a validated scenario's [network] table (a preset or fit):
        α = L + 2o and β = max(G, O) per protocol — the affine form of the
        LogGOPS one-way time (exact when o = g = 0, as in the postal presets)."""

        def link(t: dict) -> LinkModel:
            def proto(x: dict | None) -> Protocol:
                x = x or t
                return Protocol(x["L_s"] + 2 * x["o_s"], max(x["G_s_per_byte"], x["O_s_per_byte"]))

            short_max = t["short"]["max_bytes"] if t.get("short") else 0
            return LinkModel(proto(t.get("short")), proto(None), proto(t.get("rendezvous")), short_max, t["S_bytes"])

        off = link(net)
        on = link(net["intra_node"]) if net.get("intra_node") else off
        return cls(on, off, net["ranks_per_node"], net.get("node_bandwidth_bytes_per_s", 0.0), net.get("hop_latency_s", 0.0),
                   net.get("stall_s", 0.0), net.get("stalls_per_byte", 0.0))

    @classmethod
    def preset(cls, name: str) -> PostalPlatform:
        from idlewave.scenario import parse_scenario

        return cls.from_network(parse_scenario(f'[network]\nplatform = "{name}"\n')["network"])

    def message(self, n: float, *, on_node: bool = False, hops: float = 0, maxrate: bool = False,
                congestion: bool = False, active: int | None = None) -> dict:
        """One message of n bytes: the postal time and each penalty (s)."""
        link = self.on_node if on_node else self.off_node
        name, proto = link.protocol(n)
        base = proto.time(n)
        ppn = active or self.ppn
        out: dict[str, Any] = {"protocol": name, "postal": base, "maxrate": 0.0, "hops": 0.0, "congestion": 0.0}
        if maxrate and not on_node and self.node_bandwidth > 0 and proto.beta > 0:
            shared = min(self.node_bandwidth, ppn / proto.beta)
            out["maxrate"] = proto.alpha + ppn * n / shared - base
        if hops and not on_node:
            out["hops"] = self.hop_latency * hops
        if congestion and not on_node:
            out["congestion"] = self.stalls_per_byte * n * ppn * self.t_stall * max(hops, 1)
        out["total"] = base + out["maxrate"] + out["hops"] + out["congestion"]
        return out


def series(messages: list[dict], *, blocking: bool, overlap_compute: float = 0.0) -> float:
    """A series of messages from one process. Blocking short/eager messages
    pipeline: the penalties overlap the postal cost of every message after
    the first. Nonblocking: the penalties overlap `overlap_compute`."""
    postal = sum(m["postal"] for m in messages)
    penalty = sum(m["total"] - m["postal"] for m in messages)
    if blocking:
        pipelined = all(m["protocol"] != "rendezvous" for m in messages)
        hidden = sum(m["postal"] for m in messages[1:]) if pipelined else 0.0
        return postal + max(0.0, penalty - hidden)
    return postal + max(0.0, penalty - overlap_compute)


def sync_penalty(compute: np.ndarray, nonblocking: bool = False) -> float:
    """Wait at a synchronization point from per-(rank, iteration) computation
    times since the last one: median over iterations of the slowest rank,
    minus the median (first quartile for nonblocking solvers) of all."""
    c = np.asarray(compute, dtype=float)
    if c.ndim != 2:
        raise ValueError("computation times must be ranks x iterations")
    typical = np.quantile(c, 0.25) if nonblocking else np.median(c)
    return float(np.median(c.max(axis=0)) - typical)


def allreduce(pl: PostalPlatform, nbytes: int, nodes: int, *, values: int | None = None, hops: float = 0,
              penalties: tuple[str, ...] = (), overlap: float | None = None) -> dict:
    """Recursive doubling on the node, then between nodes (§5.3):
    T = 2·n_on·T_on + 2·n_off·T_off + n·T_flop·(n_on + n_off). Nonblocking
    (`overlap` = the computation between start and wait, §6): the penalty
    terms overlap that computation, the postal terms do not."""
    n_on = math.log2(pl.ppn) if pl.ppn > 1 else 0.0
    n_off = math.log2(nodes) if nodes > 1 else 0.0
    on = pl.message(nbytes, on_node=True)
    off = pl.message(nbytes, hops=hops if "hops" in penalties else 0, maxrate="maxrate" in penalties,
                     congestion="congestion" in penalties, active=1)
    postal_s = 2 * n_on * on["postal"] + 2 * n_off * off["postal"]
    penalty_s = 2 * n_on * (on["total"] - on["postal"]) + 2 * n_off * (off["total"] - off["postal"])
    comm = postal_s + (penalty_s if overlap is None else max(0.0, penalty_s - overlap))
    values = nbytes // 8 if values is None else values
    comp = values * pl.flop_time * (n_on + n_off)
    return {"on_node_rounds": n_on, "off_node_rounds": n_off, "t_on_s": on["total"], "t_off_s": off["total"],
            "postal_s": postal_s, "penalty_s": penalty_s, "comm_s": comm, "comp_s": comp, "time_s": comm + comp}


def halo(pl: PostalPlatform, messages: list[tuple[int, bool, float]], *, blocking: bool = True, overlap_compute: float = 0.0,
         penalties: tuple[str, ...] = ()) -> dict:
    """A halo exchange of (bytes, on_node, hops) messages from one process:
    Σ T_on + Σ T_off, penalties pipelined (blocking) or overlapped."""
    msgs = [pl.message(n, on_node=on, hops=h if "hops" in penalties else 0, maxrate="maxrate" in penalties,
                       congestion="congestion" in penalties) for n, on, h in messages]
    plain = sum(m["postal"] for m in msgs)
    return {"messages": len(msgs), "on_node": sum(1 for _, on, _ in messages if on),
            "postal_s": plain, "time_s": series(msgs, blocking=blocking, overlap_compute=overlap_compute)}


HOP_ESTIMATES = ("best", "average", "max")


def topology_hops(platform: str, pairs: list[tuple[int, int]]) -> list[int]:
    """Links between the nodes of each pair in the platform's topology (0: the same node)."""
    from idlewave import _engine
    from idlewave.scenario import node_hops

    return node_hops(_engine.Scenario(f'[network]\nplatform = "{platform}"\n'), pairs)


def estimate_hops(hops: list[int], how: str) -> float:
    """One hop count for the hop and congestion penalties: the least, mean
    or largest over a pattern's off-node messages (0 if none leaves the node)."""
    if how not in HOP_ESTIMATES:
        raise ValueError(f"hops must be a number or one of {', '.join(HOP_ESTIMATES)}, got {how!r}")
    off = [h for h in hops if h > 0]
    if not off:
        return 0.0
    return float(min(off) if how == "best" else max(off) if how == "max" else sum(off) / len(off))


def allreduce_node_pairs(nodes: int) -> list[tuple[int, int]]:
    """The node pairs of recursive doubling between nodes 0..nodes−1 (block mapping)."""
    rounds = max(0, (nodes - 1).bit_length())
    return [(n, n ^ (1 << k)) for k in range(rounds) for n in range(nodes) if n ^ (1 << k) < nodes]


# Per method: blocking allreduces per iteration, and nonblocking ones with
# the computation they overlap (in units of the stage times).
PCG_METHODS: dict[str, dict[str, Any]] = {
    "pcg": {"blocking": 2},
    "sapcg": {"blocking": 1},
    "nbpcg": {"overlapped": [("spmv",), ("precond",)]},
    "pipecg": {"overlapped": [("precond", "spmv")]},
    "pipe2cg": {"overlapped_half": [("precond", "spmv", "precond", "spmv")]},
}


def pcg(method: str, *, spmv_s: float, precond_s: float, vector_s: float, allreduce_s: float, halo_s: float,
        iterations: int, sync_s: float = 0.0) -> dict:
    """The PCG family per iteration (§5.3): computation, halo, and the
    allreduces — blocking ones cost T_allr + sync, nonblocking ones only
    what the overlapped computation does not hide."""
    if method not in PCG_METHODS:
        raise ValueError(f"method must be one of {', '.join(PCG_METHODS)}, got {method!r}")
    stage = {"spmv": spmv_s, "precond": precond_s}
    spec = PCG_METHODS[method]
    comp = spmv_s + precond_s + vector_s
    reduce = spec.get("blocking", 0) * (allreduce_s + sync_s)
    for group in spec.get("overlapped", []):
        reduce += max(0.0, allreduce_s + sync_s - sum(stage[s] for s in group))
    for group in spec.get("overlapped_half", []):
        reduce += 0.5 * max(0.0, allreduce_s + sync_s - sum(stage[s] for s in group))
    per_iter = comp + halo_s + reduce
    return {"method": method, "iteration_s": per_iter, "reduce_s": reduce, "time_s": iterations * per_iter}


# Values (8 bytes each) per allreduce of each method: PCG's two dot
# products apart, SAPCG's fused, PIPECG's three, PIPE2CG's five per two
# iterations (§3; the krylov workload sends the same).
PCG_VALUES = {"pcg": 1, "sapcg": 2, "nbpcg": 1, "pipecg": 3, "pipe2cg": 5}


def pcg_with_penalties(pl: PostalPlatform, method: str, *, nodes: int, spmv_s: float, precond_s: float,
                       vector_s: float, halo_s: float, iterations: int, sync_s: float = 0.0, hops: float = 0.0,
                       penalties: tuple[str, ...] = ()) -> dict:
    """The PCG family with the allreduces modelled (§5.3, penalties §5.5–5.7,
    synchronization §5.8, overlap §6): T_iter = T_comp + T_halo + the
    allreduces. A blocking allreduce costs the allreduce model with its
    penalties plus the synchronization penalty; a nonblocking one its
    postal terms plus the synchronization penalty, its penalty terms
    overlapping the computation between start and wait."""
    if method not in PCG_METHODS:
        raise ValueError(f"method must be one of {', '.join(PCG_METHODS)}, got {method!r}")
    stage = {"spmv": spmv_s, "precond": precond_s}
    spec = PCG_METHODS[method]
    nbytes = 8 * PCG_VALUES[method]

    def one(overlap: float | None) -> float:
        return allreduce(pl, nbytes, nodes, hops=hops, penalties=penalties, overlap=overlap)["time_s"] + sync_s

    reduce = spec.get("blocking", 0) * one(None)
    reduce += sum(one(sum(stage[s] for s in group)) for group in spec.get("overlapped", []))
    reduce += sum(0.5 * one(sum(stage[s] for s in group)) for group in spec.get("overlapped_half", []))
    per_iter = spmv_s + precond_s + vector_s + halo_s + reduce
    return {"method": method, "allreduce_bytes": nbytes, "iteration_s": per_iter, "reduce_s": reduce,
            "halo_s": halo_s, "time_s": iterations * per_iter}


def idle_wave_speed(d: int, t_exec: float, t_comm: float, sigma: float = 1.0) -> float:
    """Idle-wave speed in ranks/s: σ·d / (T_exec + T_comm) — the wave moves
    d ranks (the longest communication distance) per iteration. σ = 1 for
    exchanges by Isend/Irecv/Waitall, eager or rendezvous (the engine gives
    1.00 and 1.02 ranks per iteration); give another σ for other patterns."""
    if not (t_exec >= 0 and t_comm >= 0 and t_exec + t_comm > 0 and math.isfinite(t_exec + t_comm)):
        raise ValueError(f"T_exec and T_comm must be finite, ≥ 0 and not both 0, got {t_exec}, {t_comm}")
    return sigma * d / (t_exec + t_comm)


__all__ = ["Protocol", "LinkModel", "PostalPlatform", "series", "sync_penalty", "allreduce", "halo", "pcg", "idle_wave_speed"]
