"""The regime figures (PNG and SVG): timing heatmap (Fig. 1), regime-coloured
series (Fig. 6), T_in vs T_out scatter with marginal histograms (Fig. 7),
functional boxplots of per-rank CDFs (Fig. 9/10), cumulative sums (Fig. 11)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.ticker import MaxNLocator

from idlewave.results import PALETTE, pyplot, save_figure, series_colour, time_unit
from idlewave.stats.compare import band_depth, cdf_curves, cumulative_sorted

plt = pyplot()

COLORS = list(PALETTE)  # regime i in every figure


def _save(fig, out: Path, name: str) -> list[str]:
    save_figure(fig, out / f"{name}.png", dpi=120, also=("svg",))
    return [f"{name}.png", f"{name}.svg"]


def _unit(values: np.ndarray) -> tuple[float, str]:
    """The time scale and unit for an axis showing `values` (seconds)."""
    finite = values[np.isfinite(values)]
    return time_unit(float(np.abs(finite).max()) if finite.size else 1.0)


def _few_ticks(ax) -> None:
    """At most five ticks along x, so that labels never run into each other."""
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))


HEATMAP_COLUMNS = 4000


def heatmap(T: np.ndarray, out: Path, name: str = "heatmap") -> list[str]:
    shown = T[:, :HEATMAP_COLUMNS]
    scale, unit = _unit(shown)
    fig, ax = plt.subplots(figsize=(8, 4), constrained_layout=True)
    im = ax.imshow(shown * scale, aspect="auto", interpolation="nearest", cmap="viridis")
    ax.set_xlabel("iteration")
    ax.set_ylabel("rank")
    capped = f" (first {HEATMAP_COLUMNS:,} of {T.shape[1]:,} iterations)" if T.shape[1] > HEATMAP_COLUMNS else ""
    ax.set_title(f"Iteration times per rank{capped}")
    fig.colorbar(im, ax=ax, label=f"time [{unit}]")
    return _save(fig, out, name)


def regime_series(times: np.ndarray, labels: np.ndarray, out: Path, name: str = "series") -> list[str]:
    scale, unit = _unit(times)
    fig, ax = plt.subplots(figsize=(8, 3.4), constrained_layout=True)
    k = np.arange(times.size)
    for i in np.unique(labels):
        sel = labels == i
        ax.scatter(k[sel], times[sel] * scale, s=2, color=COLORS[int(i) % len(COLORS)], label=f"regime {i}")
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"time [{unit}]")
    ax.set_title("Iteration times by regime")
    fig.legend(loc="outside right upper", markerscale=4, fontsize="small", frameon=False)
    return _save(fig, out, name)


def in_out_scatter(t_in: np.ndarray, t_out: np.ndarray, out: Path, name: str = "in_out") -> list[str]:
    scale, unit = _unit(np.concatenate([t_in, t_out]))
    fig = plt.figure(figsize=(5, 5), constrained_layout=True)
    gs = fig.add_gridspec(4, 4)
    main = fig.add_subplot(gs[1:, :3])
    top = fig.add_subplot(gs[0, :3], sharex=main)
    side = fig.add_subplot(gs[1:, 3], sharey=main)
    main.scatter(t_in * scale, t_out * scale, s=2, alpha=0.4)
    top.hist(t_in * scale, bins=60)
    side.hist(t_out * scale, bins=60, orientation="horizontal")
    main.set_xlabel(f"T_in [{unit}]")
    main.set_ylabel(f"T_out [{unit}]")
    _few_ticks(main)
    top.set_title("Waits for the input and output exchanges")
    return _save(fig, out, name)


def cdf_boxplot(T: np.ndarray, out: Path, name: str = "cdf_boxplot") -> list[str]:
    scale, unit = _unit(T)
    lo, hi = np.quantile(T, 0.001), np.quantile(T, 0.999)
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    ax.set_ylabel("CDF")
    ax.set_xlabel(f"time [{unit}]")
    ax.set_title("Per-rank distributions of iteration times")
    if hi <= lo:  # every timing the same: a step, not a band
        ax.axvline(lo * scale, color="k", label=f"every timing {lo * scale:.4g} {unit}")
    else:
        grid = np.linspace(lo, hi, 200)
        curves = cdf_curves(T, grid)
        depth = band_depth(curves)
        order = np.argsort(depth)[::-1]
        central = curves[order[: max(1, len(order) // 2)]]
        ax.fill_between(grid * scale, central.min(axis=0), central.max(axis=0), color="#9ecae1", label="50% central region")
        ax.fill_between(grid * scale, curves.min(axis=0), curves.max(axis=0), color="#deebf7", zorder=0, label="range")
        ax.plot(grid * scale, curves[order[0]], color="k", label="median (deepest) rank")
    _few_ticks(ax)
    fig.legend(loc="outside lower center", ncol=3, fontsize="small", frameon=False)
    return _save(fig, out, name)


def regime_cdfs(T: np.ndarray, labels: np.ndarray, out: Path, name: str = "cdf_regimes") -> list[str]:
    """Functional boxplot of per-rank CDFs within each regime (Fig. 9/10 per
    regime). A regime with no spread to draw (every timing equal, or fewer
    than two per rank) gets no panel; the figure says which and why."""
    drawn, omitted = [], []
    for i in np.unique(labels):
        rows = [np.sort(T[p][labels[p] == i]) for p in range(T.shape[0])]
        rows = [r for r in rows if r.size >= 2]
        if not rows:
            omitted.append(f"regime {i}: fewer than 2 timings on every rank")
            continue
        allv = np.concatenate(rows)
        lo, hi = np.quantile(allv, 0.001), np.quantile(allv, 0.999)
        if hi <= lo:
            s, u = time_unit(float(lo))
            omitted.append(f"regime {i}: every timing {lo * s:.4g} {u} (no spread)")
            continue
        drawn.append((i, rows, np.linspace(lo, hi, 150)))
    n = max(1, len(drawn))
    fig, axes = plt.subplots(1, n, figsize=(4 * n, 3.6), constrained_layout=True, squeeze=False)
    for ax, (i, rows, grid) in zip(axes[0], drawn):
        curves = np.stack([np.searchsorted(r, grid, side="right") / r.size for r in rows])
        depth = band_depth(curves)
        order = np.argsort(depth)[::-1]
        central = curves[order[: max(1, len(order) // 2)]]
        scale, unit = time_unit(float(grid[-1]))
        ax.fill_between(grid * scale, curves.min(axis=0), curves.max(axis=0), color="#deebf7")
        ax.fill_between(grid * scale, central.min(axis=0), central.max(axis=0), color=COLORS[int(i) % len(COLORS)],
                        alpha=0.5)
        ax.plot(grid * scale, curves[order[0]], color="k")
        ax.set_title(f"regime {i}")
        ax.set_xlabel(f"time [{unit}]")
        _few_ticks(ax)
    if not drawn:
        axes[0][0].set_axis_off()
    axes[0][0].set_ylabel("CDF")
    if omitted:
        fig.supxlabel("Not drawn: " + "; ".join(omitted), fontsize="small")
    return _save(fig, out, name)


def cumulative(tmax: dict[str, np.ndarray], out: Path, name: str = "cumulative") -> list[str]:
    scale, unit = time_unit(max(float(cumulative_sorted(t)[-1]) for t in tmax.values()) if tmax else 1.0)
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    for label in sorted(tmax):  # in the order the report meets them (summary.json's): the same colours there
        series_colour(label)
    for label, t in tmax.items():
        ax.plot(cumulative_sorted(t) * scale, label=label, color=series_colour(label))
    ax.set_xlabel("K (iterations, sorted by time)")
    ax.set_ylabel(f"S_K [{unit}]")
    ax.set_title("Cumulative sum of the sorted slowest-rank times")
    fig.legend(loc="outside lower center", ncol=min(3, max(1, len(tmax))), fontsize="small", frameon=False)
    return _save(fig, out, name)
