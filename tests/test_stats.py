"""Regime extraction on data with a known 3-state Markov latency process."""

import json

import numpy as np
import pytest

from idlewave.stats import DataError, analyze, decode, fit, load
from idlewave.stats.regimes import gmm, representative_ranks

pytestmark = pytest.mark.integration

MU = np.array([1.0e-3, 1.3e-3, 2.0e-3])
SD = np.array([0.02e-3, 0.03e-3, 0.3e-3])


def markov_timings(ranks=40, iters=2000, seed=0, stay=0.98):
    """A network-wide 3-state latency chain; each rank draws its time from the state's normal."""
    rng = np.random.default_rng(seed)
    trans = np.full((3, 3), (1 - stay) / 2) + np.eye(3) * (stay - (1 - stay) / 2)
    states = np.empty(iters, dtype=int)
    states[0] = 0
    for k in range(1, iters):
        states[k] = rng.choice(3, p=trans[states[k - 1]])
    T = MU[states] + SD[states] * rng.standard_normal((ranks, iters))
    return np.abs(T), np.broadcast_to(states, (ranks, iters))


def test_viterbi_recovers_the_regimes_and_bic_picks_three():
    T, truth = markov_timings()
    f = fit(T, seed=1)
    assert f.n_regimes == 3
    # BIC alone would take 4 (the wide slow regime split in two), but that state does not last
    persistent = [n for n in f.criteria if f.criteria[n]["persistent"]]
    assert min(persistent, key=lambda n: f.criteria[n]["bic"]) == 3
    labels = decode(f, T)
    assert (labels == truth).mean() >= 0.95
    assert np.allclose(f.mu, MU, rtol=0.05)


def test_fits_are_deterministic_and_stable_across_seeds():
    T, _ = markov_timings(seed=3)
    a, b = fit(T, 3, seed=7), fit(T, 3, seed=7)
    assert np.array_equal(a.mu, b.mu) and np.array_equal(decode(a, T), decode(b, T))
    fits = [fit(T, 3, seed=s) for s in range(5)]
    for f in fits[1:]:
        assert np.allclose(f.mu, fits[0].mu, rtol=1e-3)
        assert (decode(f, T) == decode(fits[0], T)).mean() > 0.99


def test_representative_ranks_span_the_median_ranking_and_catch_slow_tails():
    T = np.arange(100)[:, None] * np.ones((1, 5))
    assert representative_ranks(T, 5).tolist() == [0, 1, 50, 98, 99]
    # 3 of 200 ranks (each with its own speed, as real ranks) have a rare
    # slow regime (10% of iterations): their medians hide among the
    # others', their 95th percentiles stand out
    rng = np.random.default_rng(0)
    T = 1e-3 * np.exp(0.05 * rng.standard_normal((200, 1)) + 0.01 * rng.standard_normal((200, 400)))

    def by_median(T):  # the former sample: equidistant by median alone
        return set(np.argsort(np.median(T, axis=1), kind="stable")[np.round(np.linspace(0, 199, 20)).astype(int)].tolist())

    slow = [r for r in range(0, 200, 7) if r not in by_median(T)][:3]
    T[np.ix_(slow, range(0, 400, 10))] *= 1.5
    assert not set(slow) & by_median(T)
    picked = representative_ranks(T, 20).tolist()
    assert len(picked) == 20 and set(slow) & set(picked)


def test_analyze_writes_regimes_summary_and_figures(tmp_path):
    T, _ = markov_timings(ranks=10, iters=600, seed=5)
    T2 = T * 0.95
    s = analyze({"fixed": T, "dynamic": T2}, tmp_path, n_regimes=3, restarts=2)
    d = json.loads((tmp_path / "fixed" / "summary.json").read_text())
    assert d["n_regimes"] == 3 and abs(sum(r["share"] for r in d["regimes"]) - 1) < 1e-9
    assert d["regimes"][0]["mu"] < d["regimes"][1]["mu"] < d["regimes"][2]["mu"]
    import polars as pl
    frame = pl.read_parquet(tmp_path / "fixed" / "regimes.parquet")
    assert frame.columns == ["rank", "iteration", "time", "regime"] and frame.height == 6000
    for f in ("heatmap.png", "heatmap.svg", "cdf_boxplot.png", "cdf_regimes.png", "series.png"):
        assert (tmp_path / "fixed" / f).stat().st_size > 1000
    assert (tmp_path / "cumulative.png").exists()
    assert s["comparisons"]["percent_difference_total_tmax"]["dynamic vs fixed"] == pytest.approx(-5.0, abs=1e-6)
    assert s["comparisons"]["ks"][0]["pvalue"] < 1e-3


def test_bad_data_is_reported(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("rank,iteration,time\n0,0,1.0\n0,1,2.0\n1,0,1.0\n")
    with pytest.raises(DataError, match="ragged"):
        load(f)
    f.write_text("rank,iteration,time\n0,0,1.0\n0,1,-2.0\n1,0,1.0\n1,1,1.0\n")
    with pytest.raises(DataError, match=r"negative time -2 at rank 0, iteration 1$"):
        load(f)
    np.save(tmp_path / "n.npy", np.array([[1.0, np.nan]]))
    with pytest.raises(DataError, match="non-finite"):
        load(tmp_path / "n.npy")
    with pytest.raises(DataError, match="too few for 3 regimes; it needs at least 30 samples"):
        fit(np.ones((1, 12)) + np.arange(12) * 1e-3, 3)
    with pytest.raises(DataError, match=r"too few for a choice among 1 to 6 regimes \(give --regimes N"):
        fit(np.ones((1, 12)) + np.arange(12) * 1e-3, None)
    with pytest.raises(DataError, match="all 40 samples are equal: there are no regimes"):
        fit(np.ones((2, 20)), 2)
    with pytest.raises(DataError, match="for data with zeros use --space linear"):
        fit(np.zeros((2, 20)) + np.arange(20), 2)


def test_regimes_cli_on_a_simulated_matvec(cli, tmp_path):
    import idlewave
    # a FEM MatVec under a two-level latency regime chain
    scn = {"network": {"regimes": [{"classes": ["inter_node"], "step_s": 2e-4, "transition": [[0.97, 0.03], [0.05, 0.95]],
                                    "multiplier": [1.0, 1.0], "add_mean_s": [0.0, 2e-3]}]},
           "workload": {"kind": "fem_matvec", "ranks": 16, "iterations": 400, "hiding": "fixed_alpha"}}
    idlewave.simulate(scn).write(tmp_path / "sim")
    r = json.loads(cli("regimes", tmp_path / "sim", "--out", tmp_path / "reg", "--regimes", "2", "--json").stdout)
    s = r["datasets"]["sim"]
    assert s["n_regimes"] == 2 and s["regimes"][1]["mu"] > 1.5 * s["regimes"][0]["mu"]
    assert (tmp_path / "reg" / "in_out.png").exists()
    p = cli("regimes", tmp_path / "missing.csv", "--out", tmp_path / "x", check=False)
    assert p.returncode == 2 and "no such file" in p.stderr


def test_figures_omit_a_regime_without_spread_and_say_why(tmp_path, monkeypatch):
    from idlewave.stats import figures

    drawn = {}
    monkeypatch.setattr(figures, "_save", lambda fig, out, name: drawn.setdefault(name, fig) and [name])
    rng = np.random.default_rng(1)
    T = np.where(rng.random((8, 50)) < 0.5, 1.052e-3, rng.lognormal(np.log(2e-3), 0.3, (8, 50)))
    labels = (T != 1.052e-3).astype(np.uint8)
    figures.regime_cdfs(T, labels, tmp_path)
    fig = drawn["cdf_regimes"]
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert [ax.get_title() for ax in panels] == ["regime 1"]  # no empty panel for regime 0
    assert "regime 0: every timing 1.052 ms (no spread)" in fig.get_supxlabel()
    # times read in ms, not as seconds with six decimals
    assert panels[0].get_xlabel() == "time [ms]" and len(panels[0].get_xticks()) <= 7


def test_times_near_the_float_range_give_the_same_regimes_scaled():
    # two levels, 1 and 3, each with a little spread; then the same times × 1e300
    rng = np.random.default_rng(3)
    T = np.where(np.arange(400) % 100 < 50, 1.0, 3.0) * (1 + 0.01 * rng.standard_normal(400))
    mu, sigma, labels = gmm(T, 2)
    big_mu, big_sigma, big_labels = gmm(T * 1e300, 2)
    assert np.all(np.isfinite(big_mu)) and np.all(np.isfinite(big_sigma))
    np.testing.assert_allclose(big_mu, mu * 1e300, rtol=1e-9)
    np.testing.assert_allclose(big_sigma, sigma * 1e300, rtol=1e-6)
    assert (big_labels == labels).all()


def test_wide_tables_with_rank_ids_or_without_a_header(tmp_path):
    rng = np.random.default_rng(4)
    T = 1e-3 + 1e-5 * rng.random((8, 60))
    cols = ",".join(f"it{k}" for k in range(60))
    # rank ids (1..8, shuffled) in a column: rows ordered by them, the ids not times
    order = rng.permutation(8)
    (tmp_path / "w.csv").write_text(f"rank,{cols}\n" + "".join(f"{p + 1}," + ",".join(repr(float(x)) for x in T[p]) + "\n" for p in order))
    assert np.array_equal(load(tmp_path / "w.csv"), T)
    # no header: the first line is a rank's times, not column names
    (tmp_path / "h.csv").write_text("".join(",".join(repr(float(x)) for x in T[p]) + "\n" for p in range(8)))
    assert np.array_equal(load(tmp_path / "h.csv"), T)
    # a header of iteration numbers is a header
    (tmp_path / "n.csv").write_text(",".join(str(k) for k in range(60)) + "\n" + (tmp_path / "h.csv").read_text())
    assert np.array_equal(load(tmp_path / "n.csv"), T)
    # a timer that is not there is an error, not the iteration timer
    with pytest.raises(DataError, match="no column 'typo_s' for --timer 'typo'"):
        load(tmp_path / "w.csv", "typo")


def test_regime_mean_and_sd_are_the_decoded_samples_and_mu_sigma_the_fit():
    # uniform times are not log-normal: the log-space fit's μ, σ differ from the samples' mean and sd
    T = np.random.default_rng(0).uniform(10e-6, 90e-6, size=(20, 500))
    f = fit(T, 1)
    (r,) = f.summary(T, decode(f, T))["regimes"]
    assert r["mean"] == pytest.approx(T.mean(), rel=1e-12) and r["sd"] == pytest.approx(T.std(), rel=1e-12)
    assert r["mu"] > 1.01 * r["mean"] and r["sigma"] > 1.2 * r["sd"]
    # three regimes: each one's mean is that of exactly the samples decoded into it
    T, _ = markov_timings(ranks=10, iters=600, seed=2)
    f = fit(T, 3)
    labels = decode(f, T)
    for r in f.summary(T, labels)["regimes"]:
        picked = T[labels == r["regime"]]
        assert r["mean"] == pytest.approx(picked.mean(), rel=1e-12)
        assert r["share"] == pytest.approx(picked.size / T.size)


def test_a_fit_that_may_take_minutes_is_announced_before_it_starts():
    class Announced(Exception):
        pass

    def stop(message):
        raise Announced(message)

    T = np.random.default_rng(0).lognormal(0, 0.3, size=(20, 2000))
    with pytest.raises(Announced, match="fitting 64 regimes to 40,000 samples takes up to about 18 CPU minutes"):
        fit(T, 64, note=stop)
    heard = []
    fit(T[:, :200], note=heard.append)  # the default choice among 1..6 on 4,000 samples: seconds
    assert heard == []


def test_blank_lines_complex_arrays_and_inputs_of_different_lengths(tmp_path):
    # blank lines an editor leaves at the end are not rows of missing times
    f = tmp_path / "t.csv"
    f.write_text("rank,iteration,time\n0,0,1.0\n0,1,2.0\n1,0,1.5\n1,1,2.5\n\n\n")
    assert np.array_equal(load(f), [[1.0, 2.0], [1.5, 2.5]])
    (tmp_path / "w.csv").write_text("1.0,2.0,3.0\n1.5,2.5,3.5\n\n")
    assert np.array_equal(load(tmp_path / "w.csv"), [[1.0, 2.0, 3.0], [1.5, 2.5, 3.5]])
    # one inside the table is a row without a rank, said so
    f.write_text("rank,iteration,time\n0,0,1.0\n\n0,1,2.0\n1,0,1.5\n1,1,2.5\n")
    with pytest.raises(DataError, match=r"data row 2 has no 'rank' \(1 row\(s\) without one\)"):
        load(f)
    np.save(tmp_path / "c.npy", np.ones((2, 40)) * (1 + 1j))
    with pytest.raises(DataError, match="expected real times, got an array of complex128"):
        load(tmp_path / "c.npy")
    # totals compare the iterations both inputs have; the summary says so
    rng = np.random.default_rng(1)
    a, b = 1 + 0.1 * rng.random((4, 60)), 1 + 0.1 * rng.random((4, 40))
    s = analyze({"a": a, "b": b}, tmp_path / "out", n_regimes=1, figures_on=False)["comparisons"]
    assert s["iterations_compared"] == 40 and "different iteration counts (a 60, b 40)" in s["note"]
    expected = (a.max(axis=0)[:40].sum() / b.max(axis=0).sum() - 1) * 100
    assert s["percent_difference_total_tmax"]["a vs b"] == pytest.approx(expected, rel=1e-12)
