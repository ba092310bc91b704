"""Results and flags that `report`, `analyze` and `reproduce` cannot use:
each gives an error naming the file or the flag (exit 1 for a damaged result,
2 for bad command-line input), never a traceback, and nothing is ignored
without a word."""

import json

import polars as pl
import pytest

import idlewave
from conftest import invoke_cli
from idlewave import analyze
from idlewave.results import UnreadableResult
from idlewave.scenario import ScenarioError, validate
from idlewave.studies.reproduce import CHEB_MIN_RANKS

pytestmark = pytest.mark.integration


def bsp(**kw) -> dict:
    return {"kind": "bsp", "ranks": 4, "iterations": 3, "compute_s": 1e-5, "distances": [1], "message_bytes": 8} | kw


def run(out, workload: dict | None = None, explain: bool = False):
    idlewave.simulate({"seed": 1, "workload": workload or bsp()}, explain=explain).write(out)
    return out


def refused(p, code: int, *names: str) -> None:
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "error: " in p.stderr, p.stderr
    for name in names:
        assert name in p.stderr, (name, p.stderr)


DAMAGE = {"summary.json": b"{x", "explain.json": b"[1,\n", "timers.parquet": b"PAR1 cut short"}


@pytest.mark.parametrize("name", DAMAGE)
def test_a_report_of_one_damaged_run_fails_naming_the_file(tmp_path, name):
    d = run(tmp_path / "run", explain=True)
    (d / name).write_bytes(DAMAGE[name])
    refused(invoke_cli("report", d, check=False), 1, f"run/{name}")
    assert not (d / "report.html").exists()


def test_a_report_of_a_damaged_sweep_fails_naming_the_file(tmp_path):
    (tmp_path / "sweep.parquet").write_bytes(b"PAR1")
    refused(invoke_cli("report", tmp_path, check=False), 1, "sweep.parquet")


def test_a_damaged_result_below_the_directory_is_left_out_with_a_warning(tmp_path):
    run(tmp_path / "good")
    (run(tmp_path / "bad") / "timers.parquet").write_bytes(b"PAR1 cut short")
    p = invoke_cli("report", tmp_path, check=False)
    refused(p, 1, "bad/timers.parquet", "left out")
    assert "warning: left out of the report: " in p.stderr
    page = (tmp_path / "report.html").read_text()
    assert "Left out" in page and "bad/timers.parquet" in page and "<td>good</td>" in page
    # nothing readable at all: no page, an error listing what was left out
    (tmp_path / "good" / "summary.json").write_text("[]")
    (tmp_path / "report.html").unlink()
    refused(invoke_cli("report", tmp_path, check=False), 1, "no readable results", "good/summary.json", "bad/timers.parquet")
    assert not (tmp_path / "report.html").exists()


def test_missing_values_show_as_a_dash_not_none(tmp_path):
    pl.DataFrame({"id": ["a", "b"], "workload.ranks": [4, 0], "status": ["done", "failed"],
                  "makespan_s": [1e-3, None], "error": [None, "workload.ranks: must be between 1 and …"]}
                 ).write_parquet(tmp_path / "sweep.parquet")
    run(tmp_path / "empty", bsp(iterations=0))  # no iteration times at all
    invoke_cli("report", tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "None" not in page and page.count("<td>—</td>") >= 4


def test_analyze_pd_refuses_runs_that_are_not_one_run_with_and_without_barriers(tmp_path):
    with_b, free = run(tmp_path / "b", bsp(barrier=True)), run(tmp_path / "f", bsp(barrier=False))
    bcast = run(tmp_path / "bcast", {"kind": "collective", "collective": "bcast", "ranks": 8, "iterations": 1})
    more = run(tmp_path / "more", bsp(barrier=False, iterations=4))
    assert analyze.pd(with_b, free)["iterations"] == 3  # the right pair is measured
    with pytest.raises(analyze.AnalysisError, match=r"/f: has no barriers .*/b is the one with barriers: give it first"):
        analyze.pd(free, with_b)
    with pytest.raises(analyze.AnalysisError, match=r"b: has barriers too"):
        analyze.pd(with_b, with_b)
    with pytest.raises(analyze.AnalysisError, match=r"bcast: its workload \('collective'\) has no barrier option"):
        analyze.pd(bcast, free)
    with pytest.raises(analyze.AnalysisError, match=r"not the same run apart from the barrier: workload.kind \('bsp' vs "
                                                    r"'collective'\), workload.ranks \(4 vs 8\)"):
        analyze.pd(with_b, bcast)
    with pytest.raises(analyze.AnalysisError, match=r"workload.iterations \(3 vs 4\)"):
        analyze.pd(with_b, more)
    refused(invoke_cli("analyze", "pd", free, with_b, check=False), 2, "give it first")
    for cost in ("-1", "nan", "inf"):
        with pytest.raises(analyze.AnalysisError, match="--barrier-cost: seconds per barrier, a finite number >= 0"):
            analyze.pd(with_b, free, float(cost))
    refused(invoke_cli("analyze", "pd", with_b, free, "--barrier-cost", "-1", check=False), 2, "--barrier-cost")
    with pytest.raises(analyze.AnalysisError, match=r"--barrier-cost 1.0 s: 3 barriers of it take longer than the barrier "
                                                    r"run's makespan"):  # (blamed on "runtimes" before)
        analyze.pd(with_b, free, 1.0)
    for fraction in ("-1", "0", "1", "nan", "1e30"):  # blamed on the data before
        refused(invoke_cli("analyze", "idle-wave", free, "--threshold", fraction, check=False), 2, "--threshold")


def test_analyze_refuses_damaged_or_empty_results_naming_them(tmp_path):
    refused(invoke_cli("analyze", "idle-wave", run(tmp_path / "it0", bsp(iterations=0)), check=False), 2, "it0", "0 iterations")
    cut = run(tmp_path / "cut")
    (cut / "timers.parquet").write_bytes(b"PAR1 cut short")
    refused(invoke_cli("analyze", "idle-wave", cut, check=False), 1, "cut/timers.parquet")
    bad = run(tmp_path / "bad", bsp(barrier=True))
    (bad / "summary.json").write_text("{\n")
    refused(invoke_cli("analyze", "pd", bad, run(tmp_path / "free", bsp(barrier=False)), check=False), 1, "bad/summary.json")
    # a timers table that does not match its summary (another run's file copied in)
    other = run(tmp_path / "other", bsp(ranks=6))
    (other / "timers.parquet").replace(bad / "timers.parquet")
    (bad / "summary.json").write_text(json.dumps(idlewave.simulate({"workload": bsp()}).summary))
    with pytest.raises(UnreadableResult, match=r"bad/timers.parquet: not one row per rank and iteration"):
        analyze.load(bad)


def test_reproduce_refuses_an_out_that_is_not_a_directory(tmp_path):
    (tmp_path / "afile").write_text("kept")
    refused(invoke_cli("reproduce", "krylov-kernels", "--out", tmp_path / "afile", check=False), 2, "--out", "afile",
            "not a directory")
    assert (tmp_path / "afile").read_text() == "kept"


@pytest.mark.parametrize("args, names", [
    (["krylov-kernels", "--ranks", "3", "--seed", "5"], ["krylov-kernels does not take --ranks or --seed", "--iterations"]),
    (["chebfd", "--ranks", "1280,2560"], ["--ranks: chebfd runs at one scale"]),
    (["grid-broadcasts", "--iterations", "3"], ["grid-broadcasts does not take --iterations", "it takes --ranks"]),
    (["grid-broadcasts", "--seed", "3"], ["grid-broadcasts does not take --seed"]),
    (["--seed", "3"], ["chebfd does not take --seed", "name the ones to run"]),
    (["noise-collectives", "--seed", "-1"], ["--seed: an integer from 0 to 2^64 - 1, got -1"]),
    (["chebfd", "--ranks", "7"], ["--ranks: chebfd needs at least 562 ranks", "got 7"]),
    (["noise-apps", "--ranks", "3000000000"], ["--ranks: at most 2147483648 ranks"]),
])
def test_reproduce_refuses_flags_a_study_would_ignore_or_cannot_run_naming_the_flag(tmp_path, args, names):
    p = invoke_cli("reproduce", *args, "--out", tmp_path / "out", check=False)
    refused(p, 2, *names)
    assert "<dict>" not in p.stderr and not (tmp_path / "out").exists()  # refused before anything ran


def test_chebfd_needs_the_ranks_the_engine_asks_for():
    """CHEB_MIN_RANKS is the engine's rule for Table 7's decompositions (its largest partner offset + 1)."""
    w = {"kind": "chebfd", "subspace": 4, "block": 2, "degree": 1, "preset": "M8"}
    validate({"workload": {**w, "ranks": CHEB_MIN_RANKS}})
    with pytest.raises(ScenarioError, match="workload.offsets"):
        validate({"workload": {**w, "ranks": CHEB_MIN_RANKS - 1}})
