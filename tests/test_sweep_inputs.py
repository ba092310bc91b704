"""`idlewave sweep`'s inputs checked before anything runs: the worker count,
the output directory, --set, nan and seeds, an empty study, an empty
scheduler address. Each mistake was found by running every point (or
starting a cluster) first; each is now one line, exit code 2, nothing
written. Only the resuming test starts a cluster (one worker)."""

import os
import re
import time

import pytest

pytestmark = pytest.mark.integration

STUDY = '[base.workload]\nkind = "bsp"\nranks = 8\niterations = 5\n[grid]\n"workload.ranks" = [4, 8]\n'


def refused(p, *says: str) -> None:
    """Exit code 2, one line naming what is wrong, no traceback."""
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    for s in says:
        assert s in p.stderr, (s, p.stderr)


@pytest.fixture
def study(tmp_path):
    s = tmp_path / "study.toml"
    s.write_text(STUDY)
    return s


def test_more_local_workers_than_the_cpus_take_are_refused_before_a_cluster_starts(cli, study, tmp_path, monkeypatch):
    """--workers 100000 started Dask workers one by one for minutes (and
    SIGTERM waited for them all); a local cluster has at most 2 per CPU."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)  # one CPU: at most 2 workers
    start = time.monotonic()
    refused(cli("sweep", study, "--out", tmp_path / "out", "--quiet", "--workers", "3", check=False),
            "--workers 3", "at most 2 workers", "2 per CPU")
    refused(cli("sweep", study, "--out", tmp_path / "out", "--quiet", "--workers", "100000", check=False), "--workers 100000")
    assert time.monotonic() - start < 10 and not (tmp_path / "out").exists()
    assert "at most 2 per CPU available" in re.sub(r"[\s│]+", " ", cli("sweep", "--help").stdout)  # (help wraps in a box)
    from idlewave.sweep import max_local_workers

    assert max_local_workers() == 2


def test_an_out_that_is_not_a_sweeps_own_is_refused_and_a_sweeps_own_is_resumed(cli, study, tmp_path):
    """--out into a user's directory, or another command's result, added
    points/, study.json and sweep.parquet beside what was there. A sweep's
    own output with a file of the user's in it is still resumed."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("hi\n")
    refused(cli("sweep", study, "--out", mine, "--quiet", "--workers", "1", check=False),
            f"--out {mine}: is not a sweep's output", "'keep.txt'")
    assert sorted(p.name for p in mine.iterdir()) == ["keep.txt"]
    (tmp_path / "scn.toml").write_text('[workload]\nkind = "bsp"\nranks = 4\niterations = 2\n')
    cli("simulate", tmp_path / "scn.toml", "--out", tmp_path / "run", "--quiet")
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    refused(cli("sweep", study, "--out", tmp_path / "run", "--quiet", "--workers", "1", check=False),
            f"--out {tmp_path / 'run'}: is another command's result")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before
    from idlewave.results import RefusedOutput
    from idlewave.sweep import run_sweep

    with pytest.raises(RefusedOutput, match="keep.txt"):
        run_sweep(study, mine, workers=1)
    # an empty directory is taken; its sweep's own output, whole or interrupted (only points/), is resumed
    out = tmp_path / "out"
    out.mkdir()
    cli("sweep", study, "--out", out, "--quiet", "--workers", "1")
    cli("report", out, "--quiet")
    assert "2 reused" in cli("sweep", study, "--out", out, "--quiet", "--workers", "1").stdout
    for name in ("study.json", "sweep.parquet", "report.html"):
        (out / name).unlink()
    assert "2 reused" in cli("sweep", study, "--out", out, "--quiet", "--workers", "1").stdout
    # a note the user added to the sweep's output stays, and the sweep is still resumed (it was refused)
    (out / "notes.txt").write_text("mine\n")
    assert "2 reused" in cli("sweep", study, "--out", out, "--quiet", "--workers", "1").stdout
    assert (out / "notes.txt").read_text() == "mine\n"


def test_a_set_no_scenario_has_is_refused_before_any_point_runs(cli, study, tmp_path):
    """--set workload.nope=1 ran every point, each failing with the same error."""
    refused(cli("sweep", study, "--out", tmp_path / "out", "--quiet", "--workers", "1", "--set", "workload.nope=1",
                check=False), "--set workload.nope: unknown key")
    refused(cli("sweep", study, "--out", tmp_path / "out", "--quiet", "--workers", "1", "--set", "netwrk.L_s=1e-6",
                check=False), "--set netwrk.L_s: unknown key")
    assert not (tmp_path / "out").exists()


def test_nan_and_seeds_past_64_bits_are_refused_as_written(cli, study, tmp_path):
    """A nan reached each point as None ("expected a number, got None"), and
    seeds past 2^64 - 1 as floats ("expected an integer, got 1.8e+19")."""
    out = tmp_path / "out"

    def sweep(*args):
        return cli("sweep", *args, "--out", out, "--quiet", "--workers", "1", check=False)

    refused(sweep(study, "--set", "workload.compute_s=nan"), "--set workload.compute_s: must be a finite number, got nan")
    refused(sweep(study, "--set", 'noise=[{kind = "poisson", rate_hz = inf, duration_s = 1e-6}]'),
            "--set noise: must be a finite number, got inf (noise[0].rate_hz)")
    grid = tmp_path / "grid.toml"
    grid.write_text(STUDY + '"workload.compute_s" = [1e-6, nan]\n')
    refused(sweep(grid), f"{grid}: grid.workload.compute_s[1]: must be a finite number, got nan")
    grid.write_text(STUDY + '[[points]]\nworkload.compute_s = -inf\n')
    refused(sweep(grid), f"{grid}: points[0].workload.compute_s: must be a finite number, got -inf")
    grid.write_text(STUDY.replace("iterations = 5", "iterations = 5\ncompute_s = nan"))
    refused(sweep(grid), f"{grid}: base.workload.compute_s: must be a finite number, got nan")
    reps = tmp_path / "reps.toml"
    reps.write_text("replications = 3\n" + STUDY)
    refused(sweep(reps, "--set", "seed=18446744073709551615"),
            "--set seed=18446744073709551615: with replications = 3 the seeds run to 18446744073709551617",
            "at most 18446744073709551613")
    refused(sweep(study, "--set", "seed=18446744073709551616"), "--set seed: 18446744073709551616 is beyond")
    assert not out.exists()


def test_a_study_with_no_scenario_and_nothing_to_vary_is_refused(cli, tmp_path):
    """An empty study ran one point of the built-in default scenario, exit 0."""
    empty = tmp_path / "e.toml"
    for text in ("", 'name = "nothing"\n', "[base]\n[grid]\n"):
        empty.write_text(text)
        refused(cli("sweep", empty, "--out", tmp_path / "out", "--quiet", "--workers", "1", check=False),
                f"{empty}: nothing to run: a study needs a base scenario", "[grid]")
    assert not (tmp_path / "out").exists()
    from idlewave.scenario import ScenarioError
    from idlewave.sweep import load_study

    with pytest.raises(ScenarioError, match="nothing to run"):
        load_study(empty)


def test_an_empty_scheduler_address_is_refused(cli, study, tmp_path):
    """--scheduler "" ran the sweep on a local cluster."""
    for address in ("", "  "):
        refused(cli("sweep", study, "--out", tmp_path / "out", "--quiet", "--workers", "1", "--scheduler", address,
                    check=False), "--scheduler: an empty address")
    assert not (tmp_path / "out").exists()
    from idlewave.sweep import SchedulerError, run_sweep

    with pytest.raises(SchedulerError, match="empty scheduler address"):
        run_sweep(study, tmp_path / "out", scheduler="")

