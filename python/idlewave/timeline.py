"""Timelines of a run: Perfetto/Chrome trace JSON (open it in
ui.perfetto.dev) and a PNG like the papers' traces — computation white,
MPI (waiting and overheads) red, noise detours purple, messages as black
lines; with shared links, each class of link's flows in flight (counter
tracks, and a panel under the ranks)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from idlewave.results import FIXED_SERIES, save_figure, write_text

COMPUTE, SEND, RECV, MESSAGE, NOISE = 0, 1, 2, 3, 4
NOISE_COLOUR, MPI_COLOUR = FIXED_SERIES["noise"], "#d62728"  # noise: the colour of explain's noise detours
DEFAULT_SPANS = 2_000_000
MAX_LINES = 20_000


def _waits(tl: dict, ranks: int):
    """Per rank, the gaps between its CPU activity: time spent waiting in MPI."""
    cpu = (tl["activity"] != MESSAGE) & (tl["activity"] != NOISE)
    out = []
    for r in range(ranks):
        sel = cpu & (tl["rank"] == r)
        s, e = tl["start_ps"][sel], tl["end_ps"][sel]
        if s.size < 2:
            continue
        order = np.argsort(s, kind="stable")
        s, e = s[order], np.maximum.accumulate(e[order])
        gap = s[1:] > e[:-1]
        out += [(r, int(a), int(b)) for a, b in zip(e[:-1][gap], s[1:][gap])]
    return out


def chrome_json(tl: dict, ranks: int) -> str:
    names = {COMPUTE: "compute", SEND: "MPI send overhead", RECV: "MPI receive overhead", NOISE: "noise detour"}
    cats = {COMPUTE: "compute", SEND: "mpi", RECV: "mpi", NOISE: "noise"}
    tags, sizes = tl.get("tag"), tl.get("bytes")
    events = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": r, "args": {"name": f"rank {r}"}} for r in range(ranks)]
    us = 1e-6
    for i in range(tl["rank"].size):
        a = int(tl["activity"][i])
        r, s, e = int(tl["rank"][i]), int(tl["start_ps"][i]), int(tl["end_ps"][i])
        msg = {} if tags is None or sizes is None else {"tag": int(tags[i]), "bytes": int(sizes[i])}
        if a == MESSAGE:
            peer = int(tl["peer"][i])
            args = {"from": r, "to": peer, **msg}
            events.append({"ph": "s", "id": i, "pid": 0, "tid": r, "ts": s * us, "name": "message", "cat": "msg", "args": args})
            events.append({"ph": "f", "bp": "e", "id": i, "pid": 0, "tid": peer, "ts": e * us, "name": "message", "cat": "msg",
                           "args": args})
        else:
            args = {"peer": int(tl["peer"][i]), **msg} if a in (SEND, RECV) else {}
            events.append({"ph": "X", "pid": 0, "tid": r, "ts": s * us, "dur": (e - s) * us, "name": names[a], "cat": cats[a],
                           "args": args})
    for r, s, e in _waits(tl, ranks):
        events.append({"ph": "X", "pid": 0, "tid": r, "ts": s * us, "dur": (e - s) * us, "name": "MPI wait", "cat": "mpi"})
    links = tl.get("links")
    if links is not None:
        # one counter track per class of link: the flows its links carry, and how many of its links carry one
        events.append({"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "shared links"}})
        for t, c, f, b in zip(links["t_ps"], links["class"], links["flows"], links["busy"]):
            events.append({"ph": "C", "pid": 1, "ts": int(t) * us, "name": links["classes"][int(c)],
                           "args": {"flows": int(f), "busy links": int(b)}})
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"source": "idlewave"}})


def png(tl: dict, ranks: int, path: Path, title: str = "") -> None:
    from idlewave.results import pyplot

    plt = pyplot()
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    s_all, e_all = tl["start_ps"] / 1e6, tl["end_ps"] / 1e6  # µs
    links = tl.get("links")
    height = min(2 + ranks * 0.12, 12)
    if links is None:
        fig, ax = plt.subplots(figsize=(10, height), constrained_layout=True)
    else:
        fig, (ax, lax) = plt.subplots(2, 1, figsize=(10, height + 1.8), sharex=True, constrained_layout=True,
                                      gridspec_kw={"height_ratios": [height, 1.8]})
        _link_panel(lax, links)
    cpu = (tl["activity"] != MESSAGE) & (tl["activity"] != NOISE)
    for r in range(ranks):
        sel = cpu & (tl["rank"] == r)
        if not sel.any():
            continue
        lo, hi = s_all[sel].min(), e_all[sel].max()
        ax.broken_barh([(lo, hi - lo)], (r - 0.4, 0.8), facecolors=MPI_COLOUR)  # MPI: everything not computing
        comp = sel & (tl["activity"] == COMPUTE)
        ax.broken_barh(list(zip(s_all[comp], e_all[comp] - s_all[comp])), (r - 0.4, 0.8), facecolors="white")
        noise = (tl["activity"] == NOISE) & (tl["rank"] == r)
        ax.broken_barh(list(zip(s_all[noise], e_all[noise] - s_all[noise])), (r - 0.4, 0.8), facecolors=NOISE_COLOUR)
    all_msg = np.flatnonzero(tl["activity"] == MESSAGE)
    msg = all_msg[:MAX_LINES]
    lines = [[(s_all[i], tl["rank"][i]), (e_all[i], tl["peer"][i])] for i in msg]
    ax.add_collection(LineCollection(lines, colors="black", linewidths=0.4))
    ax.set_ylim(-1, ranks)
    ax.invert_yaxis()
    if links is None:
        ax.set_xlabel("time (µs)")
    ax.set_ylabel("rank")
    ax.set_facecolor("#f0f0f0")
    notes = []
    if all_msg.size > MAX_LINES:
        notes.append(f"first {MAX_LINES:,} of {all_msg.size:,} messages drawn")
    if tl.get("truncated"):
        notes.append(f"capture stopped at {tl['rank'].size:,} spans")
    if title or notes:
        ax.set_title("; ".join([title] * bool(title) + notes), fontsize="medium")
    handles = [Patch(facecolor="white", edgecolor="grey", label="computation"), Patch(facecolor=MPI_COLOUR, label="MPI"),
               Patch(facecolor=NOISE_COLOUR, label="noise detour"), Line2D([], [], color="black", lw=0.8, label="message")]
    fig.legend(handles=handles, loc="outside lower center", ncol=4, frameon=False, fontsize="small")
    save_figure(fig, path, dpi=110)


def _link_panel(ax, links: dict) -> None:
    """Each class of link's flows in flight over time (steps)."""
    from idlewave.results import series_colour

    t, cls, flows = links["t_ps"] / 1e6, links["class"], links["flows"]
    for k, name in enumerate(links["classes"]):
        sel = cls == k
        if sel.any():
            ax.step(t[sel], flows[sel], where="post", lw=0.8, color=series_colour(name), label=name)
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("flows on\nshared links", fontsize="small")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="x-small", frameon=False)
    if links.get("truncated"):
        ax.set_title("link counters stopped at their limit", fontsize="small")


def write(tl: dict, ranks: int, out: str | Path, title: str = "") -> list[Path]:
    out = Path(out)
    write_text(out / "timeline.json", chrome_json(tl, ranks))
    png(tl, ranks, out / "timeline.png", title)
    return [out / "timeline.json", out / "timeline.png"]
