"""Scenario files: TOML in, a validated and fully defaulted dict out.

A scenario is data, never code.  Every key is optional (except the few marked
required below), has a default, and carries its unit in its name (``_s``,
``_bytes``, ``_hz``).  :func:`load_scenario` / :func:`parse_scenario` /
:func:`validate` return the *user-level* dict (seconds, every key filled in,
absolute paths); :func:`to_engine_config` turns it into the JSON-ready dict the
Rust engine deserialises (integer picoseconds).

The schema is declared once, as tables of :class:`Field` below; the code that
walks them is generic.  Rules that relate two keys (``duration_s < period_s``,
``root < ranks``, ...) are listed next to the table they belong to.

Errors are :class:`ScenarioError` with a user-ready message naming the source
and the full key path, e.g. ``scn.toml: noise[1].duration_s: must be >= 0, got -1``;
TOML syntax errors read ``scn.toml:3: <message>``.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from idlewave import mapping, platform

__all__ = [
    "ScenarioError",
    "load_scenario",
    "parse_scenario",
    "validate",
    "to_engine_config",
    "engine_json",
    "WORKLOADS",
    "NOISE_KINDS",
    "describe_workloads",
    "describe_noise",
]


class ScenarioError(ValueError):
    """A scenario that cannot be accepted; the message is ready to show to a user.

    ``source`` is the file (or ``<string>``/``<dict>``), ``key`` the key path
    (``""`` when the problem is not tied to a key), ``line`` the TOML line of a
    syntax error (else ``None``).
    """

    def __init__(self, message: str, *, source: str = "", key: str = "", line: int | None = None):
        super().__init__(message)
        self.source = source
        self.key = key
        self.line = line


# --------------------------------------------------------------------------
# Schema vocabulary
# --------------------------------------------------------------------------

REQUIRED = object()  # default of a key that must be given

PS_PER_S = 1e12
MAX_U32 = 2**32 - 1
MAX_U64 = 2**64 - 1
MAX_RANKS = 2**31
MAX_PS = 2**63 - 1  # keep every time well inside the engine's u64 picoseconds
MAX_DISTANCES = 8

Check = Callable[[Any], "str | None"]  # value -> error message, or None when fine


@dataclass(frozen=True)
class Field:
    """One key of a table.

    type: "int", "float", "bool", "str", "path" (a string resolved against the
    scenario's directory), "ints", "floats" or "strs" (lists; ``check`` then
    applies to each element) or "matrix" (a list of rows of probabilities).  ``nullable`` lets ``None`` through (Python callers only;
    TOML has no null) — that is how "absent, meaning all" is represented.
    """

    type: str
    default: Any = REQUIRED
    check: Check | None = None
    nullable: bool = False
    unique: bool = False  # "ints" only: reject repeated values


def _ge(lo) -> Check:
    return lambda v: None if v >= lo else f"must be >= {lo}, got {v!r}"


def _gt(lo) -> Check:
    return lambda v: None if v > lo else f"must be > {lo}, got {v!r}"


def _int_range(lo: int, hi: int) -> Check:
    return lambda v: None if lo <= v <= hi else f"must be between {lo} and {hi}, got {v!r}"


def _one_of(*choices: str) -> Check:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}; got {v!r}"


def _seconds(positive: bool) -> Check:
    """A time in seconds that converts to a picosecond count the engine can hold."""

    def check(v):
        if positive and not v > 0:
            return f"must be > 0, got {v!r}"
        if v < 0:
            return f"must be >= 0, got {v!r}"
        if v * PS_PER_S > MAX_PS:
            return f"too large: {v!r} s exceeds the engine's range (about {MAX_PS / PS_PER_S:.3g} s)"
        if positive and _ps(v) < 1:
            return f"too small: {v!r} s is below the engine's 1 ps resolution"
        return None

    return check


def _unit_interval(v):
    return None if 0.0 <= v <= 1.0 else f"must be between 0 and 1, got {v!r}"


_NONNEG_S = _seconds(positive=False)
_POS_S = _seconds(positive=True)
_NONNEG = _ge(0)
_RANKS = _int_range(1, MAX_RANKS)
_U32 = _int_range(0, MAX_U32)
_U64 = _int_range(0, MAX_U64)


# --------------------------------------------------------------------------
# The schema
# --------------------------------------------------------------------------

TOP = {
    "seed": Field("int", 1, _U64),
    "name": Field("str", ""),
}
TOP_TABLES = ("network", "noise", "workload", "record", "limits")

# LogGOPS parameters of one link class; LogGOPSim's defaults.
LINK = {
    "L_s": Field("float", 2.5e-6, _NONNEG_S),
    "o_s": Field("float", 1.5e-6, _NONNEG_S),
    "g_s": Field("float", 1.0e-6, _NONNEG_S),
    "G_s_per_byte": Field("float", 6.0e-9, _NONNEG),
    "O_s_per_byte": Field("float", 0.0, _NONNEG),
    "S_bytes": Field("int", 65535, _U64),
}
NETWORK = {
    **LINK,
    "ranks_per_node": Field("int", 1, _RANKS),
    # nonblocking collectives advance without MPI calls (a progress thread)
    "async_progress": Field("bool", False),
    # a preset name (idlewave.platform.PRESETS) or a platform TOML file whose
    # [network] keys this table's own keys override
    "platform": Field("str", ""),
    # 0: a node is one socket (one memory domain)
    "ranks_per_socket": Field("int", 0, _U32),
    # the max-rate model: a node's off-node traffic shares this bandwidth (0: unlimited)
    "node_bandwidth_bytes_per_s": Field("float", 0.0, _NONNEG),
    # per link between nodes, and the congestion penalty stalls_per_byte * n * stall_s * hops
    "hop_latency_s": Field("float", 0.0, _NONNEG_S),
    "stalls_per_byte": Field("float", 0.0, _NONNEG),
    "stall_s": Field("float", 0.0, _NONNEG_S),
    # Sub-tables, handled in _Validator.network(): intra_node and
    # intra_socket (LINK keys, defaulting to the class above them), short
    # (max_bytes + LINK keys) and rendezvous (LINK keys) in any link table,
    # topology, mapping, memory, and the array regimes.
}
NETWORK_TABLES = ("intra_node", "intra_socket", "short", "rendezvous", "topology", "mapping", "memory", "regimes")
SHORT = {"max_bytes": Field("int", 1024, _U64)}

TOPOLOGY: dict[str, tuple[str, dict[str, Field]]] = {
    "fully_connected": ("every node one link from every other", {}),
    "fat_tree": ("k-ary fat tree of switches with radix ports", {"radix": Field("int", 36, _int_range(2, MAX_U32))}),
    "torus": ("3-D torus of nodes (x fastest)", {"dims": Field("ints", REQUIRED, _int_range(1, MAX_U32))}),
    "dragonfly": (
        "routers of nodes, all-to-all groups, one global hop between groups",
        {"nodes_per_router": Field("int", 4, _int_range(1, MAX_U32)), "routers_per_group": Field("int", 96, _int_range(1, MAX_U32))},
    ),
}
_GRID = {"grid": Field("ints", [], _int_range(1, MAX_U32)), "node_grid": Field("ints", [], _int_range(1, MAX_U32))}
MAPPING: dict[str, tuple[str, dict[str, Field]]] = {
    "block": ("consecutive ranks fill a node", {}),
    "round_robin": ("rank r on node r mod nodes", {}),
    "cartesian": ("node-aware: each node holds a compact block of the process grid", _GRID),
    "grid2d": ("2-D grid with node_grid = [Qr, Qc] processes per node (2-D grid paper §3.2.1)", _GRID),
    "topology_aware": ("cartesian blocks laid onto the torus so neighbouring blocks are neighbouring nodes", _GRID),
    "file": ("one node number per rank per line", {"path": Field("path")}),
}
MEMORY = {
    "socket_bandwidth_bytes_per_s": Field("float", REQUIRED, _gt(0)),
    "core_bandwidth_bytes_per_s": Field("float", REQUIRED, _gt(0)),
}
LINK_CLASSES = ("intra_socket", "intra_node", "inter_node")
REGIME = {
    "classes": Field("strs", ["inter_node"], None),
    "step_s": Field("float", 1e-3, _POS_S),
    "transition": Field("matrix", REQUIRED),
    "multiplier": Field("floats", REQUIRED, _ge(0)),
    "add_mean_s": Field("floats", None, None, nullable=True),
    "add_sd_s": Field("floats", None, _ge(0), nullable=True),
    "initial": Field("int", 0, _int_range(0, 63)),
}

RECORD = {"timers": Field("bool", True)}
LIMITS = {"max_memory_bytes": Field("int", 0, _U64)}

_NOISE_RANKS = Field("ints", None, _U32, nullable=True)

# kind -> (description, fields besides "kind")
NOISE: dict[str, tuple[str, dict[str, Field]]] = {
    "periodic": (
        "a detour of duration_s every period_s (random phase per rank unless cosched)",
        {
            "period_s": Field("float", 1e-3, _POS_S),
            "duration_s": Field("float", 2.5e-5, _NONNEG_S),
            "cosched": Field("bool", False),
            "ranks": _NOISE_RANKS,
        },
    ),
    "poisson": (
        "detours of duration_s arriving as a Poisson process of rate_hz per rank",
        {
            "rate_hz": Field("float", 100.0, _gt(0)),
            "duration_s": Field("float", 1e-4, _POS_S),
            "ranks": _NOISE_RANKS,
        },
    ),
    "trace": (
        "replay of a measured detour trace file (start<TAB>duration in ns per line), looped",
        {
            "path": Field("path"),
            "cosched": Field("bool", False),
            "ranks": _NOISE_RANKS,
        },
    ),
    "checkpoint": (
        "uncoordinated checkpoints: duration_s every interval_s, each rank at its own phase",
        {
            "interval_s": Field("float", 60.0, _POS_S),
            "duration_s": Field("float", 1.0, _NONNEG_S),
            "ranks": _NOISE_RANKS,
        },
    ),
    "single": (
        "one detour of duration_s on one rank at start_s (e.g. to launch an idle wave)",
        {
            "rank": Field("int", REQUIRED, _U32),
            "start_s": Field("float", 0.0, _NONNEG_S),
            "duration_s": Field("float", 1e-3, _POS_S),
        },
    ),
}

# collective -> its algorithms, the first being the default ("auto")
COLLECTIVE_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "allreduce": ("dissemination", "recursive_doubling", "ring", "reduce_bcast"),
    "bcast": ("binomial", "binary_tree", "linear", "pipelined_ring", "ring", "modified_ring", "two_ring",
              "two_ring_modified"),
    "reduce": ("binomial",),
    "gather": ("binomial",),
    "scatter": ("binomial",),
    "allgather": ("ring", "recursive_doubling"),
    "alltoall": ("pairwise",),
    "barrier": ("dissemination",),
}

# broadcasts that relay messages cut into chunk_bytes pieces
RING_BCASTS = ("pipelined_ring", "ring", "modified_ring", "two_ring", "two_ring_modified")
# sub-communicators: rows / columns of a row-major grid with grid_columns columns,
# or the ranks of each node (network.ranks_per_node consecutive ranks)
COMMUNICATORS = ("world", "rows", "columns", "nodes")

# Table 1 of the noise/nonblocking-collectives paper: computation-to-communication ratios
SKELETON_APPS: dict[str, float] = {
    "AMG2006": 1.59, "CTH": 1.25, "HPCCG": 95.15, "LAMMPS": 37.46, "LULESH": 4.37, "miniFE": 10.31,
}

WORKLOAD_SCHEMA: dict[str, tuple[str, dict[str, Field]]] = {
    "bsp": (
        "bulk-synchronous loop: compute, then halo exchange with ranks at the given distances",
        {
            "ranks": Field("int", 64, _RANKS),
            "iterations": Field("int", 100, _U32),
            "compute_s": Field("float", 1e-4, _NONNEG_S),
            "distances": Field("ints", [1], _ge(1), unique=True),
            "message_bytes": Field("int", 8, _U64),
            "periodic": Field("bool", True),
            "barrier": Field("bool", False),
            # > 0: each compute phase is memory-bound, moving this many bytes at the
            # rate its socket gives it (needs [network.memory]); compute_s is then unused
            "compute_bytes": Field("int", 0, _U64),
        },
    ),
    "collective": (
        "a loop of one collective (any algorithm; blocking, nonblocking or ideal), with compute between",
        {
            "ranks": Field("int", 64, _RANKS),
            "iterations": Field("int", 10, _U32),
            "collective": Field("str", "allreduce", _one_of(*COLLECTIVE_ALGORITHMS)),
            "algorithm": Field("str", "auto", _one_of("auto", *sorted({a for v in COLLECTIVE_ALGORITHMS.values() for a in v}))),
            "mode": Field("str", "blocking", _one_of("blocking", "nonblocking", "ideal")),
            "test_chunks": Field("int", 1, _int_range(1, 65535)),
            "message_bytes": Field("int", 8, _U64),
            "chunk_bytes": Field("int", 0, _U64),
            "compute_s": Field("float", 0.0, _NONNEG_S),
            "root": Field("int", 0, _U32),
            # every group of this partition runs the collective at once; root is group-local
            "communicator": Field("str", "world", _one_of(*COMMUNICATORS)),
            "grid_columns": Field("int", 0, _U32),
        },
    ),
    "skeleton": (
        "allreduce-dominated BSP application skeleton: compute beta x (allreduce time), then the allreduce",
        {
            "ranks": Field("int", 64, _RANKS),
            "iterations": Field("int", 100, _U32),
            "app": Field("str", "", _one_of("", *SKELETON_APPS)),
            "beta": Field("float", 0.0, _ge(0)),
            "algorithm": Field("str", "auto", _one_of("auto", *COLLECTIVE_ALGORITHMS["allreduce"])),
            "mode": Field("str", "blocking", _one_of("blocking", "nonblocking", "ideal")),
            "test_chunks": Field("int", 1, _int_range(1, 65535)),
            "message_bytes": Field("int", 8, _U64),
        },
    ),
    "spmv": (
        "back-to-back sparse matrix-vector products on a banded matrix, split_wait or non_split (idle-waves paper §3.2)",
        {
            "ranks": Field("int", 64, _RANKS),
            "iterations": Field("int", 100, _U32),
            "rows": Field("int", 1 << 20, _int_range(1, MAX_U64)),
            "bandwidth": Field("int", 1000, _U64),
            "periodic": Field("bool", False),
            "mode": Field("str", "non_split", _one_of("non_split", "split_wait")),
            "barrier": Field("bool", True),
            "time_per_nonzero_s": Field("float", 1e-9, _NONNEG_S),
            "bytes_per_element": Field("int", 8, _U64),
            # any matrix, by its communication: replaces rows and bandwidth
            "partners_file": Field("path", ""),
            # > 0: the kernel is memory-bound (about 12 B per nonzero for CRS) and
            # contends for the socket's bandwidth (needs [network.memory])
            "bytes_per_nonzero": Field("int", 0, _U64),
        },
    ),
    "fem_matvec": (
        "finite-element MatVec hiding communication with fixed alpha, dynamic alpha or MPI test (HMM paper §2.4)",
        {
            "ranks": Field("int", 64, _RANKS),
            "iterations": Field("int", 100, _U32),
            "distances": Field("ints", [1], _ge(1), unique=True),
            "input_bytes": Field("int", 4096, _U64),
            "output_bytes": Field("int", 4096, _U64),
            "elements": Field("int", 1000, _U32),
            "mirror_elements": Field("int", 100, _U32),
            "element_s": Field("float", 1e-6, _NONNEG_S),
            "hiding": Field("str", "fixed_alpha", _one_of("fixed_alpha", "dynamic_alpha", "mpi_test")),
            "alpha0": Field("float", 0.5, _unit_interval),
            "theta": Field("float", 0.5, _unit_interval),
            "epsilon_s": Field("float", 1e-4, _POS_S),
            "test_chunk_elements": Field("int", 50, _int_range(1, MAX_U32)),
            "cg": Field("bool", True),
        },
    ),
    "stream_triad": (
        "MPI-augmented STREAM Triad (idle-waves paper §3.1): a sweep over the local arrays, then exchange with r±1..k",
        {
            "ranks": Field("int", 40, _RANKS),
            "iterations": Field("int", 200, _U32),
            "elements_per_rank": Field("int", 2_500_000, _U64),
            "bytes_per_element": Field("int", 24, _U64),
            "core_bandwidth_bytes_per_s": Field("float", 10e9, _gt(0)),
            "max_distance": Field("int", 1, _int_range(1, MAX_DISTANCES)),
            "message_bytes": Field("int", 8192, _U64),
            "periodic": Field("bool", False),
            "barrier": Field("bool", False),
        },
    ),
    "krylov": (
        "PCG, SAPCG, NBPCG, PIPECG or PIPE2CG iterations on a 3-D process grid with a 7- or 27-point halo",
        {
            "iterations": Field("int", 100, _U32),
            "grid": Field("ints", [4, 4, 4], _int_range(1, MAX_U32)),
            "local": Field("ints", [32, 32, 32], _int_range(1, MAX_U32)),
            "stencil": Field("int", 27, _int_range(7, 27)),
            "method": Field("str", "pcg", _one_of("pcg", "sapcg", "nbpcg", "pipecg", "pipe2cg")),
            "algorithm": Field("str", "auto", _one_of("auto", "dissemination", "recursive_doubling", "ring")),
            "spmv_s": Field("float", 1e-4, _NONNEG_S),
            "precond_s": Field("float", 1e-4, _NONNEG_S),
            "vector_s": Field("float", 2e-5, _NONNEG_S),
            "diagonal_fraction": Field("float", 0.7, _unit_interval),
        },
    ),
    "krylov_kernel": (
        "the Krylov paper's section 3.1 kernels: blocking or nonblocking allreduce or halo exchange between two busy-waits",
        {
            "iterations": Field("int", 100, _U32),
            "kernel": Field("str", "allreduce", _one_of("allreduce", "halo")),
            "mode": Field("str", "blocking", _one_of("blocking", "nonblocking")),
            "overlap_s": Field("float", 1e-4, _NONNEG_S),
            "trailing_s": Field("float", 1e-4, _NONNEG_S),
            "grid": Field("ints", [4, 4, 4], _int_range(1, MAX_U32)),
            "local": Field("ints", [32, 32, 32], _int_range(1, MAX_U32)),
            "stencil": Field("int", 7, _int_range(7, 27)),
            "algorithm": Field("str", "auto", _one_of("auto", "dissemination", "recursive_doubling", "ring")),
        },
    ),
    "chebfd": (
        "Chebyshev filter diagonalization (idle-waves paper §3.3): non_split, split_wait or pipeline",
        {
            "ranks": Field("int", 64, _RANKS),
            "subspace": Field("int", 32, _int_range(1, MAX_U32)),
            "block": Field("int", 2, _int_range(1, MAX_U32)),
            "degree": Field("int", 10, _int_range(1, MAX_U32)),
            "mode": Field("str", "non_split", _one_of("non_split", "split_wait", "pipeline")),
            "preset": Field("str", "M3", _one_of("", "M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8", "M9")),
            "offsets": Field("ints", [], None),
            "offset_bytes": Field("ints", [], _ge(0)),
            "kernel_per_vector_s": Field("float", 1e-3, _NONNEG_S),
            "remote_fraction": Field("float", 0.2, _unit_interval),
            "split_overhead": Field("float", 0.1, _ge(0)),
            "barrier": Field("bool", False),
        },
    ),
    "dense2d": (
        "block LU (HPL-MxP) or blocked Floyd-Warshall on a Pr x Pc grid with row/column panel broadcasts (2-D grid paper)",
        {
            "kernel": Field("str", "lu", _one_of("lu", "floyd_warshall")),
            "grid": Field("ints", [4, 4], _int_range(1, MAX_U32)),
            "blocks": Field("int", 32, _int_range(1, MAX_U32)),
            "block": Field("int", 512, _int_range(1, MAX_U32)),
            "broadcast": Field("str", "ring", _one_of(*COLLECTIVE_ALGORITHMS["bcast"])),
            "combined": Field("bool", False),
            "chunk_bytes": Field("int", 0, _U64),
            "lookahead": Field("bool", False),
            "progress_chunks": Field("int", 8, _int_range(1, 65535)),
            "barrier": Field("bool", False),
            "gemm_flops_per_s": Field("float", 1e12, _gt(0)),
            "panel_flops_per_s": Field("float", 1e11, _gt(0)),
            "element_bytes": Field("int", 4, _int_range(1, 64)),
            "panel_element_bytes": Field("int", 4, _int_range(1, 64)),
        },
    ),
    "goal": (
        "a LogGOPSim GOAL schedule file (calc times in ns)",
        {"path": Field("path")},
    ),
    "trace": (
        "a traced MPI run (directory of rank-*.iwt from `idlewave trace build`), replayed as it is read",
        {
            "dir": Field("path"),
            # "collective=algorithm"; the engine checks the names and lists the choices
            "algorithms": Field("strs", [], lambda v: None if "=" in v else f"must be collective=algorithm, got {v!r}"),
            "compute_scale": Field("float", 1.0, _ge(0)),
            "scale_to": Field("int", 0, _U32),  # 0: as many ranks as traced
        },
    ),
}
DEFAULT_WORKLOAD = "bsp"

WORKLOADS: dict[str, str] = {kind: desc for kind, (desc, _) in WORKLOAD_SCHEMA.items()}
NOISE_KINDS: dict[str, str] = {kind: desc for kind, (desc, _) in NOISE.items()}


# Rules relating keys of one table: table -> [(key reported, message or None)].
def _ps(seconds: float) -> int:
    return int(round(seconds * PS_PER_S))


def _shorter(dur: str, span: str) -> Callable[[dict], tuple[str, str | None]]:
    def rule(t):
        ok = _ps(t[dur]) < _ps(t[span])
        return dur, None if ok else f"must be < {span} ({t[span]!r}), got {t[dur]!r} (the CPU would never run)"

    return rule


def _poisson_duty(t):
    duty = t["rate_hz"] * t["duration_s"]
    msg = None if duty < 1 else f"rate_hz * duration_s must be < 1 (the CPU would never run), got {duty:.6g}"
    return "duration_s", msg


def _below_ranks(key: str):
    def rule(t):
        ok = t[key] < t["ranks"]
        return key, None if ok else f"must be < ranks ({t['ranks']}), got {t[key]!r}"

    return rule


def _algorithm(t):
    algs = COLLECTIVE_ALGORITHMS[t["collective"]]
    a = t["algorithm"]
    if a != "auto" and a not in algs:
        return "algorithm", f"{a!r} is not an algorithm for {t['collective']} (choose from auto, {', '.join(algs)})"
    if t["collective"] == "allgather" and a == "recursive_doubling" and t["ranks"] & (t["ranks"] - 1):
        return "algorithm", f"recursive_doubling allgather needs a power-of-two rank count, got {t['ranks']}; use ring"
    return "algorithm", None


def _chunking(t):
    a = t["algorithm"]
    if t["chunk_bytes"] and not (t["collective"] == "bcast" and a in RING_BCASTS):
        return "chunk_bytes", f"only the ring broadcasts ({', '.join(RING_BCASTS)}) cut messages into chunks"
    if a == "pipelined_ring" and not t["chunk_bytes"]:
        return "chunk_bytes", "pipelined_ring needs chunk_bytes > 0 (or use ring for one piece)"
    return "chunk_bytes", None


def _communicator(t):
    comm, cols, p = t["communicator"], t["grid_columns"], t["ranks"]
    if comm in ("rows", "columns"):
        if cols == 0 or p % cols:
            return "grid_columns", f"must divide ranks ({p}) for communicator {comm!r}, got {cols}"
        size = cols if comm == "rows" else p // cols
        if t["root"] >= size:
            return "root", f"must be < the group size ({size}) of communicator {comm!r}, got {t['root']}"
    elif cols:
        return "grid_columns", f"only applies to communicator 'rows' or 'columns', not {comm!r}"
    return "communicator", None


def _dense_grid(t):
    if len(t["grid"]) != 2:
        return "grid", f"must have two entries (rows, columns), got {len(t['grid'])}"
    if t["grid"][0] * t["grid"][1] > MAX_RANKS:
        return "grid", f"more than {MAX_RANKS} ranks"
    if t["broadcast"] == "pipelined_ring" and not t["chunk_bytes"]:
        return "chunk_bytes", "pipelined_ring needs chunk_bytes > 0 (or use ring for one piece)"
    if t["lookahead"] and t["barrier"]:
        return "barrier", "a barrier every step would undo the look-ahead; use one or the other"
    return "grid", None


def _beta_or_app(t):
    if (t["beta"] > 0) == bool(t["app"]):
        return "beta", "give either beta > 0 or app (one of " + ", ".join(SKELETON_APPS) + "), not both"
    return "beta", None


def _cheb_partners(t):
    if len(t["offsets"]) != len(t["offset_bytes"]):
        return "offset_bytes", f"needs one size per offset ({len(t['offsets'])}), got {len(t['offset_bytes'])}"
    if bool(t["preset"]) == bool(t["offsets"]):
        return "preset", "give either a preset (M1–M9) or offsets with offset_bytes, not both"
    if t["subspace"] % t["block"]:
        return "subspace", f"must be a multiple of block ({t['block']}), got {t['subspace']}"
    return "preset", None


def _krylov_shape(t):
    for key in ("grid", "local"):
        if len(t[key]) != 3:
            return key, f"must have three entries (x, y, z), got {len(t[key])}"
    if t["stencil"] not in (7, 27):
        return "stencil", f"must be 7 or 27, got {t['stencil']}"
    if t["grid"][0] * t["grid"][1] * t["grid"][2] > MAX_RANKS:
        return "grid", f"more than {MAX_RANKS} ranks"
    return "grid", None


def _matvec_distances(t):
    if len(t["distances"]) > 4:
        return "distances", f"at most 4 distances are supported, got {len(t['distances'])}"
    for i, x in enumerate(t["distances"]):
        if x >= t["ranks"]:
            return f"distances[{i}]", f"must be < ranks ({t['ranks']}), got {x!r}"
    return "distances", None


def _rows_at_least_ranks(t):
    ok = t["rows"] >= t["ranks"]
    return "rows", None if ok else f"must be at least ranks ({t['ranks']}), got {t['rows']!r}"


def _distances(t):
    d = t["distances"]
    if len(d) > MAX_DISTANCES:
        return "distances", f"at most {MAX_DISTANCES} distances are supported, got {len(d)}"
    for i, x in enumerate(d):
        if x >= t["ranks"]:
            return f"distances[{i}]", f"must be < ranks ({t['ranks']}), got {x!r}"
    return "distances", None


RULES: dict[str, list[Callable[[dict], tuple[str, str | None]]]] = {
    "periodic": [_shorter("duration_s", "period_s")],
    "checkpoint": [_shorter("duration_s", "interval_s")],
    "poisson": [_poisson_duty],
    "bsp": [_distances],
    "collective": [_below_ranks("root"), _algorithm, _chunking, _communicator],
    "skeleton": [_beta_or_app],
    "spmv": [_rows_at_least_ranks],
    "stream_triad": [_below_ranks("max_distance")],
    "fem_matvec": [_matvec_distances],
    "krylov": [_krylov_shape],
    "krylov_kernel": [_krylov_shape],
    "chebfd": [_cheb_partners],
    "dense2d": [_dense_grid],
}


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def load_scenario(path: str | Path, overrides: dict | None = None) -> dict:
    """Reads a TOML scenario file and returns the validated user-level dict.

    Relative paths inside it resolve against the file's directory.
    """
    p = Path(path)
    source = str(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ScenarioError(f"{source}: cannot read scenario: {e.strerror or e}", source=source) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{source}: not valid UTF-8 ({e.reason} at byte {e.start})", source=source) from None
    return parse_scenario(text, source, overrides, base_dir=p.resolve().parent)


def parse_scenario(
    text: str, source: str = "<string>", overrides: dict | None = None, *, base_dir: str | Path | None = None
) -> dict:
    """Parses TOML text and validates it. ``source`` names it in messages; when it
    is a file name, relative paths resolve against its directory (else
    ``base_dir``, else the current directory)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _syntax_error(e, text, source) from None
    if overrides:
        raw = _apply_overrides(raw, overrides, source)
    return validate(raw, source, base_dir=base_dir)


def validate(raw: dict, source: str = "<dict>", *, base_dir: str | Path | None = None) -> dict:
    """Validates an already-parsed scenario and fills in every default.

    Idempotent: validating the result again returns an equal dict.
    """
    if base_dir is None:
        base_dir = Path(source).parent if source and not source.startswith("<") else Path.cwd()
    v = _Validator(source, Path(base_dir))
    return v.scenario(raw)


def to_engine_config(scn: dict) -> dict:
    """User-level scenario (seconds) -> the engine's JSON-ready config (integer ps)."""
    scn = validate(scn, "<scenario>")  # cheap, and guards against hand-edited dicts
    net = scn["network"]
    return {
        "seed": scn["seed"],
        "network": _engine_platform(net, scn["workload"]),
        "noise": [_engine_noise(n) for n in scn["noise"]],
        "workload": _engine_workload(scn["workload"], net),
        "record_timers": scn["record"]["timers"],
        "async_progress": net["async_progress"],
        "max_memory_bytes": scn["limits"]["max_memory_bytes"] or None,
    }


def _engine_platform(net: dict, workload: dict) -> dict:
    try:
        return platform.engine_platform(net, workload, _engine_link)
    except (mapping.MappingError, OSError) as e:
        raise ScenarioError(f"network.mapping: {e}", key="network.mapping") from None


def engine_json(scn: dict) -> str:
    """The engine config as a JSON string."""
    return json.dumps(to_engine_config(scn))


def describe_workloads() -> list[dict]:
    """Workload kinds with their parameters and defaults (``None`` = required)."""
    return _describe(WORKLOAD_SCHEMA)


def describe_noise() -> list[dict]:
    """Noise kinds with their parameters and defaults (``None`` = required or all ranks)."""
    return _describe(NOISE)


# --------------------------------------------------------------------------
# Implementation
# --------------------------------------------------------------------------


def _describe(schema: dict[str, tuple[str, dict[str, Field]]]) -> list[dict]:
    out = []
    for kind, (desc, fields) in schema.items():
        params = {name: (None if f.default is REQUIRED else _copy(f.default)) for name, f in fields.items()}
        out.append({"kind": kind, "description": desc, "params": params})
    return out


def _copy(v):
    return list(v) if isinstance(v, list) else v


_LINE_RE = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _syntax_error(e: tomllib.TOMLDecodeError, text: str, source: str) -> ScenarioError:
    msg = str(e)
    m = _LINE_RE.search(msg)
    if m:
        line = int(m.group(1))
        msg = f"{msg[: m.start()]} (column {m.group(2)})"
    elif msg.endswith("(at end of document)"):
        line = text.count("\n") + 1
        msg = msg[: -len("(at end of document)")].rstrip() + " (at end of file)"
    else:
        line = None
    where = f"{source}:{line}" if line is not None else source
    return ScenarioError(f"{where}: TOML syntax error: {msg}", source=source, line=line)


def _apply_overrides(raw: dict, overrides: dict, source: str) -> dict:
    """Applies top-level overrides on top of the parsed file.

    A dict value for a table is merged key by key into the file's table,
    unless it sets ``kind`` (then it replaces the table); other values replace.
    Dotted keys (``"workload.ranks"``) address one key inside a table.
    """
    out = dict(raw)
    for key, value in overrides.items():
        if not isinstance(key, str) or not key:
            raise ScenarioError(f"{source}: overrides: keys must be non-empty strings, got {key!r}", source=source)
        *parents, last = key.split(".")
        table = out
        for i, part in enumerate(parents):
            sub = table.get(part)
            if sub is None:
                sub = {}
            elif not isinstance(sub, dict):
                path = ".".join(parents[: i + 1])
                raise ScenarioError(f"{source}: {path}: cannot override {key!r}: {path} is not a table", source=source, key=path)
            table[part] = sub = dict(sub)
            table = sub
        old = table.get(last)
        if isinstance(value, dict) and isinstance(old, dict) and "kind" not in value:
            table[last] = {**old, **value}
        else:
            table[last] = value
    return out


def _type_name(v) -> str:
    return type(v).__name__


def _show(v) -> str:
    """A value as the user wrote it (TOML spelling for booleans)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Validator:
    def __init__(self, source: str, base_dir: Path):
        self.source = source
        self.base_dir = base_dir

    def fail(self, path: str, msg: str):
        where = f"{self.source}: {path}: " if path else f"{self.source}: "
        raise ScenarioError(where + msg, source=self.source, key=path)

    # -- generic --------------------------------------------------------

    def table(self, raw, path: str) -> dict:
        """Checks that ``raw`` is a table (None/absent = empty); returns it as a dict."""
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail(path, f"expected a table, got {_show(raw)} ({_type_name(raw)})")
        return raw

    def no_unknown(self, raw: dict, allowed: list[str], path: str):
        for key in raw:
            if key not in allowed:
                self.fail(_join(path, str(key)), f"unknown key (allowed: {', '.join(allowed)})")

    def fields(self, raw: dict, schema: dict[str, Field], path: str, allowed: list[str] | None = None) -> dict:
        self.no_unknown(raw, allowed if allowed is not None else list(schema), path)
        return {name: self.value(raw.get(name, REQUIRED), f, _join(path, name)) for name, f in schema.items()}

    def value(self, v, f: Field, path: str):
        if v is REQUIRED:
            if f.default is REQUIRED:
                self.fail(path, "required key is missing")
            return _copy(f.default)
        if v is None and f.nullable:
            return None
        if f.type in ("floats", "strs"):
            elem = "float" if f.type == "floats" else "str"
            if not isinstance(v, (list, tuple)):
                self.fail(path, f"expected a list of {'numbers' if elem == 'float' else 'strings'}, got {_show(v)} ({_type_name(v)})")
            return [self.scalar(x, elem, f.check, f"{path}[{i}]") for i, x in enumerate(v)]
        if f.type == "matrix":
            if not isinstance(v, (list, tuple)) or not v:
                self.fail(path, f"expected a list of rows (lists of numbers), got {_show(v)}")
            rows = []
            for i, row in enumerate(v):
                if not isinstance(row, (list, tuple)):
                    self.fail(f"{path}[{i}]", f"expected a row (list of numbers), got {_show(row)}")
                rows.append([self.scalar(x, "float", _unit_interval, f"{path}[{i}][{j}]") for j, x in enumerate(row)])
            return rows
        if f.type == "path" and v == "" and f.default == "":
            return ""  # an optional path left unset
        if f.type == "ints":
            if not isinstance(v, (list, tuple)):
                self.fail(path, f"expected a list of integers, got {_show(v)} ({_type_name(v)})")
            items = [self.scalar(x, "int", f.check, f"{path}[{i}]") for i, x in enumerate(v)]
            if f.unique:
                seen = set()
                for i, x in enumerate(items):
                    if x in seen:
                        self.fail(f"{path}[{i}]", f"duplicate value {x!r}")
                    seen.add(x)
            return items
        return self.scalar(v, f.type, f.check, path)

    def scalar(self, v, typ: str, check: Check | None, path: str):
        if typ == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                self.fail(path, f"expected an integer, got {_show(v)} ({_type_name(v)})")
        elif typ == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                self.fail(path, f"expected a number, got {_show(v)} ({_type_name(v)})")
            if not math.isfinite(v):
                self.fail(path, f"must be finite, got {v!r}")
        elif typ == "bool":
            if not isinstance(v, bool):
                self.fail(path, f"expected a boolean (true or false), got {_show(v)} ({_type_name(v)})")
        elif typ in ("str", "path"):
            if not isinstance(v, str):
                self.fail(path, f"expected a string, got {_show(v)} ({_type_name(v)})")
            if typ == "path" and not v.strip():
                self.fail(path, "expected a file path, got an empty string")
        else:  # pragma: no cover - schema bug
            raise AssertionError(f"unknown field type {typ!r}")
        if check is not None:
            msg = check(v)
            if msg:
                self.fail(path, msg)
        if typ == "float":
            return float(v)
        if typ == "path":
            return self.resolve(v)
        return v

    def resolve(self, p: str) -> str:
        path = Path(os.path.expanduser(p))
        if not path.is_absolute():
            path = self.base_dir / path
        return os.path.normpath(os.path.abspath(path))

    def rules(self, kind: str, table: dict, path: str):
        for rule in RULES.get(kind, ()):
            key, msg = rule(table)
            if msg:
                self.fail(_join(path, key), msg)

    def kinded(self, raw, schema: dict[str, tuple[str, dict[str, Field]]], path: str, default: str | None) -> dict:
        """A table whose allowed keys depend on its ``kind``."""
        raw = self.table(raw, path)
        kinds = ", ".join(schema)
        kind = raw.get("kind", REQUIRED)
        if kind is REQUIRED:
            if default is None:
                self.fail(_join(path, "kind"), f"required key is missing (one of: {kinds})")
            kind = default
        if not isinstance(kind, str):
            self.fail(_join(path, "kind"), f"expected a string, got {_show(kind)} ({_type_name(kind)})")
        if kind not in schema:
            self.fail(_join(path, "kind"), f"must be one of {kinds}; got {kind!r}")
        fields = schema[kind][1]
        out = {"kind": kind, **self.fields(raw, fields, path, allowed=["kind", *fields])}
        self.rules(kind, out, path)
        return out

    # -- sections -------------------------------------------------------

    def scenario(self, raw) -> dict:
        if not isinstance(raw, dict):
            self.fail("", f"expected a table of scenario keys, got {_type_name(raw)}")
        self.no_unknown(raw, [*TOP, *TOP_TABLES], "")
        top = {name: self.value(raw.get(name, REQUIRED), f, name) for name, f in TOP.items()}
        network = self.network(raw.get("network"))
        workload = self.kinded(raw.get("workload"), WORKLOAD_SCHEMA, "workload", DEFAULT_WORKLOAD)
        noise = self.noise(raw.get("noise"), workload.get("ranks"))  # goal: rank count unknown here
        record = self.fields(self.table(raw.get("record"), "record"), RECORD, "record")
        limits = self.fields(self.table(raw.get("limits"), "limits"), LIMITS, "limits")
        return {
            **top,
            "network": network,
            "noise": noise,
            "workload": workload,
            "record": record,
            "limits": limits,
        }

    def network(self, raw) -> dict:
        raw = self.table(raw, "network")
        if raw.get("platform"):
            raw = platform.merged(raw, self.resolve, self.fail)
        out = self.fields(raw, NETWORK, "network", allowed=[*NETWORK, *NETWORK_TABLES])
        out.update(self.protocols(raw, out, "network"))
        parent = out
        for cls in ("intra_node", "intra_socket"):
            sub = raw.get(cls)
            if sub is not None:
                sub = self.table(sub, f"network.{cls}")
                schema = {k: replace(f, default=parent[k]) for k, f in LINK.items()}
                link = self.fields(sub, schema, f"network.{cls}", allowed=[*LINK, "short", "rendezvous"])
                link.update(self.protocols(sub, link, f"network.{cls}"))
                sub = parent = link
            out[cls] = sub
        out["topology"] = self.kinded(raw.get("topology", {}), TOPOLOGY, "network.topology", "fully_connected")
        if out["topology"]["kind"] == "torus" and len(out["topology"]["dims"]) != 3:
            self.fail("network.topology.dims", f"must have three entries (x, y, z), got {len(out['topology']['dims'])}")
        out["mapping"] = self.kinded(raw.get("mapping", {}), MAPPING, "network.mapping", "block")
        mem = raw.get("memory")
        out["memory"] = None if mem is None else self.fields(self.table(mem, "network.memory"), MEMORY, "network.memory")
        out["regimes"] = [self.regime(r, f"network.regimes[{i}]") for i, r in enumerate(self.array(raw.get("regimes"), "network.regimes"))]
        if out["ranks_per_socket"] > out["ranks_per_node"]:
            self.fail("network.ranks_per_socket", f"must be <= ranks_per_node ({out['ranks_per_node']}), got {out['ranks_per_socket']}")
        return out

    def protocols(self, raw: dict, link: dict, path: str) -> dict:
        """The short and rendezvous sub-tables of a link table (None when absent)."""
        out = {}
        for name, extra in (("short", SHORT), ("rendezvous", {})):
            sub = raw.get(name)
            if sub is not None:
                sub = self.table(sub, f"{path}.{name}")
                schema = {**extra, **{k: replace(f, default=link[k]) for k, f in LINK.items() if k != "S_bytes"}}
                sub = self.fields(sub, schema, f"{path}.{name}")
            out[name] = sub
        if out["short"] is not None and out["short"]["max_bytes"] > link["S_bytes"]:
            self.fail(f"{path}.short.max_bytes", f"must be <= S_bytes ({link['S_bytes']}), got {out['short']['max_bytes']}")
        return out

    def array(self, raw, path: str) -> list:
        if raw is None:
            return []
        if isinstance(raw, dict) or not isinstance(raw, (list, tuple)):
            self.fail(path, f"expected an array of tables ([[{path}]]), got {_show(raw)} ({_type_name(raw)})")
        return list(raw)

    def regime(self, raw, path: str) -> dict:
        r = self.fields(self.table(raw, path), REGIME, path)
        n = len(r["transition"])
        for i, row in enumerate(r["transition"]):
            if len(row) != n:
                self.fail(f"{path}.transition[{i}]", f"must have {n} entries (one per state), got {len(row)}")
            if abs(sum(row) - 1.0) > 1e-6:
                self.fail(f"{path}.transition[{i}]", f"probabilities must sum to 1, got {sum(row):.6g}")
        for key in ("multiplier", "add_mean_s", "add_sd_s"):
            if r[key] is None:
                r[key] = [1.0 if key == "multiplier" else 0.0] * n
            if len(r[key]) != n:
                self.fail(f"{path}.{key}", f"needs one value per state ({n}), got {len(r[key])}")
        for j, c in enumerate(r["classes"]):
            if c not in LINK_CLASSES:
                self.fail(f"{path}.classes[{j}]", f"must be one of {', '.join(LINK_CLASSES)}; got {c!r}")
        if r["initial"] >= n:
            self.fail(f"{path}.initial", f"must be < the number of states ({n}), got {r['initial']}")
        return r

    def noise(self, raw, ranks: int | None) -> list[dict]:
        if raw is None:
            return []
        if isinstance(raw, dict):
            self.fail("noise", "expected an array of tables (write [[noise]], not [noise])")
        if not isinstance(raw, (list, tuple)):
            self.fail("noise", f"expected an array of tables ([[noise]]), got {_show(raw)} ({_type_name(raw)})")
        out = []
        for i, entry in enumerate(raw):
            path = f"noise[{i}]"
            src = self.kinded(entry, NOISE, path, default=None)
            if ranks is not None:
                if src.get("ranks") is not None:
                    for j, r in enumerate(src["ranks"]):
                        if r >= ranks:
                            self.fail(f"{path}.ranks[{j}]", f"must be < workload.ranks ({ranks}), got {r}")
                if "rank" in src and src["rank"] >= ranks:
                    self.fail(f"{path}.rank", f"must be < workload.ranks ({ranks}), got {src['rank']}")
            out.append(src)
        return out


# -- engine conversion --------------------------------------------------------


def _engine_link(t: dict) -> dict:
    return {
        "l_ps": _ps(t["L_s"]),
        "o_ps": _ps(t["o_s"]),
        "g_ps": _ps(t["g_s"]),
        "big_g_ps_per_byte": float(t["G_s_per_byte"] * PS_PER_S),
        "big_o_ps_per_byte": float(t["O_s_per_byte"] * PS_PER_S),
        "s_bytes": t["S_bytes"],
    }


def _engine_noise(n: dict) -> dict:
    kind = n["kind"]
    if kind == "periodic":
        out = {"period_ps": _ps(n["period_s"]), "duration_ps": _ps(n["duration_s"]), "cosched": n["cosched"]}
    elif kind == "poisson":
        out = {"rate_per_s": n["rate_hz"], "duration_ps": _ps(n["duration_s"])}
    elif kind == "checkpoint":
        out = {"interval_ps": _ps(n["interval_s"]), "duration_ps": _ps(n["duration_s"])}
    elif kind == "trace":
        out = {"path": n["path"], "cosched": n["cosched"]}
    elif kind == "single":
        return {"kind": kind, "rank": n["rank"], "start_ps": _ps(n["start_s"]), "duration_ps": _ps(n["duration_s"])}
    else:  # pragma: no cover - validate() rejects it
        raise AssertionError(kind)
    return {"kind": kind, **out, "ranks": n["ranks"]}


def _engine_comm(w: dict, net: dict) -> dict:
    comm = w["communicator"]
    if comm == "rows":
        return {"kind": "blocks", "size": w["grid_columns"]}
    if comm == "columns":
        return {"kind": "strided", "stride": w["grid_columns"]}
    if comm == "nodes":
        return {"kind": "blocks", "size": net["ranks_per_node"]}
    return {"kind": "world"}


def _engine_workload(w: dict, net: dict) -> dict:
    kind = w["kind"]

    if kind == "goal":
        return {"kind": "goal", "path": w["path"]}
    if kind == "trace":
        return {"kind": "trace", "dir": w["dir"], "algorithms": dict(a.split("=", 1) for a in w["algorithms"]),
                "compute_scale": w["compute_scale"], "scale_to": w["scale_to"] or None}
    if kind == "chebfd":
        return {
            "kind": "chebfd",
            **{k: w[k] for k in ("ranks", "subspace", "block", "degree", "mode", "remote_fraction", "split_overhead", "barrier")},
            "kernel_per_vector_ps": _ps(w["kernel_per_vector_s"]),
            "partners": [[d, b] for d, b in zip(w["offsets"], w["offset_bytes"])],
            "preset": w["preset"] or None,
        }
    if kind == "krylov_kernel":
        # Busy-wait 1 overlaps the nonblocking call, busy-wait 2 trails it:
        # the solver workload's preconditioner and vector stages.
        return {
            "kind": "krylov",
            "iterations": w["iterations"],
            "grid": w["grid"],
            "local": w["local"],
            "stencil": w["stencil"],
            "method": f"{w['kernel']}_{w['mode']}",
            "algorithm": None if w["algorithm"] == "auto" else w["algorithm"],
            "spmv_ps": 0,
            "precond_ps": _ps(w["overlap_s"]),
            "vector_ps": _ps(w["trailing_s"]),
            "diagonal_fraction": 0.0,
        }
    if kind == "dense2d":
        rows, cols = w["grid"]
        rest = {k: v for k, v in w.items() if k not in ("kind", "grid", "kernel")}
        return {"kind": "dense2d", "kernel": w["kernel"], "grid_rows": rows, "grid_cols": cols, **rest}
    if kind == "stream_triad":
        # A sweep streams bytes_per_element per element (A = B + s·C: two loads,
        # one store, one write-allocate) at the core's bandwidth, then exchanges
        # with every rank within max_distance: the BSP loop of the engine.
        # With memory domains on the platform the sweep is memory-bound and
        # contends for its socket's bandwidth instead.
        sweep_bytes = w["elements_per_rank"] * w["bytes_per_element"]
        sweep_s = sweep_bytes / w["core_bandwidth_bytes_per_s"]
        return {
            "kind": "bsp",
            "ranks": w["ranks"],
            "iterations": w["iterations"],
            "compute_ps": _ps(sweep_s),
            "compute_bytes": sweep_bytes if net["memory"] else 0,
            "distances": list(range(1, w["max_distance"] + 1)),
            "message_bytes": w["message_bytes"],
            "periodic": w["periodic"],
            "barrier": w["barrier"],
        }
    out = {"kind": kind}
    if kind == "collective":
        out["comm"] = _engine_comm(w, net)
        w = {k: v for k, v in w.items() if k not in ("communicator", "grid_columns")}
    if kind == "skeleton":
        w = dict(w)
        app = w.pop("app")
        if app:
            w["beta"] = SKELETON_APPS[app]
    for key, value in w.items():
        if key == "kind":
            continue
        if key == "algorithm":
            out[key] = None if value == "auto" else value
            continue
        if key == "partners_file":
            out[key] = value or None
        elif key.endswith("_s"):
            out[key[:-2] + "_ps"] = _ps(value)
        else:
            out[key] = list(value) if isinstance(value, list) else value
    return out
