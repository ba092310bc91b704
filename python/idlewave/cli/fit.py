"""`idlewave fit …`: models calibrated from measurements, written as a platform file the simulator reads (docs/fit.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from idlewave.cli.common import JSON, QUIET, err, fail, lazy, not_an_input, out, print_json, read_table
from idlewave.units import fmt_si, fmt_time

if TYPE_CHECKING:
    import polars as pl

    from idlewave.models import fit as fitting
else:  # loaded on first use: `idlewave --help` stays fast
    pl = lazy("polars")
    fitting = lazy("idlewave.models.fit")


fit_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Calibrate models from measurements; writes a platform TOML.")


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
                                                    "too (an assumption, written into the platform file). Data without "
                                                    "a link column are then on-node; data with off_node rows are refused."),
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
    from idlewave.cli.models import MAX_MESSAGE_BYTES

    for flag, limit in (("--short-max", short_max), ("--eager-max", eager_max)):
        if limit is not None and limit < 0:
            fail(f"{flag}: must be a size in bytes ≥ 0, got {limit}")
        if limit is not None and limit > MAX_MESSAGE_BYTES:
            fail(f"{flag}: too large: {limit} B is more than the largest message the engine takes "
                 f"({MAX_MESSAGE_BYTES} B, 2^47 - 1)")
    read = [data, data.with_name("exchange.parquet"), data.with_name("machine.json"), *(p for p in (multipair, exchange) if p)]
    not_an_input(output, "-o", read)
    from idlewave.results import write_text

    frame = read_table(data, ["size_bytes", "time_s"], positive=("time_s",))
    if kind := _other_table(data, frame.columns, "pingpong"):
        fail(f"{data}: {kind}, not a ping-pong table (pingpong.parquet of `idlewave measure pingpong`: one-way times)")
    why = fitting.degenerate(frame["size_bytes"].cast(pl.Float64).to_numpy(), frame["time_s"].cast(pl.Float64).to_numpy())
    if why:
        fail(f"{data}: {why}")
    machine = _machine(data)
    one_host = machine is not None and machine["per_host"] is not None and len(machine["per_host"]) == 1
    # without a link column: on-node where machine.json says one host, or where the user says the data came from one node
    alone = "on_node" if one_host or off_node_from_on_node else "off_node"
    groups = frame.partition_by("link", as_dict=True) if "link" in frame.columns else {(alone,): frame}
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
    if off_node_from_on_node and "off_node" in parts:
        fail(f"--off-node-from-on-node: {data} holds off_node rows (measured between nodes), and the option is for data "
             "from one node only (it copies the on-node fit to messages between nodes): drop the option to fit the "
             "measured ones")
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
        mp = read_table(multipair, ["pairs", "size_bytes", "time_s"], positive=("pairs", "size_bytes", "time_s"))
        if why := fitting.degenerate(mp["size_bytes"].cast(pl.Float64).to_numpy(), mp["time_s"].cast(pl.Float64).to_numpy()):
            fail(f"{multipair}: {why}")
        bw = fitting.node_bandwidth(mp["pairs"].to_numpy(), mp["size_bytes"].to_numpy(), mp["time_s"].to_numpy())
        if why := fitting.implausible_node_bandwidth(bw):
            fail(f"{multipair}: {why}")

    cpu, cpu_notes = _cpu_per_byte(exchange if exchange is not None else data.parent / "exchange.parquet",
                                   exchange is not None, assessed, statistic, data)
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
                                 calibration_span_bytes=prov["span_bytes"],
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


def _other_table(path: Path, columns: list[str], expected: str) -> str | None:
    """What kind of `idlewave measure` table `path` is, if it is not the
    `expected` one (pingpong or exchange). The two have the same columns
    (link, size_bytes, rep, time_s): `measure pingpong` tells them apart by
    their names, pingpong.parquet and exchange.parquet; the others by a
    column of their own."""
    if "pairs" in columns:
        return "a multi-pair table (it has a pairs column, as multipair.parquet of `idlewave measure multipair`)"
    if "kernel" in columns:
        return "a kernels table (it has a kernel column, as kernels.parquet of `idlewave measure kernels`)"
    if path.stem == "exchange" and expected != "exchange":
        return "a simultaneous-exchange table (exchange.parquet, as `idlewave measure pingpong` names it: times per exchange)"
    if path.stem == "pingpong" and expected != "pingpong":
        return "a ping-pong table (pingpong.parquet, as `idlewave measure pingpong` names it: one-way times)"
    return None


def _cpu_per_byte(path: Path, given: bool, assessed: dict, statistic: str, data: Path) -> tuple[dict, list[str]]:
    """The CPU cost per byte O of each link class measured both by ping-pong
    and by simultaneous exchanges (`path`; absent and not given: O = 0), and
    the platform file's comment lines on it."""
    import filecmp

    if not path.is_file():
        if given:
            fail(f"--exchange {path}: no such file")
        return {}, ["", "O_s_per_byte = 0: no simultaneous exchanges were measured (exchange.parquet), so each rank's",
                    "CPU is not charged for moving a message's bytes; messages both ways at once may be predicted too fast"]
    frame = read_table(path, ["size_bytes", "time_s"], positive=("time_s",))
    expected = ("a simultaneous-exchange table (exchange.parquet, which `idlewave measure pingpong` writes beside "
                "pingpong.parquet: times per exchange)")
    where = f"--exchange {path}" if given else str(path)
    if path.resolve() == data.resolve() or filecmp.cmp(path, data, shallow=False):
        fail(f"{where}: the same table as the ping-pong data {data} (one-way times), not {expected}")
    if kind := _other_table(path, frame.columns, "exchange"):
        fail(f"{where}: {kind}, not {expected}")
    why = fitting.degenerate(frame["size_bytes"].cast(pl.Float64).to_numpy(), frame["time_s"].cast(pl.Float64).to_numpy())
    if why:
        fail(f"{path}: {why}")
    groups = frame.partition_by("link", as_dict=True) if "link" in frame.columns else {(next(iter(assessed)),): frame}
    cpu, lines = {}, ["", f"O_s_per_byte from simultaneous exchanges ({path}): per protocol, the O in [0, beta] whose",
                          "exchange time max(L, (n-1)*O) + (n-1)*G fits the measured one; a ping-pong does not depend on O"]
    for key, part in groups.items():
        name = key[0] if isinstance(key, tuple) else key
        if name not in ("on_node", "off_node"):
            fail(f"{path}: link must be on_node or off_node, got {name!r}")
        if name not in assessed:
            # exchanges of a link class the ping-pong did not measure: no fit to take O against
            why = f"{name} exchanges left out: the ping-pong data have no {name} rows to fit them against"
            err.print(f"[yellow]warning:[/] {escape(str(path))}: {escape(why)}", highlight=False, soft_wrap=True)
            lines.append(f"  {why} (O_s_per_byte = 0 there)")
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
    params = m.get("params")
    span = params.get("span_bytes", 0) if isinstance(params, dict) and m.get("kind", "pingpong") == "pingpong" else 0
    return {"path": path, "ranks": ranks, "per_host": per_host, "rpn": rpn, "hosts_text": text,
            "span_bytes": span if isinstance(span, int) and span > 0 else 0,
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
            "span_bytes": machine["span_bytes"] if machine else 0,
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
    lines.append(f"buffers: each message a fresh slot of regions of {p['span_bytes']:,} B, its data from memory "
                 f"(measure pingpong --set span_bytes={p['span_bytes']}): calibration_span_bytes" if p["span_bytes"] else
                 "buffers: one per size, in the cache (measure pingpong's default; --set span_bytes= measures them from memory)")
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
