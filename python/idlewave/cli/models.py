"""`idlewave model …` and `idlewave fit …`: the analytic models and calibration."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from idlewave import _engine
from idlewave.cli.common import QUIET, err, fail, lazy, out, print_json
from idlewave.inputs import describe_columns
from idlewave.scenario import PS_PER_S, default
from idlewave.units import fmt_bytes, fmt_rate, fmt_si, fmt_time

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

    from idlewave.models import fit as fitting
    from idlewave.models import hyperbolic, loggops, nbc, postal
else:  # loaded on first use: `idlewave --help` stays fast
    np = lazy("numpy")
    pl = lazy("polars")
    fitting = lazy("idlewave.models.fit")
    hyperbolic = lazy("idlewave.models.hyperbolic")
    loggops = lazy("idlewave.models.loggops")
    nbc = lazy("idlewave.models.nbc")
    postal = lazy("idlewave.models.postal")

model_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Analytic models: postal, allreduce, halo, pcg, nbc-bound, hyperbolic, idle-wave, loggops.")
fit_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Calibrate models from measurements; writes a platform TOML.")


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
    try:
        return postal.PostalPlatform.preset(name)
    except Exception as e:  # ScenarioError and friends carry a user-facing message
        # (the preset is resolved as an inline scenario: name the flag, not "<string>")
        fail(str(e).replace("<string>: network.platform", "--platform"))


HOPS = typer.Option("average", "--hops", help="Hops per off-node message for the hop and congestion penalties: "
                    "best, average or max over the pattern's messages in the platform's topology, or a number.")


PENALTIES = typer.Option(None, "--penalties", help="A penalty: maxrate, hops or congestion (repeatable, or comma-separated).")


def _penalties(given: list[str] | None) -> tuple[str, ...]:
    """--penalties, repeatable or comma-separated (or both)."""
    pens = tuple(dict.fromkeys(p.strip() for v in given or [] for p in v.split(",") if p.strip()))
    bad = [p for p in pens if p not in ("maxrate", "hops", "congestion")]
    if bad:
        fail(f"--penalties: unknown {', '.join(bad)} (choose from maxrate, hops, congestion)")
    return pens


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


def _read_table(path: Path, needed: list[str], positive: tuple[str, ...] = ()) -> pl.DataFrame:
    """A measurement table with the `needed` numeric columns, every value
    finite (and above 0 in the `positive` ones), or a clear error naming
    the first bad row."""
    try:
        frame = pl.read_parquet(path, glob=False) if path.suffix == ".parquet" else pl.read_csv(path, comment_prefix="#", glob=False)
    except (OSError, pl.exceptions.PolarsError) as e:
        fail(f"{path}: {e}")
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        fail(f"{path}: missing column(s) {', '.join(missing)} ({describe_columns(frame.columns)})")
    if frame.height == 0:
        fail(f"{path}: no measurements (the table has a header and no rows)")
    for c in needed:
        try:
            values = frame[c].cast(pl.Float64, strict=True).to_numpy()
        except pl.exceptions.PolarsError:
            fail(f"{path}: column {c} must hold numbers, got {frame[c].dtype}")
        bad = ~np.isfinite(values) | ((values <= 0) if c in positive else False)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            rule = "a positive number" if c in positive else "a finite number"
            fail(f"{path}: {c} must be {rule}, got {frame[c][i]} in data row {i + 1}")
    return frame


PLATFORM = typer.Option("blue_waters", "--platform", help="Preset or platform file.")
JSON = typer.Option(False, "--json", help="Print JSON.")


@model_app.command("nbc-bound")
def nbc_bound(
    beta: float | None = typer.Option(None, "--beta", help="Computation-to-communication ratio."),
    inflation: float = typer.Option(1.0, "--inflation", help="Noise inflation of communication Σ(c+n)/Σc (Eq. 6, 7)."),
    table1: bool = typer.Option(False, "--table1", help="Print Table 1 of the noise paper."),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """Upper bound on the speedup of nonblocking collectives, Eq. (4)–(7)."""
    if table1:
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
    _number("--inflation", inflation, 1.0)  # Σ(c+n)/Σc: noise only adds
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
    hops: str = HOPS,
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
    n_hops = _hops(hops, lambda: _allreduce_hops(platform, nodes)) if {"hops", "congestion"} & set(pens) else 0.0
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
    hops: str = typer.Option("each", "--hops", help="Hops per off-node message: 'each' (from the topology, message by "
                             "message), best, average, max (one count for all), or a number."),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """3-D halo exchange from the on/off-node message counts of a mapping; average and slowest rank."""
    _seconds("--overlap-s", overlap_s)
    pl_ = _platform(platform)
    g, loc = _ints(grid, "--grid", 3), _ints(local, "--local", 3)
    times, offs = _halo_times(pl_, platform, g, loc, stencil, mapping, _penalties(penalties), hops,
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
        links = dict(zip(pairs, postal.topology_hops(platform, pairs))) if pairs and {"hops", "congestion"} & set(pens) else {}
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
    hops: str = HOPS,
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
        fail("give either --allreduce-s (a measured time) or --nodes (the allreduce model), not both")
    if halo_s is not None and grid is not None:
        fail("give either --halo-s (a measured time) or --grid (the halo model), not both")
    pens = _penalties(penalties)
    if nodes is None and (pens or grid is not None):
        fail("--penalties and --grid model the communication: add --nodes")
    try:
        if nodes is None:
            assert allreduce_s is not None
            _show(postal.pcg(method, spmv_s=spmv_s, precond_s=precond_s, vector_s=vector_s, allreduce_s=allreduce_s,
                             halo_s=halo_s or 0.0, iterations=iterations, sync_s=sync_s), as_json)
            return
        pl_ = _platform(platform)
        halo = halo_s or 0.0
        if grid is not None:
            # by default (average) each halo message gets its own hops, as in `model halo`
            times, _ = _halo_times(pl_, platform, _ints(grid, "--grid", 3), _ints(local, "--local", 3), stencil, mapping,
                                   pens, "each" if hops == "average" else hops)
            halo = float(np.max(times))
        n_hops = _hops(hops, lambda: _allreduce_hops(platform, nodes)) if {"hops", "congestion"} & set(pens) else 0.0
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
    frame = _read_table(data, ["eta", "value"])
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


@fit_app.command("postal")
def fit_postal(
    data: Path = typer.Argument(..., help="Ping-pong CSV/Parquet: size_bytes, time_s (one way), optional link = on_node|off_node "
                                "and rep; a machine.json beside it (as `idlewave measure pingpong` writes) gives the hosts."),
    output: Path = typer.Option(..., "-o", "--output", help="Platform TOML to write."),
    short_max: int | None = typer.Option(None, "--short-max", help="Largest short message (else found from the data; "
                                         "a given one is checked against the data)."),
    eager_max: int | None = typer.Option(None, "--eager-max", help="Largest eager message (else found from the data; "
                                         "a given one is checked against the data)."),
    multipair: Path | None = typer.Option(None, "--multipair", help="Multi-pair CSV/Parquet: pairs, size_bytes, time_s."),
    exchange: Path | None = typer.Option(None, "--exchange", help="Simultaneous-exchange CSV/Parquet (link, size_bytes, "
                                         "time_s), for the CPU cost per byte O (default: the exchange.parquet beside "
                                         "the data, as `measure pingpong` writes it; none: O = 0)."),
    ranks_per_node: int | None = typer.Option(None, "--ranks-per-node", min=1, help="Ranks per node (default: from the "
                                              "machine.json beside the data — all ranks on one host: that many —, else 1)."),
    off_node_from_on_node: bool = typer.Option(False, "--off-node-from-on-node",
                                               help="Data from one node only: use its fit for messages between nodes "
                                                    "too (an assumption, written into the platform file)."),
    max_error: float = typer.Option(0.10, "--max-error", min=0.0,
                                    help="Refuse a fit whose RMS relative error exceeds this in any protocol or size range "
                                         "(≤ 256 B, 257 B–8 KiB, > 8 KiB–256 KiB, > 256 KiB); 0.1 = 10%. It bounds each "
                                         "range now (it used to bound one RMS over all sizes, default 0.5)."),
    statistic: str = typer.Option("median", "--per-size", help="Fit one time per size: the repetitions' median "
                                  "(robust to spikes), mean or min; or all samples as they are."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the bootstrap: the same seed, the same file."),
    resamples: int = typer.Option(200, "--resamples", min=0, max=20000, help="Bootstrap resamples of the repetitions for the "
                                  "confidence intervals (0: none)."),
    force: bool = typer.Option(False, "--force", help="Write a refused fit anyway, marked as forced (a comment at the "
                               "top of the file, \"forced\": true in the JSON)."),
    as_json: bool = JSON,
    quiet: bool = QUIET,
):
    """α, β per protocol (limits found as breakpoints or given) → a platform file the simulator reads, with the
    confidence intervals, the error per size range and plausibility checks (docs/fit.md); an implausible fit or one
    above --max-error in any size range is refused (exit 2) unless --force."""
    if statistic not in fitting.PER_SIZE:
        fail(f"--per-size must be one of {', '.join(fitting.PER_SIZE)}, got {statistic!r}")
    if max_error != max_error or max_error == math.inf:
        fail(f"--max-error: must be a finite number ≥ 0, got {max_error}")
    from idlewave.results import write_text

    frame = _read_table(data, ["size_bytes", "time_s"], positive=("time_s",))
    why = fitting.degenerate(frame["size_bytes"].cast(pl.Float64).to_numpy(), frame["time_s"].cast(pl.Float64).to_numpy())
    if why:
        fail(f"{data}: {why}")
    machine = _machine(data)
    one_host = machine is not None and machine["per_host"] is not None and len(machine["per_host"]) == 1
    groups = frame.partition_by("link", as_dict=True) if "link" in frame.columns else {("on_node" if one_host else "off_node",): frame}
    parts = {}
    for key, part in groups.items():
        name = key[0] if isinstance(key, tuple) else key
        if name not in ("on_node", "off_node"):
            fail(f"{data}: link must be on_node or off_node, got {name!r}")
        parts[name] = part
    if one_host and "off_node" in parts:
        assert machine is not None
        fail(f"{data}: holds off_node rows, but {machine['path']} says all {machine['ranks']} ranks ran on one host "
             f"({machine['hosts_text']}): which is right?")
    assessed = {}
    for name in sorted(parts, key=lambda n: n != "off_node"):  # off_node first, as the platform file has it
        part = parts[name]
        try:
            assessed[name] = fitting.assess(part["size_bytes"].cast(pl.Float64).to_numpy(), part["time_s"].cast(pl.Float64).to_numpy(),
                                            statistic=statistic, short_max=short_max, eager_max=eager_max,
                                            max_error=max_error, resamples=resamples, seed=seed)
        except ValueError as e:
            fail(f"{data} ({name}): {e}")

    # ranks per node: given, else from machine.json
    if ranks_per_node is not None:
        rpn, rpn_from = ranks_per_node, "given with --ranks-per-node"
    elif machine is not None and machine["rpn"] is not None:
        rpn, rpn_from = machine["rpn"], f"from {machine['path'].name} ({machine['hosts_text']})"
    else:
        rpn = 1
        rpn_from = "the default (no machine.json beside the data)" if machine is None else \
            f"the default ({machine['path'].name} gives no even number of ranks per host: {machine['hosts_text']})"
    links = {name: a.fit.link for name, a in assessed.items()}
    note = ""
    off_measured = "off_node" in links
    if not off_measured:
        if off_node_from_on_node:
            links = {"off_node": links["on_node"], **links}
            note = "ASSUMED: off-node = on-node (the data came from one node; --off-node-from-on-node)"
        elif rpn == 1:
            fail(f"{data}: holds only on-node measurements (one node), which cannot give off-node parameters; "
                 "measure between two nodes, give --ranks-per-node (a run on that many ranks stays on one node; "
                 "machine.json beside the data gives it), or pass --off-node-from-on-node to use the on-node fit for both")
    elif "on_node" in links and rpn == 1:
        err.print("[yellow]warning:[/] ranks_per_node = 1: the on-node fit is written but no message is on-node "
                  "unless a scenario sets ranks_per_node (or give --ranks-per-node)", highlight=False, soft_wrap=True)
    refusals = [(name, p) for name, a in assessed.items() for p in a.problems]
    forced = bool(refusals) and force
    bw = 0.0
    if multipair is not None:
        mp = _read_table(multipair, ["pairs", "size_bytes", "time_s"], positive=("pairs", "size_bytes", "time_s"))
        if why := fitting.degenerate(mp["size_bytes"].cast(pl.Float64).to_numpy(), mp["time_s"].cast(pl.Float64).to_numpy()):
            fail(f"{multipair}: {why}")
        bw = fitting.node_bandwidth(mp["pairs"].to_numpy(), mp["size_bytes"].to_numpy(), mp["time_s"].to_numpy())
        if why := fitting.implausible_node_bandwidth(bw):
            fail(f"{multipair}: {why}")

    cpu, cpu_notes = _cpu_per_byte(exchange if exchange is not None else data.parent / "exchange.parquet",
                                   exchange is not None, assessed, statistic)
    cpu_summary = {name: {r.protocol: {"O_s_per_byte": r.O_s_per_byte, "sizes": r.sizes, "rms_relative_error": r.rms_relative_error,
                                       "capped": r.capped} for r in rows} for name, rows in cpu.items()}

    not_measured = [] if off_measured or note else [
        "NOT MEASURED: no message between nodes was measured"
        + (f" ({machine['path'].name}: {machine['hosts_text']})." if machine is not None and one_host else "."),
        "No values between nodes are written: a run on up to ranks_per_node ranks keeps every message on one",
        "node, at [network.intra_node]'s fitted values. A run on more ranks would send messages between nodes at",
        "the engine's defaults (LogGOPSim's L = 2.5 us, o = 1.5 us, g = 1 us, G = 6 ns/B), which nobody measured.",
    ]
    summary: dict[str, object] = {name: {**a.summary(), **({"cpu_per_byte": cpu_summary[name]} if name in cpu else {})}
                                  for name, a in assessed.items()}
    if note:
        summary["off_node"] = {**summary["on_node"], "assumed_from": "on_node"}  # type: ignore[dict-item]
    summary.update({"per_size": statistic, "max_error": max_error, "ranks_per_node": rpn, "ranks_per_node_from": rpn_from,
                    "off_node_measured": off_measured, "forced": forced, "provenance": _provenance(data, frame.height, machine)})
    if bw:
        summary["node_bandwidth_bytes_per_s"] = bw
    if note:
        summary["assumption"] = note
    if not_measured:
        summary["not_measured"] = " ".join(not_measured)
    summary["refused"] = [{"link": name, "reason": p.reason, "sizes": [r[0] for r in assessed[name].rows(p.sizes)]}
                          for name, p in refusals]
    if refusals and not force:
        summary["platform"] = None
        if as_json:
            print_json(summary)
        else:
            _fit_report(assessed, statistic)
        _fit_warnings(assessed)
        fail("\n".join(_refusal(data, assessed, refusals)))

    prov = summary["provenance"]
    assert isinstance(prov, dict)
    notes = _provenance_lines(prov, rpn, rpn_from, statistic, seed, resamples)
    for name, a in assessed.items():
        notes += [""] + fitting.comments(name, a)
    notes += cpu_notes
    top = []
    if forced:
        top = ["FORCED (--force): idlewave refused this fit and wrote it only because it was told to.",
               "Do not trust a simulation with these values before reading why:"]
        top += _refusal(data, assessed, refusals)[1:] + [""]
    text = fitting.platform_toml(links["off_node"] if "off_node" in links else None, links.get("on_node"), ranks_per_node=rpn,
                                 node_bw=bw, source=str(data), note=note, top=top, notes=notes,
                                 off_node_comment=not_measured, mpi_library=_mpi_rules(machine),
                                 cpu={name: {r.protocol: r.O_s_per_byte for r in rows} for name, rows in cpu.items()})
    write_text(output, text)
    summary["platform"] = str(output)
    if as_json:
        print_json(summary)
    else:
        out.print(escape(f"wrote {output}" + (f" ({note})" if note else "")) + (" [bold red](FORCED: the fit was refused)[/]" if forced else ""),
                  highlight=False)
        _fit_report(assessed, statistic)
        _cpu_report(cpu)
    _fit_warnings(assessed)
    if forced:
        err.print(f"[bold red]FORCED:[/] {escape(chr(10).join(_refusal(data, assessed, refusals)))}", highlight=False, soft_wrap=True)
    if not_measured:
        err.print(f"[bold yellow]{escape(' '.join(not_measured))}[/]", highlight=False, soft_wrap=True)


def _cpu_per_byte(path: Path, given: bool, assessed: dict, statistic: str) -> tuple[dict, list[str]]:
    """The CPU cost per byte O of each link class measured both by ping-pong
    and by simultaneous exchanges (`path`; absent and not given: O = 0), and
    the platform file's comment lines on it."""
    if not path.is_file():
        if given:
            fail(f"--exchange {path}: no such file")
        return {}, ["", "O_s_per_byte = 0: no simultaneous exchanges were measured (exchange.parquet), so each rank's",
                    "CPU is not charged for moving a message's bytes; messages both ways at once may be predicted too fast"]
    frame = _read_table(path, ["size_bytes", "time_s"], positive=("time_s",))
    why = fitting.degenerate(frame["size_bytes"].cast(pl.Float64).to_numpy(), frame["time_s"].cast(pl.Float64).to_numpy())
    if why:
        fail(f"{path}: {why}")
    groups = frame.partition_by("link", as_dict=True) if "link" in frame.columns else {(next(iter(assessed)),): frame}
    cpu, lines = {}, ["", f"O_s_per_byte from simultaneous exchanges ({path}): per protocol, the O in [0, beta] whose",
                          "exchange time max(L, (n-1)*O) + (n-1)*G fits the measured one; a ping-pong does not depend on O"]
    for key, part in groups.items():
        name = key[0] if isinstance(key, tuple) else key
        if name not in assessed:
            continue
        rows = fitting.cpu_per_byte(assessed[name].fit.link, part["size_bytes"].cast(pl.Float64).to_numpy(),
                                    part["time_s"].cast(pl.Float64).to_numpy(), statistic)
        cpu[name] = rows
        for r in rows:
            err_ = "no sizes" if r.rms_relative_error is None else f"RMS error {r.rms_relative_error:.1%} over {r.sizes} sizes"
            lines.append(f"  {name} {r.protocol:<10} O {r.O_s_per_byte:.4e} s/B  ({err_}"
                         + ("; capped at beta: the exchanges cost more than the model can give" if r.capped else "") + ")")
    return cpu, lines


def _cpu_report(cpu: dict) -> None:
    for name, rows in cpu.items():
        t = Table(title=f"{name}: CPU per byte O (from simultaneous exchanges)", title_justify="left", box=box.SIMPLE_HEAD,
                  padding=(0, 1), pad_edge=False, show_edge=False)
        for col in ("protocol", "O", "exchange sizes", "error"):
            t.add_column(col)
        for r in rows:
            t.add_row(r.protocol, fmt_si(r.O_s_per_byte, "s/B", 4) + (" (capped at β)" if r.capped else ""), str(r.sizes),
                      "–" if r.rms_relative_error is None else f"{r.rms_relative_error:.1%}")
        out.print(t)


def _machine(data: Path) -> dict | None:
    """What the machine.json beside the data says of where the ranks ran:
    ranks per host (from ranks_per_host, rank_hosts, or hosts with nodes),
    the ranks per node it implies, the MPI library and the date."""
    path = data.parent / "machine.json"
    if not path.is_file():
        return None
    try:
        m = json.loads(path.read_text())
        if not isinstance(m, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        err.print(f"[yellow]warning:[/] {escape(str(path))}: unreadable, ignored ({escape(str(e))})", highlight=False, soft_wrap=True)
        return None
    ranks = m.get("ranks") if isinstance(m.get("ranks"), int) and m["ranks"] > 0 else None
    per_host: dict[str, int] | None = None
    rph, by_rank, hosts = m.get("ranks_per_host"), m.get("rank_hosts"), m.get("hosts")
    if isinstance(rph, dict) and rph and all(isinstance(v, int) and v > 0 for v in rph.values()):
        per_host = {str(h): v for h, v in rph.items()}
    elif isinstance(by_rank, list) and by_rank and all(isinstance(h, str) for h in by_rank):
        per_host = {}
        for h in by_rank:
            per_host[h] = per_host.get(h, 0) + 1
    elif isinstance(hosts, list) and hosts and ranks is not None and len(hosts) == 1:
        per_host = {str(hosts[0]): ranks}
    elif m.get("nodes") == 1 and ranks is not None:
        per_host = {str(m.get("hostname") or "one host"): ranks}
    if per_host is not None:
        ranks = sum(per_host.values())
    rpn, text = None, "hosts not recorded"
    if per_host is not None:
        counts = sorted(set(per_host.values()))
        if len(per_host) == 1:
            text = f"all {ranks} ranks on host {next(iter(per_host))}"
        else:
            text = f"{ranks} ranks on {len(per_host)} hosts, " + (f"{counts[0]} per host" if len(counts) == 1 else
                                                                   f"{counts[0]} to {counts[-1]} per host")
        rpn = counts[0] if len(counts) == 1 else None
    elif isinstance(hosts, list) and hosts and ranks is not None and ranks % len(hosts) == 0:
        rpn, text = ranks // len(hosts), f"{ranks} ranks on {len(hosts)} hosts"
    date = m.get("measured_at") or m.get("date")
    return {"path": path, "ranks": ranks, "per_host": per_host, "rpn": rpn, "hosts_text": text,
            "hosts": sorted(per_host) if per_host else [str(h) for h in hosts] if isinstance(hosts, list) else [],
            "mpi_library": m.get("mpi_library"), "mpi_version": m.get("mpi_version"),
            "date": str(date) if date else None}


def _provenance(data: Path, rows: int, machine: dict | None) -> dict:
    """Where the fit comes from: the data file (its SHA-256), the machine, the MPI library, the date, idlewave."""
    import datetime
    import hashlib

    import idlewave

    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    date, date_from = (machine["date"], "machine.json") if machine and machine["date"] else (
        datetime.datetime.fromtimestamp(data.stat().st_mtime, datetime.UTC).isoformat(timespec="seconds"),
        "the data file's modification time: machine.json records no date" if machine else "the data file's modification time")
    return {"data": str(data), "sha256": digest, "rows": rows, "machine_json": str(machine["path"]) if machine else None,
            "mpi_library": machine["mpi_library"] if machine else None,
            "mpi_version": machine["mpi_version"] if machine else None,
            "hosts": machine["hosts"] if machine else None, "ranks": machine["ranks"] if machine else None,
            "measured": date, "measured_from": date_from, "idlewave": idlewave.__version__}


def _provenance_lines(p: dict, rpn: int, rpn_from: str, statistic: str, seed: int, resamples: int) -> list[str]:
    lines = [f"idlewave {p['idlewave']} fit postal; data {p['data']} ({p['rows']} rows, sha256 {p['sha256']})",
             f"measured {p['measured']} (from {p['measured_from']})"]
    if p["machine_json"]:
        lines.append(f"MPI library: {p['mpi_library'] or 'not recorded'}" + (f" (MPI {p['mpi_version']})" if p["mpi_version"] else ""))
        lines.append(f"hosts: {', '.join(p['hosts']) or 'not recorded'}; ranks: {p['ranks'] or 'not recorded'}")
    else:
        lines.append("MPI library and hosts: not recorded (no machine.json beside the data)")
    lines.append(f"ranks_per_node = {rpn}: {rpn_from}")
    lines.append(f"fitted to the per-size {statistic}; bootstrap: {resamples} resamples of the repetitions within each "
                 f"size, seed {seed}; intervals are 95% percentile intervals")
    return lines


def _mpi_rules(machine: dict | None) -> str | None:
    """The engine's name for the MPI library of machine.json, if it has rules for it (openmpi, mpich)."""
    lib = str(machine["mpi_library"] or "").lower() if machine else ""
    return "openmpi" if lib.startswith("open mpi") else "mpich" if lib.startswith("mpich") else None


def _span(lo: str, hi: str) -> str:
    """An interval of two formatted values, the unit once where they share it: 2.39–2.42 µs."""
    (a, _, unit), (_, _, other) = lo.partition(" "), hi.partition(" ")
    return f"{a}–{hi}" if unit == other else f"{lo}–{hi}"


def _fit_report(assessed: dict, statistic: str) -> None:
    """The fit per link class: limits, α and β with their intervals, the error per protocol and per size range."""
    for name, a in assessed.items():
        link = a.fit.link
        lims = []
        for lim in a.limits:
            s = f"{lim.name} {fitting.bytes_text(lim.value)} ({'given' if lim.given else 'found'}"
            if lim.interval:
                s += f"; 95% CI {fitting.bytes_text(lim.interval[0])}–{fitting.bytes_text(lim.interval[1])}"
            if lim.support is not None and not lim.given:
                s += f", {lim.support:.0%} of resamples"
            if lim.given and lim.agrees is not None:
                s += "; the data agree" if lim.agrees else f"; the data say {fitting.bytes_text(lim.found or 0)}"
            lims.append(s + ")")
        out.print(f"[bold]{name}[/]: {escape('; '.join(lims))}; RMS relative error {a.fit.rms_relative_error:.1%}",
                  highlight=False)
        t = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, collapse_padding=True, show_edge=False)
        for col in ("protocol", "sizes", "α", "95% CI", "β", "95% CI", "error"):
            t.add_column(col, no_wrap=col != "sizes")
        for p in fitting.PROTOCOLS:
            pr = getattr(link, p)
            pc = next(x for x in a.pieces if x.label == p)
            ca, cb = a.ci.get(f"{p}.alpha_s"), a.ci.get(f"{p}.beta_s_per_byte")
            t.add_row(p, f"{fitting.bytes_text(pc.lo)}–{fitting.bytes_text(pc.hi)}", fmt_time(pr.alpha, 4),
                      _span(fmt_time(ca[0]), fmt_time(ca[1])) if ca else "–", fmt_si(pr.beta, "s/B", 4),
                      _span(fmt_si(cb[0], "s/B"), fmt_si(cb[1], "s/B")) if cb else "–", f"{pc.rms_relative_error:.1%}")
        out.print(t)
        out.print(f"{name}: RMS relative error by size range (per-size {statistic})", highlight=False)
        r = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, collapse_padding=True, show_edge=False)
        for col in ("sizes", "count", "error"):
            r.add_column(col)
        for x in a.ranges:
            r.add_row(x.label, str(x.sizes), f"{x.rms_relative_error:.1%}")
        out.print(r)


def _fit_warnings(assessed: dict) -> None:
    for name, a in assessed.items():
        for w in a.warnings:
            err.print(f"[yellow]warning:[/] {escape(name)}: {escape(w)}", highlight=False, soft_wrap=True)


def _refusal(data: Path, assessed: dict, refusals: list) -> list[str]:
    """Why the fit is refused, with the sizes that show it (size, measured, fitted, error)."""
    lines = [f"{data}: the fit is refused (--force writes it anyway, marked as forced):"]
    shown = set()
    for name, p in refusals:
        lines.append(f"  {name}: {p.reason}")
        rows = assessed[name].rows(p.sizes)
        if rows and (name, tuple(p.sizes)) in shown:
            lines.append("    (the sizes above)")
        elif rows:
            shown.add((name, tuple(p.sizes)))
            lines.append(f"    {'size':>10}  {'measured':>11}  {'fitted':>11}  {'error':>8}")
            for size, m, f, e in rows[:12]:
                lines.append(f"    {fitting.bytes_text(size):>10}  {fitting.seconds_text(m):>11}  "
                             f"{fitting.seconds_text(f):>11}  {e:>+8.1%}")
            if len(rows) > 12:
                lines.append(f"    … and {len(rows) - 12} more size(s)")
    return lines
