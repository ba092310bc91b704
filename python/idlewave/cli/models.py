"""`idlewave model …`: the analytic models (postal, LogGOPS, NBC bounds, hyperbolic fits, halo, pcg)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from idlewave import _engine
from idlewave.cli.common import JSON, QUIET, err, fail, lazy, out, print_json, read_table
from idlewave.scenario import PS_PER_S, default
from idlewave.units import fmt_bytes, fmt_rate, fmt_time

if TYPE_CHECKING:
    import numpy as np

    from idlewave.models import hyperbolic, loggops, nbc, postal
else:  # loaded on first use: `idlewave --help` stays fast
    np = lazy("numpy")
    hyperbolic = lazy("idlewave.models.hyperbolic")
    loggops = lazy("idlewave.models.loggops")
    nbc = lazy("idlewave.models.nbc")
    postal = lazy("idlewave.models.postal")

model_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Analytic models: postal, allreduce, halo, pcg, nbc-bound, hyperbolic, idle-wave, loggops.")


def _human(key: str, value, times: tuple[str, ...] = ()) -> str:
    """One value of a model's result for people (idlewave.units): a key in
    `times` or ending in _s is a time, one naming bytes a size, _per_s a
    rate; other numbers to six significant digits, as JSON keeps them."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_human(k, v)}" for k, v in value.items())
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if key.endswith("_per_s"):
        word = key.removesuffix("_per_s").rsplit("_", 1)[-1]
        return fmt_rate(value, "B/s" if word == "bytes" else f"{word}/s", 4)
    if key in times or key.endswith("_s"):
        return fmt_time(value, 4)
    if key == "bytes" or key.endswith("_bytes"):
        return fmt_bytes(value, 4, binary=True)
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _show(result: dict, as_json: bool, inputs: str = "an input", times: tuple[str, ...] = ()) -> None:
    try:  # the inputs are checked, but extreme ones can still overflow a formula: say so, never print NaN/inf
        text = json.dumps(result, indent=2, allow_nan=False)
    except ValueError:
        bad = [k for k, v in result.items() if isinstance(v, float) and not math.isfinite(v)] or ["a value"]
        fail(f"the result is not a finite number ({', '.join(bad)}): {inputs} too large or too small for the model")
    if as_json:
        print(text)
        return
    t = Table(show_header=False, box=None)
    for k, v in result.items():
        t.add_row(k, _human(k, v, times))
    out.print(t)


def _platform(name: str) -> postal.PostalPlatform:
    from idlewave.scenario import ScenarioError

    try:
        return postal.PostalPlatform.preset(name)
    except ScenarioError as e:  # the preset is resolved as an inline scenario: name the flag, not its key
        fail(f"--platform: {e.message}" if e.key == "network.platform" else str(e))


HOPS = typer.Option(None, "--hops", help="Hops per off-node message for the hop penalty (--penalties hops; with it the "
                    "congestion penalty scales with them too): best, average (the default) or max over the pattern's "
                    "messages in the platform's topology, or a number ≥ 0.")


PENALTIES = typer.Option(None, "--penalties", help="A penalty: maxrate, hops or congestion (repeatable, or comma-separated).")


def _penalties(given: list[str] | None) -> tuple[str, ...]:
    """--penalties, repeatable or comma-separated (or both)."""
    pens = tuple(dict.fromkeys(p.strip() for v in given or [] for p in v.split(",") if p.strip()))
    bad = [p for p in pens if p not in ("maxrate", "hops", "congestion")]
    if bad:
        fail(f"--penalties: unknown {', '.join(bad)} (choose from maxrate, hops, congestion)")
    return pens


def _check_hops(text: str | None, pens: tuple[str, ...], words: tuple[str, ...]) -> None:
    """--hops, when given: a number ≥ 0 or one of `words`, and only with the
    hop penalty, the one that uses it (the congestion penalty scales with the
    hops only together with it: idlewave.models.postal)."""
    if text is None:
        return
    try:
        v = float(text)
    except ValueError:
        if text not in words:
            fail(f"--hops: must be a number ≥ 0 or one of {', '.join(words)}, got {text!r}")
    else:
        if not (math.isfinite(v) and v >= 0):
            fail(f"--hops: must be a finite number ≥ 0, got {text}")
    if "hops" not in pens:
        given = f"--penalties {','.join(pens)} leaves it out" if pens else "no --penalties are given"
        fail(f"--hops {text}: only the hop penalty uses it, and {given}: add --penalties hops, or drop --hops")


def _hops(text: str, hops_of_pattern) -> float:
    """A hop count typed as a number, or estimated from the pattern's hops."""
    try:
        v = float(text)
    except ValueError:
        try:
            return postal.estimate_hops(hops_of_pattern(), text)
        except ValueError as e:
            fail(f"--hops: {e}")
    if not (math.isfinite(v) and v >= 0):
        fail(f"--hops: must be a finite number ≥ 0, got {text}")
    return v


def _ints(text: str, what: str, n: int | None = None) -> list[int]:
    try:
        v = [int(x) for x in text.split(",")]
    except ValueError:
        fail(f"{what}: expected comma-separated integers, got {text!r}")
    if n is not None and len(v) != n:
        fail(f"{what}: expected {n} values, got {len(v)}")
    if any(x <= 0 for x in v):
        fail(f"{what}: values must be positive")
    for x in v:  # grids and points per rank are uint32 in the engine's workloads
        _at_most(what, x, UINT32_MAX)
    return v


# The engine's input limits, so that a model takes what a scenario takes:
# a time is 0 or between 1 ps (a positive time below it would silently
# become 0 in integer picoseconds) and 2^60 ps (src/time.rs MAX_INPUT).
MAX_SECONDS = _engine.MAX_INPUT_PS / PS_PER_S
UINT32_MAX = 2**32 - 1  # iterations, distances, grid sizes
MAX_RANKS = 2**31  # src/units.rs MAX_RANKS
MAX_MESSAGE_BYTES = 2**47 - 1  # src/units.rs: the match queues hold sizes below 2^47
# The per-rank (or per-pair) Python lists a model may build: about 1 GiB,
# and about half a minute of Python at the slowest (the halo model).
MEMORY_LIMIT = 1 << 30


def _seconds(flag: str, value: float) -> float:
    """A time in seconds within the engine's range (0 allowed), as `simulate` checks its scenario's times."""
    if not (math.isfinite(value) and value >= 0):
        fail(f"{flag}: must be a finite time ≥ 0 s, got {value!r}")
    if value > MAX_SECONDS:
        fail(f"{flag}: too large: {value!r} s exceeds the engine's limit of about {MAX_SECONDS:.3g} s (2^60 ps)")
    if value > 0 and round(value * PS_PER_S) < 1:
        fail(f"{flag}: too small: {value!r} s is below the engine's 1 ps resolution (give 0 or at least 1e-12)")
    return value


def _number(flag: str, value: float, low: float, *, strict: bool = False) -> float:
    """A finite number ≥ low (> low if strict): NaN and infinity have no meaning in any model."""
    if not (math.isfinite(value) and (value > low if strict else value >= low)):
        fail(f"{flag}: must be a finite number {'>' if strict else '≥'} {low:g}, got {value!r}")
    return value


def _at_most(flag: str, value: int, most: int) -> int:
    if value > most:
        fail(f"{flag}: at most {most} (the engine's limit), got {value}")
    return value


def _memory(flag: str, need: int, what: str) -> None:
    """Refuses, before allocating, a size whose per-rank lists would exhaust memory
    (the sizes are capped at the engine's limits first, so `need` fits a float)."""
    if need > MEMORY_LIMIT:
        fail(f"{flag}: {what} would need about {need / 2**30:.3g} GiB of memory (the limit is "
             f"{MEMORY_LIMIT >> 30} GiB); give a smaller value")


def _allreduce_hops(platform: str, nodes: int) -> list[int]:
    """The topology's hops of recursive doubling's node pairs (about nodes·log2(nodes) pairs, ~256 B each)."""
    _memory("--nodes", 256 * nodes * max(1, (nodes - 1).bit_length()), f"the recursive-doubling pairs of {nodes} nodes")
    return postal.topology_hops(platform, postal.allreduce_node_pairs(nodes))


PLATFORM = typer.Option("blue_waters", "--platform", help="Preset or platform file.")


@model_app.command("nbc-bound")
def nbc_bound(
    beta: float | None = typer.Option(None, "--beta", help="Computation-to-communication ratio."),
    inflation: float | None = typer.Option(None, "--inflation", help="Noise inflation of communication Σ(c+n)/Σc "
                                           "(Eq. 6, 7; default 1: no noise)."),
    table1: bool = typer.Option(False, "--table1", help="Print Table 1 of the noise paper (its own β per application; "
                                "not with --beta or --inflation)."),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """Upper bound on the speedup of nonblocking collectives, Eq. (4)–(7)."""
    if table1:
        given = [flag for flag, value in (("--beta", beta), ("--inflation", inflation)) if value is not None]
        if given:
            fail(f"{' and '.join(given)}: --table1 prints the paper's Table 1, with its own β per application and no "
                 f"noise; give either --table1 or {' and '.join(given)}")
        rows = nbc.table1()
        if as_json:
            print_json(rows)
        else:
            t = Table("application", "β", "max speedup")
            for r in rows:
                t.add_row(r["application"], f"{r['beta']:g}", f"{r['max_speedup']:.2f}")
            out.print(t)
        return
    if beta is None:
        fail("give --beta (or --table1)")
    _number("--beta", beta, 0.0, strict=True)
    inflation = 1.0 if inflation is None else _number("--inflation", inflation, 1.0)  # Σ(c+n)/Σc: noise only adds
    try:
        _show(nbc.bound(beta, inflation), as_json, "--beta or --inflation")
    except ValueError as e:
        fail(str(e))


@model_app.command("postal")
def postal_message(
    nbytes: int = typer.Option(..., "--bytes", min=0),
    platform: str = PLATFORM,
    on_node: bool = typer.Option(False, "--on-node"),
    hops: int = typer.Option(0, "--hops", min=0),
    maxrate: bool = typer.Option(False, "--maxrate"),
    congestion: bool = typer.Option(False, "--congestion"),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """One message: postal time per protocol and class, with penalties."""
    _at_most("--bytes", nbytes, MAX_MESSAGE_BYTES)
    _at_most("--hops", hops, UINT32_MAX)
    _show(_platform(platform).message(nbytes, on_node=on_node, hops=hops, maxrate=maxrate, congestion=congestion), as_json,
          times=("postal", "maxrate", "hops", "congestion", "total"))


@model_app.command("allreduce")
def allreduce_model(
    nbytes: int = typer.Option(8, "--bytes", min=1),
    nodes: int = typer.Option(..., "--nodes", min=1),
    platform: str = PLATFORM,
    flop_s: float = typer.Option(0.0, "--flop-s", help="Seconds per flop of the local reduction."),
    hops: str | None = HOPS,
    penalties: list[str] | None = PENALTIES,
    nonblocking: bool = typer.Option(False, "--nonblocking", help="The penalties overlap --overlap-s of computation (§6)."),
    overlap_s: float = typer.Option(0.0, "--overlap-s", help="Computation between start and wait (nonblocking)."),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """Recursive doubling on the node, then between nodes (Krylov paper §5.3); blocking or nonblocking with overlap."""
    _at_most("--bytes", nbytes, MAX_MESSAGE_BYTES)
    _at_most("--nodes", nodes, MAX_RANKS)  # a node holds at least one rank
    _number("--flop-s", flop_s, 0.0)  # a rate, not an engine time: any finite value ≥ 0 is exact here
    _seconds("--overlap-s", overlap_s)
    pl_ = _platform(platform)
    from dataclasses import replace

    pl_ = replace(pl_, flop_time=flop_s)
    pens = _penalties(penalties)
    _check_hops(hops, pens, postal.HOP_ESTIMATES)
    n_hops = _hops(hops or "average", lambda: _allreduce_hops(platform, nodes)) if "hops" in pens else 0.0
    if overlap_s and not nonblocking:
        fail("--overlap-s: only a nonblocking allreduce overlaps computation (add --nonblocking)")
    out = postal.allreduce(pl_, nbytes, nodes, hops=n_hops, penalties=pens, overlap=overlap_s if nonblocking else None)
    _show({**out, "hops": n_hops}, as_json, "--flop-s or --hops")


@model_app.command("halo")
def halo_model(
    grid: str = typer.Option(..., "--grid", help="Process grid px,py,pz."),
    local: str = typer.Option("32,32,32", "--local", help="Points per rank nx,ny,nz."),
    stencil: int = typer.Option(7, "--stencil"),
    mapping: str = typer.Option("block", "--mapping", help="block or cartesian."),
    platform: str = PLATFORM,
    nonblocking: bool = typer.Option(False, "--nonblocking"),
    overlap_s: float = typer.Option(0.0, "--overlap-s", help="Computation between start and wait (nonblocking)."),
    penalties: list[str] | None = PENALTIES,
    hops: str | None = typer.Option(None, "--hops", help="Hops per off-node message for the hop penalty (--penalties "
                                    "hops): 'each' (the default: from the topology, message by message), best, average, "
                                    "max (one count for all), or a number ≥ 0."),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """3-D halo exchange from the on/off-node message counts of a mapping; average and slowest rank."""
    _seconds("--overlap-s", overlap_s)
    pl_ = _platform(platform)
    g, loc = _ints(grid, "--grid", 3), _ints(local, "--local", 3)
    pens = _penalties(penalties)
    _check_hops(hops, pens, ("each", *postal.HOP_ESTIMATES))
    times, offs = _halo_times(pl_, platform, g, loc, stencil, mapping, pens, hops or "each",
                              blocking=not nonblocking, overlap_s=overlap_s)
    _show({"ranks": len(times), "mean_s": float(np.mean(times)), "max_s": float(np.max(times)),
           "off_node_messages_mean": float(np.mean(offs)), "off_node_messages_max": int(np.max(offs))}, as_json,
          "--local or --hops")


def _halo_times(pl_: postal.PostalPlatform, platform: str, g: list[int], loc: list[int], stencil: int, mapping: str,
                pens: tuple[str, ...], hops: str, *, blocking: bool = True, overlap_s: float = 0.0) -> tuple[list[float], list[int]]:
    """Per rank: the halo model's time and its off-node message count."""
    from idlewave.mapping import MappingError
    from idlewave.models.halo import halo_messages

    if stencil not in (7, 27):
        fail("--stencil must be 7 or 27")
    if mapping not in ("block", "cartesian"):
        fail("--mapping must be block or cartesian")
    # measured: about 0.5 KiB per rank and 0.25 KiB per message of its lists
    ranks = g[0] * g[1] * g[2]
    _memory("--grid", ranks * (512 + 256 * (stencil - 1)), f"the halo messages of {ranks} ranks")
    try:
        per_rank = halo_messages(g, loc, stencil, pl_.ppn, mapping)
    except MappingError as e:  # no node block divides the grid
        fail(f"--mapping {mapping}: {e}")
    pairs = sorted({(a, b) for m in per_rank for _, a, b in m if a != b})
    try:
        links = dict(zip(pairs, postal.topology_hops(platform, pairs))) if pairs and "hops" in pens else {}
    except ValueError as e:  # more nodes than the platform's topology has
        fail(f"--grid: {e}")
    one = None if hops == "each" else _hops(hops, lambda: list(links.values()))
    messages = [[(n, a == b, one if one is not None else links.get((a, b), 0)) for n, a, b in m] for m in per_rank]
    times = [postal.halo(pl_, m, blocking=blocking, overlap_compute=overlap_s, penalties=pens)["time_s"] for m in messages]
    return times, [sum(1 for _, on, _ in m if not on) for m in messages]


@model_app.command("pcg")
def pcg_model(
    method: str = typer.Option("pcg", "--method"),
    spmv_s: float = typer.Option(..., "--spmv-s"),
    precond_s: float = typer.Option(0.0, "--precond-s"),
    vector_s: float = typer.Option(0.0, "--vector-s"),
    allreduce_s: float | None = typer.Option(None, "--allreduce-s", help="A measured allreduce time (or give --nodes)."),
    halo_s: float | None = typer.Option(None, "--halo-s", help="A measured halo time (or give --grid; default 0)."),
    sync_s: float = typer.Option(0.0, "--sync-s", help="Synchronization penalty per allreduce."),
    iterations: int = typer.Option(1, "--iterations", min=1),
    nodes: int | None = typer.Option(None, "--nodes", min=1, help="Model the allreduces on this many nodes of --platform "
                                     "(with --penalties; a nonblocking one overlaps only its penalty terms, §6)."),
    platform: str = PLATFORM,
    penalties: list[str] | None = PENALTIES,
    hops: str | None = HOPS,
    grid: str | None = typer.Option(None, "--grid", help="Model the halo: process grid px,py,pz (slowest rank)."),
    local: str = typer.Option("32,32,32", "--local", help="Points per rank nx,ny,nz (with --grid)."),
    stencil: int = typer.Option(27, "--stencil", help="7 or 27 (with --grid)."),
    mapping: str = typer.Option("block", "--mapping", help="block or cartesian (with --grid)."),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """The PCG family (PCG, SAPCG, NBPCG, PIPECG, PIPE2CG) per iteration, from measured or modelled allreduce and halo times."""
    method = method.lower()  # the README and the papers write PCG, SAPCG, …
    if method not in postal.PCG_METHODS:
        fail(f"--method: must be one of {', '.join(postal.PCG_METHODS)} (any case), got {method!r}")
    for flag, value in (("--spmv-s", spmv_s), ("--precond-s", precond_s), ("--vector-s", vector_s),
                        ("--allreduce-s", allreduce_s), ("--halo-s", halo_s), ("--sync-s", sync_s)):
        if value is not None:
            _seconds(flag, value)
    _at_most("--iterations", iterations, UINT32_MAX)
    if nodes is not None:
        _at_most("--nodes", nodes, MAX_RANKS)  # a node holds at least one rank
    if (allreduce_s is None) == (nodes is None):
        fail("give either --allreduce-s (a measured time) or --nodes (the allreduce model), "
             + ("not both" if nodes is not None else "one of them"))
    if halo_s is not None and grid is not None:
        fail("give either --halo-s (a measured time) or --grid (the halo model), not both")
    pens = _penalties(penalties)
    if nodes is None and (pens or grid is not None):
        fail("--penalties and --grid model the communication: add --nodes")
    _check_hops(hops, pens, postal.HOP_ESTIMATES)
    try:
        if nodes is None:
            assert allreduce_s is not None
            _show(postal.pcg(method, spmv_s=spmv_s, precond_s=precond_s, vector_s=vector_s, allreduce_s=allreduce_s,
                             halo_s=halo_s or 0.0, iterations=iterations, sync_s=sync_s), as_json)
            return
        pl_ = _platform(platform)
        halo = halo_s or 0.0
        if grid is not None:
            # by default each halo message gets its own hops, as in `model halo`
            times, _ = _halo_times(pl_, platform, _ints(grid, "--grid", 3), _ints(local, "--local", 3), stencil, mapping,
                                   pens, hops or "each")
            halo = float(np.max(times))
        n_hops = _hops(hops or "average", lambda: _allreduce_hops(platform, nodes)) if "hops" in pens else 0.0
        out_ = postal.pcg_with_penalties(pl_, method, nodes=nodes, spmv_s=spmv_s, precond_s=precond_s, vector_s=vector_s,
                                         halo_s=halo, iterations=iterations, sync_s=sync_s, hops=n_hops, penalties=pens)
        _show({**out_, "hops": n_hops}, as_json, "--local or --hops")
    except ValueError as e:
        fail(str(e))


@model_app.command("idle-wave")
def idle_wave_model(
    distance: int = typer.Option(1, "--distance", min=1),
    t_exec: float = typer.Option(..., "--t-exec"),
    t_comm: float = typer.Option(0.0, "--t-comm"),
    sigma: float = typer.Option(1.0, "--sigma"),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """Idle-wave speed σ·d/(T_exec + T_comm) in ranks/s."""
    _at_most("--distance", distance, UINT32_MAX)
    _seconds("--t-exec", t_exec)
    _seconds("--t-comm", t_comm)
    _number("--sigma", sigma, 0.0, strict=True)  # a wave that does not move has no speed to model
    if t_exec + t_comm == 0:
        fail("--t-exec, --t-comm: an iteration of no time gives no finite speed; give one > 0")
    _show({"speed_ranks_per_s": postal.idle_wave_speed(distance, t_exec, t_comm, sigma)}, as_json)


@model_app.command("hyperbolic")
def hyperbolic_model(
    data: Path = typer.Argument(..., help="CSV or Parquet with columns eta, value."),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """Fit y = aη/(η+d) (weighted log least squares and the quick approximation) and compare with y = a − c/η."""
    frame = read_table(data, ["eta", "value"])
    try:
        result = hyperbolic.compare(frame["eta"].to_numpy(), frame["value"].to_numpy())
    except ValueError as e:
        fail(f"{data}: {e}")
    _show(result, as_json)
    if result["hyperbolic"]["degenerate"]:
        err.print(f"[yellow]warning:[/] degenerate hyperbolic fit: {escape(result['hyperbolic']['degenerate'])}", highlight=False)


@model_app.command("loggops")
def loggops_model(
    kind: str = typer.Option("p2p", "--kind", help="p2p, bcast (binomial) or dissemination."),
    ranks: int = typer.Option(2, "--ranks", min=1),
    nbytes: int = typer.Option(8, "--bytes", min=0),
    L: float = typer.Option(default("network.L_s"), "--L-s"),
    o: float = typer.Option(default("network.o_s"), "--o-s"),
    g: float = typer.Option(default("network.g_s"), "--g-s"),
    G: float = typer.Option(default("network.G_s_per_byte"), "--G-s-per-byte"),
    O: float = typer.Option(default("network.O_s_per_byte"), "--O-s-per-byte"),
    S: int = typer.Option(default("network.S_bytes"), "--S-bytes"),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """LogGOPS closed forms, charged as the engine charges them (eager messages)."""
    for flag, value in (("--L-s", L), ("--o-s", o), ("--g-s", g), ("--G-s-per-byte", G), ("--O-s-per-byte", O)):
        _seconds(flag, value)
    if S < 0:
        fail(f"--S-bytes: must be ≥ 0, got {S}")
    _at_most("--S-bytes", S, 2**64 - 1)
    _at_most("--ranks", ranks, MAX_RANKS)
    if nbytes > S:
        fail(f"--bytes: the closed forms cover eager messages only: {nbytes} B > --S-bytes {S} B")
    if (nbytes - 1) * max(G, O) > MAX_SECONDS:  # the engine caps a message's per-byte time there
        fail(f"--bytes: {nbytes} B at the per-byte costs take more than the engine's limit of about {MAX_SECONDS:.3g} s")
    if kind == "bcast":  # two lists of finish times, 32 B per rank each
        _memory("--ranks", 64 * ranks, f"the finish times of {ranks} ranks")
    p = loggops.LogGOPS.from_seconds(L, o, g, G, O, S)
    try:
        if kind == "p2p":
            t = loggops.p2p(p, nbytes)
        elif kind == "bcast":
            t = max(loggops.binomial_bcast(p, ranks, nbytes))
        elif kind == "dissemination":
            t = loggops.dissemination(p, ranks, nbytes)
        else:
            fail("--kind must be p2p, bcast or dissemination")
    except ValueError as e:
        fail(str(e))
    _show({"kind": kind, "ranks": ranks, "bytes": nbytes, "time_s": t / loggops.PS, "time_ps": t}, as_json)
