"""Extrapolation from traces at several sizes (trace/multi.py): a real 2-D
halo code traced at 9, 16 and 25 ranks, extrapolated to 36 and held against
its real 36-rank trace; the normal forms recovered from exact data; a program
whose structure changes with its size refused."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import compile_c
from idlewave.measure import MPI_ENV, mpiexec
from idlewave.trace import replay
from idlewave.trace.multi import ModelError, build, fit, write_template
from test_trace_coverage import DEB, debian_env

pytestmark = [pytest.mark.integration, pytest.mark.mpi]

PROGRAM = (Path(__file__).parent / "programs" / "stencil_scaling.c").read_text()
SIZES, TARGET = (9, 16, 25), 36


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return compile_c(tmp_path_factory.mktemp("scaling"), "stencil_scaling", PROGRAM)


def trace(lib: Path, program: Path, out: Path, ranks: int, *args: str) -> Path:
    """The program on `ranks` oversubscribed ranks, its computation timed by
    thread CPU time (the wall clock would count the other ranks' turns)."""
    env = {**os.environ, **MPI_ENV, "IDLEWAVE_TRACE_DIR": str(out), "IDLEWAVE_TRACE_CLOCK": "cpu"}
    p = subprocess.run([mpiexec(), "--oversubscribe", "--bind-to", "none", "-n", str(ranks), "-x", f"LD_PRELOAD={lib}",
                        "-x", "IDLEWAVE_TRACE_DIR", "-x", "IDLEWAVE_TRACE_CLOCK", str(program), *args], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return out


class SteadyTraces(list):
    """The traces of `steady_traces`, with how far their steadiest set's
    furthest rank was beyond the tolerance (`excess`: 0 for a steady set)."""

    excess = 0.0

    def bound(self, rel: float) -> float:
        """A makespan comparison's relative bound `rel`, widened by what the
        machine moved beyond the tolerance: two traces whose ranks are each
        off by up to that much may differ by twice it before any model error."""
        return rel + 2 * self.excess


def steady_traces(lib: Path, program: Path, root: Path, sizes: tuple[int, ...], mode: str, *args: str,
                  tolerance: float = 0.10, iterations=lambda p: 1) -> SteadyTraces:
    """Traces at `sizes` taken in one state of the machine. This VM switches
    speed (by 10% to 3x) for 5-60 s at a time, which moves even CPU time
    (docs/validation.md). By construction a rank's computation is the same
    at every size in weak scaling, and its computation times p in strong
    scaling; a trace where a rank's differs from the set's median by more
    than `tolerance` straddled a switch or met other load, and is taken
    again, the one furthest off first (on a quiet machine all are within 3%;
    the fit takes the median of a class of ranks, and a class of one rank is
    that rank). One trace at a time, not the whole set: a set of four takes
    longer than this VM keeps one speed. After 12 tries the steadiest set is
    tested, with a warning, if it is within twice the tolerance: the test's
    own bounds then decide; further off, the machine cannot test the model
    and the test is skipped, saying so (on a 2-core VM whose host was busy,
    every try of a 25-rank trace had a rank 15% off). A program whose loop
    runs `iterations(p)` times is compared per iteration; a test comparing
    the traces' makespans widens its bound by the set's excess (`bound`)."""
    from idlewave.trace import read
    from idlewave.trace.multi import _computation

    taken: dict[int, Path] = {}
    seen = []
    best: tuple[float, list[Path]] = (np.inf, [])
    for attempt in range(12):
        for p in sizes:
            if p not in taken:
                taken[p] = trace(lib, program, root / f"take{attempt}" / str(p), p, mode, *args)
        work = {p: np.array([(p if mode == "strong" else 1) * _computation(t.records) / iterations(p) for t in read(x)])
                for p, x in taken.items()}
        median = float(np.median(np.concatenate(list(work.values()))))
        off = {p: float(np.abs(np.log(w / median)).max()) for p, w in work.items()}
        seen.append(", ".join(f"{p}: {np.exp(off[p]):.2f}" for p in sizes))
        worst = max(off, key=lambda p: off[p])
        if off[worst] < np.log1p(tolerance):
            return SteadyTraces(taken[p] for p in sizes)
        if off[worst] < best[0]:
            best = (off[worst], [taken[p] for p in sizes])
        del taken[worst]
    # never steady: the steadiest set goes to the test, whose own bounds decide, and the run says so
    if best[0] > np.log1p(2 * tolerance):
        pytest.skip(f"the machine's speed kept moving by more than twice the tolerance of {tolerance:.0%}: the furthest "
                    f"rank's computation ({mode}) from the set's median, per size, in each try: {'; '.join(seen)}")
    warnings.warn(f"the machine's speed kept moving: the furthest rank's computation ({mode}) from the set's "
                  f"median, per size, in each try: {'; '.join(seen)}; testing the steadiest set "
                  f"({np.exp(best[0]):.2f})", stacklevel=2)
    steadiest = SteadyTraces(best[1])
    steadiest.excess = float(np.expm1(best[0])) - tolerance
    return steadiest


@pytest.fixture(scope="module")
def strong(lib, program, tmp_path_factory):
    # 5%, not 10%: with 9 ranks 10% slow and 25 ranks 10% fast, p^(-2/3) predicts the traces within the
    # model's slack of p^(-1) and, being flatter, is chosen (a CI run); within 5% p^(-1) is chosen at every
    # corner (each size at -5%, 0 or +5%), and the fixture needs 2-4 tries on a quiet machine
    return steady_traces(lib, program, tmp_path_factory.mktemp("strong"), (*SIZES, TARGET), "strong", tolerance=0.05)


@pytest.mark.serial  # steady_traces compares CPU times of traces taken one after another
def test_strong_scaling_from_three_traces_predicts_the_fourth(strong, tmp_path):
    *small, real = strong
    m = build(small)
    assert m.sizes == list(SIZES) and m.scaling == "strong"
    # halos carry a face of the 720×720 domain: 8 bytes × 720/√p, exactly
    rules = {r.describe() for rank in m.ranks for r in rank.bytes.values()}
    assert rules == {"5760·p^(-1/2)"}, rules
    assert all(r.compute.i == -1 and r.compute.error < 0.25 for r in m.ranks), [r.compute for r in m.ranks]
    fitted = replay(write_template(m, TARGET, tmp_path / "fitted"), scale_to=TARGET)
    direct = replay(real)
    # the messages and bytes of the real 36-rank run, and its makespan
    assert (fitted.summary["messages"], fitted.summary["bytes"]) == (direct.summary["messages"], direct.summary["bytes"])
    # within what the traces themselves may differ by (the fixture's 5% in computation × p, one trace high
    # and the other low) plus the fit's error; the growth law itself is checked exactly above (p^-1, not
    # p^-1/2: 20% more at 36 ranks)
    assert fitted.summary["makespan_s"] == pytest.approx(direct.summary["makespan_s"], rel=strong.bound(0.10))
    # the largest trace alone, weak-scaled, keeps its 25-rank halos and computation: far off
    weak = replay(small[-1], scale_to=TARGET)
    assert weak.summary["bytes"] > 1.1 * direct.summary["bytes"]


@pytest.mark.serial  # steady_traces compares CPU times of traces taken one after another
def test_weak_scaling_is_inferred_and_keeps_every_quantity(lib, program, tmp_path):
    # 5%: weak scaling is an exponent below 0.2; the 9- and 25-rank traces 10% off in opposite directions give 0.196
    m = build(steady_traces(lib, program, tmp_path, SIZES, "weak", tolerance=0.05))
    assert m.scaling == "weak" and all(not r.bytes for r in m.ranks)
    # the computation per rank does not grow: at 36 ranks within the noise of oversubscribed CPU timing of
    # the 25-rank trace's (a rule may still follow a trend in that noise)
    grow = [r.compute(TARGET) / r.compute(SIZES[-1]) for r in m.ranks]
    assert all(0.85 < g < 1.15 for g in grow), [r.compute.describe() for r in m.ranks]


def test_a_structure_that_changes_with_size_is_refused(lib, program, tmp_path):
    """A barrier in every iteration at 16 ranks and none at 9 or 25: no loop
    that runs more or fewer times explains it."""
    dirs = [trace(lib, program, tmp_path / str(p), p, "strong", "2") for p in SIZES]
    with pytest.raises(ModelError, match=r"rank 0 of the 25-rank trace and rank 0 of the 16-rank trace .* differ at call "
                                         r"\d+: irecv against barrier .*, and not by a loop that runs more or fewer times"):
        build(dirs)


@pytest.mark.serial  # steady_traces compares CPU times of traces taken one after another
def test_a_loop_that_runs_more_times_at_larger_sizes_is_fitted_and_extrapolated(lib, program, tmp_path, cli):
    """The halo loop runs 2 + n0 times on an n0×n1 grid (5, 6, 7 at 9, 16,
    25 ranks): the model finds the loop and that rule, extrapolates to 36
    ranks with 8 iterations, and gives the real 36-rank trace's events,
    messages and bytes and its makespan. Computation is compared with the
    template's loop counts: weak scaling inferred, where the traces' totals
    grow with the iterations (as p^0.29)."""
    # per iteration (2 + n0 on these square grids); the 36 ranks' CPU time on 2 cores spreads by 10–14%
    traces = steady_traces(lib, program, tmp_path, (*SIZES, TARGET), "weak", "1", tolerance=0.15,
                           iterations=lambda p: 2 + math.isqrt(p))
    *small, real = traces
    m = build(small)
    assert m.scaling == "weak", m.growth
    [loop] = m.loops
    assert loop.counts == (5, 6, 7) and loop.exact and loop.rule.describe().startswith("2 + 1·n0")
    assert loop.body[:4] == ("irecv", "irecv", "isend", "isend") and loop.body[-1] == "allreduce"
    assert all(len(r.loops) == 1 and r.loops[0][2] == 7 for r in m.ranks)
    fitted, direct = replay(write_template(m, TARGET, tmp_path / "fitted"), scale_to=TARGET), replay(real)
    assert {k: fitted.summary[k] for k in ("events", "messages", "bytes")} == \
        {k: direct.summary[k] for k in ("events", "messages", "bytes")}
    # the real 36-rank trace's ranks compute up to 15% apart (the traces' own tolerance above), and its slowest
    # rank in each iteration sets the makespan: −11.7% to +6.6% over nine sets of traces, −10.4% under load
    assert fitted.summary["makespan_s"] == pytest.approx(direct.summary["makespan_s"], rel=traces.bound(0.15))
    shown = cli("trace", "model", *small, env={"COLUMNS": "200"}).stdout
    assert "Loops that run more or fewer times with the size" in shown and "2 + 1·n0" in shown
    j = json.loads(cli("trace", "model", *small, "--json").stdout)
    assert [x["counts"] for x in j["loops"]] == [[5, 6, 7]]
    # --weak would replay the largest trace with its own 7 iterations: refused, saying why
    over = cli("trace", "replay", *small, "--scale-to", str(TARGET), "--weak", "--out", tmp_path / "w", check=False)
    assert over.returncode == 2 and "loops that run more or fewer times" in over.stderr


@pytest.mark.serial  # steady_traces compares CPU times of traces taken one after another
def test_the_cli_fits_shows_and_extrapolates(strong, tmp_path, cli):
    *small, _ = strong
    shown = cli("trace", "model", *small, env={"COLUMNS": "200"})
    assert "strong scaling inferred" in shown.stdout and "5760·p^(-1/2)" in shown.stdout
    j = json.loads(cli("trace", "model", *small, "--json").stdout)
    assert j["sizes"] == list(SIZES) and j["scaling"] == "strong"
    assert {b["call"] for r in j["ranks"] for b in r["bytes"]} == {"isend", "irecv"}
    r = json.loads(cli("trace", "replay", *small, "--scale-to", str(TARGET), "--out", tmp_path / "r", "--json").stdout)
    assert r["ranks"] == TARGET and r["scaling"] == "strong"
    assert r["extrapolation"].startswith("fitted from traces at 9, 16, 25 ranks (3×3, 4×4, 5×5), strong scaling")
    assert (tmp_path / "r" / "fitted-trace" / "rank-0.iwt").is_file() and len(r["classes"]) == 25
    over = json.loads(cli("trace", "replay", *small, "--scale-to", str(TARGET), "--weak", "--out", tmp_path / "w",
                          "--json").stdout)
    assert "--weak on the largest (the traces show strong)" in over["extrapolation"]
    assert over["bytes"] > r["bytes"]
    # a replay that fails (a platform that is none) says so and leaves no fitted template behind
    bad = cli("trace", "replay", *small, "--scale-to", str(TARGET), "--platform", "nope", "--out", tmp_path / "b",
              check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and not list(tmp_path.glob(".b*"))
    # the same fitted schedule as a GOAL file: the real 36-rank trace's, op for op
    x = json.loads(cli("trace", "export", *small, "--scale-to", str(TARGET), "-o", tmp_path / "x.goal", "--json").stdout)
    real = json.loads(cli("trace", "export", strong[-1], "-o", tmp_path / "r.goal", "--json").stdout)
    assert x["ranks"] == real["ranks"] == TARGET and x["ops"] == real["ops"]


@pytest.mark.serial  # steady_traces compares CPU times of traces taken one after another
def test_smaller_traces_with_too_few_ranks_along_a_dimension_are_left_out_saying_so(lib, program, strong, tmp_path):
    """A 2-rank trace (2×1: a dimension of 1, so no edge and interior there to
    match) beside the 9-, 16- and 25-rank ones is left out, said, and the
    model is the one of the other three, rule for rule. With only such
    smaller traces the largest one alone is weak-scaled, when the traces are
    nearer weak scaling than strong (the replay is the largest trace's,
    extrapolated), and refused when they show strong scaling."""
    *small, _ = strong
    two = trace(lib, program, tmp_path / "2", 2, "strong")
    m, without = build([two, *small]), build(small)
    assert m.sizes == list(SIZES) and len(m.left_out) == 1 and not m.alone
    assert m.left_out[0].startswith("the 2-rank trace (2×1) is left out: its grid 2×1") and "dimension of 1" in m.left_out[0]
    assert [(r.compute, r.bytes) for r in m.ranks] == [(r.compute, r.bytes) for r in without.ranks]
    assert "the 2-rank trace (2×1) is left out" in m.describe()
    with pytest.raises(ModelError, match=r"grows ∝ p\^-[01]\.\d+, nearer strong scaling"):
        build([two, trace(lib, program, tmp_path / "3", 3, "strong"), small[0]])
    weak = steady_traces(lib, program, tmp_path / "weak", (2, 3, 9), "weak")
    m = build(weak)
    assert m.alone and m.scaling == "weak" and len(m.left_out) == 2
    assert m.describe().startswith("the 9-rank trace (3×3) alone, weak-scaled: the traces at 2, 3, 9 ranks are nearer weak")
    fitted, direct = replay(write_template(m, TARGET, tmp_path / "fitted"), scale_to=TARGET), replay(weak[-1], scale_to=TARGET)
    assert {k: fitted.summary[k] for k in ("events", "messages", "bytes", "makespan_s")} == \
        {k: direct.summary[k] for k in ("events", "messages", "bytes", "makespan_s")}


GRID3D = (Path(__file__).parent / "programs" / "grid3d_scaling.c").read_text()


def model_of(lib: Path, exe: Path, root: Path, sizes: tuple[int, ...], mode: str) -> tuple:
    """The traces at `sizes` (the last one kept apart, for comparison), the
    model of the others and its template at the last size. The traces the
    model is built from are taken in one state of the machine
    (steady_traces: each one furthest off retaken, not the whole set); where a
    computation still fits no rule within 25%, its rule comes out negative
    there, or the computation per rank does not scale as `mode` says, the
    set is taken again."""
    why = ""
    for attempt in range(3):
        dirs = [*steady_traces(lib, exe, root / f"set{attempt}", sizes[:-1], mode),
                trace(lib, exe, root / f"set{attempt}" / "target", sizes[-1], mode)]
        try:
            m = build(dirs[:-1])
            if m.scaling != mode:
                raise ModelError(f"computation: {m.describe()}")
            return m, dirs, write_template(m, sizes[-1], root / f"set{attempt}" / "fitted")
        except ModelError as e:
            if "computation" not in str(e):
                raise
            why = str(e)
    pytest.fail(f"the machine's speed moved during every set of traces: {why}")


@pytest.mark.serial  # the model fits the traces' computation: CPU times of traces taken one after another
def test_a_3d_code_with_row_communicators_roots_and_counts_by_coordinate(lib, tmp_path):
    """A 3-D periodic code with rows from MPI_Cart_sub, a broadcast from the
    row's last rank, an allgatherv whose counts grow along the row and a
    reduce to the last world rank, on MPI_Dims_create's grids: 8, 12, 18 and
    27 ranks are 2×2×2, 3×2×2, 3×3×2 and 3×3×3, so its halos in strong scaling
    follow the grid's extents, not p. Extrapolated to 64 (4×4×4) against a
    real 64-rank trace: events, messages and bytes exactly (the allgatherv's
    counts, 64 + i along the row, carried to the target's rows), the
    communication alone (no computation) within 5%. In strong scaling from 8, 12 and 18 ranks the
    third dimension never grows: the rules that fit disagree at 4×4×4, and
    the extrapolation is refused (fitted in p, the halos came out 2× too large)."""
    exe = compile_c(tmp_path, "grid3d_scaling", GRID3D)
    for mode, sizes in (("weak", (8, 12, 18, 64)), ("strong", (8, 12, 18, 27, 64))):
        m, dirs, fitted_dir = model_of(lib, exe, tmp_path / mode, sizes, mode)
        assert not m.left_out, m.describe()  # (model_of checks the scaling)
        # the allgatherv's counts differ along the periodic row, whose positions the model takes to be alike:
        # class medians, said
        assert m.data_dependent > 0 and "vary with the data" in m.describe()
        rules = {r.describe() for rank in m.ranks for r in rank.bytes.values()}
        if mode == "strong":  # a face of the 96³ domain: 8 bytes × 96² over the extents across it
            assert m.gridded > 0 and "follow the grid's extents" in m.describe()
            assert {"73728/(n1·n2)", "73728/(n0·n2)", "73728/(n0·n1)"} <= rules, rules
        fitted, real = replay(fitted_dir, scale_to=64), replay(dirs[-1])
        assert [fitted.summary[k] for k in ("events", "messages", "bytes")] == [real.summary[k] for k in ("events", "messages", "bytes")]
        assert fitted.summary["resized_v_collectives"] == 0
        # without the traced computation (oversubscribed CPU time is noisy) the communication alone: within 5%
        bare = [replay(d, scale_to=s, compute_scale=0.0).summary["makespan_s"] for d, s in ((fitted_dir, 64), (dirs[-1], None))]
        assert bare[0] == pytest.approx(bare[1], rel=0.05), bare
    m = build(dirs[:3])  # strong, 8, 12 and 18 ranks
    with pytest.raises(ModelError, match=r"rank 0, call \d+ \(i(send|recv)\): its bytes \(18432 at 2×2×2, 18432 at 3×2×2, "
                       r"12288 at 3×3×2\) follow the grid's extents, and 4 rules .* 73728/\(n1·n2\) gives 4608, 36864/n1 "
                       r"gives 9216.* Dimension 2 has the same extent in every trace"):
        write_template(m, 64, tmp_path / "refused")
    assert not (tmp_path / "refused").exists() and not (tmp_path / "refused.partial").exists()
    with pytest.raises(ModelError, match="the traced grid is 3-dimensional .* the target 8×8 is not"):
        write_template(m, 64, tmp_path / "flat", [8, 8])


def test_rules_in_the_grid_extents_are_exact_and_say_when_the_traces_cannot_tell():
    from idlewave.trace.multi import grid_rule

    dims = [[2, 2, 2], [3, 2, 2], [3, 3, 2]]
    r = grid_rule(dims, [18432, 18432, 12288], "")
    assert r is not None and r.at([4, 4, 4]) is None  # 4608 or 9216 or …: dimension 2 never grew
    assert [f.describe() for f in r.forms][:2] == ["73728/(n1·n2)", "36864/n1"]
    r = grid_rule([*dims, [3, 3, 3]], [18432, 18432, 12288, 8192], "")
    assert r is not None and [f.describe() for f in r.forms] == ["73728/(n1·n2)"] and r.at([4, 4, 4]) == 4608
    r = grid_rule(dims, [520, 528, 528], "")  # a count along a non-periodic row: 8 bytes × (64 + n0 − 1)
    assert r is not None and r.describe() == "504 + 8·n0" and r.at([4, 4, 4]) == 536
    assert grid_rule(dims, [520, 600, 528], "") is None  # no form of the grid gives it


@pytest.mark.parametrize("form,values", [
    ("5760·p^(-1/2)", [5760 / math.sqrt(p) for p in (9, 16, 25)]),
    ("3 + 0.5·p·log2(p)", [3 + 0.5 * p * math.log2(p) for p in (4, 8, 16, 32)]),
    ("25·p", [100, 200, 400]),
    ("64", [64, 64, 64]),
])
def test_fit_recovers_the_normal_form_of_exact_data(form, values):
    sizes = [4, 8, 16, 32][:len(values)] if form != "5760·p^(-1/2)" else [9, 16, 25]
    if form == "25·p":
        sizes = [4, 8, 16]
    r = fit(sizes, values)
    assert r.describe() == form and r.error < 1e-9


def test_a_computation_noisy_by_7_percent_keeps_a_rule_that_stays_positive():
    """Strong scaling (c/p) traced at 8, 12, 18 and 27 ranks, each size's time
    7% off one way or the other: the form that best predicts each size from
    the others can be c0 + c1·p^i with c0 < 0, below zero at 64 ranks. As a
    duration the computation keeps a form with no negative coefficient,
    here c/p itself, within the 25% the model accepts."""
    sizes = [8, 12, 18, 27]
    worst = 0.0
    for noise in itertools.product((0.93, 1.0, 1.07), repeat=4):
        values = [8 / p * e for p, e in zip(sizes, noise)]
        r = fit(sizes, values, 0.05, duration=True)
        assert r.c0 >= 0 and r.c1 >= 0 and r(64) > 0 and r(2 ** 20) >= 0, (noise, r.describe())
        worst = max(worst, r.error)
    assert worst < 0.25
    values = [8 / p * e for p, e in zip(sizes, (0.93, 1.0, 1.07, 0.93))]
    assert fit(sizes, values, 0.05).describe() == "-1.016 + 3.882·p^(-1/3)"  # as a plain quantity: below 0 at 64
    assert fit(sizes, values, 0.05, duration=True).describe() == "7.712·p^(-1)"


def test_fit_needs_a_third_size_for_what_varies():
    with pytest.raises(ValueError, match="a third trace"):
        fit([4, 8], [1, 2])
    assert fit([4, 8], [5, 5]).describe() == "5"


def test_traces_off_a_grid_are_refused_saying_why(tmp_path, cli):
    from idlewave import _engine

    for p in (5, 7, 9):
        _engine.write_synthetic_trace(str(tmp_path / str(p)), p, 10)
    with pytest.raises(ModelError, match="Cartesian process grid"):
        build([tmp_path / str(p) for p in (5, 7, 9)])
    p = cli("trace", "replay", *(tmp_path / str(p) for p in (5, 7, 9)), "--scale-to", "20", "--out", tmp_path / "r",
            check=False)
    assert p.returncode == 2 and "Cartesian process grid" in p.stderr and "Traceback" not in p.stderr
    p = cli("trace", "replay", tmp_path / "5", tmp_path / "7", "--out", tmp_path / "r", check=False)
    assert p.returncode == 2 and "give --scale-to" in p.stderr


@pytest.mark.serial  # the model fits computation too: steady_traces compares CPU times of traces taken one after another
def test_message_sizes_that_vary_with_the_data_are_modelled_per_class_and_said(lib, program, tmp_path):
    """Sends carry up to 10 doubles more by rank and iteration: no exact rule,
    so each such size is its class's median, fitted, and the model says how
    much they varied; the replay keeps the real trace's messages and comes
    within 5% of its bytes."""
    # (only its messages are judged, but its computation must fit a rule within the model's 25%: ranks 25%
    # apart between the traces, which a tolerance of 0.25 let through, missed it by 28% on a loaded host)
    dirs = steady_traces(lib, program, tmp_path, (*SIZES, TARGET), "strong", "0", "1", tolerance=0.10)
    m = build(dirs[:-1])
    assert m.data_dependent > 0 and 0 < m.data_spread and m.data_error <= 0.25
    assert "message sizes vary with the data" in m.describe()
    fitted = replay(write_template(m, TARGET, tmp_path / "fitted"), scale_to=TARGET)
    direct = replay(dirs[-1])
    assert fitted.summary["messages"] == direct.summary["messages"]
    assert fitted.summary["bytes"] == pytest.approx(direct.summary["bytes"], rel=0.05)


LAMMPS_WEAK = """units lj
atom_style atomic
processors ${px} ${py} ${pz}
lattice fcc 0.8442
region box block 0 $(6*v_px) 0 $(6*v_py) 0 $(6*v_pz)
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 20 delay 0 check no
fix 1 all nve
thermo 50
run 100
"""


def lammps(debian_lib: Path, root: Path, p: int, grid: tuple[int, int, int]) -> Path:
    """LAMMPS's melt (LAMMPS_WEAK) on `p` oversubscribed ranks on `grid`, traced with the CPU clock."""
    (root / "in.weak").write_text(LAMMPS_WEAK)
    out = root / f"tr{p}"
    env = {**debian_env(out), "IDLEWAVE_TRACE_CLOCK": "cpu", "OMP_NUM_THREADS": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
    args = [a for d, v in zip("xyz", grid) for a in ("-var", f"p{d}", str(v))]
    r = subprocess.run([str(DEB / "mpiexec"), "--oversubscribe", "--bind-to", "none", "-n", str(p), "-x",
                        f"LD_PRELOAD={debian_lib}", "-x", "IDLEWAVE_TRACE_DIR", "-x", "IDLEWAVE_TRACE_CLOCK",
                        "/usr/bin/lmp", "-in", "in.weak", *args, "-log", "none", "-screen", "none"],
                       env=env, cwd=root, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


NEEDS_LAMMPS = pytest.mark.skipif(not Path("/usr/bin/lmp").exists() or not (DEB / "mpiexec").exists(),
                                  reason="needs Debian's LAMMPS and Open MPI (apt-get install lammps libopenmpi-dev)")


@pytest.mark.serial  # the makespans of traces taken one after another
@NEEDS_LAMMPS
def test_lammps_traced_at_16_ranks_grows_its_dimensions_of_2_in_pairs(debian_lib, tmp_path):
    """LAMMPS traced at 16 ranks (4×2×2, periodic) extrapolates to 32
    (4×4×2) in pairs; against its real 32-rank trace: messages within 2%
    (with 2 ranks along a dimension LAMMPS skips half its atom exchanges
    there, so the pairs send fewer), bytes within 1%, makespan within 10%.
    Traced at 4, 8 and 16 ranks, the 16-rank trace alone is extrapolated,
    saying why: the smaller ones have dimensions of 1 and 2."""
    from idlewave.trace import read
    from idlewave.trace.multi import _computation

    # the two traces in one state of the machine (steady_traces; weak: equal work per rank): on a quiet 2-core VM
    # the two sizes' computation per rank differ by 0-12% from one pair to the next, so the closest of every
    # 16-rank and 32-rank trace taken is used, until within 5%; never within 10%, the machine cannot test this
    taken: dict[int, list[tuple[float, Path]]] = {16: [], 32: []}
    for attempt in range(6):
        root = tmp_path / f"set{attempt}"
        root.mkdir()
        for p, grid in ((16, (4, 2, 2)), (32, (4, 4, 2))):
            d = lammps(debian_lib, root, p, grid)
            taken[p].append((float(np.median([_computation(t.records) for t in read(d)])), d))
        off, (sixteen, real) = min((abs(np.log(a / b)), (x, y)) for a, x in taken[16] for b, y in taken[32])
        if off < np.log(1.05):
            break
    if off > np.log(1.10):
        pytest.skip("the machine's speed kept moving: computation per rank of the 16-rank traces "
                    f"{[round(w, 4) for w, _ in taken[16]]} s, of the 32-rank traces {[round(w, 4) for w, _ in taken[32]]} s")
    fitted, direct = replay(sixteen, scale_to=32), replay(real)
    assert "dimension 1 grows from 2 traced ranks in pairs" in fitted.summary["extrapolation"]
    assert 0.98 < fitted.summary["messages"] / direct.summary["messages"] < 1.0
    assert fitted.summary["bytes"] == pytest.approx(direct.summary["bytes"], rel=0.01)
    assert fitted.summary["makespan_s"] == pytest.approx(direct.summary["makespan_s"], rel=0.10)
    # traced at 4, 8 and 16 ranks: the smaller two cannot be matched call by call (a dimension of 1; dimensions of 2
    # where LAMMPS calls less), so the 16-rank trace alone is extrapolated, the three nearer weak scaling than strong (on 2 cores, 16
    # oversubscribed ranks' computation per rank is up to 20% above 4's)
    four, eight = lammps(debian_lib, root, 4, (2, 2, 1)), lammps(debian_lib, root, 8, (2, 2, 2))
    m = build([four, eight, sixteen])
    assert m.alone and m.scaling == "weak" and m.sizes == [4, 8, 16], m.describe()
    assert "the 8-rank trace (2×2×2) is left out: along dimension 0 it has 2 ranks, and its calls differ" in m.describe()
    three = replay(write_template(m, 32, root / "fitted"), scale_to=32)
    assert {k: three.summary[k] for k in ("events", "messages", "bytes", "makespan_s")} == \
        {k: fitted.summary[k] for k in ("events", "messages", "bytes", "makespan_s")}


# 175 oversubscribed LAMMPS ranks (LAMMPS's grids need 3 ranks per dimension: 27 is the smallest); the stencil's
# weak scaling and data-dependent sizes above are the same mechanism in `make test`
@pytest.mark.slow
@pytest.mark.serial  # the makespans of traces taken one after another
@NEEDS_LAMMPS
def test_lammps_in_weak_scaling_from_27_36_48_ranks_predicts_64(debian_lib, tmp_path):
    """LAMMPS's melt, 6×6×6 fcc cells per rank on MPI_Dims_create's grids,
    traced at 27, 36 and 48 ranks and extrapolated to 64: atom exchanges make
    thousands of message sizes data-dependent, and they are said; the real
    64-rank trace's messages, its bytes and makespan within 5% and 10%."""
    dirs = [lammps(debian_lib, tmp_path, p, grid)
            for p, grid in ((27, (3, 3, 3)), (36, (4, 3, 3)), (48, (4, 4, 3)), (64, (4, 4, 4)))]
    m = build(dirs[:-1])
    assert m.scaling == "weak" and m.data_dependent > 100 and "vary with the data" in m.describe()
    fitted = replay(write_template(m, 64, tmp_path / "fitted"), scale_to=64)
    real = replay(dirs[-1])
    assert fitted.summary["messages"] == real.summary["messages"]
    assert fitted.summary["bytes"] == pytest.approx(real.summary["bytes"], rel=0.05)
    assert fitted.summary["makespan_s"] == pytest.approx(real.summary["makespan_s"], rel=0.10)


@pytest.mark.serial  # steady_traces compares CPU times of traces taken one after another
def test_a_periodic_dimension_of_2_grows_in_pairs(lib, program, tmp_path):
    """The stencil traced at 8 ranks (MPI_Dims_create's 4×2, periodic) goes
    to 16 (4×4): along the dimension of 2 the ranks pair up and exchange what
    the traced pair did. The real 16-rank run's messages and bytes exactly,
    its makespan within the traces' own spread; the decoupling of the pairs
    is said; an odd size along it is refused; the 8-rank trace now joins a
    multi-trace model."""
    # (ranks within 5% of each other: at the default 10% the traces' own computation moved the
    # makespans compared below 11% apart on a loaded machine)
    traces = steady_traces(lib, program, tmp_path, (8, 16, 25), "weak", tolerance=0.05)
    eight, sixteen, twenty_five = traces
    fitted, real = replay(eight, scale_to=16), replay(sixteen)
    assert (fitted.summary["messages"], fitted.summary["bytes"]) == (real.summary["messages"], real.summary["bytes"])
    # (a CI run's steadiest set had a rank 9% off and the makespans 13.7% apart: bound 0.18 there)
    assert fitted.summary["makespan_s"] == pytest.approx(real.summary["makespan_s"], rel=traces.bound(0.10))
    assert "dimension 1 grows from 2 traced ranks in pairs" in fitted.summary["extrapolation"]
    # 12 ranks is 4×3: 2 ranks cannot grow to 3 in pairs
    with pytest.raises(Exception, match="grows in pairs: to even sizes"):
        replay(eight, scale_to=12)
    # under noise the pairs are coupled along dimension 1 only through the allreduce: the replay of the
    # extrapolation and of the real trace stay close here, where an allreduce ends each iteration (over
    # four noise seeds: with one, where a detour falls against each trace's own computation moved the two
    # apart by up to 11% on a loaded machine)
    def noisy(d, s):
        runs = [replay(d, scale_to=s, base={"seed": seed, "noise": [{"kind": "poisson", "rate_hz": 2000.0, "duration_s": 2e-4}]})
                for seed in (1, 2, 3, 4)]
        return sum(r.summary["makespan_s"] for r in runs) / len(runs)
    means = [noisy(eight, 16), noisy(sixteen, None)]
    assert means[0] == pytest.approx(means[1], rel=traces.bound(0.10)), means
    m = build([eight, sixteen, twenty_five])
    assert m.dims[0] == [4, 2] and m.scaling == "weak"
