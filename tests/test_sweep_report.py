"""Sweeps on a local Dask cluster, and the HTML report (rendered in headless
Chromium when it is installed)."""

import shutil
import subprocess

import polars as pl
import pytest

from conftest import EXAMPLES

STUDY = """
name = "barrier under noise"
[base.workload]
kind = "bsp"
ranks = 32
iterations = 30
[grid]
"workload.barrier" = [false, true]
"noise" = [[], [{kind = "poisson", rate_hz = 2000.0, duration_s = 2e-5}]]
[[points]]
workload.ranks = 0
"""


def test_sweep_runs_points_records_failures_and_skips_finished(cli, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    cli("sweep", study, "--out", tmp_path / "out", "--workers", "2", "--quiet")
    t = pl.read_parquet(tmp_path / "out" / "sweep.parquet")
    assert t.height == 5 and t.filter(pl.col("status") == "done").height == 4
    bad = t.filter(pl.col("status") == "failed").to_dicts()[0]
    assert "workload.ranks" in bad["error"]
    done = sorted((tmp_path / "out" / "points").glob("*/summary.json"))
    stamps = [p.stat().st_mtime_ns for p in done]
    said = cli("sweep", study, "--out", tmp_path / "out", "--quiet").stdout
    assert [p.stat().st_mtime_ns for p in done] == stamps  # finished points are not run again
    assert "4 reused" in said
    # a changed base is a different scenario: nothing is reused
    study.write_text(STUDY.replace("[base.workload]", "[base.network]\nL_s = 1e-6\n[base.workload]"))
    said = cli("sweep", study, "--out", tmp_path / "out", "--quiet").stdout
    assert "0 reused" in said and len(list((tmp_path / "out" / "points").glob("*/summary.json"))) == 8
    # the barrier costs more than it saves under noise, in every pair
    m = {(r["workload.barrier"], r["noise"] != "[]"): r["makespan_s"] for r in t.filter(pl.col("status") == "done").to_dicts()}
    assert m[True, False] > m[False, False] and m[True, True] > m[False, True]


def test_report_is_self_contained_and_renders(cli, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    cli("sweep", study, "--out", tmp_path / "r" / "sweep", "--quiet")
    cli("simulate", EXAMPLES / "idle-wave.toml", "--out", tmp_path / "r" / "iw", "--quiet")
    cli("report", tmp_path / "r")
    page = (tmp_path / "r" / "report.html").read_text()
    assert "Speedup by workload.barrier" in page and "Idle waves" in page
    assert "src=\"http" not in page and "<link" not in page  # nothing external
    assert page.count("data:image/png;base64,") >= 2
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium) — the page was checked statically only")
    p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000", "--dump-dom",
                        (tmp_path / "r" / "report.html").as_uri()], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0
    import re
    figs, rendered = map(int, re.search(r'data-figures="(\d+)" data-rendered="(\d+)"', p.stdout).groups())
    assert figs >= 2 and rendered == figs
    assert "Uncaught" not in p.stderr


def test_report_of_an_empty_directory_is_an_error(cli, tmp_path):
    p = cli("report", tmp_path, check=False)
    assert p.returncode == 2 and "no results found" in p.stderr
