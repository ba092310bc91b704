"""The loop closed: measured kernels against the simulator's prediction
with a fitted platform — a table and a figure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

import idlewave
from idlewave.results import save_figure, write_parquet


def dims_create(n: int, k: int = 3) -> list[int]:
    """MPI_Dims_create: k factors of n as equal as possible, non-increasing."""
    dims = [1] * k
    primes, m, f = [], n, 2
    while m > 1:
        while m % f == 0:
            primes.append(f)
            m //= f
        f += 1
    for p in sorted(primes, reverse=True):
        dims[int(np.argmin(dims))] *= p
    return sorted(dims, reverse=True)


def predict(row: dict, ranks: int, platform: str, iterations: int = 20) -> float:
    """Seconds per iteration the simulator predicts for one measured kernel."""
    net = {"platform": platform}
    if row["kernel"] == "allreduce":
        w = {"kind": "collective", "collective": "allreduce", "algorithm": "recursive_doubling", "ranks": ranks,
             "iterations": iterations, "message_bytes": int(row["size_bytes"]), "mode": row["mode"],
             "compute_s": row["overlap_s"] + (row["trailing_s"] if row["mode"] == "blocking" else 0.0)}
        extra = row["trailing_s"] if row["mode"] == "nonblocking" else 0.0
        if ranks & (ranks - 1):
            w["algorithm"] = "dissemination"
    else:
        n = int(row["n"])
        w = {"kind": "krylov_kernel", "kernel": "halo", "mode": row["mode"], "iterations": iterations,
             "grid": dims_create(ranks)[::-1], "local": [n, n, n], "stencil": 7,
             "overlap_s": row["overlap_s"], "trailing_s": row["trailing_s"]}
        extra = 0.0
    r = idlewave.simulate({"network": net, "workload": w})
    return float(np.nanmean(r.timers["iteration"])) + extra


def compare(kernels_dir: str | Path, platform: str, out: str | Path) -> pl.DataFrame:
    kd, out = Path(kernels_dir), Path(out)
    frame = pl.read_parquet(kd / "kernels.parquet", glob=False)
    ranks = json.loads((kd / "machine.json").read_text())["ranks"]
    keys = ["kernel", "mode", "size_bytes", "n", "overlap_s", "trailing_s"]  # rows in one order, run after run
    measured = frame.group_by(keys, maintain_order=True).agg(pl.col("time_s").median().alias("measured_s")).sort(keys)
    preds = [predict(row, ranks, platform) for row in measured.iter_rows(named=True)]
    table = measured.with_columns(pl.Series("predicted_s", preds)).with_columns(
        ((pl.col("predicted_s") / pl.col("measured_s") - 1) * 100).alias("error_pct"))
    write_parquet(out / "compare.parquet", table)
    _figure(table, out / "compare.png")
    return table


def _figure(table: pl.DataFrame, path: Path) -> None:
    from idlewave.results import pyplot

    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, kernel in zip(axes, ("allreduce", "halo")):
        part = table.filter(pl.col("kernel") == kernel)
        for mode, marker in (("blocking", "o"), ("nonblocking", "s")):
            m = part.filter(pl.col("mode") == mode).sort("size_bytes")
            ax.plot(m["size_bytes"], m["measured_s"] * 1e6, marker=marker, label=f"{mode} measured")
            ax.plot(m["size_bytes"], m["predicted_s"] * 1e6, marker=marker, linestyle="--", label=f"{mode} predicted")
        ax.set_xscale("log")
        ax.set_xlabel("message bytes" if kernel == "allreduce" else "face bytes")
        ax.set_ylabel("µs per iteration")
        ax.set_title(kernel)
        ax.legend(fontsize=7)
    save_figure(fig, path, dpi=120, also=("svg",))
