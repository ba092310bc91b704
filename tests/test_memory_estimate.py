"""The memory estimate a run is checked against before it allocates: within
15% of the peak the run then measures, for every workload kind; a run above
the limit refused cleanly; `simulate --dry-run` shows it without running.

Each workload runs at 256 Ki ranks with few iterations (the slowest at
64 Ki); IDLEWAVE_SLOW=1 runs them all at 1 Mi ranks as well."""

from __future__ import annotations

import json
import os

import pytest

import idlewave
from idlewave import _engine
from idlewave.simulation import estimate_memory

pytestmark = pytest.mark.integration

TOLERANCE = 0.15
SLOW = os.environ.get("IDLEWAVE_SLOW") == "1"


def cases(n: int) -> dict[str, dict]:
    """A scenario per workload kind (and the modes that change what a rank
    keeps in flight) at about `n` ranks."""
    grid3 = [128, 128, n // 16384]  # 3-D process grids of n ranks
    return {
        "bsp": {"kind": "bsp", "ranks": n, "iterations": 3},
        "bsp_two_distances": {"kind": "bsp", "ranks": n, "iterations": 2, "distances": [1, 2], "barrier": True},
        "bsp_large_messages": {"kind": "bsp", "ranks": n, "iterations": 2, "distances": [1, 2], "message_bytes": 1024},
        "stream_triad": {"kind": "stream_triad", "ranks": n, "iterations": 3},
        "stream_triad_d2": {"kind": "stream_triad", "ranks": n, "iterations": 2, "max_distance": 2},
        "fem_matvec": {"kind": "fem_matvec", "ranks": n, "iterations": 1},
        "fem_matvec_mpi_test": {"kind": "fem_matvec", "ranks": n, "iterations": 1, "hiding": "mpi_test"},
        "chebfd": {"kind": "chebfd", "ranks": n, "subspace": 4, "degree": 2},
        "chebfd_pipeline": {"kind": "chebfd", "ranks": n, "subspace": 4, "degree": 2, "mode": "pipeline"},
        "collective": {"kind": "collective", "ranks": n, "iterations": 3},
        "collective_nonblocking": {"kind": "collective", "ranks": n, "iterations": 2, "mode": "nonblocking"},
        "skeleton": {"kind": "skeleton", "ranks": n // 4, "iterations": 1, "beta": 0.5},
        "app": {"kind": "app", "ranks": n // 4, "iterations": 1},
        "spmv": {"kind": "spmv", "ranks": n // 4, "iterations": 1, "rows": 4 * n, "bandwidth": 40},
        "krylov": {"kind": "krylov", "iterations": 1, "grid": [128, 128, max(n // 65536, 1)]},
        "krylov_kernel_halo": {"kind": "krylov_kernel", "iterations": 1, "grid": grid3, "kernel": "halo",
                               "mode": "nonblocking"},
        "krylov_kernel_allreduce": {"kind": "krylov_kernel", "iterations": 1, "grid": grid3},
        "dense2d": {"kind": "dense2d", "grid": [1024, n // 1024], "blocks": 2, "block": 64},
    }


def measure(workload: dict, timers: bool = False) -> tuple[int, int, int]:
    r = idlewave.simulate({"workload": workload, "record": {"timers": timers}})
    s = r.summary
    return s["ranks"], s["estimated_memory_bytes"], s["peak_memory_bytes"]


def check(name: str, workload: dict, timers: bool = False) -> None:
    ranks, estimated, peak = measure(workload, timers)
    off = (estimated - peak) / peak
    assert abs(off) <= TOLERANCE, (f"{name}: estimated {estimated / ranks:.0f} bytes per rank, measured "
                                   f"{peak / ranks:.0f} ({off:+.0%}) at {ranks:,} ranks")


@pytest.mark.parametrize("name", list(cases(1 << 18)))
def test_the_estimate_is_within_15_percent_of_the_measured_peak(name):
    check(name, cases(1 << 18)[name])


@pytest.mark.parametrize("name", ["bsp", "fem_matvec", "chebfd"])
def test_the_estimate_holds_with_timers_recorded(name):
    check(name, cases(1 << 18)[name], timers=True)


@pytest.mark.slow
@pytest.mark.skipif(not SLOW, reason="1 Mi ranks per workload: IDLEWAVE_SLOW=1")
@pytest.mark.parametrize("name", list(cases(1 << 20)))
def test_the_estimate_holds_at_a_million_ranks(name):
    check(name, cases(1 << 20)[name])


def flow_torus(distance: int, message_bytes: int = 65536) -> dict:
    """A halo exchange on shared links of a 16×16×16 torus (one rank per node)."""
    return {"network": {"G_s_per_byte": 1e-10, "topology": {"kind": "torus", "dims": [16, 16, 16]},
                        "links": {"model": "flow", "bandwidth_bytes_per_s": 1e10}},
            "workload": {"kind": "bsp", "ranks": 4096, "iterations": 1, "distances": [distance],
                         "message_bytes": message_bytes},
            "record": {"timers": False}}


def test_the_estimate_of_flows_on_long_routes_is_within_15_percent():
    # each rank's two flows cross the torus (8 hops in each dimension) and share
    # their links: their state grows with their routes (it was counted for
    # routes of 16 links at most, and the run took twice its estimate)
    s = idlewave.simulate(flow_torus(8 * 256 + 8 * 16 + 8)).summary
    off = (s["estimated_memory_bytes"] - s["peak_memory_bytes"]) / s["peak_memory_bytes"]
    assert abs(off) <= TOLERANCE, f"estimated {off:+.0%} of the measured peak"


def test_the_estimate_of_flows_between_neighbours_stays_below_twice_the_peak():
    # what the long routes' state adds is not counted for routes of a hop
    for message_bytes in (8, 1024, 65536):
        s = idlewave.simulate(flow_torus(1, message_bytes)).summary
        ratio = s["estimated_memory_bytes"] / s["peak_memory_bytes"]
        assert 1 - TOLERANCE <= ratio < 2, f"{message_bytes} B: estimated {ratio:.2f}× the measured peak"


def test_the_estimate_of_a_trace_replay_is_within_15_percent(tmp_path):
    _engine.write_synthetic_trace(str(tmp_path), 8, 20)
    r = idlewave.simulate({"workload": {"kind": "trace", "dir": str(tmp_path), "scale_to": 1 << 16}})
    s = r.summary
    assert abs(s["estimated_memory_bytes"] - s["peak_memory_bytes"]) / s["peak_memory_bytes"] <= TOLERANCE


def test_the_estimate_does_not_change_results():
    scn = {"workload": {"kind": "bsp", "ranks": 64, "iterations": 5}}
    a = idlewave.simulate(scn)
    assert a.summary["estimated_memory_bytes"] == estimate_memory(scn)["estimated_memory_bytes"]
    assert a.summary["estimated_memory_bytes"] >= a.summary["peak_memory_bytes"] * (1 - TOLERANCE)


def huge_chebfd(tmp_path, limit: int):
    scn = tmp_path / "chebfd.toml"
    scn.write_text(f'[limits]\nmax_memory_bytes = {limit}\n[workload]\nkind = "chebfd"\nranks = 1000000\n'
                   'degree = 2\n[record]\ntimers = false\n')
    return scn


def test_a_run_above_the_limit_is_refused_cleanly_before_it_allocates(cli, tmp_path):
    # a million ranks need about 250 MB: refused at 100 MB, as at the machine's memory
    p = cli("simulate", huge_chebfd(tmp_path, 100_000_000), "--quiet", check=False)
    assert p.returncode == 2, p.stderr
    assert "this run needs about" in p.stderr and "more than the configured max_memory_bytes" in p.stderr
    assert "Traceback" not in p.stderr and "memory allocation" not in p.stderr


def test_a_run_within_the_limit_measures_below_it(tmp_path):
    # the same run with room for its estimate runs, and stays within it
    scn = {"limits": {"max_memory_bytes": 400_000_000},
           "workload": {"kind": "chebfd", "ranks": 1_000_000, "subspace": 4, "degree": 2}, "record": {"timers": False}}
    s = idlewave.simulate(scn).summary
    assert s["peak_memory_bytes"] <= 400_000_000


def test_dry_run_prints_the_estimate_and_simulates_nothing(cli, tmp_path):
    scn = huge_chebfd(tmp_path, 100_000_000)
    out = tmp_path / "out"
    p = cli("simulate", scn, "--dry-run", "--out", out)
    assert p.returncode == 0
    assert "1,000,000" in p.stdout and "bytes per rank" in p.stdout and "refused" in p.stdout
    assert "more than the configured max_memory_bytes" in " ".join(p.stderr.split())
    assert not out.exists()
    e = json.loads(cli("simulate", scn, "--dry-run", "--json").stdout)
    assert e["ranks"] == 1_000_000 and e["max_memory_bytes"] == 100_000_000
    assert e["limit"] == "the configured max_memory_bytes"
    assert e["estimated_memory_bytes"] > 100_000_000 and e["refused"].startswith("this run needs about")
    assert e["bytes_per_rank"] == e["estimated_memory_bytes"] / 1_000_000


def test_dry_run_of_a_run_that_fits(cli, tmp_path):
    scn = tmp_path / "bsp.toml"
    scn.write_text('[workload]\nkind = "bsp"\nranks = 1000\niterations = 10\n')
    e = json.loads(cli("simulate", scn, "--dry-run", "--json").stdout)
    assert e["refused"] is None and e["ranks"] == 1000
    s = json.loads(cli("simulate", scn, "--json", "--quiet").stdout)
    assert s["estimated_memory_bytes"] == e["estimated_memory_bytes"]
    assert "would run" in cli("simulate", scn, "--dry-run").stdout


def test_summary_json_holds_the_estimate_beside_the_peak(tmp_path):
    r = idlewave.simulate({"workload": {"kind": "bsp", "ranks": 100, "iterations": 3}})
    r.write(tmp_path / "r")
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["estimated_memory_bytes"] > 0 and s["peak_memory_bytes"] > 0
