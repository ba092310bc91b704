"""How much a halo code slows down beside an alltoall-heavy job, by where
the two jobs' ranks are placed: runs examples/jobs_halo_alltoall.toml with
both jobs contiguous, interleaved and random, over five seeds (the seed
draws the random routes and the random nodes), and draws each job's
slowdown against the same job alone in jobs_placement.png.

    .venv/bin/python examples/jobs_placement.py [--out DIR] [--seeds N]
"""

from __future__ import annotations

import argparse
import copy
import tomllib
from pathlib import Path

import idlewave
from idlewave.results import pyplot, save_figure, series_colour

SCENARIO = Path(__file__).with_name("jobs_halo_alltoall.toml")
PLACEMENTS = ("contiguous", "interleaved", "random")


def slowdowns(seeds: int = 5, scenario: Path = SCENARIO) -> dict[str, dict[str, list[float]]]:
    """Per placement, per job: its slowdown for each seed 1 … seeds."""
    base = tomllib.loads(scenario.read_text())
    names = [j["name"] for j in base["jobs"]]
    out: dict[str, dict[str, list[float]]] = {}
    for placement in PLACEMENTS:
        out[placement] = {name: [] for name in names}
        for seed in range(1, seeds + 1):
            s = copy.deepcopy(base)
            s["seed"] = seed
            for job in s["jobs"]:
                job["placement"] = placement
            summary = idlewave.simulate(s).summary
            for name in names:
                out[placement][name].append(summary[f"job_{name}_slowdown"])
    return out


def figure(found: dict[str, dict[str, list[float]]], path: Path) -> Path:
    """Each job's slowdown by placement: a bar at the mean, a dot per seed."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.6), constrained_layout=True)
    names = list(next(iter(found.values())))
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        for i, placement in enumerate(found):
            values = found[placement][name]
            x = i + (k - (len(names) - 1) / 2) * width
            ax.bar(x, sum(values) / len(values), width * 0.9, color=series_colour(name),
                   label=name if i == 0 else None)
            ax.plot([x] * len(values), values, "o", color="black", markersize=3)
    ax.set_xticks(range(len(found)), list(found))
    ax.set_ylim(bottom=0.95)
    ax.axhline(1.0, color="grey", lw=0.6)
    ax.set_ylabel("slowdown against alone")
    seeds = len(next(iter(next(iter(found.values())).values())))
    ax.set_title(f"Two jobs on a 4:1 tapered fat tree (bars: mean of {seeds} seeds; dots: each seed)", fontsize="medium")
    ax.legend(frameon=False)
    return save_figure(fig, path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("."), help="where to write jobs_placement.png")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    found = slowdowns(args.seeds)
    for placement, jobs in found.items():
        print(f"{placement:12s}" + "  ".join(f"{name} {min(v):.3f}–{max(v):.3f}" for name, v in jobs.items()))
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"written: {figure(found, args.out / 'jobs_placement.png')}")


if __name__ == "__main__":
    main()
