"""The Krylov and 2-D grid studies on shared links (a tapered fat tree whose
links are as fast as a NIC, idlewave.studies.shared_links), each against the
same run on the same tree with links not shared (model "none"): what sharing
changes, and what it does not (docs/reproductions.md)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from idlewave import simulate
from idlewave.cli import app
from idlewave.studies.reproduce import krylov_allreduce
from idlewave.studies.reproduce_grid import CHUNK, FRONTIER_NET, RINGS, hpl_total
from idlewave.studies.shared_links import SharedLinks

pytestmark = [pytest.mark.integration, pytest.mark.study]

SHARED, NOT_SHARED = SharedLinks(taper=4.0), SharedLinks(taper=4.0, model="none")


def test_fig2_sharing_slows_both_allreduces_alike_so_nonblocking_stays_faster():
    """Krylov Fig. 2 at 1 MiB on 64 ranks: the 4:1 tree's shared links make
    both allreduces over twice as slow, and the nonblocking one still saves
    the same part of its 1 ms of overlap (both run the same algorithm, whose
    flows share the same links): its lead shrinks relative to the longer
    iteration, but it does not fall behind as in the paper."""
    t = {(links.model, mode): krylov_allreduce(1 << 20, mode, iterations=2, links=links)
         for links in (SHARED, NOT_SHARED) for mode in ("blocking", "nonblocking")}
    assert t["flow", "blocking"] > 2 * t["none", "blocking"], t
    gain = {m: t[m, "blocking"] - t[m, "nonblocking"] for m in ("flow", "none")}
    assert 0.5e-3 < gain["none"] < 1e-3, gain
    assert gain["flow"] == pytest.approx(gain["none"], abs=5e-6), gain
    ratio = {m: t[m, "nonblocking"] / t[m, "blocking"] for m in ("flow", "none")}
    assert ratio["none"] < ratio["flow"] < 1, ratio


def _bcast(alg: str, ports: int, links: SharedLinks) -> float:
    w = {"kind": "collective", "collective": "bcast", "algorithm": alg, "message_bytes": 8 * CHUNK,
         "chunk_bytes": CHUNK, "ranks": 16, "iterations": 1}
    net = links.network(dict(FRONTIER_NET, nic_ports=ports))
    return simulate({"network": net, "record": {"timers": False}, "workload": w}).summary["makespan_s"]


def test_with_shared_links_nic_ports_no_longer_speed_the_modified_two_ring():
    """The modified 2-ring's root sends each chunk three times, one rendezvous
    send after the other. Without sharing a send completes once the receiver
    has matched it, so three ports overlap the three transfers; as a flow it
    completes after its last byte, and the ports change nothing."""
    assert _bcast("two_ring_modified", 3, NOT_SHARED) < 0.6 * _bcast("two_ring_modified", 1, NOT_SHARED)
    assert _bcast("two_ring_modified", 3, SHARED) == _bcast("two_ring_modified", 1, SHARED)


def test_fig10_with_shared_links_the_chunked_one_ring_is_the_fastest_ring_with_three_ports_too():
    """HPL-MxP (Fig. 10) with 3 NIC ports: the 2-ring is the fastest of the
    ring family on the tree with links not shared, the 1-ring with them shared."""
    def fastest(links: SharedLinks) -> str:
        return min(RINGS, key=lambda a: hpl_total(a, CHUNK, 3, links))

    assert fastest(NOT_SHARED) == "two_ring"
    assert fastest(SHARED) == "ring"


@pytest.mark.parametrize("args, words", [
    (["noise-apps", "--taper", "2"], "noise-apps does not take --taper"),
    (["krylov-kernels", "--taper", "0.5"], "--taper: a finite ratio of at least 1"),
])
def test_reproduce_refuses_a_taper_it_cannot_use(args, words, tmp_path):
    r = CliRunner().invoke(app, ["reproduce", *args, "--out", str(tmp_path)])
    assert r.exit_code == 2 and words in r.output, r.output
