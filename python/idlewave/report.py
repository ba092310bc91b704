"""`idlewave report DIR`: one self-contained HTML page (no external files)
from everything under DIR: simulation results, sweeps (each point once, with
the speedups between the values of each swept key), idle-wave measurements,
regime analyses, and measured-vs-predicted tables. A table of contents
leads to every section; each series has one colour in every figure
(results.series_colour); figures are SVG (inline, or as data URIs for those
read from a result's files), PNG on request (`figures="png"`); a print
stylesheet keeps figures whole. A damaged result below DIR is left out with
a warning; a damaged DIR fails the report (see `build`)."""

from __future__ import annotations

import base64
import html
import itertools
import math
import re
import string
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from idlewave.ranking import measured
from idlewave.results import UnreadableResult, figure_png, figure_svg, read_json, read_parquet, series_colour, write_text

#: A result below the report's directory that cannot be read, and why (the
#: UnreadableResult naming its file): it is left out with a warning.
Skip = Callable[[Path, UnreadableResult], None]


class Html(str):
    """Text that is HTML already: made by `h` or `join` only. Everything else
    put into the page (any value read from a result, a path, a name) is text
    and is escaped on the way in, so a value can never become markup."""


class _Escaping(string.Formatter):
    def format_field(self, value, format_spec: str) -> str:
        if isinstance(value, Html):
            return value
        try:
            text = format(value, format_spec)
        except (TypeError, ValueError):  # a value of another type than idlewave writes: shown as it is
            text = str(value)
        return html.escape(text, quote=True)


_ESCAPING = _Escaping()


def h(template: str, /, *args, **kwargs) -> Html:
    """`template` (markup written here, never read from data) with every
    field filled by an escaped argument (an Html argument goes in as it is).
    The one way a value reaches the page."""
    return Html(_ESCAPING.format(template, *args, **kwargs))


def join(parts, sep: str = "") -> Html:
    """The parts in a row; text among them is escaped."""
    return Html(sep.join(h("{}", p) for p in parts))


#: How the figures the report draws are put in the page: "svg" (inline) or
#: "png" (data URIs); set by `build` for the page it writes.
_FORMAT = "svg"
_FIGURE_IDS = itertools.count(1)

#: What an SVG of matplotlib's never holds and a page must not run.
_ACTIVE = re.compile(r"<\s*(script|foreignObject|iframe|object|embed)\b|\son\w+\s*=|javascript:", re.IGNORECASE)


def _png(fig) -> Html:
    """A figure the report drew: inline SVG, or a PNG when the page asks for PNG."""
    if _FORMAT == "png":
        return _img(figure_png(fig))
    return _svg(figure_svg(fig))


def _svg(text: str) -> Html:
    """matplotlib's SVG of a figure as inline markup. Its text (names of runs,
    strategies) is escaped by matplotlib's writer and drawn as paths; the
    document is checked to hold nothing active all the same. Its ids get the
    figure's own prefix: two figures on one page never share a clip path."""
    start = text.find("<svg")
    text = re.sub(r"<!--.*?-->\n?", "", text[start:], flags=re.DOTALL)  # the words drawn, as comments: not needed
    if start < 0 or _ACTIVE.search(text):
        raise ValueError("matplotlib wrote an SVG this report does not embed")
    prefix = f"f{next(_FIGURE_IDS)}-"
    body = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m[1]}"', text)
    body = re.sub(r'(url\(#|href="#)([^)"]+)', lambda m: f"{m[1]}{prefix}{m[2]}", body)
    return Html(f'<figure class="fig">{body}</figure>')


def _img(data: bytes, alt: str = "figure", kind: str = "png") -> Html:
    mime = "image/svg+xml" if kind == "svg" else "image/png"
    return h('<figure class="fig"><img class="fig" alt="{}" src="data:{};base64,{}"></figure>', alt, mime,
             base64.b64encode(data).decode())


def _file_figure(png: Path, alt: str) -> Html:
    """A figure a command wrote: its SVG beside `png` when there is one (as
    a data URI: an image, so nothing in the file can act on the page),
    else the PNG; the PNG when the page asks for PNG."""
    svg = png.with_suffix(".svg")
    if _FORMAT == "svg" and svg.is_file():
        return _img(svg.read_bytes(), alt, "svg")
    return _img(png.read_bytes(), alt)


def _table(rows: list[dict], cols: list[str] | None = None) -> Html:
    if not rows:
        return Html("<p>(none)</p>")
    cols = cols or list(rows[0])

    def cell(v) -> Html:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return Html("—")  # a failed point's or an empty run's missing value
        if isinstance(v, float):
            return h("{:.6g}", v)
        return h("{}", v)

    def td(v) -> Html:  # a long text (an error) wraps; numbers and names stay on their line
        return h('<td class="long">{}</td>', cell(v)) if isinstance(v, str) and len(v) > 60 else h("<td>{}</td>", cell(v))

    head = join(h("<th>{}</th>", c) for c in cols)
    body = join(h("<tr>{}</tr>", join(td(r.get(c, "")) for c in cols)) for r in rows)
    return h('<div class="tw"><table><tr>{}</tr>{}</table></div>', head, body)


#: Runs drawn at most in the report's overview plot (the table lists all).
_RUNS_PLOTTED = 12


def _runs(dirs: list[Path], root: Path, skip: Skip) -> Html:
    from idlewave.results import pyplot

    plt = pyplot()

    from idlewave.results import time_unit

    rows, parts, series, readable = [], [], [], []
    for d in dirs:
        try:
            s = read_json(d / "summary.json")
            frame = read_parquet(d / "timers.parquet")
            if "iteration_s" in frame.columns and frame.height:
                if "iteration" not in frame.columns:
                    raise UnreadableResult(f"{d / 'timers.parquet'}: has no 'iteration' column")
                per_it = frame.group_by("iteration").agg(pl.col("iteration_s").max()).sort("iteration")
                series.append((str(d.relative_to(root)), per_it["iteration"].to_numpy(), per_it["iteration_s"].to_numpy()))
        except UnreadableResult as e:
            skip(d, e)
            continue
        readable.append(d)
        it = s["iteration_s"] if isinstance(s.get("iteration_s"), dict) else {}
        rows.append({"run": str(d.relative_to(root)), "workload": s.get("workload"), "ranks": s.get("ranks"),
                     "iterations": s.get("iterations"), "makespan_s": s.get("makespan_s"),
                     "iteration mean s": it.get("mean"), "iteration p95 s": it.get("p95"), "events": s.get("events")})
    if not rows:  # every run left out
        return Html("")
    parts.append(_table(rows))
    if series:
        shown = series[:_RUNS_PLOTTED]
        top = max(float(np.nanmax(y)) for _, _, y in shown)
        scale, unit = time_unit(top)
        fig, ax = plt.subplots(figsize=(8, 3.2 + 0.18 * -(-len(shown) // 2)), constrained_layout=True)
        # a run's colour is its directory's name's (a regimes dataset of the run is named so by default),
        # its path's where two runs drawn share a name
        names = [Path(label).name for label, _, _ in shown]
        unique = len(set(names)) == len(names)
        for (label, x, y), name in zip(shown, names):
            ax.plot(x, y * scale, label=label, lw=1, color=series_colour(name if unique else label))
        medians = [float(np.nanmedian(y)) for _, _, y in shown]
        if min(medians) > 0 and max(medians) / min(medians) > 20:  # runs of very different scales
            ax.set_yscale("log")
        ax.set_xlabel("iteration")
        ax.set_ylabel(f"slowest rank's iteration [{unit}]")
        capped = f" (the first {len(shown)} of {len(series)} runs)" if len(series) > len(shown) else ""
        ax.set_title(f"Slowest rank's time per iteration, by run{capped}", fontsize="medium")
        fig.legend(loc="outside lower center", ncol=2, fontsize="x-small", frameon=False)
        parts.append(_png(fig))
    from idlewave.analyze import AnalysisError, idle_wave, pd

    waves, wave_notes = [], []
    for d in list(readable):
        try:
            scn = read_json(d / "scenario.json") if (d / "scenario.json").exists() else {}
            noise = scn["noise"] if isinstance(scn.get("noise"), list) else []
            if any(isinstance(n, dict) and n.get("kind") == "single" for n in noise):
                w = idle_wave(d)
                waves.append({"run": str(d.relative_to(root)), "speed ranks/s": w["speed_ranks_per_s"],
                              "ranks per iteration": w["speed_ranks_per_iteration"], "decay per rank": w["decay_per_rank"]})
                parts.append(_heat(d, str(d.relative_to(root))))
        except UnreadableResult as e:
            skip(d, e)
            readable.remove(d)
        except AnalysisError as e:  # said on the page: a run with a delay but no measurable wave
            wave_notes.append(f"{d.relative_to(root)}: no idle wave measured: {e}")
    if waves or wave_notes:
        parts.insert(1, h("<h3>Idle waves</h3>{}{}", _table(waves) if waves else Html(""), _notes(wave_notes)))
    pairs, pair_notes = [], []
    for d in readable:
        if d.name.endswith("barrier"):
            free = d.with_name(d.name[: -len("barrier")] + "free")
            if free in readable:
                try:
                    r = pd(d, free)
                    pairs.append({"runs": f"{d.relative_to(root)} / {free.name}", "P_D": r["pd"],
                                  "with barriers s": r["runtime_barrier_s"], "barrier cost s": r["barrier_cost_s"],
                                  "without s": r["runtime_free_s"]})
                except UnreadableResult as e:  # the runs were read above; only scenario.json is new here
                    skip(d, e)
                except AnalysisError as e:  # e.g. the pair is not the same run apart from the barrier
                    pair_notes.append(f"{d.relative_to(root)} / {free.name}: no P_D: {e}")
    if pairs or pair_notes:
        parts.insert(1, h("<h3>Desynchronization (P_D, barrier cost subtracted)</h3>{}{}",
                          _table(pairs) if pairs else Html(""), _notes(pair_notes)))
    return join(parts, "\n")


def _notes(lines: list[str]) -> Html:
    return join(h("<p>{}</p>", line) for line in lines)


def _heat(d: Path, title: str) -> Html:
    import matplotlib.pyplot as plt

    frame = read_parquet(d / "timers.parquet")
    col = "comm_s" if "comm_s" in frame.columns else "iteration_s"
    ranks, iters = frame["rank"].n_unique(), frame["iteration"].n_unique()
    m = frame.sort(["rank", "iteration"])[col].to_numpy().reshape(ranks, iters)
    from idlewave.results import time_unit

    scale, unit = time_unit(float(np.nanmax(m)) if m.size else 1.0)
    fig, ax = plt.subplots(figsize=(8, 3), constrained_layout=True)
    im = ax.imshow(m * scale, aspect="auto", interpolation="nearest", cmap="magma")
    ax.set_title(f"{title}: {col[:-2]} time per rank and iteration", fontsize="medium")
    ax.set_xlabel("iteration")
    ax.set_ylabel("rank")
    fig.colorbar(im, ax=ax, label=f"{col[:-2]} [{unit}]")
    return _png(fig)


def _ranking(d: Path) -> Html:
    """A study's strategy ranking: per condition, the table and the verdicts, and the grouped bars."""
    ranking = read_json(d / "ranking.json")
    parts = [h("<h4>Which {} wins ({:.0%} CI over {} seeds)</h4>", ranking["strategy"], ranking["level"],
               ranking["replications"])]
    for c in ranking["conditions"]:
        cond = ", ".join(f"{k} = {v}" for k, v in c["condition"].items()) or "all points"
        parts.append(h("<p><b>{}</b></p>", cond))
        parts.append(_table([{"rank": r["rank"], "strategy": r["strategy"], "makespan mean s": r["makespan_mean_s"],
                              "± s": r["makespan_ci_s"], "slowest rank's iteration s": r["slowest_iteration_mean_s"],
                              "slower than the best": r.get("slower_than_best")} for r in c["ranking"]]))
        parts += [h("<p>{}</p>", r["verdict"]) for r in c["ranking"] if "verdict" in r]
    parts.append(_ranking_figure(d, ranking))
    return join(parts, "\n")


def _ranking_figure(d: Path, ranking: dict) -> Html:
    """The grouped bars, drawn again from ranking.json (each strategy in its
    colour of every figure), or ranking.png as the sweep wrote it."""
    from idlewave.ranking import draw

    try:
        return _png(draw(ranking["conditions"], ranking["strategy"]))
    except (KeyError, TypeError, ValueError):  # a ranking.json of an older idlewave
        return _file_figure(d / "ranking.png", "ranking") if (d / "ranking.png").exists() else Html("")


#: Points of a sweep listed open; a longer table (or one under a ranking) is folded.
_POINTS_OPEN = 30


def _sweep(d: Path, skip: Skip | None = None) -> Html:
    """A sweep: its ranking (if a study named a strategy), then one table of
    its points, each once, with a column per swept key of the speedup over
    the key's first value (the point with every other key the same). A
    finished point whose result is gone or damaged is passed to `skip`."""
    frame = read_parquet(d / "sweep.parquet")
    if skip is not None:
        _check_points(d, frame, skip)
    ranked = (d / "ranking.json").exists()
    parts = [_ranking(d)] if ranked else []
    keys = [c for c in frame.columns if not measured(c) and c != "replica"]
    if "replica" in frame.columns and frame["replica"].n_unique() > 1:
        keys = [c for c in keys if c != "seed"]  # set by the replications (ranked above with intervals)
    done = frame.filter(pl.col("status") == "done") if "status" in frame.columns else frame
    keys = [c for c in keys if done[c].null_count() < done.height]  # keys only failed points set
    table = frame.with_row_index("_row")
    speedups = []
    for k in keys:
        values = done[k].unique(maintain_order=True).to_list()
        if len(values) < 2 or "makespan_s" not in done.columns:
            continue
        # replicas pair with their own (the same seed) in every comparison
        others = [c for c in keys if c != k] + (["replica"] if "replica" in done.columns else [])
        col = f"speedup by {k} (vs {values[0]})"
        base = done.filter(pl.col(k) == values[0]).select([*others, pl.col("makespan_s").alias(col)])
        if not base.height:
            continue
        if others:
            table = table.join(base.unique(subset=others, keep="first", maintain_order=True), on=others, how="left")
        else:
            table = table.with_columns(pl.lit(base[col][0]).alias(col))
        table = table.with_columns((pl.col(col) / pl.col("makespan_s")).alias(col))
        speedups.append(col)
    table = table.sort("_row").drop("_row")
    first = [c for c in frame.columns if c != "error"]
    cols = first[: first.index("makespan_s") + 1] + speedups + first[first.index("makespan_s") + 1:] if speedups else first
    cols += ["error"] if "error" in frame.columns else []
    rows = table.select(cols).to_dicts()
    said = f"All {len(rows)} points" + (", with the speedup of each swept key's values over its first" if speedups else "")
    fold = Html("") if (ranked or len(rows) > _POINTS_OPEN) else Html(" open")
    parts.append(h('<details class="points"{}><summary>{}</summary>{}</details>', fold, said, _table(rows, cols)))
    return join(parts, "\n")


def _check_points(d: Path, frame: pl.DataFrame, skip: Skip) -> None:
    """Each finished point of the sweep's table whose directory no longer
    holds a readable summary.json (deleted, truncated, not idlewave's), passed
    to `skip`: its row stays as the sweep recorded it, but the page and the
    command say that its result is gone."""
    points = d / "points"
    if not points.is_dir() or not {"id", "status"} <= set(frame.columns):
        return  # a table without its points (copied alone): nothing to check against
    for pid in frame.filter(pl.col("status") == "done")["id"].to_list():
        where = points / str(pid)
        try:
            s = read_json(where / "summary.json")
            if "makespan_s" not in s:
                raise UnreadableResult(f"{where / 'summary.json'}: has no makespan_s: not the summary idlewave writes")
        except (FileNotFoundError, UnreadableResult) as e:
            why = str(e) if isinstance(e, UnreadableResult) else \
                f"{where}: {'missing' if not where.is_dir() else 'its summary.json is missing'}"
            skip(where, UnreadableResult(f"{why} (a point of the sweep {d}: its row in the table is what the sweep "
                                         "recorded; running the sweep again runs the point again)"))


def _regimes(d: Path, root: Path) -> Html:
    s = read_json(d / "summary.json")
    parts = []
    sets = s["datasets"] if "datasets" in s else {d.name: s}
    for name, ds in sets.items():
        if "regimes" not in ds:
            continue
        # the decoded samples' mean and sd first, then the fitted emission's μ and σ
        rows = [{"regime": r["regime"], "share": r["share"], "mean (s)": r.get("mean"), "sd (s)": r.get("sd"),
                 "fitted μ (s)": r["mu"], "fitted σ (s)": r["sigma"]} for r in ds["regimes"]]
        parts.append(h("<h3>{}: {} regimes</h3>{}", name, ds["n_regimes"], _table(rows)))
        plain = isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name
        sub = d / name if plain and (d / name).is_dir() else d  # a name read from the file never leads elsewhere
        for f in ("series.png", "cdf_boxplot.png", "cdf_regimes.png", "in_out.png", "heatmap.png"):
            if (sub / f).exists():
                parts.append(_file_figure(sub / f, f))
    comp = s.get("comparisons") or {}
    if comp:
        parts.append(h("<h3>Comparisons</h3>{}{}", h("<p>{}</p>", comp["note"]) if "note" in comp else Html(""),
                       _table(comp.get("ks", []))))
        parts.append(_table([{"pair": k, "total T^max difference %": v} for k, v in comp.get("percent_difference_total_tmax", {}).items()]))
        if (d / "cumulative.png").exists():
            parts.append(_file_figure(d / "cumulative.png", "cumulative"))
    return join(parts, "\n")


def _explained(d: Path, root: Path) -> Html:
    """An explained run: the makespan by cause, the derivatives, the
    tolerances (if `idlewave explain` found them) and the figures."""
    from idlewave.explain import CAUSES, WAITS, Explanation, increase, non_monotonic_note

    parts = []
    doc = read_json(d / "explain.json")
    x = Explanation(doc)
    total = x.makespan_s
    parts.append(h("<h3>{}: bound by {}</h3>", str(d.relative_to(root)) or ".", CAUSES[x.bound()]))
    parts.append(_table([{"cause": CAUSES[k], "seconds": v, "share": f"{v / total:.1%}" if total else "-"}
                         for k, v in x.causes_s().items() if v > 0]))
    parts.append(_table([{"parameter": p, "dT/dθ (ps per ps, or per ps/byte)": n} for p, n in x.derivatives().items()]))
    route = doc.get("route") or {}
    if route:
        longest = join((h("rank {} ({:.1%})", r["rank"], r["share"]) for r in route["longest_on"]), ", ")
        start = route.get("from_s", 0)
        partial = (h(" The route is partial: it starts at {:.6g} s (earlier stretches dropped to bound memory).", start)
                   if not isinstance(start, (int, float)) or start > 0 else Html(""))
        parts.append(h("<p>The critical path runs through {:,} stretches on {:,} ranks; longest on {} of the makespan.{}</p>",
                       route["segments"], route["ranks"], longest, partial))
    waits = doc.get("waits_total_s") or {}
    if waits:
        said = join((h("{} {:.6g} s", label, waits[k]) for k, label in WAITS.items() if k in waits), ", ")
        parts.append(h("<p>Time ranks sat idle, summed over ranks, by what ended the wait: {}.</p>", said))
    tol = doc.get("tolerance") or {}
    if tol:
        parts.append(_table([{"parameter": p, **{h("slows by {:.0%}", _number(f)): increase(p, v) if isinstance(v, (int, float)) else v
                                                 for f, v in t.items()}} for p, t in tol.items()]))
        note = non_monotonic_note(doc.get("non_monotonic_by") or {}, bool(doc.get("noisy")))
        if note:
            parts.append(h("<p>{}</p>", note))
    for f in sorted(d.glob("*.png")):
        if f.name in ("breakdown.png", "waits.png", "waits_by_iteration.png", "route.png") or f.name.startswith("t_of_"):
            parts.append(_file_figure(f, f.name))
    return join(parts, "\n")


def _number(v):
    """`v` as a float where it is one (a key such as "0.05"), else as it is (shown as text)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def _compare(d: Path) -> Html:
    frame = read_parquet(d / "compare.parquet")
    out = _table(frame.to_dicts())
    if (d / "compare.png").exists():
        out = join([out, _file_figure(d / "compare.png", "measured vs predicted")])
    return out


CSS = """body{font-family:system-ui,sans-serif;margin:0;color:#222;line-height:1.4}
main{max-width:1100px;margin:1em 2em 3em;min-width:0}
nav.toc{margin:1em 2em 0;padding:.4em 1em;border:1px solid #ddd;background:#fafafa;font-size:14px}
nav.toc ol{margin:.2em 0;padding-left:1.4em}nav.toc a{color:#3b0f70;text-decoration:none}nav.toc a:hover{text-decoration:underline}
nav.toc>b{display:block;margin:.2em 0}
@media (min-width:1200px){body{display:grid;grid-template-columns:270px minmax(0,1fr)}
nav.toc{position:sticky;top:0;align-self:start;max-height:100vh;overflow-y:auto;margin:0;border:0;border-right:1px solid #ddd;
box-sizing:border-box;padding:1em}main{margin:1em 2.5em 3em}}
.tw{overflow-x:auto;max-width:100%}table{border-collapse:collapse;margin:.5em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap}th{background:#eee}
td.long{white-space:normal;min-width:20em;text-align:left}
figure.fig{margin:.5em 0}figure.fig svg,figure.fig img{max-width:100%;height:auto;display:block}
h2{border-bottom:2px solid #3b0f70;margin-top:1.5em}h2,h3{scroll-margin-top:.5em}
details.points>summary{cursor:pointer;margin:.5em 0;color:#3b0f70}
@media print{body{display:block;font-size:11pt}nav.toc{display:none}main{margin:0;max-width:none}
figure,table,tr,img,svg{break-inside:avoid}h2,h3{break-after:avoid}.tw{overflow:visible}
details>summary{list-style:none}a[href]:not([href^="#"])::after{content:" (" attr(href) ")";font-size:90%}}"""

#: After loading: how many figures the page has and how many are drawn (an
#: image decoded, an inline SVG laid out), for a browser check; every
#: folded table is opened for printing.
CHECK = """<script>window.addEventListener('load',()=>{const f=[...document.querySelectorAll('figure.fig')];
document.body.dataset.figures=f.length;document.body.dataset.rendered=f.filter(e=>{const i=e.querySelector('img');
if(i)return i.complete&&i.naturalWidth>0;const g=e.querySelector('svg');return g&&g.getBoundingClientRect().width>0;}).length;
document.body.dataset.width=document.documentElement.scrollWidth;});
window.addEventListener('beforeprint',()=>document.querySelectorAll('details').forEach(d=>d.open=true));</script>"""


def _contents(sections: list[tuple[str, Html]]) -> tuple[Html, Html]:
    """The table of contents and the sections, each h2 and h3 with the id it links to."""
    entries, bodies = [], []
    for i, (title, body) in enumerate(sections, 1):
        subs: list[Html] = []

        def anchor(m, i=i, subs=subs) -> str:
            subs.append(Html(m[1]))  # the heading's content: made by h(), escaped already
            return f'<h3 id="s{i}-{len(subs)}">{m[1]}</h3>'

        body = Html(re.sub(r"<h3>(.*?)</h3>", anchor, body, flags=re.DOTALL))
        sub = join(h('<li><a href="#s{}-{}">{}</a></li>', i, j, t) for j, t in enumerate(subs, 1))
        entries.append(h('<li><a href="#s{}">{}</a>{}</li>', i, title, h("<ol>{}</ol>", sub) if subs else Html("")))
        bodies.append(h('<section><h2 id="s{}">{}</h2>{}</section>', i, title, body))
    return h('<nav class="toc" aria-label="Contents"><b>Contents</b><ol>{}</ol></nav>', join(entries)), join(bodies, "\n")


def _headline(root: Path) -> Html:
    """The tables the run's summary names as its headline (the demo's), as
    the terminal showed them."""
    try:
        tables = read_json(root / "summary.json").get("headline") or []
    except FileNotFoundError:
        return Html("")
    parts = []
    for t in tables:
        parts.append(h("<h3>{}</h3>", t["title"]))
        if t["columns"]:
            head = join(h("<th>{}</th>", c) for c in t["columns"])
            body = join(h("<tr>{}</tr>", join(h("<td>{}</td>", v) for v in row)) for row in t["rows"])
            parts.append(h('<div class="tw"><table><tr>{}</tr>{}</table></div>', head, body))
        parts.extend(h("<p>{}</p>", line) for line in t["notes"])
    return join(parts)


def build(root: str | Path, out: str | Path | None = None, title: str = "idlewave report",
          warn: Callable[[str], None] | None = None, figures: str = "svg") -> Path:
    """Writes the page for everything under `root` and returns its path.

    Figures are SVG (`figures="svg"`: those the report draws inline, those
    a command wrote as files from their SVG beside the PNG) or PNG
    (`figures="png"`); either way the page needs no other file.

    A result below `root` whose files cannot be read (truncated, not JSON,
    not what idlewave writes) is left out, listed at the top of the page and
    passed to `warn` (default: a "warning:" line on stderr): one damaged point
    of a large sweep should not cost the report of the others. A damaged
    result that is `root` itself (the report of one run or sweep), or nothing
    readable at all, is an UnreadableResult naming the file, and no page."""
    global _FORMAT
    if figures not in ("svg", "png"):
        raise ValueError(f"figures must be 'svg' or 'png', not {figures!r}")
    before, _FORMAT = _FORMAT, figures
    try:
        return _build(Path(root), out, title, warn)
    finally:
        _FORMAT = before


def _build(root: Path, out: str | Path | None, title: str, warn: Callable[[str], None] | None) -> Path:
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: {'not a directory' if root.exists() else 'no such directory'}")
    out = Path(out) if out else root / "report.html"
    left_out: list[str] = []

    def skip(d: Path, e: UnreadableResult) -> None:
        if d == root:
            raise e
        left_out.append(str(e))

    def section(d: Path, make: Callable[[Path], Html]) -> Html:
        """make(d), or "" with d left out when its files cannot be read."""
        try:
            return make(d)
        except UnreadableResult as e:
            skip(d, e)
        except (KeyError, TypeError, ValueError, AttributeError, pl.exceptions.PolarsError) as e:
            # files that parse but lack the keys or columns idlewave writes
            why = (str(e).strip().splitlines() or [""])[0]
            skip(d, UnreadableResult(f"{d}: its files are not the result idlewave writes ({type(e).__name__}: {why})"))
        return Html("")

    sweeps = sorted(p.parent for p in root.rglob("sweep.parquet"))
    earlier, points = _points(sweeps)
    # a sweep's points are its table's rows: not listed again as runs
    runs = sorted(p.parent for p in root.rglob("timers.parquet")
                  if (p.parent / "summary.json").exists() and p.parent not in earlier and p.parent not in points)
    for p in sorted(root.rglob("timers.parquet")):  # a run (or a point of a sweep without its table) whose summary is gone
        if not (p.parent / "summary.json").exists() and p.parent not in earlier and p.parent not in points:
            skip(p.parent, UnreadableResult(f"{p.parent / 'summary.json'}: missing: the run's other files are there, "
                                            "but not its summary"))
    regime_roots = set()
    for d in sorted({p.parent for p in root.rglob("regimes.parquet")}):
        try:
            parent = d.parent / "summary.json"
            regime_roots.add(d.parent if parent.exists() and "datasets" in read_json(parent) else d)
        except UnreadableResult as e:
            skip(d.parent, e)
    compares = sorted(p.parent for p in root.rglob("compare.parquet"))
    explained = sorted(p.parent for p in root.rglob("explain.json")
                       if (p.parent / "scenario.json").exists() and p.parent not in earlier)
    for d in sorted(regime_roots):  # their datasets first: in the colours the regimes command drew them in
        try:
            s = read_json(d / "summary.json")
            for name in (s["datasets"] if isinstance(s.get("datasets"), dict) else {}):
                series_colour(name)
        except (UnreadableResult, FileNotFoundError):
            pass  # said by the regimes section
    sections: list[tuple[str, Html]] = []
    headline = section(root, _headline)
    if headline:
        sections.append(("Headline", headline))
    sweep_parts = join(h("<h3>{}</h3>{}", str(d.relative_to(root)) or ".", part)
                       for d in sweeps if (part := section(d, lambda d: _sweep(d, skip))))
    if sweep_parts:
        sections.append(("Sweeps", sweep_parts))
    if runs and (runs_part := _runs(runs, root, skip)):
        sections.append(("Runs", runs_part))
    explained_parts = join(section(d, lambda d: _explained(d, root)) for d in explained)
    if explained_parts:
        sections.append(("What bounds this run", explained_parts))
    regime_parts = join(section(d, lambda d: _regimes(d, root)) for d in sorted(regime_roots))
    if regime_parts:
        sections.append(("Regimes", regime_parts))
    compare_parts = join(section(d, _compare) for d in compares)
    if compare_parts:
        sections.append(("Model vs simulation vs measurement", compare_parts))
    if not sections and left_out:
        raise UnreadableResult(f"{root}: no readable results: " + "; ".join(left_out))
    if not sections:
        raise FileNotFoundError(f"{root}: no results found (run idlewave simulate --out, sweep, regimes or measure first)")
    not_shown = Html("")
    if earlier:
        not_shown = h("<p>Not shown: {} point directories of earlier runs of a sweep (their scenario or its files "
                      "have changed since; the sweep's table no longer lists them).</p>", len(earlier))
    if left_out:
        sections.insert(0, ("Left out", h("<p>These results could not be read and are not in this report (a damaged "
                                          "result below the report's directory is left out; one that is the directory "
                                          "itself fails the report; a point of a sweep keeps its row in the sweep's "
                                          "table, as the sweep recorded it):</p><ul>{}</ul>",
                                          join(h("<li>{}</li>", m) for m in left_out))))
    toc, body = _contents(sections)
    page = h("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             "<meta name='viewport' content='width=device-width, initial-scale=1'><title>{title}</title>"
             "<style>{css}</style></head><body>{toc}<main><h1>{title}</h1><p>From {root}.</p>{body}{not_shown}</main>"
             "{check}</body></html>", title=title, css=Html(CSS), toc=toc, root=str(root.resolve()), body=body,
             not_shown=not_shown, check=Html(CHECK))
    write_text(out, page)
    for m in left_out:
        (warn or _warn)(f"left out of the report: {m}")
    return out


def _points(sweeps: list[Path]) -> tuple[set[Path], set[Path]]:
    """The point directories of each sweep that its table does not list
    (runs of an earlier base or input files, kept on disk but not part of
    the sweep), and those it lists (shown in its table, not as runs)."""
    earlier: set[Path] = set()
    listed: set[Path] = set()
    for d in sweeps:
        try:
            current = set(read_parquet(d / "sweep.parquet", columns=["id"])["id"].to_list())
        except UnreadableResult:
            continue  # the sweep's own section reports the damaged table
        if (d / "points").is_dir():
            for p in (d / "points").iterdir():
                if p.is_dir():
                    (listed if p.name in current else earlier).add(p)
    return earlier, listed


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)
