"""The Reproductions table, generated: `idlewave reproduce --table` runs the
studies of `idlewave reproduce` over several noise seeds and sizes (the
`Plan`, run by `collect`), judges every claim on the runs
(`idlewave.studies.claims`) and writes the table (`render`, `embed`). No
verdict is written by hand: docs/reproductions.md embeds the table between
markers, and a test checks the two agree.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from idlewave.studies import reproduce as rp
from idlewave.studies import reproduce_grid as grid
from idlewave.studies import spmv_scaling


@dataclass(frozen=True)
class Plan:
    """What the table runs: the noise seeds and, per study, the sizes (the
    paper's and at least one larger where we can afford it)."""

    seeds: tuple[int, ...] = (1, 2, 3, 4, 5)
    app_ranks: tuple[int, ...] = (1024, 4096)
    micro_ranks: tuple[int, ...] = (1024, 4096, 16384)
    krylov_ranks: tuple[int, ...] = (64, 512)  # Fig. 2's allreduce (the paper: 64)
    krylov_halo_sides: tuple[int, ...] = (8, 16)  # Fig. 3 and 13's halo on side³ ranks (the paper: 1k nodes)
    hpl_grids: tuple[int, ...] = (16, 32, 64, 128)  # Fig. 10 (the paper: 128 x 128)
    apsp_sides: tuple[int, ...] = (64, 128, 256)  # Fig. 9 (the paper: 128 x 128)
    cheb_ranks: tuple[int, ...] = (1280, 2560)  # Fig. 6 (the paper's 1,280 on Meggie)
    matvec_ranks: tuple[int, ...] = (64, 512)  # the MatVec hiding methods (the paper: 1,792 ranks recorded)
    wavefront_ranks: tuple[int, ...] = (40, 80)  # the STREAM triad's wavefronts and idle waves (the paper: 40 on Meggie)
    dense_scales: tuple[int, ...] = (1, 2)  # §3.2 and Fig. 10's spikes: the examples' grids, sides times these
    shape_ranks: tuple[int, ...] = (256, 1024)  # §3.2.1's process grids (the paper: Frontier's 4 GCDs a node)
    wavefront_iterations: int = 4000  # the paper: 5·10^4; ours settle within 2,000 (docs/reproductions.md)
    spmv_ranks: tuple[int, ...] = spmv_scaling.SIZES  # Table 4's sizes (its CER is the stand-in's input)
    pcg_ranks: tuple[int, ...] = (64, 512, 1728, 4096)  # Fig. 1: 4 to 256 nodes of 16 (the paper: to 512)
    topology_nodes: tuple[int, ...] = (216, 4096)  # Fig. 17: the 6³ cube measured and the 4k nodes predicted

    def describe(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


FULL = Plan()
# A check that everything runs, in about a minute: its verdicts mean little.
QUICK = Plan(seeds=(1, 2), app_ranks=(256,), micro_ranks=(256, 1024), krylov_ranks=(64,), krylov_halo_sides=(8,), hpl_grids=(16,),
             apsp_sides=(32,), cheb_ranks=(640,), matvec_ranks=(64,), wavefront_ranks=(40,), wavefront_iterations=400, dense_scales=(1,), shape_ranks=(256,),
             spmv_ranks=(96, 240, 1296), pcg_ranks=(64, 512), topology_nodes=(216,))

# HPL-MxP at larger grids keeps the example's local matrix (16 x 16 ranks,
# 64 blocks of 2,048): 4 blocks per process row, as an HPL run is sized to
# the nodes' memory (the paper's Fig. 10 keeps LN = 125,440 per rank).
HPL_BLOCKS_PER_ROW = 4


# ---- running ---------------------------------------------------------------

Job = tuple[str, dict]


def jobs(plan: Plan) -> list[Job]:
    """The runs of `plan`, the longest first (they go to a pool of processes)."""
    # (Fig. 12's chunk sizes on the two smallest grids: the example's and the next)
    chunked = sorted(plan.hpl_grids)[:2]
    out: list[Job] = [("hpl", {"side": s, "chunks": s in chunked}) for s in sorted(plan.hpl_grids, reverse=True)]
    for p in sorted(plan.app_ranks, reverse=True):
        out += [("noise-apps", {"ranks": p, "seed": s}) for s in plan.seeds]
    for p in sorted(plan.micro_ranks, reverse=True):
        out += [("noise-collectives", {"ranks": p, "seed": s}) for s in plan.seeds]
    out += [("chebfd", {"ranks": p}) for p in sorted(plan.cheb_ranks, reverse=True)]
    out += [("spmv-scaling", {"matrix": m, "ranks": p, "seeds": list(plan.seeds)})
            for p in sorted(plan.spmv_ranks, reverse=True) for m in spmv_scaling.TABLE4_CER]
    out += [("matvec", {"ranks": p, "seed": s, "nic": nic}) for p in sorted(plan.matvec_ranks, reverse=True)
            for s in plan.seeds for nic in MATVEC_NICS]
    out += [("micro-quiet", {"ranks": p}) for p in sorted(plan.micro_ranks, reverse=True)]
    out += [("propagation", {"ranks": p}) for p in plan.app_ranks]
    out += [("alg3", {"kernel": k, "side": example_side(k) * m}) for k in ALG3_EXAMPLES for m in plan.dense_scales]
    out += [("latency", {"kernel": k, "side": example_side(k) * m}) for k in ALG3_EXAMPLES for m in plan.dense_scales]
    out += [("spikes", {"side": example_side("lu") * m}) for m in plan.dense_scales]
    out += [("grid-shape", {"ranks": p}) for p in plan.shape_ranks]
    out += [("idle-decay", {"ranks": p}) for p in plan.wavefront_ranks]
    out += [("qr-qc", {"side": s}) for s in sorted(plan.hpl_grids, reverse=True)]
    out += [("two-at-once", {"side": s}) for s in sorted(plan.hpl_grids, reverse=True)]
    out += [("flaky-links", {"side": side, "seed": s}) for side in plan.hpl_grids if side <= 32 for s in plan.seeds]
    n = plan.wavefront_iterations
    out += [("wavefront", {"ranks": p, "seed": s, "noise": WAVEFRONT_NOISE, "iterations": n})
            for p in plan.wavefront_ranks for s in plan.seeds]
    out += [("wavefront", {"ranks": min(plan.wavefront_ranks), "seed": s, "noise": noise, "iterations": n})
            for s in plan.seeds for noise in WAVEFRONT_NOISES if noise != WAVEFRONT_NOISE]
    out += [("wavefront-kick", {"ranks": p, "seed": s, "iterations": n}) for p in plan.wavefront_ranks for s in plan.seeds]
    out += [("node-aware", {"side": side}) for side in (8, 16)]
    out += [("links", {"taper": t}) for t in LINK_TAPERS]
    # (Fig. 10 on shared links beyond the example's 16 x 16, which "links" runs)
    out += [("links-hpl", {"taper": t, "side": example_side("lu") * m}) for t in LINK_TAPERS for m in plan.dense_scales
            if m > 1]
    out += [("matvec-size", {"ranks": p, "seed": s}) for p in plan.matvec_ranks for s in plan.seeds]
    out += [("checkpoints", {"ranks": p, "seed": s}) for p in plan.app_ranks for s in plan.seeds]
    out += [("matvec-regimes", {"ranks": p, "seed": s}) for p in plan.matvec_ranks for s in plan.seeds]
    out += [("regime-filter", {"ranks": p, "seed": s}) for p in plan.matvec_ranks for s in plan.seeds]
    out += [("matvec-floors", {"ranks": p, "seed": s}) for p in plan.matvec_ranks for s in plan.seeds]
    out += [("apps-ideal-quiet", {"ranks": p}) for p in plan.app_ranks]
    out += [("micro-nonblocking", {"ranks": p, "seed": s}) for p in sorted(plan.micro_ranks)[:2] for s in plan.seeds]
    out.append(("krylov", {}))
    out += [("krylov-halo", {"side": side}) for side in plan.krylov_halo_sides if side != 8]
    out += [("pcg-scaling", {"ranks": p}) for p in sorted(plan.pcg_ranks, reverse=True)]
    out += [("topology-halo", {"nodes": n}) for n in sorted(plan.topology_nodes, reverse=True)]
    out += [("krylov-fig2", {"ranks": p}) for p in plan.krylov_ranks if p != rp.KRYLOV_ALLREDUCE_RANKS]
    out += [("apsp", {"side": s}) for s in plan.apsp_sides]
    # Fig. 13: the nodes doubled make a square grid's rows √2 longer
    out.append(("bandwidth", {"pairs": [[s, round(s * math.sqrt(2))] for s in plan.apsp_sides]}))
    return out


def hpl(side: int, alg: str, chunk: int, ports: int) -> float:
    """Makespan of `examples/hpl_mxp.toml` on a side x side grid (weak scaling: HPL_BLOCKS_PER_ROW)."""
    base = tomllib.loads(files("idlewave.examples").joinpath("hpl_mxp.toml").read_text())
    w = dict(base["workload"], broadcast=alg, chunk_bytes=chunk, combined=False, grid=[side, side],
             blocks=HPL_BLOCKS_PER_ROW * side)
    return grid._makespan(dict(base["network"], nic_ports=ports), w)


MATVEC_HIDING = ("fixed_alpha", "dynamic_alpha", "mpi_test")
# LogGOPSim's NIC (the receiving CPU takes each message in) and a DMA NIC (it lands while the CPU computes)
MATVEC_NICS = ("loggopsim", "dma")


def matvec_regimes(ranks: int, seed: int) -> dict[str, dict]:
    """Per hiding method, from its MatVec times (Algorithm 1): its share of
    every regime (fastest first) of 3 regimes fitted to the three methods'
    times together, so that every share counts the same regimes; the number
    of regimes BIC picks for its own times; and the mean of the fast one of
    2 regimes of its slowest rank's time per MatVec (T^max, Remark 1); and
    statistics of the per-rank distributions."""
    import numpy as np

    from idlewave.simulation import simulate
    from idlewave.stats.compare import fast_mean
    from idlewave.stats.regimes import decode, fit
    from idlewave.studies.demo import MATVEC_CHAIN

    times = {h: simulate({"seed": seed, "network": {"regimes": MATVEC_CHAIN},
                          "workload": {"kind": "fem_matvec", "ranks": ranks, "iterations": 800, "hiding": h,
                                       "epsilon_s": 2e-5, "elements": 1000, "element_s": 1e-6,
                                       "cg": True}}).timers["matvec"] for h in MATVEC_HIDING}
    common = fit(np.vstack(list(times.values())), 3, seed=0, restarts=3)
    out = {}
    for h, t in times.items():
        tmax = t.max(axis=0, keepdims=True)
        two = fit(tmax, 2, seed=0, restarts=3)
        medians = np.median(t, axis=1)
        out[h] = {"shares": [float(np.mean(decode(common, t) == i)) for i in range(3)],
                  "bic_regimes": fit(t, None, seed=0, restarts=3).n_regimes,
                  "tmax_fast_mean_s": fast_mean(tmax, decode(two, tmax)),
                  # the per-rank distributions (the functional boxplots of Fig. 9): their median, the
                  # spread of the ranks' medians, and the worst rank's 90th percentile
                  "median_s": float(np.median(medians)),
                  "rank_iqr_s": float(np.percentile(medians, 75) - np.percentile(medians, 25)),
                  "worst_p90_s": float(np.percentile(t, 90, axis=1).max())}
    return out


# HMM paper §4.4: a long period of extreme latency (2 ms more per message between nodes, from the start
# for 1 s on average: a chain that leaves its slow state for good with probability 1/2,000 per 0.5 ms step),
# laid over the MatVec study's latency regimes in the fixed-α run only.
EXTREME_PERIOD = {"classes": ["inter_node"], "step_s": 5e-4, "transition": [[0.9995, 0.0005], [0.0, 1.0]],
                  "initial": 0, "multiplier": [1.0, 1.0], "add_mean_s": [2e-3, 0.0], "add_sd_s": [2e-4, 0.0]}


def regime_filtering(seed: int, ranks: int = 64) -> list[dict]:
    """Per hiding method, the mean MatVec time and the mean of the fast one of 2 regimes fitted to its
    times; fixed α twice, without and with EXTREME_PERIOD."""
    from idlewave.simulation import simulate
    from idlewave.stats.compare import fast_mean
    from idlewave.stats.regimes import decode, fit
    from idlewave.studies.demo import MATVEC_CHAIN

    out = []
    for h, extreme in (("fixed_alpha", False), ("fixed_alpha", True), ("dynamic_alpha", False), ("mpi_test", False)):
        t = simulate({"seed": seed, "network": {"regimes": MATVEC_CHAIN + ([EXTREME_PERIOD] if extreme else [])},
                      "workload": {"kind": "fem_matvec", "ranks": ranks, "iterations": 800, "hiding": h,
                                   "epsilon_s": 2e-5, "elements": 1000, "element_s": 1e-6, "cg": True}}).timers["matvec"]
        two = fit(t, 2, seed=0, restarts=3)
        out.append({"ranks": ranks, "seed": seed, "hiding": h, "extreme": extreme, "mean_s": float(t.mean()),
                    "fast_mean_s": fast_mean(t, decode(two, t))})
    return out


def matvec_floors(seed: int, ranks: int = 64) -> list[dict]:
    """HMM paper Fig. 7: per hiding method, the input and output times' lowest values (T_in: the first
    block of elements and the wait for the input; T_out: the second block and the wait for the output),
    and the share of MatVecs within 2% of fixed α's floor, half the non-mirror elements' computation."""
    import numpy as np

    from idlewave.simulation import simulate
    from idlewave.studies.demo import MATVEC_CHAIN

    out = []
    for h in MATVEC_HIDING:
        elements, element_s = 1000, 1e-6
        w = {"kind": "fem_matvec", "ranks": ranks, "iterations": 800, "hiding": h, "epsilon_s": 2e-5,
             "elements": elements, "element_s": element_s, "cg": True}
        t = simulate({"seed": seed, "network": {"regimes": MATVEC_CHAIN}, "workload": w}).timers
        floor = 0.5 * elements * element_s
        out.append({"ranks": ranks, "seed": seed, "hiding": h, "floor_s": floor,
                    **{f"{k}_min_s": float(np.min(t[k])) for k in ("t_in", "t_out")},
                    **{f"{k}_at_floor": float(np.mean(np.abs(t[k] - floor) <= 0.02 * floor)) for k in ("t_in", "t_out")}})
    return out


# Elements per rank from little computation against the latency (125 µs a MatVec) to much (16 ms).
MATVEC_ELEMENTS = (125, 250, 1000, 4000, 16000)


def matvec(hiding: str, ranks: int, seed: int, nic: str = "loggopsim", elements: int = 1000,
           iterations: int = 800) -> float:
    """Makespan of the FEM MatVec in CG (Algorithm 2) under a 3-regime chain
    of network latency: the demo's study (idlewave.studies.demo)."""
    from idlewave.simulation import simulate
    from idlewave.studies.demo import MATVEC_CHAIN

    w = {"kind": "fem_matvec", "ranks": ranks, "iterations": iterations, "hiding": hiding, "epsilon_s": 2e-5,
         "elements": elements, "element_s": 1e-6, "cg": True}
    return simulate({"seed": seed, "network": {"regimes": MATVEC_CHAIN, "nic_model": nic}, "record": {"timers": False},
                     "workload": w}).summary["makespan_s"]


def micro_quiet(collective: str, ranks: int) -> float:
    """Fig. 6's loop (blocking / idealized makespan) without noise."""
    from idlewave.simulation import simulate

    t = [simulate({"seed": 1, "record": {"timers": False},
                   "workload": {"kind": "collective", "collective": collective,
                                "algorithm": rp.COLLECTIVES[collective], "ranks": ranks, "iterations": 200,
                                "mode": mode, "message_bytes": 8, "compute_s": rp.MICRO_COMPUTE_S}}).summary["makespan_s"]
         for mode in ("blocking", "ideal")]
    return t[0] / t[1]


# Fig. 10 of the noise paper: how far one rank's detour spreads through a collective.
PROPAGATION = {"allreduce": "dissemination", "allgather": "bruck", "gather": "binomial", "scatter": "binomial",
               "bcast": "binomial"}


def delayed_by_one_detour(collective: str, ranks: int, rank: int) -> int:
    """How many ranks finish an 8-byte collective more than 0.5 ms later when
    `rank` takes a 1 ms detour in the 1 ms of computation before it."""
    from idlewave.simulation import simulate

    w = {"kind": "collective", "collective": collective, "algorithm": PROPAGATION[collective], "ranks": ranks,
         "iterations": 1, "message_bytes": 8, "compute_s": 1e-3}
    quiet = simulate({"workload": w, "record": {"timers": False}}).finish_times_s
    noisy = simulate({"workload": w, "record": {"timers": False},
                      "noise": [{"kind": "single", "rank": rank, "start_s": 5e-4, "duration_s": 1e-3}]}).finish_times_s
    return int(((noisy - quiet) > 5e-4).sum())


# Algorithm 3 of the 2-D grid paper on the shipped examples of its two kernels.
ALG3_EXAMPLES = {"lu": "hpl_mxp.toml", "floyd_warshall": "floyd_warshall.toml"}


def example_side(kernel: str) -> int:
    """The side of the kernel's example's (square) process grid."""
    return tomllib.loads(files("idlewave.examples").joinpath(ALG3_EXAMPLES[kernel]).read_text())["workload"]["grid"][0]


def dense2d(kernel: str, alg: str, combined: bool, ports: int, times: dict[str, float] | None = None,
            side: int | None = None) -> float:
    """Makespan of the kernel's example with this broadcast, combined
    (Algorithm 3) or not; `times` multiplies network parameters (L_s: 10);
    on a `side` x `side` grid with the example's blocks per process row if
    given (weak scaling, as `hpl`)."""
    base = tomllib.loads(files("idlewave.examples").joinpath(ALG3_EXAMPLES[kernel]).read_text())
    w = dict(base["workload"], broadcast=alg, combined=combined, lookahead=False)
    if side is not None:
        w.update(grid=[side, side], blocks=w["blocks"] // w["grid"][0] * side)
    net = dict(base["network"], nic_ports=ports)
    if times:
        from idlewave.scenario import validate

        full = validate({"network": net, "workload": w})["network"]  # (the defaults the example leaves out)
        net.update({key: factor * full[key] for key, factor in times.items()})
    return grid._makespan(net, w)


# Fig. 10's caption: the unchunked 1-ring's spikes, the modified 2-ring's smaller, the chunked 1-ring's least.
SPIKES = (("ring", 0), ("two_ring_modified", 0), ("ring", grid.CHUNK))


def hpl_steps(alg: str, chunk: int, ports: int, side: int) -> dict:
    """The HPL-MxP example's step times (every rank's every step) on a side x side grid (weak scaling, as
    `hpl`): largest and 95th percentile."""
    from idlewave.simulation import simulate

    base = tomllib.loads(files("idlewave.examples").joinpath("hpl_mxp.toml").read_text())
    w = dict(base["workload"], broadcast=alg, chunk_bytes=chunk, combined=False, grid=[side, side],
             blocks=HPL_BLOCKS_PER_ROW * side)
    steps = simulate({"seed": 1, "network": dict(base["network"], nic_ports=ports), "workload": w}).summary["iteration_s"]
    return {"max_s": steps["max"], "p95_s": steps["p95"]}


# §3.2.1: process grids on nodes of 4 ranks (a 1 x 4 block of the grid each), per rank count: the square
# grid (256 ranks: 16 x 16, a 16 x 4 grid of nodes), the one whose nodes form a square (8 x 32: 8 x 8
# nodes) and its transpose (32 x 8: 32 x 2 nodes).
GRID_SHAPES = {256: ([16, 16], [8, 32], [32, 8]), 1024: ([32, 32], [16, 64], [64, 16])}
GRID_SHAPE_NODE = (1, 4)


def hpl_shape(shape: list[int]) -> dict:
    """The HPL-MxP example on `shape` with 4 ranks per node (the matrix of `hpl` on a square grid of as many
    ranks, whatever the shape): its makespan and the most bytes a node sends."""
    base = tomllib.loads(files("idlewave.examples").joinpath("hpl_mxp.toml").read_text())
    net = dict(base["network"], ranks_per_node=4, node_bandwidth_bytes_per_s=25e9,
               mapping={"kind": "grid2d", "node_grid": list(GRID_SHAPE_NODE)})
    from idlewave.simulation import simulate

    w = dict(base["workload"], grid=shape, combined=False, blocks=HPL_BLOCKS_PER_ROW * math.isqrt(shape[0] * shape[1]))
    r = simulate({"seed": 1, "network": net, "workload": w, "record": {"timers": False}}).summary
    return {"seconds": r["makespan_s"], "node_bytes_out_max": r["node_bytes_out_max"]}


def hpl_two_at_once(side: int, combined: bool) -> dict:
    """Fig. 11's analogue: the chunked 1-ring on a side x side grid with two NIC ports, the row and column
    broadcasts one after the other or together (Algorithm 3, a rank relays whichever chunk arrives first):
    the step times' mean, 95th percentile and largest, and the makespan."""
    from idlewave.simulation import simulate

    base = tomllib.loads(files("idlewave.examples").joinpath("hpl_mxp.toml").read_text())
    w = dict(base["workload"], broadcast="ring", chunk_bytes=grid.CHUNK, combined=combined, grid=[side, side],
             blocks=HPL_BLOCKS_PER_ROW * side)
    r = simulate({"seed": 1, "network": dict(base["network"], nic_ports=2), "workload": w}).summary
    steps = r["iteration_s"]
    return {"mean_s": steps["mean"], "p95_s": steps["p95"], "max_s": steps["max"], "seconds": r["makespan_s"]}


# §3.3.1: "unexpected network behavior" as a chain per link between switches of a fat tree (radix 16): now
# and then (2% per ms) a link turns slow for about 5 ms, 4x the latency and 100 µs more per message.
FLAKY_LINKS = {"classes": ["inter_node"], "scope": "link", "step_s": 1e-3, "transition": [[0.98, 0.02], [0.2, 0.8]],
               "multiplier": [1.0, 4.0], "add_mean_s": [0.0, 1e-4], "add_sd_s": [0.0, 2e-5]}


def hpl_flaky_links(side: int, seed: int) -> list[dict]:
    """Per ring broadcast, one after the other or combined (Algorithm 3): the HPL-MxP example's makespan on
    a side x side grid on a fat tree, with its links steady and with FLAKY_LINKS."""
    from idlewave.simulation import simulate

    base = tomllib.loads(files("idlewave.examples").joinpath("hpl_mxp.toml").read_text())
    out = []
    for alg in grid.RINGS:
        for combined in (False, True):
            w = dict(base["workload"], broadcast=alg, chunk_bytes=grid.CHUNK, combined=combined, grid=[side, side],
                     blocks=HPL_BLOCKS_PER_ROW * side)
            t = [simulate({"seed": seed, "record": {"timers": False}, "workload": w,
                           "network": dict(base["network"], topology={"kind": "fat_tree", "radix": 16},
                                           regimes=[FLAKY_LINKS] if flaky else [])}).summary["makespan_s"]
                 for flaky in (False, True)]
            out.append({"study": "flaky-links", "side": side, "seed": seed, "broadcast": alg, "combined": combined,
                        "steady_s": t[0], "flaky_s": t[1]})
    return out


# §6.2 / Fig. 7: HPL-MxP on Frontier-like nodes of 8 GCDs and 4 NICs (100 GB/s), the ranks of a node as
# a 1 x 8 block of the process grid (MPI's default order) or a 2 x 4 one (the qr-qc reordering, Fig. 4).
QRQC_MAPPINGS = {"block": {"kind": "block"}, "qr-qc 2 x 4": {"kind": "grid2d", "node_grid": [2, 4]}}


def hpl_mapping(side: int, mapping: str) -> dict:
    """The HPL-MxP example on a side x side grid (HPL_BLOCKS_PER_ROW) with 8 ranks per node placed by
    `mapping`: its makespan and the most bytes a node sends."""
    from idlewave.simulation import simulate

    base = tomllib.loads(files("idlewave.examples").joinpath("hpl_mxp.toml").read_text())
    net = dict(base["network"], ranks_per_node=8, node_bandwidth_bytes_per_s=100e9, mapping=QRQC_MAPPINGS[mapping])
    w = dict(base["workload"], grid=[side, side], blocks=HPL_BLOCKS_PER_ROW * side, combined=False)
    r = simulate({"seed": 1, "network": net, "workload": w, "record": {"timers": False}}).summary
    return {"seconds": r["makespan_s"], "node_bytes_out_max": r["node_bytes_out_max"]}


# The tapers of the fat tree the network-dependent studies run on again (docs/links.md).
LINK_TAPERS = (2.0, 4.0)


def krylov_solver(method: str, mapping: str, side: int) -> float:
    """Makespan of 50 iterations of a Krylov solver (27-point stencil, 4,096 rows per rank) on a side³ grid
    of ranks on `blue_waters`, with the ranks placed on nodes by `mapping`."""
    return grid._makespan({"platform": "blue_waters", "mapping": {"kind": mapping}},
                          {"kind": "krylov", "method": method, "iterations": 50, "grid": [side] * 3,
                           "local": [16, 16, 16], "stencil": 27})


# Fig. 1 of the Krylov paper: PCG on Blue Waters, 27-point Poisson, 8,000 rows per rank (20³), weak scaling.
PCG_LOCAL = [20, 20, 20]
PCG_GRIDS = {64: [4, 4, 4], 512: [8, 8, 8], 1728: [12, 12, 12], 4096: [16, 16, 16], 8192: [32, 16, 16]}
# links at the paper's 9.6 GB/s, re-solved every 100 ns (docs/links.md: +0.12% against exact at 512 ranks)
PCG_LINKS = {"model": "flow", "bandwidth_bytes_per_s": 9.6e9, "resolve_interval_s": 1e-7}
PCG_COMPUTE = {"spmv_s": 1e-4, "precond_s": 1e-4, "vector_s": 2e-5}  # per iteration (the workload's defaults)


def pcg_scaling(ranks: int) -> dict:
    """Seconds per PCG iteration (3 iterations) on `blue_waters`: with
    shared links, without, and as the postal model gives it (the halo of the slowest rank, the
    allreduces on the nodes, no penalty terms)."""
    from idlewave.models import postal
    from idlewave.models.halo import halo_messages
    from idlewave.simulation import simulate

    iterations = 3
    w = {"kind": "krylov", "method": "pcg", "grid": PCG_GRIDS[ranks], "local": PCG_LOCAL, "stencil": 27,
         "iterations": iterations, **PCG_COMPUTE}
    per = {}
    for name, links in (("flow_s", PCG_LINKS), ("none_s", None)):
        net: dict = {"platform": "blue_waters", **({"links": links} if links else {})}
        per[name] = simulate({"network": net, "workload": w}).summary["makespan_s"] / iterations
    pl = postal.PostalPlatform.preset("blue_waters")
    halo_s = max(postal.halo(pl, [(n, a == b, 0) for n, a, b in m])["time_s"]
                 for m in halo_messages(PCG_GRIDS[ranks], PCG_LOCAL, 27, pl.ppn, "block"))
    c = PCG_COMPUTE
    model = postal.pcg_with_penalties(pl, "pcg", nodes=ranks // pl.ppn, spmv_s=c["spmv_s"], precond_s=c["precond_s"],
                                      vector_s=c["vector_s"], halo_s=halo_s, iterations=1)
    return {"ranks": ranks, "nodes": ranks // pl.ppn, **per, "model_s": model["iteration_s"]}


# Fig. 17 of the Krylov paper: a 3-D halo (7 points, open boundaries) on `blue_waters` with its ranks placed
# by the original (block), node-aware (cartesian) and topology-aware mappings, on a cube of 6³ nodes (16
# ranks of 4×2×2 each) and on 16³ (the 4k nodes the paper predicts); faces of 8², 16² and 32² doubles
TOPOLOGY_GRIDS = {216: [24, 12, 12], 4096: [64, 32, 32]}
TOPOLOGY_SIDES = (8, 16, 32)
TOPOLOGY_MAPPINGS = ("block", "cartesian", "topology_aware")


def topology_halo(nodes: int, side: int, mapping: str, torus: list[int] | None = None) -> dict:
    """One halo exchange on `blue_waters` (its 24³ torus, the first `nodes` nodes; or a torus of `torus`)
    with shared links: the bytes its messages carried over torus links (each message's bytes times the
    links it crossed, what the paper's network counters measure as bandwidth) and its makespan."""
    from idlewave.simulation import simulate

    w = {"kind": "krylov_kernel", "kernel": "halo", "mode": "blocking", "iterations": 1,
         "grid": TOPOLOGY_GRIDS[nodes], "local": [side] * 3, "stencil": 7}
    net = {"platform": "blue_waters", "links": PCG_LINKS, "mapping": {"kind": mapping},
           **({"topology": {"kind": "torus", "dims": torus}} if torus else {})}
    s = simulate({"network": net, "workload": w}).summary
    torus = sum(v for k, v in s.items() if k.startswith("links_torus_") and k.endswith("_bytes"))
    return {"nodes": nodes, "side": side, "face_bytes": 8 * side * side, "mapping": mapping,
            "torus_bytes": torus, "makespan_s": s["makespan_s"]}


def idle_wave_on_meggie(distance: int, bottleneck: bool, ranks: int = 40) -> dict:
    """An idle wave (one 50 ms delay on the middle rank, 20 of 40) through a STREAM triad on
    `meggie`: with its sockets' memory bandwidth, or with sockets that never
    saturate (no bottleneck). Its speed, reach and decay (`analyze idle-wave`)."""
    from idlewave.analyze import idle_wave
    from idlewave.simulation import simulate

    net: dict = {"platform": "meggie"}
    if not bottleneck:
        net["memory"] = {"socket_bandwidth_bytes_per_s": 1e15, "core_bandwidth_bytes_per_s": 7e9}
    w = idle_wave(simulate({"seed": 1, "network": net,
                            "noise": [{"kind": "single", "rank": ranks // 2, "start_s": 0.2, "duration_s": 0.05}],
                            "workload": {"kind": "stream_triad", "ranks": ranks, "iterations": 120,
                                         "elements_per_rank": 2_500_000, "bytes_per_element": 24,
                                         "core_bandwidth_bytes_per_s": 7e9, "max_distance": distance,
                                         "message_bytes": 16384, "periodic": False}}))
    return {"decay_per_rank": w["decay_per_rank"], "ranks_reached": w["ranks_reached"],
            "speed_ranks_per_iteration": w["speed_ranks_per_iteration"]}


# The STREAM triad of the idle-waves paper §3.1 (10^8 elements of 24 bytes over 40 ranks, 16 KiB to each
# partner, open boundaries) on `meggie`, under natural noise: Poisson detours (rate Hz, seconds) from a
# quiet machine's to a noisy one's, the middle one the table's default.
WAVEFRONT_NOISES = {"200 Hz × 10 µs": (200.0, 10e-6), "1 kHz × 20 µs": (1000.0, 20e-6), "2 kHz × 25 µs": (2000.0, 25e-6)}
WAVEFRONT_NOISE = "1 kHz × 20 µs"
WAVEFRONT_DISTANCES = (1, 2, 4, 8)  # ±1, ±(1, 2), ±(1…4), ±(1…8): Fig. 1(a), (b) and (d)
WAVEFRONT_KICKS_S = (0.005, 2.0)  # Fig. 2: a small and a large one-off delay


def stream_triad_on_meggie(ranks: int, distance: int, seed: int, noise: str, iterations: int,
                           kick: dict | None = None):
    """The idle-waves paper's MPI-augmented STREAM triad (§3.1), with an optional one-off delay."""
    from idlewave.simulation import simulate

    rate, duration = WAVEFRONT_NOISES[noise]
    detours = [{"kind": "poisson", "rate_hz": rate, "duration_s": duration}] + ([kick] if kick else [])
    return simulate({"seed": seed, "network": {"platform": "meggie"}, "noise": detours,
                     "workload": {"kind": "stream_triad", "ranks": ranks, "iterations": iterations,
                                  "elements_per_rank": 100_000_000 // 40, "bytes_per_element": 24,
                                  "core_bandwidth_bytes_per_s": 7e9, "max_distance": distance,
                                  "message_bytes": 16384, "periodic": False}})


def wavefronts(ranks: int, seed: int, noise: str, iterations: int) -> list[dict]:
    """Per communication distance: the wavefront per socket in the third and the last quarter of the run
    (`analyze wavefront`), and the speed of an idle wave in the same setup (one 50 ms delay)."""
    from idlewave.analyze import idle_wave, wavefront

    out = []
    for d in WAVEFRONT_DISTANCES:
        run = stream_triad_on_meggie(ranks, d, seed, noise, iterations)
        q3, q4 = wavefront(run, iterations // 2, 3 * iterations // 4), wavefront(run, 3 * iterations // 4, iterations)
        kicked = stream_triad_on_meggie(ranks, d, seed, noise, 120, {"kind": "single", "rank": ranks // 2,
                                                                     "start_s": 0.2, "duration_s": 0.05})
        out.append({"ranks": ranks, "seed": seed, "noise": noise, "distance": d, "iterations": iterations,
                    "saturation_ranks": q4["saturation_ranks"], "period_s": q4["period_s"],
                    **{f"{k}_{q}": w[k] for q, w in (("q3", q3), ("q4", q4))
                       for k in ("active", "spread_s", "lock_step", "lagging_domain")},
                    "idle_wave_ranks_per_s": idle_wave(kicked)["speed_ranks_per_s"]})
    return out


def wavefront_kicks(seed: int, iterations: int, ranks: int = 40) -> list[dict]:
    """Fig. 2: a one-off delay halfway through a developed wavefront (±1), on the middle rank of each
    socket (of 10 ranks) but the lagging one; the lagging socket and the spreads before and after it."""
    from idlewave.analyze import wavefront

    half, quarter = iterations // 2, iterations // 4
    base = stream_triad_on_meggie(ranks, 1, seed, WAVEFRONT_NOISE, iterations)
    before = wavefront(base, quarter, half)
    unkicked = wavefront(base, 3 * quarter, iterations)
    out = []
    for socket in range(ranks // 10):
        if socket == before["lagging_domain"]:
            continue
        for delay in WAVEFRONT_KICKS_S:
            kick = {"kind": "single", "rank": 10 * socket + 5, "start_s": half * before["period_s"], "duration_s": delay}
            after = wavefront(stream_triad_on_meggie(ranks, 1, seed, WAVEFRONT_NOISE, iterations, kick), 3 * quarter,
                              iterations)
            out.append({"ranks": ranks, "seed": seed, "iterations": iterations, "socket": socket, "delay_s": delay,
                        "lagging_before": before["lagging_domain"], "lagging_unkicked": unkicked["lagging_domain"],
                        "lagging_after": after["lagging_domain"], "spread_before_s": before["spread_s"],
                        "spread_after_s": after["spread_s"], "lock_step_before": before["lock_step"],
                        "lock_step_after": after["lock_step"]})
    return out


# Fig. 8: the interval varied at a 1 s commit, the commit time at a 120 s interval (the paper's applications).
CHECKPOINTS = ((60, 1.0), (120, 1.0), (240, 1.0), (480, 1.0), (120, 0.25), (120, 4.0))
CHECKPOINT_APPS = ("CTH", "HPCCG", "LAMMPS", "miniFE")


def app_blocking(app: str, ranks: int, seed: int, interval_s: float, duration_s: float) -> float:
    """Time to solution of the noise paper's application under uncoordinated checkpoints."""
    from idlewave.simulation import simulate

    return simulate({"seed": seed, "record": {"timers": False},
                     "noise": [{"kind": "checkpoint", "interval_s": interval_s, "duration_s": duration_s}],
                     "workload": {"kind": "app", "app": app, "ranks": ranks, "iterations": 40,
                                  "mode": "blocking"}}).summary["makespan_s"]


def app_ideal_quiet(app: str, ranks: int) -> float:
    """Makespan of the noise paper's application with the idealized allreduce, without noise."""
    from idlewave.simulation import simulate

    return simulate({"seed": 1, "record": {"timers": False},
                     "workload": {"kind": "app", "app": app, "ranks": ranks, "iterations": 40,
                                  "mode": "ideal"}}).summary["makespan_s"]


def micro_nonblocking(collective: str, noise: str, ranks: int, seed: int) -> float:
    """Fig. 6/9's loop with a real nonblocking collective (not the idealized one)."""
    from idlewave.simulation import simulate

    return simulate({"seed": seed, "noise": rp.NOISE_ENVIRONMENTS[noise], "record": {"timers": False},
                     "workload": {"kind": "collective", "collective": collective,
                                  "algorithm": rp.COLLECTIVES[collective], "ranks": ranks, "iterations": 200,
                                  "mode": "nonblocking", "message_bytes": 8,
                                  "compute_s": rp.MICRO_COMPUTE_S}}).summary["makespan_s"]


def run_job(job: Job) -> list[dict]:
    """One run of the plan: its rows, each naming the study and its size (and seed)."""
    kind, a = job
    if kind == "noise-apps":
        return [dict(r, seed=a["seed"]) for r in rp.noise_apps(ranks=(a["ranks"],), seed=a["seed"])["rows"]]
    if kind == "noise-collectives":
        return rp.noise_collectives(ranks=(a["ranks"],), seed=a["seed"])["rows"]
    if kind == "chebfd":
        return [dict(r, ranks=a["ranks"]) for r in rp.chebfd(ranks=a["ranks"])["rows"]]
    if kind == "matvec":
        return [{"ranks": a["ranks"], "seed": a["seed"], "nic": a["nic"], "hiding": h,
                 "makespan_s": matvec(h, a["ranks"], a["seed"], a["nic"])} for h in MATVEC_HIDING]
    if kind == "micro-quiet":  # Fig. 6's loop without noise: what the idealized collective gains anyway
        return [{"ranks": a["ranks"], "collective": c, "speedup": micro_quiet(c, a["ranks"])} for c in rp.COLLECTIVES]
    if kind == "propagation":
        p = a["ranks"]
        return [{"ranks": p, "collective": c, "detour_rank": d, "delayed": delayed_by_one_detour(c, p, d)}
                for c in PROPAGATION for d in (1, p // 2 + 3, p - 1)]
    if kind == "latency":  # the 2-D grid paper's §3.2: latency matters less than bandwidth in dense kernels
        return [{"study": "latency", "kernel": a["kernel"], "side": a["side"], "scaled": k,
                 "seconds": dense2d(a["kernel"], "ring", False, 1, {k: 10} if k else {}, a["side"])}
                for k in ("", "L_s", "G_s_per_byte")]
    if kind == "spikes":  # Fig. 10's caption: the step times' spikes per broadcast
        return [dict(hpl_steps(alg, chunk, ports, a["side"]), study="spikes", side=a["side"], broadcast=alg,
                     chunk_bytes=chunk, ports=ports) for ports in grid.PORTS for alg, chunk in SPIKES]
    if kind == "grid-shape":  # §3.2.1: 4 ranks per node as a 1 x 4 block, three process grids
        return [dict(hpl_shape(g), study="grid-shape", ranks=a["ranks"], grid=g) for g in GRID_SHAPES[a["ranks"]]]
    if kind == "qr-qc":  # §6.2: the qr-qc reordering of the ranks on Frontier's nodes
        return [dict(hpl_mapping(a["side"], m), study="qr-qc", side=a["side"], mapping=m) for m in QRQC_MAPPINGS]
    if kind == "flaky-links":  # §3.3.1: the merged broadcast's resilience to unexpected network behaviour
        return hpl_flaky_links(a["side"], a["seed"])
    if kind == "two-at-once":  # Fig. 11: two messages handled at once (OpenMP there, Algorithm 3 here)
        return [dict(hpl_two_at_once(a["side"], c), study="two-at-once", side=a["side"], combined=c) for c in (False, True)]
    if kind == "matvec-size":  # HMM paper §3.2: with much computation α = ½ hides all communication
        return [{"ranks": a["ranks"], "seed": a["seed"], "elements": e, "hiding": h,
                 "makespan_s": matvec(h, a["ranks"], a["seed"], "dma", elements=e, iterations=400)}
                for e in MATVEC_ELEMENTS for h in MATVEC_HIDING]
    if kind == "matvec-regimes":  # the HMM paper's Fig. 8: each method's share of the fast regime
        return [dict(r, ranks=a["ranks"], seed=a["seed"], hiding=h)
                for h, r in matvec_regimes(a["ranks"], a["seed"]).items()]
    if kind == "matvec-floors":  # the HMM paper's Fig. 7: the floor of the input and output times
        return matvec_floors(a["seed"], a["ranks"])
    if kind == "regime-filter":  # the HMM paper §4.4: regime filtering separates methods from machine noise
        return regime_filtering(a["seed"], a["ranks"])
    if kind == "checkpoints":  # the noise paper's Fig. 8: checkpoint interval against commit time
        return [{"ranks": a["ranks"], "seed": a["seed"], "app": app, "interval_s": tau, "duration_s": d,
                 "makespan_s": app_blocking(app, a["ranks"], a["seed"], tau, d)}
                for app in CHECKPOINT_APPS for tau, d in CHECKPOINTS]
    if kind == "node-aware":  # the Krylov paper's Fig. 15: node-aware (Cartesian) mapping of the solvers
        return [{"side": a["side"], "method": m, "mapping": mapping, "seconds": krylov_solver(m, mapping, a["side"])}
                for m in ("pcg", "pipecg") for mapping in ("block", "cartesian")]
    if kind == "links":  # the network-dependent studies again, on a tapered fat tree with shared links
        from idlewave.studies.shared_links import SharedLinks

        links = SharedLinks(taper=a["taper"])
        fig2 = [{"study": "fig2", "taper": a["taper"], "ranks": p, "bytes": b, "mode": m,
                 "iteration_s": rp.krylov_allreduce(b, m, ranks=p, links=links)}
                for p in (rp.KRYLOV_ALLREDUCE_RANKS, 1024) for b in rp.KRYLOV_ALLREDUCE_BYTES
                for m in ("blocking", "nonblocking")]
        return fig2 + [{"study": "hpl", "taper": a["taper"], "ports": ports, "broadcast": alg,
                        "seconds": grid.hpl_total(alg, grid.CHUNK, ports, links=links)}
                       for ports in grid.PORTS for alg in grid.RINGS]
    if kind == "links-hpl":
        from idlewave.studies.shared_links import SharedLinks

        links = SharedLinks(taper=a["taper"])
        return [{"study": "hpl", "taper": a["taper"], "side": a["side"], "ports": ports, "broadcast": alg,
                 "seconds": grid.hpl_total(alg, grid.CHUNK, ports, links=links, side=a["side"])}
                for ports in grid.PORTS for alg in grid.RINGS]
    if kind == "pcg-scaling":  # the Krylov paper's Fig. 1: PCG's time per iteration against the postal model's
        return [pcg_scaling(a["ranks"])]
    if kind == "topology-halo":  # the Krylov paper's Fig. 17: the halo's traffic and time by mapping
        return [topology_halo(a["nodes"], side, m) for side in TOPOLOGY_SIDES for m in TOPOLOGY_MAPPINGS]
    if kind == "spmv-scaling":  # the idle-waves paper Fig. 3(e): P_D along Table 4's strong scaling
        return spmv_scaling.run(a["matrix"], a["ranks"], tuple(a["seeds"]))
    if kind == "idle-decay":  # the idle-waves paper §1: a memory bottleneck damps an idle wave without noise
        return [dict(idle_wave_on_meggie(d, bottleneck, a["ranks"]), ranks=a["ranks"], distance=d, bottleneck=bottleneck)
                for bottleneck in (True, False) for d in (1, 2)]
    if kind == "wavefront":  # the idle-waves paper Fig. 1 and §3.1.2: computational wavefronts
        return wavefronts(a["ranks"], a["seed"], a["noise"], a["iterations"])
    if kind == "wavefront-kick":  # Fig. 2: a one-off delay against a developed wavefront
        return wavefront_kicks(a["seed"], a["iterations"], a["ranks"])
    if kind == "apps-ideal-quiet":
        return [{"ranks": a["ranks"], "app": app, "ideal_no_noise_s": app_ideal_quiet(app, a["ranks"])}
                for app in rp.APPS]
    if kind == "micro-nonblocking":
        return [{"ranks": a["ranks"], "seed": a["seed"], "collective": c, "noise": n,
                 "nonblocking_s": micro_nonblocking(c, n, a["ranks"], a["seed"])}
                for c in rp.COLLECTIVES for n in rp.NOISE_ENVIRONMENTS]
    if kind == "alg3":
        return [{"study": "alg3", "kernel": a["kernel"], "side": a["side"], "ports": ports, "broadcast": alg,
                 "combined": combined, "seconds": dense2d(a["kernel"], alg, combined, ports, side=a["side"])}
                for ports in grid.PORTS for alg in grid.RINGS for combined in (False, True)]
    if kind == "krylov":
        return [dict(r, ranks=rp.KRYLOV_ALLREDUCE_RANKS if r["figure"] == "Fig. 2" else 512) for r in rp.krylov()["rows"]]
    if kind == "krylov-halo":
        return [dict(r, ranks=a["side"] ** 3) for r in rp.krylov(halo_side=a["side"], allreduce=False)["rows"]]
    if kind == "krylov-fig2":
        return [{"figure": "Fig. 2", "variant": "handshake, dma", "bytes": b, "mode": m, "ranks": a["ranks"],
                 "iteration_s": rp.krylov_allreduce(b, m, ranks=a["ranks"])}
                for b in rp.KRYLOV_ALLREDUCE_BYTES for m in ("blocking", "nonblocking")]
    if kind == "hpl":
        rows = [{"study": "hpl", "side": a["side"], "ports": p, "broadcast": alg, "chunk_bytes": grid.CHUNK,
                 "seconds": hpl(a["side"], alg, grid.CHUNK, p)} for p in grid.PORTS for alg in grid.RINGS]
        return rows + [{"study": "chunk", "side": a["side"], "ports": p, "broadcast": "ring", "chunk_bytes": c,
                        "seconds": hpl(a["side"], "ring", c, p)} for p in grid.PORTS for c in grid.CHUNKS_FIG12
                       if a["chunks"]]
    if kind == "apsp":
        return [{"study": "apsp", "side": a["side"], "ports": p, "broadcast": alg, "chunk_bytes": c,
                 "seconds": grid.apsp_step(a["side"], alg, c, p)}
                for p in grid.PORTS for alg in grid.VARIANTS for c in (0, grid.CHUNK)]
    if kind == "bandwidth":
        return [{"study": "bandwidth", "side": s, "from": a, "ports": 1, "broadcast": "ring", "chunk_bytes": grid.CHUNK,
                 "seconds": grid.apsp_step(s, "ring", grid.CHUNK, 1)} for a, b in a["pairs"] for s in (a, b)]
    raise ValueError(f"unknown job {kind!r}")


STUDY_OF = {
    "matvec": "matvec",
    "matvec-size": "matvec-size",
    "matvec-regimes": "matvec-regimes",
    "regime-filter": "regime-filter",
    "matvec-floors": "matvec-floors",
    "checkpoints": "checkpoints",
    "micro-quiet": "noise-collectives-quiet",
    "propagation": "propagation",
    "alg3": "grid-broadcasts",
    "latency": "grid-broadcasts",
    "spikes": "grid-broadcasts",
    "grid-shape": "grid-broadcasts",
    "qr-qc": "grid-broadcasts",
    "two-at-once": "grid-broadcasts",
    "flaky-links": "grid-broadcasts",
    "node-aware": "krylov-solvers",
    "links": "shared-links",
    "links-hpl": "shared-links",
    "idle-decay": "idle-waves",
    "spmv-scaling": "spmv-scaling",
    "pcg-scaling": "pcg-scaling",
    "topology-halo": "topology-halo",
    "wavefront": "wavefronts",
    "wavefront-kick": "wavefront-kicks",
    "apps-ideal-quiet": "noise-apps-quiet",
    "micro-nonblocking": "noise-collectives-nonblocking",
    "noise-apps": "noise-apps",
    "noise-collectives": "noise-collectives",
    "chebfd": "chebfd",
    "krylov": "krylov-kernels",
    "krylov-fig2": "krylov-kernels",
    "krylov-halo": "krylov-kernels",
    "hpl": "grid-broadcasts",
    "apsp": "grid-broadcasts",
    "bandwidth": "grid-broadcasts",
}


def job_key(job: Job) -> str:
    """A job as text, the same for the same run: how finished runs are found again."""
    return json.dumps([job[0], job[1]], sort_keys=True)


def collect(plan: Plan, done: dict[str, list[dict]] | None = None, workers: int | None = None,
            on_job: Callable[[Job, int, int], None] | None = None,
            save: Callable[[dict[str, list[dict]]], None] | None = None) -> dict[str, list[dict]]:
    """The rows of every run of `plan` (by `job_key`), running only those
    not in `done` (the runs of an earlier table of the same model, taken as
    they are); `save` is given the runs so far after each one (so that an
    interrupted table can be resumed)."""
    todo = [j for j in jobs(plan) if job_key(j) not in (done or {})]
    out = {k: v for k, v in (done or {}).items()}
    workers = workers or min(len(os.sched_getaffinity(0)), len(todo))
    if workers <= 1:
        for k, job in enumerate(todo, 1):
            out[job_key(job)] = run_job(job)
            if save:
                save(out)
            if on_job:
                on_job(job, k, len(todo))
    elif todo:
        import multiprocessing
        from concurrent.futures import as_completed

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(run_job, job): job for job in todo}
            for k, f in enumerate(as_completed(futures), 1):
                out[job_key(futures[f])] = f.result()
                if save:
                    save(out)
                if on_job:
                    on_job(futures[f], k, len(todo))
    # the plan's runs only, in its order (a run an earlier plan had and this one has not is left out)
    return {job_key(j): out[job_key(j)] for j in jobs(plan)}


def results(plan: Plan, runs: dict[str, list[dict]], claims: list[dict] | None = None) -> dict:
    """What `--table` writes to reproductions.json: the plan, every run's
    rows and the judged claims (none yet while the runs go on)."""
    return {"plan": plan.describe(), "runs": [{"job": json.loads(k), "rows": v} for k, v in runs.items()],
            "claims": claims or []}


def load_runs(path: Path, plan: Plan) -> dict[str, list[dict]]:
    """The runs of an earlier reproductions.json of the same plan (none if
    there is none, or it was of another plan)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("plan") != plan.describe():
        return {}
    return {json.dumps(r["job"], sort_keys=True): r["rows"] for r in data.get("runs", [])}


def by_study(runs: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """The rows of `runs` (by job) per study, in the runs' order."""
    rows: dict[str, list[dict]] = {}
    for key, rs in runs.items():
        rows.setdefault(STUDY_OF[json.loads(key)[0]], []).extend(rs)
    return rows


# ---- the table -------------------------------------------------------------

BEGIN = "<!-- generated by `idlewave reproduce --table`: do not edit by hand -->"
END = "<!-- end of the generated table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(claims: list[dict]) -> str:
    """The table in Markdown."""
    lines = ["| paper, result | the paper says | we get | checked at | verdict | why |",
             "| --- | --- | --- | --- | --- | --- |"]
    for c in claims:
        lines.append("| " + " | ".join(_cell(x) for x in (f"{c['paper']}, {c['result']}", c["says"], c["ours"],
                                                         c["checked_at"], c["verdict"], c["why"])) + " |")
    return "\n".join(lines)


#: The largest Markdown file `reproduce --table --embed` reads (docs/reproductions.md is tens of kilobytes).
MAX_EMBED_BYTES = 8 << 20


def embed(doc: Path, table: str, text: str | None = None) -> str:
    """`doc`'s text (`text`, where the caller has read it) with the table
    between the markers (which must be there)."""
    text = doc.read_text() if text is None else text
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{doc}: no generated table to replace (the markers {BEGIN!r} … {END!r})")
    return pattern.sub(lambda _: f"{BEGIN}\n\n{table}\n\n{END}", text)


def embedded(doc: Path) -> str | None:
    """The table embedded in `doc`, or None."""
    m = re.search(re.escape(BEGIN) + r"\s*(.*?)\s*" + re.escape(END), doc.read_text(), re.S)
    return m.group(1) if m else None


def tally(claims: list[dict]) -> str:
    """How many claims have each verdict: `12 reproduced, 5 partly, 6 differs`."""
    counts: dict[str, int] = {}
    for c in claims:
        kind = c["verdict"].split(":")[0]
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{counts[k]} {k}" for k in ("reproduced", "partly", "differs", "not checkable") if k in counts)
