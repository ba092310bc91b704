"""Timelines of a run: Perfetto/Chrome trace JSON (open it in
ui.perfetto.dev) and a PNG like the papers' traces — computation white,
MPI (waiting and overheads) red, messages as black lines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from idlewave.results import _atomic, write_text

COMPUTE, SEND, RECV, MESSAGE = 0, 1, 2, 3
DEFAULT_SPANS = 2_000_000
MAX_LINES = 20_000


def _waits(tl: dict, ranks: int):
    """Per rank, the gaps between its CPU activity: time spent waiting in MPI."""
    cpu = tl["activity"] != MESSAGE
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
    names = {COMPUTE: "compute", SEND: "MPI send overhead", RECV: "MPI receive overhead"}
    events = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": r, "args": {"name": f"rank {r}"}} for r in range(ranks)]
    us = 1e-6
    for i in range(tl["rank"].size):
        a = int(tl["activity"][i])
        r, s, e = int(tl["rank"][i]), int(tl["start_ps"][i]), int(tl["end_ps"][i])
        if a == MESSAGE:
            peer = int(tl["peer"][i])
            events.append({"ph": "s", "id": i, "pid": 0, "tid": r, "ts": s * us, "name": "message", "cat": "msg"})
            events.append({"ph": "f", "bp": "e", "id": i, "pid": 0, "tid": peer, "ts": e * us, "name": "message", "cat": "msg"})
        else:
            events.append({"ph": "X", "pid": 0, "tid": r, "ts": s * us, "dur": (e - s) * us, "name": names[a],
                           "cat": "compute" if a == COMPUTE else "mpi"})
    for r, s, e in _waits(tl, ranks):
        events.append({"ph": "X", "pid": 0, "tid": r, "ts": s * us, "dur": (e - s) * us, "name": "MPI wait", "cat": "mpi"})
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"source": "idlewave"}})


def png(tl: dict, ranks: int, path: Path, title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    s_all, e_all = tl["start_ps"] / 1e6, tl["end_ps"] / 1e6  # µs
    fig, ax = plt.subplots(figsize=(10, min(2 + ranks * 0.12, 12)), constrained_layout=True)
    cpu = tl["activity"] != MESSAGE
    for r in range(ranks):
        sel = cpu & (tl["rank"] == r)
        if not sel.any():
            continue
        lo, hi = s_all[sel].min(), e_all[sel].max()
        ax.broken_barh([(lo, hi - lo)], (r - 0.4, 0.8), facecolors="#d62728")  # MPI: everything not computing
        comp = sel & (tl["activity"] == COMPUTE)
        ax.broken_barh(list(zip(s_all[comp], e_all[comp] - s_all[comp])), (r - 0.4, 0.8), facecolors="white")
    msg = np.flatnonzero(tl["activity"] == MESSAGE)[:MAX_LINES]
    lines = [[(s_all[i], tl["rank"][i]), (e_all[i], tl["peer"][i])] for i in msg]
    ax.add_collection(LineCollection(lines, colors="black", linewidths=0.4))
    ax.set_ylim(-1, ranks)
    ax.invert_yaxis()
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("rank")
    ax.set_facecolor("#f0f0f0")
    if title:
        ax.set_title(title)
    _atomic(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)


def write(tl: dict, ranks: int, out: str | Path, title: str = "") -> list[Path]:
    out = Path(out)
    write_text(out / "timeline.json", chrome_json(tl, ranks))
    png(tl, ranks, out / "timeline.png", title)
    return [out / "timeline.json", out / "timeline.png"]
