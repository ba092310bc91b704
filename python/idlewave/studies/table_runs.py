"""The runs behind the Reproductions table's claims beyond the studies of
`idlewave reproduce`: one function per kind of run, with the setups and
constants the claims name (`idlewave.studies.table` plans and dispatches
them, `idlewave.studies.claims` judges their rows).
"""

from __future__ import annotations

import math
import tomllib
from importlib.resources import files

from idlewave.studies import reproduce as rp
from idlewave.studies import reproduce_grid as grid

# HPL-MxP at larger grids keeps the example's local matrix (16 x 16 ranks,
# 64 blocks of 2,048): 4 blocks per process row, as an HPL run is sized to
# the nodes' memory (the paper's Fig. 10 keeps LN = 125,440 per rank).
HPL_BLOCKS_PER_ROW = 4


def hpl(side: int, alg: str, chunk: int, ports: int) -> float:
    """Makespan of `examples/hpl_mxp.toml` on a side x side grid (weak scaling: HPL_BLOCKS_PER_ROW)."""
    return grid.hpl_total(alg, chunk, ports, side=side)


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
WAVEFRONT_FAR = 12  # Fig. 1(d)'s ±(1…12), run apart: the other claims judge the four above
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


def wavefronts(ranks: int, seed: int, noise: str, iterations: int,
               distances: tuple[int, ...] = WAVEFRONT_DISTANCES) -> list[dict]:
    """Per communication distance: the wavefront per socket in the third and the last quarter of the run
    (`analyze wavefront`), and the speed of an idle wave in the same setup (one 50 ms delay)."""
    from idlewave.analyze import idle_wave, wavefront

    out = []
    for d in distances:
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
