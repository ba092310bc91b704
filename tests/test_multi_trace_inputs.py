"""Extrapolation from traces at several sizes (trace/multi.py, trace/loops.py,
`trace model|replay|export DIR…`) given what users give it: loops whose
counts grow, shrink, follow no rule or are 0 at one size, open requests
across iterations, traces of different programs, a directory twice, huge
counts, a replay into the same --out again. Synthetic 2-D halo traces, no
MPI: each is one line naming the place and the right exit code, or a right
result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from idlewave.trace import multi
from idlewave.trace.format import CODES, RECORD, write_rank
from idlewave.trace.multi import GridRule, ModelError, build, write_template

pytestmark = pytest.mark.unit

GRIDS = {9: [3, 3], 12: [4, 3], 16: [4, 4], 20: [5, 4], 25: [5, 5], 30: [6, 5]}


def halo(d: Path, dims: list[int], loops: list[int], open_requests: bool = False, extra: str | None = None) -> Path:
    """A halo exchange on a non-periodic MPI_Cart_create grid: per loop of
    `loops` (its iterations), 100 µs of computation, an Irecv and an Isend
    with each neighbour and their waits, then an allreduce; with
    `open_requests`, an iteration waits on the requests of the one before
    (the last ones after the loop); `extra`: one more call before
    MPI_Finalize (another program)."""
    d.mkdir(parents=True, exist_ok=True)
    size = int(np.prod(dims))
    for r in range(size):
        coords = [r // dims[1], r % dims[1]]
        peers = []
        for k in range(2):
            for s in (-1, 1):
                c = list(coords)
                c[k] += s
                if 0 <= c[k] < dims[k]:
                    peers.append(c[0] * dims[1] + c[1])
        recs: list[tuple] = []
        clock = [0.0]

        def rec(op: str, comm: int = 0, peer: int = -1, tag: int = 0, nbytes: int = 0, req: int = 0,
                gap: float = 1e-7, recs: list[tuple] = recs, clock: list[float] = clock) -> None:
            t = clock[0] + gap
            recs.append((CODES[op], 0, comm, peer, tag, nbytes, req, t, t + 1e-7))
            clock[0] = t + 1e-7

        rec("init")
        payloads = {len(recs): [2, *dims, 0, 0]}
        rec("comm_new", 0, 1, 7)
        for m in range(size):
            recs.append((CODES["comm_member"], 0, 1, m, m, 0, 0, clock[0], clock[0]))
        req = 0
        for loop, iterations in enumerate(loops):
            pending: list[int] = []
            for _ in range(iterations):
                posted = []
                for i, q in enumerate(peers):
                    req += 1
                    rec("irecv", 1, q, loop, 8192, req, gap=1e-4 if i == 0 else 1e-7)
                    req += 1
                    rec("isend", 1, q, loop, 8192, req)
                    posted += [req - 1, req]
                waited, pending = (pending, posted) if open_requests else (posted, [])
                for w in waited:
                    rec("wait", 1, -1, 0, 0, w)
            for w in pending:
                rec("wait", 1, -1, 0, 0, w)
            rec("allreduce", 1, -1, 0, 8)
        if extra:
            rec(extra)
        rec("finalize")
        write_rank(d / f"rank-{r}.iwt", r, size, np.array(recs, dtype=RECORD), payloads, library="synthetic")
    return d


def traces(root: Path, counts: dict[int, list[int]], **kw) -> list[Path]:
    return [halo(root / str(p), GRIDS[p], c, **kw) for p, c in counts.items()]


def one_line(p) -> str:
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr, p.stderr
    text = " ".join(p.stderr.split())
    assert text.count("error:") == 1, p.stderr
    return text


def test_a_replay_into_the_same_out_again_replaces_its_result(tmp_path, cli):
    """The fitted template moved into --out is listed as idlewave's: the same
    command again was refused ('fitted-trace, which idlewave did not write
    there')."""
    dirs = traces(tmp_path, {9: [5], 16: [6], 25: [7]})
    for _ in range(2):
        p = cli("trace", "replay", *dirs, "--scale-to", "36", "--out", tmp_path / "r", "-q", check=False)
        assert p.returncode == 0, p.stderr
    assert (tmp_path / "r" / "fitted-trace" / "rank-0.iwt").is_file()


def test_a_file_in_place_of_the_out_directory_is_a_failed_write(tmp_path, cli):
    """The fitted template's write that fails is exit 1 and `OUT: cannot
    write: REASON`, as for one trace (it was exit 2 and Python's errno text)."""
    dirs = traces(tmp_path, {9: [5], 16: [6], 25: [7]})
    (tmp_path / "file").write_text("x")
    p = cli("trace", "replay", *dirs, "--scale-to", "36", "--out", tmp_path / "file" / "r", check=False)
    assert p.returncode == 1
    assert f"{tmp_path / 'file' / 'r'}: cannot write: Not a directory" in one_line(p)


def test_loop_counts_that_would_make_the_template_too_large_are_refused_before_allocating(tmp_path, cli, monkeypatch):
    """81, 256, 625 iterations (p²) at 9, 16, 25 ranks are 10⁸ at 10,000: the
    expanded template is refused before it is made (it ended in a
    MemoryError's traceback), under the memory limit; a target that fits is
    written."""
    dirs = traces(tmp_path, {9: [81], 16: [256], 25: [625]})
    model = build(dirs)
    assert model.loops[0].rule.describe() == "1·p^(2)"
    monkeypatch.setattr(multi, "_memory_limit", lambda: (100 << 20, "80% of available memory"))
    with pytest.raises(ModelError, match=r"10000 ranks: the loops' rules give 100,000,000 iterations there, so rank \d+ "
                       r"of the fitted template would hold 1,600,000,\d+ records"):
        write_template(model, 10_000, tmp_path / "t")
    assert not list(tmp_path.glob("t*"))  # nothing left behind
    write_template(model, 36, tmp_path / "t")  # 1,296 iterations fit
    p = cli("trace", "replay", *dirs, "--scale-to", "10000", "--out", tmp_path / "r", check=False)
    assert p.returncode == 2 and "more than 80% of available memory" in one_line(p)
    p = cli("trace", "export", *dirs, "--scale-to", "4000000000", "-o", tmp_path / "x.goal", check=False)
    assert p.returncode == 2 and "fitted template would hold" in one_line(p)
    assert not (tmp_path / "x.goal").exists() and not (tmp_path / "r").exists()


@pytest.mark.parametrize("counts,target,iterations", [
    # 1, 2, 3 iterations on 3×3, 4×4, 5×5 are n0 − 2 (or n1 − 2); 0.12·n0·n1 rounds to them too, not exactly:
    # it gave 8 on 8×8 and the extrapolation was refused as undecided
    ({9: [1], 16: [2], 25: [3]}, 64, 6),
    # 4×3, 5×4, 6×5: n0 − 2 or n1 − 1 (0.8·n1 rounds to them); at 7×6 (42 ranks) both give 5
    ({12: [2], 20: [3], 30: [4]}, 42, 5),
])
def test_loop_counts_follow_grid_rules_that_give_them_exactly(tmp_path, cli, counts, target, iterations):
    dirs = traces(tmp_path, counts)
    model = build(dirs)
    (loop,) = model.loops
    assert isinstance(loop.rule, GridRule) and loop.exact
    for form in loop.rule.forms:
        assert [form.at(d) for d in model.dims] == pytest.approx(list(loop.counts), rel=1e-9), form.describe()
    p = cli("trace", "replay", *dirs, "--scale-to", target, "--out", tmp_path / "r", "-q", check=False)
    assert p.returncode == 0, p.stderr
    template = write_template(model, target, tmp_path / "t")
    ops = multi.read(template)[0].records["op"]
    assert int((ops == CODES["allreduce"]).sum()) == 1
    assert int((ops == CODES["isend"]).sum()) == 2 * iterations  # rank 0, a corner: two neighbours


def test_the_same_directory_twice_or_two_of_one_size_are_named(tmp_path, cli):
    nine, sixteen, twenty_five = traces(tmp_path / "a", {9: [5], 16: [6], 25: [7]})
    other = halo(tmp_path / "b", [4, 4], [6])
    p = cli("trace", "model", nine, sixteen, nine, twenty_five, check=False)
    assert p.returncode == 2 and f"{nine}: given twice" in one_line(p)
    p = cli("trace", "replay", nine, sixteen, other, twenty_five, "--scale-to", "36", "--out", tmp_path / "r", check=False)
    assert p.returncode == 2 and f"{sixteen} and {other} are both traces of 16 ranks" in one_line(p)


def test_a_refusal_after_a_trace_is_left_out_says_so(tmp_path, cli):
    """3×1 is left out; the loop's counts at the two others are then too few:
    'a third trace is needed' said with why the third given is not used."""
    dirs = [halo(tmp_path / "3", [3, 1], [5]), *traces(tmp_path, {16: [6], 25: [7]})]
    p = cli("trace", "model", *dirs, check=False)
    text = one_line(p)
    assert p.returncode == 2 and "a third trace is needed" in text
    assert "(the 3-rank trace (3×1) is left out: its grid 3×1" in text


def test_programs_that_differ_are_refused_at_the_call_that_differs(tmp_path, cli):
    """A barrier only the 25-rank trace makes, after a loop that runs 5, 6
    and 7 times: the refusal named the loop's first extra iteration (call 42,
    irecv against allreduce), not the barrier."""
    dirs = [*traces(tmp_path, {9: [5], 16: [6]}), halo(tmp_path / "25", [5, 5], [7], extra="barrier")]
    p = cli("trace", "model", *dirs, check=False)
    text = one_line(p)
    assert p.returncode == 2
    assert ("rank 0 of the 25-rank trace and rank 0 of the 9-rank trace (the same class) differ at calls 59 and 43 "
            "respectively: barrier against finalize") in text


@pytest.mark.parametrize("counts", [{9: [0], 16: [2], 25: [4]}, {9: [3], 16: [0], 25: [4]}, {9: [3], 16: [4], 25: [0]}])
def test_a_loop_that_one_trace_never_enters_is_refused_saying_so(tmp_path, cli, counts):
    p = cli("trace", "model", *traces(tmp_path, counts), check=False)
    assert p.returncode == 2
    assert "never enters, and a loop must run at least once at every traced size" in one_line(p)


@pytest.mark.parametrize("counts", [{9: [5], 16: [6], 25: [7]}, {9: [7], 16: [6], 25: [5]}])
def test_a_loop_that_completes_the_requests_of_the_iteration_before_is_extrapolated(tmp_path, cli, counts):
    """An iteration that waits on the requests the one before posted (a
    receive posted ahead), repeated (8 iterations at 36 ranks) or cut short
    (4): each iteration completes its neighbour's, under ids of their own.
    The fitted template repeated the traced ids, and the replay was refused
    (a request posted while still open); it now moves what the same loop
    without the carried requests does."""
    moved = []
    for carried in (True, False):
        dirs = traces(tmp_path / str(carried), counts, open_requests=carried)
        p = cli("trace", "replay", *dirs, "--scale-to", "36", "--out", tmp_path / f"r-{carried}", "--json", check=False)
        assert p.returncode == 0, one_line(p)
        doc = json.loads(p.stdout)
        moved.append((doc["messages"], doc["bytes"], doc["events"]))
    assert moved[0] == moved[1], moved
    # the halo's 8 KiB messages, 120 per iteration on a non-periodic 6×6 grid, and the allreduce's of 8 B
    iterations = 8 if counts[25] == [7] else 4
    messages, nbytes, _ = moved[0]
    assert nbytes == iterations * 120 * 8192 + (messages - iterations * 120) * 8, (iterations, moved)


@pytest.mark.parametrize("counts,args,expected", [
    # what already worked: kept working
    ({9: [7], 16: [6], 25: [5]}, ["--scale-to", "100"], "its rule 10 − 1·n0 (or 1 other rule of the grid that fit) gives "
                                                        "0 iterations at 100 ranks"),
    ({9: [3], 16: [9], 25: [4]}, ["--scale-to", "36"], "runs 3 at 9, 9 at 16, 4 at 25 ranks: no rule in p or in the "
                                                       "grid's extents gives that exactly"),
    ({9: [5], 16: [6], 25: [7]}, ["--scale-to", "16"], "cannot extrapolate 25 traced ranks down to 16"),
    ({9: [5], 16: [6], 25: [7]}, ["--grid", "6x6x1"], "the traced grid is 2-dimensional (5×5), the target 6×6×1 is not"),
    ({9: [3, 5], 16: [4, 6], 25: [5, 7]}, ["--scale-to", "36", "--weak"], "--weak replays the largest trace alone"),
])
def test_targets_and_counts_the_model_cannot_take_are_one_line(tmp_path, cli, counts, args, expected):
    p = cli("trace", "replay", *traces(tmp_path, counts), *args, "--out", tmp_path / "r", check=False)
    assert p.returncode == 2 and expected in one_line(p)


def test_a_damaged_rank_file_in_one_directory_is_named(tmp_path, cli):
    dirs = traces(tmp_path, {9: [5], 16: [6], 25: [7]})
    f = dirs[1] / "rank-5.iwt"
    f.write_bytes(f.read_bytes()[:1000])
    for args in (["model"], ["replay", "--scale-to", "36", "--out", tmp_path / "r"],
                 ["export", "--scale-to", "36", "-o", tmp_path / "x.goal"]):
        p = cli("trace", args[0], *dirs, *args[1:], check=False)
        assert p.returncode == 2 and f"{f}: truncated at record" in one_line(p)
