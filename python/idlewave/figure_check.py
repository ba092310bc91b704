"""Structural checks of a drawn figure: what a reviewer would reject at a
glance. An axes with nothing drawn in it (and no note saying why), and
texts that overlap: tick labels, axis labels, titles, legends and notes.

`save_figure` runs them on every figure it writes when the environment sets
IDLEWAVE_CHECK_FIGURES (the demo's test does), and prints one line per
figure to standard error: `figure check: PATH: ok` or the problems.
"""

from __future__ import annotations

from typing import Any

# Boxes are shrunk by this many pixels before testing for overlap, so that
# texts that merely touch (a tick label at the axes corner) pass.
SLACK_PX = 1.0


def problems(fig: Any) -> list[str]:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found: list[str] = []
    texts: list[tuple[str, Any]] = []  # (description, window extent)

    def add(what: str, artist: Any) -> None:
        if artist is not None and artist.get_visible() and (not hasattr(artist, "get_text") or artist.get_text()):
            texts.append((what, artist.get_window_extent(renderer)))

    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        name = repr(ax.get_title()) if ax.get_title() else f"axes {i}"
        if ax.axison and not ax.has_data() and not ax.texts:
            found.append(f"{name}: empty axes, with no note saying why")
        for axis, letter in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            lo, hi = sorted(axis.get_view_interval())
            span = (hi - lo) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                # ticks outside the view keep their labels but are not drawn
                if lo - span <= tick.get_loc() <= hi + span:
                    add(f"{name} {letter} tick {tick.label1.get_text()!r}", tick.label1)
            add(f"{name} {letter} label", axis.label)
        add(f"{name} title", ax.title)
        for t in ax.texts:
            add(f"{name} note {t.get_text()[:30]!r}", t)
        if ax.get_legend() is not None:
            add(f"{name} legend", ax.get_legend())
    if fig._suptitle is not None:
        add("suptitle", fig._suptitle)
    for t in fig.texts:
        add(f"figure text {t.get_text()[:30]!r}", t)
    for k, (a, box_a) in enumerate(texts):
        for b, box_b in texts[k + 1:]:
            if _overlap(box_a, box_b):
                found.append(f"{a} overlaps {b}")
    return found


def _overlap(a: Any, b: Any) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > SLACK_PX) and (min(a.y1, b.y1) - max(a.y0, b.y0) > SLACK_PX)
