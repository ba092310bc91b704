"""The regime figures (PNG and SVG): timing heatmap (Fig. 1), regime-coloured
series (Fig. 6), T_in vs T_out scatter with marginal histograms (Fig. 7),
functional boxplots of per-rank CDFs (Fig. 9/10), cumulative sums (Fig. 11)."""

from __future__ import annotations

import functools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from idlewave.results import write_file  # noqa: E402
from idlewave.stats.compare import band_depth, cdf_curves, cumulative_sorted  # noqa: E402

COLORS = ["#3b0f70", "#21a6b5", "#f5c20a", "#d1495b", "#66a182", "#8c564b"]


def _savefig(fig, ext: str, path: Path) -> None:
    fig.savefig(path, dpi=120, format=ext)


def _save(fig, out: Path, name: str) -> list[str]:
    paths = []
    for ext in ("png", "svg"):
        final = out / f"{name}.{ext}"
        write_file(final, functools.partial(_savefig, fig, ext))  # under an unpredictable temporary name
        paths.append(final.name)
    plt.close(fig)
    return paths


def heatmap(T: np.ndarray, out: Path, name: str = "heatmap") -> list[str]:
    fig, ax = plt.subplots(figsize=(8, 4), constrained_layout=True)
    im = ax.imshow(T[:, : min(T.shape[1], 4000)], aspect="auto", interpolation="nearest", cmap="viridis")
    ax.set_xlabel("iteration")
    ax.set_ylabel("rank")
    fig.colorbar(im, ax=ax, label="time (s)")
    return _save(fig, out, name)


def regime_series(times: np.ndarray, labels: np.ndarray, out: Path, name: str = "series") -> list[str]:
    fig, ax = plt.subplots(figsize=(8, 3), constrained_layout=True)
    k = np.arange(times.size)
    for i in np.unique(labels):
        sel = labels == i
        ax.scatter(k[sel], times[sel], s=2, color=COLORS[int(i) % len(COLORS)], label=f"regime {i}")
    ax.set_xlabel("iteration")
    ax.set_ylabel("time (s)")
    ax.legend(markerscale=4, fontsize=7)
    return _save(fig, out, name)


def in_out_scatter(t_in: np.ndarray, t_out: np.ndarray, out: Path, name: str = "in_out") -> list[str]:
    fig = plt.figure(figsize=(5, 5), constrained_layout=True)
    gs = fig.add_gridspec(4, 4)
    main = fig.add_subplot(gs[1:, :3])
    top = fig.add_subplot(gs[0, :3], sharex=main)
    side = fig.add_subplot(gs[1:, 3], sharey=main)
    main.scatter(t_in, t_out, s=2, alpha=0.4)
    top.hist(t_in, bins=60)
    side.hist(t_out, bins=60, orientation="horizontal")
    main.set_xlabel("T_in (s)")
    main.set_ylabel("T_out (s)")
    return _save(fig, out, name)


def cdf_boxplot(T: np.ndarray, out: Path, name: str = "cdf_boxplot") -> list[str]:
    grid = np.linspace(np.quantile(T, 0.001), np.quantile(T, 0.999), 200)
    curves = cdf_curves(T, grid)
    depth = band_depth(curves)
    order = np.argsort(depth)[::-1]
    central = curves[order[: max(1, len(order) // 2)]]
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    ax.fill_between(grid, central.min(axis=0), central.max(axis=0), color="#9ecae1", label="50% central region")
    ax.fill_between(grid, curves.min(axis=0), curves.max(axis=0), color="#deebf7", zorder=0, label="range")
    ax.plot(grid, curves[order[0]], color="k", label="median (deepest) rank")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("CDF")
    ax.legend(fontsize=7)
    return _save(fig, out, name)


def regime_cdfs(T: np.ndarray, labels: np.ndarray, out: Path, name: str = "cdf_regimes") -> list[str]:
    """Functional boxplot of per-rank CDFs within each regime (Fig. 9/10 per regime)."""
    regimes = np.unique(labels)
    fig, axes = plt.subplots(1, len(regimes), figsize=(4 * len(regimes), 3.5), constrained_layout=True, squeeze=False)
    for ax, i in zip(axes[0], regimes):
        rows = [np.sort(T[p][labels[p] == i]) for p in range(T.shape[0])]
        rows = [r for r in rows if r.size >= 2]
        if not rows:
            continue
        allv = np.concatenate(rows)
        grid = np.linspace(np.quantile(allv, 0.001), np.quantile(allv, 0.999), 150)
        curves = np.stack([np.searchsorted(r, grid, side="right") / r.size for r in rows])
        depth = band_depth(curves)
        order = np.argsort(depth)[::-1]
        central = curves[order[: max(1, len(order) // 2)]]
        ax.fill_between(grid, curves.min(axis=0), curves.max(axis=0), color="#deebf7")
        ax.fill_between(grid, central.min(axis=0), central.max(axis=0), color=COLORS[int(i) % len(COLORS)], alpha=0.5)
        ax.plot(grid, curves[order[0]], color="k")
        ax.set_title(f"regime {i}")
        ax.set_xlabel("time (s)")
    axes[0][0].set_ylabel("CDF")
    return _save(fig, out, name)


def cumulative(tmax: dict[str, np.ndarray], out: Path, name: str = "cumulative") -> list[str]:
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    for label, t in tmax.items():
        ax.plot(cumulative_sorted(t), label=label)
    ax.set_xlabel("K (sorted iterations)")
    ax.set_ylabel("S_K (s)")
    ax.legend(fontsize=7)
    return _save(fig, out, name)
