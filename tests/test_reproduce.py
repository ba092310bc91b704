"""The noise paper's application study (`idlewave reproduce noise-apps`):
the trends the paper reports, with the paper's thresholds, on the claims we
reproduce; the verdicts computed from the paper's claims, both ways."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from idlewave.cli import app
from idlewave.studies.reproduce import APPS, noise_apps, verdicts

pytestmark = [pytest.mark.integration, pytest.mark.study]

NOISES = ("system", "daemon", "checkpoint")


@pytest.fixture(scope="module", params=["reduced", pytest.param("full", marks=pytest.mark.slow)])
def study(request):
    """At the paper's 1,024 ranks. Full: 30 iterations. Reduced (`make test`): 10
    iterations, every application but LAMMPS reducing in each; LAMMPS reduces
    every 20 steps, so 20 (one allreduce: with none its speedup would be 1
    whatever the noise, and the claims about it empty)."""
    if request.param == "full":
        return noise_apps(ranks=(1024,), iterations=30, noises=NOISES)
    rows = noise_apps(ranks=(1024,), iterations=10, apps=tuple(a for a in APPS if a != "LAMMPS"), noises=NOISES)["rows"]
    return {"rows": rows + noise_apps(ranks=(1024,), iterations=20, apps=("LAMMPS",), noises=NOISES)["rows"]}


def speedups(study, noise):
    return {r["app"]: r["speedup"] for r in study["rows"] if r["noise"] == noise}


def test_fig5a_system_noise_gives_almost_no_speedup(study):
    """Fig. 5a: under system noise the idealized allreduce speeds no application up by 10%."""
    s = speedups(study, "system")
    assert set(s) == set(APPS)
    assert all(v < 1.1 for v in s.values()), s


def test_fig5b_daemon_noise_helps_amg_and_cth_by_over_10_percent_and_not_lammps(study):
    """Fig. 5b, the part we reproduce: AMG and CTH above 10%, LAMMPS (rare
    allreduces) below. (HPCCG, LULESH and miniFE also exceed 10% here: docs/reproductions.md.)"""
    s = speedups(study, "daemon")
    assert s["AMG2006"] > 1.1 and s["CTH"] > 1.1, s
    assert s["LAMMPS"] < 1.1, s


def test_fig7_checkpoints_give_large_speedups_except_for_lammps(study):
    """Fig. 7: HPCCG, miniFE and CTH gain a large factor; LAMMPS little."""
    s = speedups(study, "checkpoint")
    assert min(s["HPCCG"], s["miniFE"], s["CTH"]) > 2, s
    assert s["LAMMPS"] < 1.3, s


def test_every_application_runs_at_table_1_beta_on_its_own_structure(study):
    """W/c is Table 1's β at 1,024 ranks; the communication differs per application."""
    beta = {"AMG2006": 1.59, "CTH": 1.25, "HPCCG": 95.15, "LAMMPS": 37.46, "LULESH": 4.37, "miniFE": 10.31}
    for r in study["rows"]:
        assert r["compute_per_iteration_s"] == pytest.approx(beta[r["app"]] * r["communication_per_iteration_s"], rel=1e-6)
    comm = {r["app"]: r["communication_per_iteration_s"] for r in study["rows"]}
    assert len(set(comm.values())) == len(APPS)


def test_verdicts_follow_the_papers_claims_both_ways():
    rows = [{"ranks": 1024, "app": a, "noise": "system", "speedup": 1.02, "ideal_vs_no_noise": 1.0} for a in APPS]
    (v,) = [v for v in verdicts(rows) if v["figure"] == "Fig. 5a"]
    assert v["verdict"] == "reproduced"
    rows[0]["speedup"] = 1.5
    (v,) = [v for v in verdicts(rows) if v["figure"] == "Fig. 5a"]
    assert v["verdict"] == "differs"
    (v,) = [v for v in verdicts(rows[:3]) if v["figure"] == "Fig. 5a"]
    assert v["verdict"] == "partial run"


def test_cli_lists_studies_and_refuses_unknown_ones():
    r = CliRunner().invoke(app, ["reproduce", "--list"])
    assert r.exit_code == 0 and "noise-apps" in r.output
    r = CliRunner().invoke(app, ["reproduce", "fig99"])
    assert r.exit_code == 2 and "unknown study 'fig99'" in r.output
    r = CliRunner().invoke(app, ["reproduce", "noise-apps", "--ranks", "1024,1"])
    assert r.exit_code == 2 and "at least 2 ranks" in r.output


@pytest.fixture(scope="module")
def collectives_1024():
    from idlewave.studies.reproduce import noise_collectives

    return noise_collectives(ranks=(1024,), iterations=100)["rows"]


def test_fig9_checkpoints_speed_dissemination_collectives_up_and_binomial_ones_barely(collectives_1024):
    """Fig. 9: under checkpoint noise the dissemination collectives gain a
    large factor from the idealized version; binomial ones under 10%, as
    their dependencies reach only a rank's ancestors (Fig. 10)."""
    # the paper's algorithms: dissemination-based allreduce and allgather ("a dissemination algorithm
    # similar to that used by MPICH"; Bruck's allgather is one), binomial trees for gather and scatter
    algorithms = {r["collective"]: r["algorithm"] for r in collectives_1024}
    assert algorithms == {"allreduce": "dissemination", "allgather": "bruck", "gather": "binomial", "scatter": "binomial"}
    s = {r["collective"]: r["speedup"] for r in collectives_1024 if r["noise"] == "checkpoint"}
    assert min(s["allreduce"], s["allgather"]) > 10 * max(s["gather"], s["scatter"]), s
    assert max(s["gather"], s["scatter"]) < 1.1, s


@pytest.mark.parametrize("small,large", [(512, 1024), pytest.param(1024, 4096, marks=pytest.mark.slow)])
def test_fig6_binomial_collectives_gain_more_from_the_idealized_version_at_larger_scale(collectives_1024, small, large):
    """Fig. 6's growth of the binomial collectives' speedup with scale (low
    noise): the paper's 1,024 → 4,096 ranks in the full tier, 512 → 1,024 in `make test`."""
    from idlewave.studies.reproduce import noise_collectives

    def rows(p):
        return collectives_1024 if p == 1024 else noise_collectives(ranks=(p,), iterations=100)["rows"]

    lo, hi = rows(small), rows(large)
    for coll in ("gather", "scatter"):
        a = next(r["speedup"] for r in lo if r["collective"] == coll and r["noise"] == "system")
        b = next(r["speedup"] for r in hi if r["collective"] == coll and r["noise"] == "system")
        assert b > a > 1.0, (coll, a, b)


def test_krylov_kernels_fig3_and_fig13_blocking_as_the_paper():
    """Krylov paper Fig. 3 (a DMA NIC lets the nonblocking halo hide large
    faces, saving at most the 1 ms overlap) and Fig. 13 (blocking halos:
    eager at least 5% faster than a handshake rendezvous from 32 KiB)."""
    from idlewave.studies.reproduce import krylov

    r = krylov(iterations=2)
    verdict = {v["figure"]: v["verdict"] for v in r["verdicts"]}
    assert verdict["Fig. 3"] == "reproduced" and verdict["Fig. 13 blocking"] == "reproduced", verdict
    t = {(x["figure"], x["variant"], x["bytes"], x["mode"]): x["iteration_s"] for x in r["rows"]}
    for b in (32768, 131072, 524288):
        saved = t["Fig. 3", "dma NIC", b, "blocking"] - t["Fig. 3", "dma NIC", b, "nonblocking"]
        assert 0 < saved <= 1e-3 + 1e-9, (b, saved)


def test_chebfd_verdicts_follow_the_papers_order_both_ways():
    from idlewave.studies.reproduce import CHEB_BLOCKS, CHEB_GAP, CHEB_MODES, CHEB_ORDER, chebfd_verdicts

    def rows(order):
        out = []
        for nb in CHEB_BLOCKS:
            for mode in CHEB_MODES:
                for i, m in enumerate(order):
                    scheme = {"non_split": 1.0, "pipeline": 0.99, "split_wait": 1.2}[mode]
                    free = scheme * (1 + 0.01 * i)
                    # with barriers: M4 the paper's gap above M3, the others between
                    barrier = scheme * 1.1 * (1 + {"M3": 0.0, "M4": CHEB_GAP[nb, mode]}.get(m, 0.01))
                    out.append({"n_b": nb, "mode": mode, "preset": m, "free_s": free, "barrier_s": barrier,
                                "p_d": barrier / free})
        return out

    v = {x["figure"]: x["verdict"] for x in chebfd_verdicts(rows(CHEB_ORDER))}
    assert v == {"Fig. 6 barrier": "reproduced", "Fig. 6 order": "reproduced", "M4 vs M3": "reproduced",
                 "M3 overlap": v["M3 overlap"], "split-wait": "reproduced", "pipeline": "reproduced"}
    # M3's gain from dropping the barrier: the largest, or not
    for p_d, verdict in ((2.0, "reproduced"), (1.0001, "differs")):
        r = rows(CHEB_ORDER)
        for x in r:
            if x["preset"] == "M3":
                x["p_d"] = p_d
        assert {x["figure"]: x["verdict"] for x in chebfd_verdicts(r)}["M3 overlap"] == verdict
    v = {x["figure"]: x["verdict"] for x in chebfd_verdicts(rows(CHEB_ORDER[::-1]))}
    assert v["Fig. 6 order"] == "differs"


def test_a_claim_that_holds_for_some_seeds_says_for_how_many():
    """Fig. 9 judged per seed: seed 2 has a binomial gather at 2.11× (as it does at 4,096 ranks),
    so the verdict is neither 'reproduced' nor 'differs' but holds for 1 of 2 seeds; values are ranges."""
    from idlewave.studies.reproduce import COLLECTIVES, NOISE_ENVIRONMENTS, micro_verdicts

    speed = {"allreduce": 260.0, "allgather": 261.0, "gather": 1.01, "scatter": 1.03}
    rows = [{"seed": seed, "ranks": p, "collective": c, "noise": n,
             "speedup": 2.11 if (seed, c, n) == (2, "gather", "checkpoint") else speed[c]}
            for seed in (1, 2) for p in (1024, 4096) for c in COLLECTIVES for n in NOISE_ENVIRONMENTS]
    (fig9,) = [v for v in micro_verdicts(rows) if v["figure"] == "Fig. 9"]
    assert fig9["verdict"] == "holds for 1 of 2 seeds (1)" and fig9["seeds_holding"] == [1]
    assert fig9["values"]["gather 4096"] == (1.01, 2.11)
    one = [r for r in rows if r["seed"] == 1]
    assert [v["verdict"] for v in micro_verdicts(one) if v["figure"] == "Fig. 9"] == ["reproduced"]


def test_seeds_is_refused_where_it_would_be_ignored():
    r = CliRunner().invoke(app, ["reproduce", "noise-apps", "--seeds", "3"])
    assert r.exit_code == 2 and "noise-apps does not take --seeds" in r.output
    r = CliRunner().invoke(app, ["reproduce", "noise-collectives", "--seeds", "0"])
    assert r.exit_code == 2 and "--seeds" in r.output
