"""A held-out battery for regime extraction (issue 18): overlapping means,
heavy tails, outliers, rare regimes, regimes on a few ranks, log-normal
timings and one-regime data. Each case draws per-rank Markov regime
chains with its own seed; the extraction must find the true count, label
≥ 95% of the samples right, and never add a regime to one-regime data."""

from __future__ import annotations

import numpy as np
import pytest

from idlewave.stats import decode, fit

pytestmark = pytest.mark.unit


def chains(rng, ranks, iters, stay):
    """Independent per-rank Markov chains over len(stay) regimes (uniform exits)."""
    n = len(stay)
    P = np.array([[stay[i] if i == j else (1 - stay[i]) / max(n - 1, 1) for j in range(n)] for i in range(n)])
    s = np.zeros((ranks, iters), dtype=int)
    u = rng.random((ranks, iters))
    cum = P.cumsum(axis=1)
    for k in range(1, iters):
        s[:, k] = (u[:, k, None] > cum[s[:, k - 1]]).sum(axis=1)
    return s


def case(name, rng, ranks=40, iters=300):
    if name == "one regime, normal":
        return 1e-3 + 5e-5 * rng.standard_normal((ranks, iters)), None, 1
    if name == "one regime, log-normal cv 0.3":
        return 1e-3 * rng.lognormal(0, 0.3, (ranks, iters)), None, 1
    if name == "means 1.5 sigma apart":
        lab = chains(rng, ranks, iters, (0.98, 0.95))
        return 1e-3 + 1e-4 * (1.5 * lab + rng.standard_normal(lab.shape)), lab, 2
    if name == "heavy tails (Student t, 3 dof)":
        lab = chains(rng, ranks, iters, (0.98, 0.9))
        return 1e-3 * (1 + 0.5 * lab) * np.exp(0.05 * rng.standard_t(3, lab.shape)), lab, 2
    if name == "1% Pareto outliers":
        lab = chains(rng, ranks, iters, (0.98, 0.9))
        T = 1e-3 * (1 + 0.5 * lab) + 3e-5 * rng.standard_normal(lab.shape)
        out = rng.random(lab.shape) < 0.01
        T[out] += 1e-3 * (rng.pareto(1.5, out.sum()) + 1)
        return T, lab, 2
    if name == "rare regime, 0.5% of samples":
        lab = chains(rng, ranks, iters, (0.9995, 0.9))
        return 1e-3 * (1 + lab) + 3e-5 * rng.standard_normal(lab.shape), lab, 2
    if name == "regime on 3 of 200 ranks":
        lab = np.zeros((200, iters), dtype=int)
        lab[rng.choice(200, 3, replace=False)] = chains(rng, 3, iters, (0.97, 0.97))
        return 1e-3 * (1 + 0.5 * lab) * np.exp(0.03 * rng.standard_normal(lab.shape)), lab, 2
    if name == "wide heavy slow regime (HMM paper Table 1 shape)":
        lab = chains(rng, ranks, iters, (0.97, 0.85))
        fast, slow = 1e-3 * np.exp(0.03 * rng.standard_normal(lab.shape)), 1.6e-3 * np.exp(0.3 * rng.standard_normal(lab.shape))
        return np.where(lab == 1, slow, fast), lab, 2
    if name == "three regimes":
        lab = chains(rng, ranks, iters, (0.97, 0.93, 0.9))
        return np.array([1.0, 1.3, 2.5])[lab] * 1e-3 * np.exp(0.04 * rng.standard_normal(lab.shape)), lab, 3
    raise KeyError(name)


CASES = ["one regime, normal", "one regime, log-normal cv 0.3", "means 1.5 sigma apart", "heavy tails (Student t, 3 dof)",
         "1% Pareto outliers", "rare regime, 0.5% of samples", "regime on 3 of 200 ranks",
         "wide heavy slow regime (HMM paper Table 1 shape)", "three regimes"]


@pytest.mark.parametrize("name", CASES)
def test_battery(name):
    # seeds apart from those the method was tuned on (100, 101)
    T, truth, n = case(name, np.random.default_rng(7))
    f = fit(T, restarts=3)
    assert f.n_regimes == n, (name, {k: (round(v["bic"]), v["persistent"]) for k, v in f.criteria.items()})
    if truth is not None:
        labels = decode(f, T)
        assert (labels == truth).mean() >= 0.95, name
        slow = truth == n - 1
        assert (labels[slow] == n - 1).mean() >= 0.9, name  # the slow regime is found, not absorbed


def test_regimes_refuses_a_table_that_is_not_timings_per_rank_and_iteration(tmp_path):
    """Any table of numbers was read as a ranks × iterations matrix: a
    ping-pong's sizes and times gave regimes of bytes and seconds. A table
    that is neither long (rank, iteration, time) nor wide (a column per
    iteration) is refused, naming the file, what was expected and what it
    has; so is a sweep's output directory."""
    import polars as pl

    from conftest import invoke_cli

    rng = np.random.default_rng(0)
    sizes = np.repeat(2 ** np.arange(20), 10)
    pingpong = pl.DataFrame({"size_bytes": sizes, "rep": np.tile(np.arange(1, 11), 20),
                             "time_s": 1e-6 + sizes * 1e-10 * (1 + 0.1 * rng.random(sizes.size))})
    pingpong.write_parquet(tmp_path / "pingpong.parquet")
    pingpong.write_csv(tmp_path / "pingpong.csv")
    (tmp_path / "sweep" / "points").mkdir(parents=True)
    pl.DataFrame({"id": ["a"], "status": ["done"], "makespan_s": [1e-3]}).write_parquet(tmp_path / "sweep" / "sweep.parquet")
    cases = {"pingpong.parquet": "it has size_bytes, rep, time_s", "pingpong.csv": "it has size_bytes, rep, time_s",
             "sweep": "a sweep's output, not timings T[p, k]"}
    for name, says in cases.items():
        p = invoke_cli("regimes", tmp_path / name, "--out", tmp_path / "o", "--regimes", "2", "--restarts", "1",
                       "--no-figures", check=False)
        assert p.returncode == 2 and f"{tmp_path / name}: " in p.stderr and says in p.stderr, (name, p.stderr)
        assert "expected a wide table" in p.stderr or name == "sweep", p.stderr
        assert "Traceback" not in p.stderr and not (tmp_path / "o").exists()
    # a wide table with a column per iteration (named, or numbered) is timings
    T = 1e-3 * (1 + 0.01 * rng.random((4, 60)))
    pl.DataFrame({f"it{k}": T[:, k] for k in range(60)}).write_parquet(tmp_path / "wide.parquet")
    (tmp_path / "wide.csv").write_text("".join(",".join(repr(float(x)) for x in row) + "\n" for row in T))
    for name in ("wide.parquet", "wide.csv"):
        p = invoke_cli("regimes", tmp_path / name, "--out", tmp_path / name.replace(".", "-"), "--regimes", "1",
                       "--restarts", "1", "--no-figures", "--json", check=False)
        assert p.returncode == 0, (name, p.stderr)
