"""Sweeps on a local Dask cluster, and the HTML report (rendered in headless
Chromium when it is installed)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from conftest import EXAMPLES

pytestmark = pytest.mark.integration

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
    p = cli("sweep", study, "--out", tmp_path / "out", "--workers", "2", "--quiet", check=False)
    assert p.returncode == 1 and "1 of 5 points failed" in p.stderr  # a failed point is not a success
    t = pl.read_parquet(tmp_path / "out" / "sweep.parquet")
    assert t.height == 5 and t.filter(pl.col("status") == "done").height == 4
    bad = t.filter(pl.col("status") == "failed").to_dicts()[0]
    assert "workload.ranks" in bad["error"] and bad["error"].startswith(f'{study} (point {{"workload.ranks": 0}}): ')
    done = sorted((tmp_path / "out" / "points").glob("*/summary.json"))
    stamps = [p.stat().st_mtime_ns for p in done]
    said = cli("sweep", study, "--out", tmp_path / "out", "--quiet", check=False).stdout
    assert [p.stat().st_mtime_ns for p in done] == stamps  # finished points are not run again
    assert "4 reused" in said
    # a changed base is a different scenario: nothing is reused
    study.write_text(STUDY.replace("[base.workload]", "[base.network]\nL_s = 1e-6\n[base.workload]"))
    said = cli("sweep", study, "--out", tmp_path / "out", "--quiet", check=False).stdout
    assert "0 reused" in said and len(list((tmp_path / "out" / "points").glob("*/summary.json"))) == 8
    # the report shows the sweep's points, not the earlier base's beside them
    cli("report", tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Not shown: 4 point directories of earlier runs" in page
    current = pl.read_parquet(tmp_path / "out" / "sweep.parquet")["id"].to_list()
    earlier = [d.name for d in (tmp_path / "out" / "points").iterdir() if d.name not in current]
    assert len(earlier) == 4 and not any(e in page for e in earlier)
    assert all(page.count(f"<td>{c}</td>") == 1 for c in current)  # each point once, in the sweep's table
    # the barrier costs more than it saves under noise, in every pair
    m = {(r["workload.barrier"], r["noise"] != "[]"): r["makespan_s"] for r in t.filter(pl.col("status") == "done").to_dicts()}
    assert m[True, False] > m[False, False] and m[True, True] > m[False, True]


def test_a_damaged_point_runs_again_and_bad_worker_counts_are_refused(cli, tmp_path):
    """A point whose summary.json was damaged is not reused (a rerun used to end in a
    traceback); --workers below 1 is refused at once (-1 hung, 0 ran anyway)."""
    study = tmp_path / "study.toml"
    study.write_text('[base.workload]\nkind = "bsp"\nranks = 8\niterations = 5\n[grid]\n"workload.barrier" = [false, true]\n')
    for bad in ("0", "-1"):
        p = cli("sweep", study, "--out", tmp_path / "x", "--workers", bad, check=False)
        assert p.returncode == 2 and "--workers" in p.stderr and not (tmp_path / "x").exists(), p.stderr
    cli("sweep", study, "--out", tmp_path / "out", "--workers", "1", "--quiet")
    first = sorted((tmp_path / "out" / "points").glob("*/summary.json"))[0]
    events = json.loads(first.read_text())["events"]
    first.write_text("{bad")
    said = cli("sweep", study, "--out", tmp_path / "out", "--workers", "1", "--quiet").stdout
    assert "1 reused" in said and json.loads(first.read_text())["events"] == events


def test_a_sweep_reads_its_base_files_where_they_are_and_reruns_points_whose_files_changed(cli, tmp_path):
    # the base file in its own directory, naming a platform file and a partner
    # file beside it; the study elsewhere
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    shutil.copy(EXAMPLES / "spmv_partners.txt", inputs / "partners.txt")
    (inputs / "plat.toml").write_text("[network]\nL_s = 3e-6\n")
    (inputs / "scn.toml").write_text('[network]\nplatform = "plat.toml"\n[workload]\nkind = "spmv"\nranks = 8\n'
                                     'iterations = 5\npartners_file = "partners.txt"\n')
    study = tmp_path / "study.toml"
    study.write_text('base = "inputs/scn.toml"\n[grid]\n"workload.iterations" = [5]\n')
    out = tmp_path / "out"
    said = cli("sweep", study, "--out", out, "--quiet").stdout
    assert "0 failed" in said
    first = pl.read_parquet(out / "sweep.parquet")["makespan_s"][0]
    # the partner file changes (rank 0 and 5 exchange far more): the point runs again
    text = (inputs / "partners.txt").read_text()
    (inputs / "partners.txt").write_text(text.replace("3000", "300000"))
    assert text != (inputs / "partners.txt").read_text()
    said = cli("sweep", study, "--out", out, "--quiet").stdout
    assert "0 reused" in said and pl.read_parquet(out / "sweep.parquet")["makespan_s"][0] > first
    # a point's directory holding another run is run again, not reported
    (point,) = pl.read_parquet(out / "sweep.parquet")["id"]
    second = pl.read_parquet(out / "sweep.parquet")["makespan_s"][0]
    cli("simulate", EXAMPLES / "idle-wave.toml", "--out", out / "points" / point, "--quiet")
    said = cli("sweep", study, "--out", out, "--quiet").stdout
    assert "0 reused" in said and pl.read_parquet(out / "sweep.parquet")["makespan_s"][0] == second


def test_report_is_self_contained_and_renders(cli, tmp_path):
    import re

    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    cli("sweep", study, "--out", tmp_path / "r" / "sweep", "--quiet", check=False)
    cli("simulate", EXAMPLES / "idle-wave.toml", "--out", tmp_path / "r" / "iw", "--quiet")
    cli("report", tmp_path / "r")
    page = (tmp_path / "r" / "report.html").read_text()
    assert "speedup by workload.barrier (vs False)" in page and "Idle waves" in page
    assert "src=\"http" not in page and "<link" not in page  # nothing external
    # figures are SVG, inline, by default; PNG on request
    assert page.count("<figure class=\"fig\"><svg") >= 2 and 'src="data:image/png' not in page
    cli("report", tmp_path / "r", "--png", "-o", tmp_path / "png.html")
    png = (tmp_path / "png.html").read_text()
    assert png.count("data:image/png;base64,") >= 2 and "<svg" not in png
    # a table of contents whose every link leads to a heading of the page, one per section
    toc = re.search(r'<nav class="toc".*?</nav>', page, re.DOTALL)[0]
    links = re.findall(r'href="#([^"]+)"', toc)
    ids = re.findall(r'<h[23] id="([^"]+)"', page)
    assert links and sorted(links) == sorted(ids) and len(set(ids)) == len(ids)
    assert page.index("<nav class=\"toc\"") < page.index("<h1>")  # at the top
    # each result once: the sweep's points in one table (speedups as its columns), not again as runs
    assert page.count("<h2") == len(re.findall(r"<h2 id=", page)) == 2  # Sweeps and Runs (the idle wave)
    assert page.count("<table>") == 3  # the sweep's points, the runs, the idle waves
    assert ">Speedup by" not in page and "points/" not in page
    assert page.count("@media print") == 1 and "break-inside:avoid" in page and "nav.toc{display:none}" in page
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install chromium) — the page was checked statically only")
    import matplotlib.image

    for width in (1280, 800):  # the sidebar's width and a narrow window: drawn, nothing wider than the window
        p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom",
                            (tmp_path / "r" / "report.html").as_uri()], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "Uncaught" not in p.stderr
        figs, rendered, wide = map(int, re.search(r'data-figures="(\d+)" data-rendered="(\d+)" data-width="(\d+)"',
                                                  p.stdout).groups())
        assert figs >= 2 and rendered == figs
        assert wide <= width, (width, wide)  # a wide table scrolls in its own box
        # the page as a reader sees it: drawn, neither blank nor a solid block
        shot = tmp_path / f"shot{width}.png"
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--window-size={width},3000", f"--screenshot={shot}", (tmp_path / "r" / "report.html").as_uri()],
                       capture_output=True, timeout=120)
        pixels = matplotlib.image.imread(shot)[..., :3]
        inked = (pixels.mean(axis=2) < 0.9).mean()
        assert 0.02 < inked < 0.6, (width, inked)


def test_one_colour_per_series_in_every_figure(cli, tmp_path):
    """A series (a strategy, a run, a cause) has one colour, taken from
    results.series_colour by every figure: the report's inline SVGs draw it so."""
    from idlewave import explain, report, results, timeline
    from idlewave.stats import figures

    assert results.series_colour("a run") == results.series_colour("a run") != results.series_colour("another run")
    assert explain._COLOUR == {k: results.series_colour(k) for k in explain.CAUSES}
    assert timeline.NOISE_COLOUR == results.series_colour("noise")
    assert figures.COLORS == list(results.PALETTE)
    for name in ("iw", "iw-again"):
        cli("simulate", EXAMPLES / "idle-wave.toml", "--out", tmp_path / "r" / name, "--quiet")
    ranking = {"strategy": "workload.algorithm", "level": 0.95, "replications": 2, "conditions": [
        {"condition": {"noise": "[]"}, "ranking": [
            {"rank": 1, "strategy": "iw", "makespan_mean_s": 1e-3, "makespan_ci_s": 1e-4, "replications": 2,
             "slowest_iteration_mean_s": 1e-4},
            {"rank": 2, "strategy": "binomial", "makespan_mean_s": 2e-3, "makespan_ci_s": 1e-4, "replications": 2,
             "slowest_iteration_mean_s": 2e-4, "slower_than_best": 2.0}]}]}
    import polars as pl

    (tmp_path / "r" / "study").mkdir()
    pl.DataFrame({"id": ["a", "b"], "status": ["done", "done"], "workload.algorithm": ["iw", "binomial"],
                  "makespan_s": [1e-3, 2e-3]}).write_parquet(tmp_path / "r" / "study" / "sweep.parquet")
    (tmp_path / "r" / "study" / "ranking.json").write_text(json.dumps(ranking))
    page = report.build(tmp_path / "r").read_text()
    svgs = re.findall(r"<svg.*?</svg>", page, re.DOTALL)
    bars = next(s for s in svgs if f"fill: {results.series_colour('binomial')}" in s)  # the ranking's
    lines = next(s for s in svgs if f"stroke: {results.series_colour('iw-again')}" in s)  # the runs'
    assert bars != lines
    # "iw" is a strategy in the bars and a run in the lines: the same colour in both
    assert f"fill: {results.series_colour('iw')}" in bars and f"stroke: {results.series_colour('iw')}" in lines
    assert results.series_colour("iw") != results.series_colour("iw-again")


def test_a_sweep_point_whose_result_is_gone_or_damaged_is_named_by_the_report(cli, tmp_path):
    """A point's summary.json truncated or deleted, or its directory deleted,
    after the sweep: the report said nothing (its table comes from
    sweep.parquet); now each is named on stderr and on the page, exit code 1,
    and the other points are shown."""
    import idlewave

    out = tmp_path / "sweep"
    ids = ["p-cut", "p-deleted", "p-gone", "p-fine"]
    for i, pid in enumerate(ids):
        idlewave.simulate({"seed": 1, "workload": {"kind": "bsp", "ranks": 4, "iterations": 3 + i}}).write(out / "points" / pid)
    pl.DataFrame({"id": ids, "workload.iterations": [3, 4, 5, 6], "status": ["done"] * 4,
                  "makespan_s": [1e-3, 2e-3, 3e-3, 4e-3]}).write_parquet(out / "sweep.parquet")
    p = cli("report", out, check=False)
    assert p.returncode == 0, p.stderr  # every point's result there: no warning
    summary = out / "points" / "p-cut" / "summary.json"
    summary.write_bytes(summary.read_bytes()[:20])
    (out / "points" / "p-deleted" / "summary.json").unlink()
    shutil.rmtree(out / "points" / "p-gone")
    p = cli("report", out, check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    for pid in ("p-cut", "p-deleted", "p-gone"):
        assert f"warning: left out of the report: {out / 'points' / pid}" in p.stderr, (pid, p.stderr)
    assert "p-fine" not in p.stderr and "3 result(s) under" in p.stderr
    page = (out / "report.html").read_text()
    assert "Left out" in page and all(f"points/{pid}" in page for pid in ("p-cut", "p-deleted", "p-gone"))
    assert "<td>p-fine</td>" in page
    # the same points, without the table (a sweep stopped before writing it): runs, the two damaged named
    (out / "sweep.parquet").unlink()
    p = cli("report", out, check=False)
    assert p.returncode == 1 and "2 result(s) under" in p.stderr, p.stderr
    assert f"{out / 'points' / 'p-deleted' / 'summary.json'}: missing" in p.stderr
    assert f"{out / 'points' / 'p-cut' / 'summary.json'}: not valid JSON" in p.stderr


def test_report_of_an_empty_directory_is_an_error(cli, tmp_path):
    p = cli("report", tmp_path, check=False)
    assert p.returncode == 2 and "no results found" in p.stderr


RANKING = """
name = "broadcast algorithms under noise"
strategy = "workload.algorithm"
replications = 4
[base.workload]
kind = "collective"
collective = "bcast"
ranks = 32
iterations = 10
message_bytes = 1024
compute_s = 1e-4
[grid]
"workload.algorithm" = ["binomial", "linear"]
"noise" = [[], [{kind = "poisson", rate_hz = 2000.0, duration_s = 2e-5}]]
"""


def test_a_study_ranks_its_strategies_with_intervals(cli, tmp_path):
    import json

    study = tmp_path / "study.toml"
    study.write_text(RANKING)
    p = cli("sweep", study, "--out", tmp_path / "out", "--quiet", "--json")
    doc = json.loads(p.stdout)
    assert doc["points"] == 2 * 2 * 4 and doc["failed"] == 0
    r = doc["ranking"]
    assert r["strategy"] == "workload.algorithm" and len(r["conditions"]) == 2
    t = pl.read_parquet(tmp_path / "out" / "sweep.parquet")
    assert sorted(t["replica"].unique().to_list()) == [0, 1, 2, 3] and sorted(t["seed"].unique().to_list()) == [1, 2, 3, 4]
    for c in r["conditions"]:
        best, other = c["ranking"]
        # a binomial tree beats the root sending 31 messages in turn, in every condition
        assert best["strategy"] == "binomial" and best["makespan_mean_s"] < other["makespan_mean_s"]
        # the interval is Student's t over the four seeds' makespans
        runs = t.filter((pl.col("workload.algorithm") == "binomial") & (pl.col("noise") == list(c["condition"].values())[0]))
        from scipy import stats

        v = runs["makespan_s"].to_numpy()
        assert best["makespan_mean_s"] == pytest.approx(v.mean())
        assert best["makespan_ci_s"] == pytest.approx(stats.t.ppf(0.975, 3) * v.std(ddof=1) / 2)
        assert other["slower_than_best"] > 1 and "faster than linear" in other["verdict"]
    quiet, noisy = r["conditions"]
    assert quiet["ranking"][0]["makespan_ci_s"] == 0.0 and noisy["ranking"][0]["makespan_ci_s"] > 0
    assert (tmp_path / "out" / "ranking.png").stat().st_size > 0
    cli("report", tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Which workload.algorithm wins" in page and "faster than linear" in page


def test_a_study_refuses_a_strategy_it_does_not_sweep(cli, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(RANKING.replace('strategy = "workload.algorithm"', 'strategy = "workload.ranks"'))
    p = cli("sweep", study, "--out", tmp_path / "out", "--quiet", check=False)
    assert p.returncode == 2 and "strategy must name a key that every point sets" in p.stderr
    study.write_text(RANKING.replace("replications = 4", "replications = 0"))
    p = cli("sweep", study, "--out", tmp_path / "out", "--quiet", check=False)
    assert p.returncode == 2 and "replications must be a whole number" in p.stderr


DASK = str(Path(sys.executable).parent / "dask")
DASK_ENV = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}


@pytest.fixture
def scheduler(tmp_path):
    """A real `dask scheduler` process; yields its address."""
    info = tmp_path / "scheduler.json"
    sched = subprocess.Popen([DASK, "scheduler", "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=DASK_ENV)
    try:
        for _ in range(300):
            if info.exists() and info.stat().st_size:
                break
            time.sleep(0.1)
        yield json.loads(info.read_text())["address"]
    finally:
        sched.terminate()
        sched.wait(timeout=30)


def start_worker(address: str, cwd: Path | None = None) -> subprocess.Popen:
    """A real `dask worker` process (with its nanny, in a process group of its own)."""
    return subprocess.Popen([DASK, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
                            cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=DASK_ENV,
                            start_new_session=True)


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=30)


def test_a_sweep_on_a_running_scheduler_with_a_relative_out(tmp_path, scheduler):
    """A real `dask scheduler` and `dask worker` (its own working directory):
    a relative --out still lands where the client asked."""
    (tmp_path / "worker-wd").mkdir()
    worker = start_worker(scheduler, cwd=tmp_path / "worker-wd")
    try:
        study = tmp_path / "study.toml"
        study.write_text(RANKING.replace("replications = 4", "replications = 2"))
        client_wd = tmp_path / "client-wd"
        client_wd.mkdir()
        exe = Path(sys.executable).parent / "idlewave"
        p = subprocess.run([str(exe), "sweep", str(study), "--out", "rel-out", "--scheduler", scheduler, "--quiet"],
                           cwd=client_wd, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        assert len(list((client_wd / "rel-out" / "points").glob("*/summary.json"))) == 8
        assert not (tmp_path / "worker-wd" / "rel-out").exists()
        p = subprocess.run([str(exe), "sweep", str(study), "--out", "rel-out", "--scheduler", scheduler, "--quiet"],
                           cwd=client_wd, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and "8 reused" in p.stdout
    finally:
        stop(worker)


def test_a_worker_lost_mid_sweep_costs_no_finished_point(tmp_path, scheduler):
    """Two real workers; one is killed once some points are written. The
    sweep still finishes every point, and no point written before the loss
    is run (or written) again."""
    workers = [start_worker(scheduler) for _ in range(2)]
    sweep = None
    try:
        study = tmp_path / "study.toml"
        # 8 points of about a second each
        study.write_text('[base.workload]\nkind = "bsp"\nranks = 1024\ncompute_s = 1e-5\ndistances = [1]\n'
                         "[grid]\n\"workload.iterations\" = [200, 201, 202, 203, 204, 205, 206, 207]\n")
        out = tmp_path / "out"
        exe = Path(sys.executable).parent / "idlewave"
        sweep = subprocess.Popen([str(exe), "sweep", str(study), "--out", str(out), "--scheduler", scheduler, "--quiet"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 240
        while time.time() < deadline and len(list(out.glob("points/*/summary.json"))) < 2:
            time.sleep(0.05)

        def written() -> dict:
            return {p.parent.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("points/*/summary.json")}

        before = written()
        assert 2 <= len(before) < 8, "the sweep went too fast to lose a worker in the middle"
        stop(workers[0], signal.SIGKILL)  # the worker and its nanny
        _, stderr = sweep.communicate(timeout=300)
        assert sweep.returncode == 0, stderr
        after = written()
        assert len(after) == 8
        assert {k: after[k] for k in before} == before, "a point written before the loss was written again"
    finally:
        if sweep is not None and sweep.poll() is None:
            sweep.kill()
        for w in workers:
            stop(w)


def test_an_unreachable_scheduler_is_one_line(cli, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(RANKING)
    p = cli("sweep", study, "--out", tmp_path / "out", "--scheduler", "tcp://127.0.0.1:9", "--quiet", check=False)
    assert p.returncode == 2 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) <= 3


def test_a_sweep_of_jobs_keeps_each_jobs_makespan_and_slowdown(cli, tmp_path):
    """Each job's makespan and slowdown are columns of the sweep's table, as
    its point's summary gives them, and are results: the ranking does not
    take them for conditions to group by."""
    base = tmp_path / "jobs.toml"
    base.write_text((EXAMPLES / "jobs_sharing.toml").read_text().replace("iterations = 10", "iterations = 2"))
    study = tmp_path / "study.toml"
    study.write_text(f'name = "taper"\nbase = "{base}"\nstrategy = "network.links.taper"\n'
                     '[grid]\n"network.links.taper" = [1, 4]\n')
    doc = json.loads(cli("sweep", study, "--out", tmp_path / "out", "--quiet", "--json").stdout)
    t = pl.read_parquet(tmp_path / "out" / "sweep.parquet")
    for job in ("app", "hog"):
        for figure in ("makespan_s", "slowdown"):
            column = f"job_{job}_{figure}"
            assert t[column].null_count() == 0, t.columns
            for pid, value in zip(t["id"], t[column]):
                assert value == json.loads((tmp_path / "out" / "points" / pid / "summary.json").read_text())[column]
    # a 4:1 taper slows the app beside the hog more than a full tree does
    slow = dict(zip(t["network.links.taper"], t["job_app_slowdown"]))
    assert slow[4] > slow[1] >= 1.0
    assert len(doc["ranking"]["conditions"]) == 1 and doc["ranking"]["conditions"][0]["condition"] == {}
