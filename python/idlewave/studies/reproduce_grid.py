"""`idlewave reproduce grid-broadcasts`: the 2-D grid paper's broadcast
studies (§3.3.2), each beside what the paper reports, with verdicts computed
from its claims.

- Fig. 9: APSP (Floyd–Warshall) communication per step for the ring family,
  binomial, unchunked and chunked: "2RM-Pipelined (2ringM chunked) was
  outperforming most other communication".
- Fig. 10: HPL-MxP, "the 1ring chunked outperform the rest of ring".
- Fig. 12: the chunk size; the text says 2 MB is best, the caption 4 MB.
- Fig. 13: "as the number of nodes doubled, the average bandwidth remained
  95-98%" (the caption says a 95-98% *reduction*; the metric is not defined).

Each runs with LogGOPSim's single NIC and with three NIC ports (`nic_ports`),
the mechanism that decides the ring family's ranking: the modified 2-ring's
root serves three children per chunk. On shared links (`links`) every run
is on a tapered fat tree (idlewave.studies.shared_links), and a broadcast
step runs on the whole grid: the rows' broadcasts at once, then the columns',
sharing the tree's links.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

from idlewave.simulation import simulate
from idlewave.studies.shared_links import SharedLinks
from idlewave.units import fmt_bytes

RINGS = ("ring", "modified_ring", "two_ring", "two_ring_modified")
VARIANTS = (*RINGS, "binomial")
LABEL = {"ring": "1-ring", "modified_ring": "1-ring M", "two_ring": "2-ring", "two_ring_modified": "2-ring M",
         "binomial": "binomial"}
PORTS = (1, 3)
CHUNK = 2 << 20  # the paper's best chunk (Fig. 12's text)
CHUNKS_FIG12 = (512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20)

# Fig. 9's run: PQ = 128 x 128 on Frontier, local N = 36,864 per rank. Its
# block size is not given; b = 1,024 makes a panel of b x 36,864 FP32
# distances, 151 MB (72 chunks of 2 MiB).
PANEL_BYTES = 1024 * 36864 * 4
# Frontier's Slingshot NIC: 25 GB/s; latency and overheads of LogGOPSim's order.
FRONTIER_NET = {"L_s": 2e-6, "o_s": 1e-6, "g_s": 1e-6, "G_s_per_byte": 4e-11, "S_bytes": 65536}

PAPER = {
    "Fig. 9": "APSP: the chunked modified 2-ring outperforms most other broadcasts",
    "Fig. 10": "HPL-MxP: the chunked 1-ring outperforms the rest of the ring family",
    "Fig. 12": "chunk size: 2 MB best (text; the caption says 4 MB)",
    "Fig. 13": "the average bandwidth stays at 95-98% as the nodes double",
}


def _makespan(network: dict, workload: dict, links: SharedLinks | None = None, seed: int = 1) -> float:
    net = links.network(network) if links else network
    r = simulate({"seed": seed, "network": net, "record": {"timers": False}, "workload": workload})
    return float(r.summary["makespan_s"])


def apsp_step(side: int, alg: str, chunk: int, ports: int, links: SharedLinks | None = None, seed: int = 1) -> float:
    """Seconds of communication in one APSP step on a side x side grid: the
    panel's broadcast along the process row, then along the column. Fig. 9
    measures communication per step, so the updates are left out. All rows,
    then all columns, run at once on disjoint ranks: without shared links
    one row's broadcast, twice, is the step; on `links` the rows share the
    tree's links, so the whole grid runs, rows then columns."""
    w = {"kind": "collective", "collective": "bcast", "algorithm": alg, "message_bytes": PANEL_BYTES,
         "chunk_bytes": chunk, "ranks": side, "iterations": 1}
    net = dict(FRONTIER_NET, nic_ports=ports)
    if links is None:
        return 2 * _makespan(net, w)
    grid = dict(w, ranks=side * side, grid_columns=side)
    return sum(_makespan(net, dict(grid, communicator=c), links, seed) for c in ("rows", "columns"))


def hpl_total(alg: str, chunk: int, ports: int, links: SharedLinks | None = None, seed: int = 1,
              side: int = 16) -> float:
    """Makespan of `examples/hpl_mxp.toml` (16 x 16, n_b = 64, b = 2048), or on a side x side grid with
    its 4 blocks per process row (weak scaling)."""
    base = tomllib.loads(files("idlewave.examples").joinpath("hpl_mxp.toml").read_text())
    w = dict(base["workload"], broadcast=alg, chunk_bytes=chunk, combined=False, grid=[side, side],
             blocks=base["workload"]["blocks"] // base["workload"]["grid"][0] * side)
    return _makespan(dict(base["network"], nic_ports=ports), w, links, seed)


def grid_broadcasts(side: int = 128, on_row: Callable[[dict], None] | None = None, links: SharedLinks | None = None,
                    seed: int = 1) -> dict:
    """Every row of the studies above; on `links` if given (`seed` draws
    random routes; nothing else here is random)."""
    rows: list[dict] = []

    def add(row: dict) -> None:
        rows.append(row)
        if on_row:
            on_row(row)

    for ports in PORTS:
        for alg in VARIANTS:
            for chunk in (0, CHUNK):
                add({"study": "apsp", "ports": ports, "broadcast": alg, "chunk_bytes": chunk,
                     "seconds": apsp_step(side, alg, chunk, ports, links, seed)})
            add({"study": "hpl", "ports": ports, "broadcast": alg, "chunk_bytes": CHUNK,
                 "seconds": hpl_total(alg, CHUNK, ports, links, seed)})
        for chunk in CHUNKS_FIG12:
            add({"study": "chunk", "ports": ports, "broadcast": "ring", "chunk_bytes": chunk,
                 "seconds": hpl_total("ring", chunk, ports, links, seed)})
    for s in (side // 4, side // 2, side, 2 * side):
        add({"study": "bandwidth", "ports": 1, "broadcast": "ring", "chunk_bytes": CHUNK, "side": s,
             "seconds": apsp_step(s, "ring", CHUNK, 1, links, seed)})
    result = {"rows": rows, "verdicts": grid_verdicts(rows), "side": side}
    return {**result, "links": links.describe(), "seed": seed} if links else result


def _pick(rows: list[dict], study: str, ports: int) -> dict[tuple[str, int], float]:
    return {(r["broadcast"], r["chunk_bytes"]): r["seconds"] for r in rows if (r["study"], r["ports"]) == (study, ports)}


def grid_verdicts(rows: list[dict]) -> list[dict]:
    out = []
    fig9, fig10, fig12 = [], [], []
    for ports in PORTS:
        apsp = _pick(rows, "apsp", ports)
        mine = apsp["two_ring_modified", CHUNK]
        beaten = sum(t > mine for k, t in apsp.items() if k != ("two_ring_modified", CHUNK))
        best = min(apsp, key=lambda k: apsp[k])
        fig9.append((ports, beaten, len(apsp) - 1, mine / apsp[best] - 1, best))
        hpl = _pick(rows, "hpl", ports)
        rings = sorted(RINGS, key=lambda a: hpl[a, CHUNK])
        fig10.append((ports, rings[0], hpl["ring", CHUNK] / hpl[rings[0], CHUNK] - 1))
        sizes = _pick(rows, "chunk", ports)
        fig12.append((ports, min(sizes, key=lambda k: sizes[k])[1]))
    # "outperforming most": it beats at least 7 of the other 9 variants and
    # is within 5% of the fastest
    out.append({"figure": "Fig. 9", "paper": PAPER["Fig. 9"],
                "verdict": " / ".join(f"{'reproduced' if b >= 7 and gap <= 0.05 else 'differs'} ({p} port{'s' * (p > 1)})"
                                      for p, b, _, gap, _ in fig9),
                "ours": "; ".join(f"{p} port{'s' * (p > 1)}: beats {b} of {n}, {gap:+.1%} from the fastest "
                                  f"({LABEL[k[0]]}{' chunked' if k[1] else ''})" for p, b, n, gap, k in fig9)})
    out.append({"figure": "Fig. 10", "paper": PAPER["Fig. 10"],
                "verdict": " / ".join(f"{'reproduced' if first == 'ring' else 'differs'} ({p} port{'s' * (p > 1)})"
                                      for p, first, _ in fig10),
                "ours": "on the example's 16 x 16 grid (`reproduce --table` runs it up to 128 x 128): "
                        + "; ".join(f"{p} port{'s' * (p > 1)}: fastest chunked ring {LABEL[first]}"
                                  + ("" if first == "ring" else f", the 1-ring {gap:+.1%}") for p, first, gap in fig10)})
    out.append({"figure": "Fig. 12", "paper": PAPER["Fig. 12"],
                "verdict": "reproduced" if all(best in (2 << 20, 4 << 20) for _, best in fig12) else "differs",
                "ours": "; ".join(f"{p} port{'s' * (p > 1)}: best {fmt_bytes(best, binary=True)}"
                                  for p, best in fig12)})
    bw = sorted((r["side"], r["seconds"]) for r in rows if r["study"] == "bandwidth")
    kept = [(a[0], b[0], a[1] / b[1]) for a, b in zip(bw, bw[1:])]
    out.append({"figure": "Fig. 13", "paper": PAPER["Fig. 13"],
                "verdict": "reproduced" if kept and min(k for *_, k in kept) >= 0.95 else "differs",
                "ours": ", ".join(f"{k:.0%} ({a}→{b} ranks per row)" for a, b, k in kept)
                        + " of a chunked 1-ring's end-to-end bandwidth"})
    return out


def figure(result: dict, path: Path) -> Path:
    """Fig. 9 and 10 as grouped bars (one bar per NIC setting), Fig. 12 as a line."""
    from idlewave.results import pyplot

    plt = pyplot()
    from matplotlib.ticker import FuncFormatter, NullFormatter

    from idlewave.results import save_figure

    rows = result["rows"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    width = 0.8 / len(PORTS)
    apsp_keys = [(a, c) for a in VARIANTS for c in (0, CHUNK)]
    for ax, study, keys, unit, title in (
            (axes[0], "apsp", apsp_keys, 1e3, f"Fig. 9: APSP, {result['side']}x{result['side']}, per step"),
            (axes[1], "hpl", [(a, CHUNK) for a in VARIANTS], 1.0, "Fig. 10: HPL-MxP 16x16, 2 MiB chunks")):
        for i, ports in enumerate(PORTS):
            t = _pick(rows, study, ports)
            ax.bar([k + i * width for k in range(len(keys))], [t[k] * unit for k in keys], width,
                   label=f"{ports} NIC port{'s' * (ports > 1)}")
        ax.set_xticks([k + width * (len(PORTS) - 1) / 2 for k in range(len(keys))],
                      [LABEL[a] + (" C" if c and study == "apsp" else "") for a, c in keys], rotation=90,
                      fontsize="small")
        ax.set_ylabel("ms per step (log)" if unit == 1e3 else "s, whole run")
        ax.set_title(title, fontsize="medium")
    axes[0].set_yscale("log")  # unchunked rings take 10-100x the chunked ones
    axes[0].yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axes[0].set_xlabel("C: chunked (2 MiB); M: modified", fontsize="small")
    axes[0].legend(frameon=False, fontsize="small")
    for ports in PORTS:
        sizes = sorted((c, v) for (_, c), v in _pick(rows, "chunk", ports).items())
        axes[2].plot([c / (1 << 20) for c, _ in sizes], [v for _, v in sizes], marker="o",
                     label=f"{ports} NIC port{'s' * (ports > 1)}")
    axes[2].set_xscale("log", base=2)
    axes[2].set_xticks([c / (1 << 20) for c in CHUNKS_FIG12], [f"{c / (1 << 20):g}" for c in CHUNKS_FIG12])
    axes[2].xaxis.set_minor_formatter(NullFormatter())
    axes[2].set_xlabel("chunk, MiB")
    axes[2].set_ylabel("s, whole run")
    axes[2].set_title("Fig. 12: HPL-MxP chunked 1-ring", fontsize="medium")
    axes[2].legend(frameon=False, fontsize="small")
    if "links" in result:
        fig.suptitle(f"on a {result['links']['label']}", fontsize="medium")
    fig.tight_layout()
    return save_figure(fig, path)
