"""Extrapolation of real traced codes to larger process grids (issue 16):
a C halo-exchange stencil on a 2-D and a 3-D grid, periodic or not, with
MPI_Cart_create or neighbours computed by hand, traced at 3 ranks per
dimension and extrapolated must give exactly the messages of a real trace
at the larger size, and the same replayed makespan."""

import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import compile_c, traced
from idlewave.trace import export_goal, replay

pytestmark = [pytest.mark.integration, pytest.mark.mpi]

STENCIL = (Path(__file__).parent / "programs" / "stencil.c").read_text()


@pytest.fixture(scope="module")
def stencil(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stencil")
    return compile_c(tmp, "stencil", STENCIL)


def messages(goal: Path) -> dict[int, Counter]:
    """Per rank: how many (send|recv, peer, bytes) messages its GOAL schedule has."""
    ranks: dict[int, Counter] = {}
    current = -1
    for line in goal.read_text().splitlines():
        if m := re.match(r"rank (\d+) \{", line):
            current = int(m.group(1))
            ranks[current] = Counter()
        elif m := re.match(r"\s*\w+: (send|recv) (\d+)b (?:to|from) (\d+)", line):
            ranks[current][(m.group(1), int(m.group(3)), int(m.group(2)))] += 1
    return ranks


# (ndims, periodic, by hand, traced ranks, real ranks)
CASES = [
    (2, 0, 0, 9, 36),   # MPI_Cart_create, PROC_NULL edges
    (2, 1, 1, 9, 36),   # periodic, neighbours computed by hand, rows by MPI_Comm_split
    (3, 0, 0, 27, 64),  # 3×3×3 → 4×4×4: interior ranks and PROC_NULL faces in 3-D
    pytest.param(3, 0, 0, 27, 216, marks=pytest.mark.slow),  # 3×3×3 → 6×6×6 (216 oversubscribed ranks take ~40 s)
    (3, 1, 1, 27, 64),  # periodic 3-D by hand
]


@pytest.mark.parametrize("nd,periodic,by_hand,small,big", CASES)
def test_extrapolated_grid_has_the_messages_and_makespan_of_a_real_trace(lib, stencil, tmp_path, nd, periodic, by_hand, small, big):
    args = (stencil, nd, periodic, by_hand)
    template = traced(lib, tmp_path / "small", small, *args)
    real = traced(lib, tmp_path / "big", big, *args, timeout=300)
    export_goal(template, tmp_path / "x.goal", scale_to=big)
    export_goal(real, tmp_path / "r.goal")
    x, r = messages(tmp_path / "x.goal"), messages(tmp_path / "r.goal")
    assert len(x) == len(r) == big
    assert sum(sum(c.values()) for c in r.values()) > 20 * big  # the halos, allreduces and bcasts are there
    differ = [q for q in r if x[q] != r[q]]
    assert not differ, f"rank {differ[0]}: extrapolated has {x[differ[0]] - r[differ[0]]}, real has {r[differ[0]] - x[differ[0]]}"
    # without the traced computation (oversubscribed cores inflate it at random) the replays agree within 5%
    a = replay(template, scale_to=big, compute_scale=0.0)
    b = replay(real, compute_scale=0.0)
    assert a.summary["makespan_s"] == pytest.approx(b.summary["makespan_s"], rel=0.05)
    # the replay counts the real trace's messages and bytes; a class per template rank holds every rank once
    assert (a.summary["messages"], a.summary["bytes"]) == (b.summary["messages"], b.summary["bytes"])
    assert len(a.summary["classes"]) == small and sum(c["ranks"] for c in a.summary["classes"]) == big
    assert len(b.summary["classes"]) == big and all(c["ranks"] == 1 for c in b.summary["classes"])
    # an extrapolation has no traced time in MPI to hold the replay's against (it once said "inf s")
    assert not [w for w in a.summary["warnings"] if "inside MPI" in w]
    kind = "(periodic)" if periodic else "(non-periodic)"
    assert a.summary["extrapolation"].startswith("Cartesian grid 3×3") and kind in a.summary["extrapolation"]
    # the smallest periodic template cannot see exchanges 2 ranks away, and says so
    assert ("an exchange 2 ranks away" in a.summary["extrapolation"]) == bool(periodic)


def test_strong_scaling_shrinks_halos_with_the_surface_and_compute_with_the_volume(lib, stencil, tmp_path):
    template = traced(lib, tmp_path / "t", 9, stencil, 2, 0, 0)
    export_goal(template, tmp_path / "w.goal", scale_to=36)
    export_goal(template, tmp_path / "s.goal", scale_to=36, strong=True)
    weak, strong = messages(tmp_path / "w.goal"), messages(tmp_path / "s.goal")
    # interior rank 14 = (2,2): its faces along dimension 0 carry 800 B, along 1 1600 B (per the program)
    assert weak[14][("send", 8, 800)] == 3 and weak[14][("send", 15, 1600)] == 3
    # 3×3 → 6×6: each face keeps half its length
    assert strong[14][("send", 8, 400)] == 3 and strong[14][("send", 15, 800)] == 3
    w = replay(template, scale_to=36)
    s = replay(template, scale_to=36, strong=True)
    calc = lambda r: sum(r.trace_report["calc_s"])  # noqa: E731
    assert calc(s) == pytest.approx(calc(w) / 4, rel=1e-3)


BAD_GRID = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    int dims[2] = {3, 3}, per[2] = {0, 0}; MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &cart);
    double x = 0;
    /* rank 3 = (1,0) also sends to the far corner (2,2): no nearest-neighbour rule places that */
    if (r == 3) MPI_Send(&x, 1, MPI_DOUBLE, 8, 1, MPI_COMM_WORLD);
    if (r == 8) MPI_Recv(&x, 1, MPI_DOUBLE, 3, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
"""


def test_codes_that_fit_no_grid_are_refused_naming_rank_and_call(lib, tmp_path, cli):
    d = traced(lib, tmp_path / "t", 9, compile_c(tmp_path, "bad", BAD_GRID))
    p = cli("trace", "replay", d, "--scale-to", "36", "--out", tmp_path / "o", check=False)
    assert p.returncode != 0
    msg = " ".join(p.stderr.split())
    assert "rank-3.iwt record" in msg and "(send)" in msg and "2 ranks away along dimension 1" in msg, msg
    assert "Traceback" not in p.stderr


def test_grid_options_on_the_command_line(lib, stencil, tmp_path, cli):
    template = traced(lib, tmp_path / "t", 9, stencil, 2, 0, 0)
    p = cli("trace", "replay", template, "--grid", "4x8", "--out", tmp_path / "o")
    assert "replayed 32 ranks" in p.stdout and "3×3 (non-periodic) → 4×8, weak scaling" in p.stdout
    for args, says in [(["--grid", "6y6"], "expected 1 to 3 positive sizes"),
                       (["--grid", "6x6", "--scale-to", "30"], "--scale-to 30 disagrees with --grid 6x6 (36 ranks)"),
                       (["--grid", "6x6x6"], "the traced grid is 2-dimensional"),
                       (["--scale-to", "37"], "needs at least 3 ranks along dimension 1")]:
        p = cli("trace", "replay", template, *args, "--out", tmp_path / "x", check=False)
        assert p.returncode != 0 and says in " ".join(p.stderr.split()), (args, p.stderr)
        assert "Traceback" not in p.stderr
