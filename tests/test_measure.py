"""Real MPI (mpi4py + Open MPI, 2 ranks, oversubscribed if need be). No
absolute times: structure, units and sanity only."""

import json
import tomllib

import numpy as np
import polars as pl
import pytest

import idlewave
from conftest import preempted
from idlewave.measure import MeasureError, launch

pytestmark = [pytest.mark.integration, pytest.mark.mpi]


@pytest.fixture(scope="module")
def pingpong_dir(tmp_path_factory):
    # the measurement is taken again (at most twice more) while preemption shows in it (conftest.preempted)
    for _ in range(3):
        out = launch("pingpong", 2, {"max_bytes": 1 << 20, "reps": 3, "iterations": 5}, tmp_path_factory.mktemp("pp"))
        if not preempted(out):
            break
    return out


@pytest.mark.serial
def test_pingpong_structure_and_monotonic_cost(pingpong_dir):
    d = pl.read_parquet(pingpong_dir / "pingpong.parquet")
    assert set(d.columns) == {"link", "size_bytes", "rep", "time_s"}
    assert d["link"].unique().to_list() == ["on_node"]  # one machine
    assert d["size_bytes"].unique().sort().to_list() == [1 << k for k in range(21)]
    # the fastest of the repetitions: load on this machine only ever adds time
    # 1 MiB costs more than small messages (1-32 B: their median, as a loaded machine can preempt every
    # repetition of one size)
    best = d.group_by("size_bytes").agg(pl.col("time_s").min()).sort("size_bytes")["time_s"].to_numpy()
    assert (best > 0).all() and best[-1] > 5 * np.median(best[:6]), best
    # both ranks sending at once: the same tests, in exchange.parquet
    x = pl.read_parquet(pingpong_dir / "exchange.parquet")
    keys = ["link", "size_bytes", "rep"]
    assert x.columns == d.columns and x.select(keys).sort(keys).equals(d.select(keys).sort(keys))
    best = x.group_by("size_bytes").agg(pl.col("time_s").min()).sort("size_bytes")["time_s"].to_numpy()
    assert (best > 0).all() and best[-1] > 5 * np.median(best[:6]), best
    m = json.loads((pingpong_dir / "machine.json").read_text())
    assert m["ranks"] == 2 and m["nodes"] == 1 and m["mpi_library"].startswith("Open MPI")
    assert m["timer"] == "C"  # the loop is timed in C, without mpi4py's per-call overhead


@pytest.mark.serial
def test_the_c_loop_removes_the_interpreters_overhead_from_latency():
    """Back to back on the same ranks: mpi4py adds ~0.4 µs per call (four per
    round trip), which a C application does not pay; the C loop's 1-byte
    one-way time is the lower one: in the median of the 15 pairs' ratios,
    each pair taken back to back (a load that slows one pair slows both of its loops)."""
    import os
    import subprocess
    import sys

    from idlewave.measure import MPI_ENV, mpiexec

    script = (
        "import numpy as np, statistics\n"
        "from mpi4py import MPI\n"
        "from idlewave.measure import kernels as k\n"
        "c = MPI.COMM_WORLD; b = np.zeros(1, np.uint8); me = c.Get_rank()\n"
        "name, loop_c = k._timer(c)\n"
        "loop_py = k._python_loop(c)\n"
        "t = {'c': [], 'py': []}\n"
        "for _ in range(15):\n"
        "    c.Barrier(); t['c'].append(loop_c(me, 1 - me, b, 200))\n"
        "    c.Barrier(); t['py'].append(loop_py(me, 1 - me, b, 200))\n"
        "if me == 0: print(name, statistics.median(t['c']), statistics.median(t['py']),\n"
        "                  statistics.median(p / c for c, p in zip(t['c'], t['py'])))\n"
    )
    p = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-c", script], env={**os.environ, **MPI_ENV},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    name, c_s, py_s, ratio = p.stdout.split()
    assert name == "C" and float(ratio) > 1, p.stdout


@pytest.mark.serial  # beside pingpong_dir's other test: the module-scoped measurement taken once
def test_fit_and_compare_close_the_loop(pingpong_dir, tmp_path, cli):
    # one node: nothing is written for messages between nodes unless the assumption is stated; with one
    # node per run (--ranks-per-node 1) that leaves nothing to write
    p = cli("fit", "postal", pingpong_dir / "pingpong.parquet", "-o", tmp_path / "plat.toml", "--ranks-per-node", "1",
            check=False)
    assert p.returncode == 2 and "only on-node measurements" in p.stderr and not (tmp_path / "plat.toml").exists()
    # by default machine.json beside the data says both ranks ran on one host: a one-node platform of two ranks,
    # the values between nodes marked as not measured (an oversubscribed 2-core machine is noisy: --force)
    p = cli("fit", "postal", pingpong_dir / "pingpong.parquet", "-o", tmp_path / "plat.toml", "--max-error", "10", "--force")
    text = (tmp_path / "plat.toml").read_text()
    net = tomllib.loads(text)["network"]
    assert net["ranks_per_node"] == 2 and "L_s" not in net and net["intra_node"]["L_s"] > 0
    assert "NOT MEASURED" in text and "NOT MEASURED" in p.stderr
    cli("fit", "postal", pingpong_dir / "pingpong.parquet", "-o", tmp_path / "plat.toml", "--off-node-from-on-node",
        "--max-error", "10", "--force")
    assert "ASSUMED: off-node = on-node" in (tmp_path / "plat.toml").read_text()
    kernels = launch("kernels", 2, {"sizes": [8, 65536], "halo_n": [4, 32], "iterations": 5, "reps": 2,
                                    "overlap_s": 5e-5, "trailing_s": 5e-5}, tmp_path / "k")
    k = pl.read_parquet(kernels / "kernels.parquet")
    assert k.height == 2 * 2 * 2 * 2 and (k["time_s"] >= 1e-4 * 0.99).all()  # never faster than the busy-waits
    out = json.loads(cli("measure", "compare", kernels, "--platform", tmp_path / "plat.toml", "--out", tmp_path / "c",
                         "--json").stdout)
    assert len(out) == 8 and all(r["predicted_s"] >= 1e-4 for r in out)
    assert (tmp_path / "c" / "compare.png").stat().st_size > 1000


def test_noise_trace_replays_in_the_simulator(tmp_path):
    d = launch("noise", 2, {"duration_s": 0.2, "threshold_ns": 2000, "fwq_samples": 200}, tmp_path / "n")
    det = pl.read_parquet(d / "detours.parquet")
    assert set(det["rank"].unique().to_list()) <= {0, 1} and (det["duration_ns"] > 2000).all()
    fwq = pl.read_parquet(d / "fwq.parquet")
    assert fwq.height == 400 and (fwq["ns"] > 0).all()
    if det.filter(pl.col("rank") == 0).height:
        r = idlewave.simulate({"noise": [{"kind": "trace", "path": str(d / "trace.txt")}],
                               "workload": {"kind": "bsp", "ranks": 4, "iterations": 50}})
        assert r.summary["makespan_s"] >= 50 * 1e-4


def test_stream_desync_kernel_reports_pd(tmp_path):
    d = launch("stream", 2, {"elements": 100000, "iterations": 10, "reps": 1}, tmp_path / "s")
    s = pl.read_parquet(d / "stream_summary.parquet").to_dicts()[0]
    assert s["runtime_barrier_s"] > 0 and s["runtime_free_s"] > 0 and np.isfinite(s["pd"])
    t = pl.read_parquet(d / "stream.parquet")
    assert t.height == 2 * 10 * 2 and (t["compute_s"] > 0).all()


@pytest.mark.parametrize("hiding", ["fixed_alpha", "dynamic_alpha", "mpi_test"])
def test_cg_records_t_in_t_out_and_alpha(tmp_path, hiding):
    d = launch("cg", 2, {"n": 12, "iterations": 8, "hiding": hiding, "epsilon_s": 1e-6}, tmp_path / hiding)
    rec = pl.read_parquet(d / "cg.parquet")
    assert rec.height == 2 * 8 and set(rec.columns) >= {"t_in_s", "t_out_s", "wait_in_s", "wait_out_s", "alpha"}
    assert (rec["t_in_s"] >= rec["wait_in_s"]).all() and rec["alpha"].is_between(0, 1).all()
    if hiding == "fixed_alpha":
        assert (rec["alpha"] == 0.5).all()
    summary = pl.read_parquet(d / "cg_summary.parquet").to_dicts()[0]
    assert summary["residual_ratio"] < 1  # CG converges whatever the hiding


def test_bad_measurements_are_reported(tmp_path, cli):
    with pytest.raises(MeasureError, match="unknown kind"):
        launch("latency", 2, {}, tmp_path)
    with pytest.raises(MeasureError, match="hiding must be"):
        launch("cg", 2, {"hiding": "magic"}, tmp_path / "x")
    p = cli("measure", "compare", tmp_path, "--platform", tmp_path / "p.toml", check=False)
    assert p.returncode == 2 and "no kernels.parquet" in p.stderr


def test_a_failed_measurement_leaves_out_as_it_was(tmp_path, cli):
    """A launch that fails (here: a ping-pong on one rank) left an empty --out
    directory behind, and could leave an earlier measurement there half
    overwritten; now a new --out is not created at all, nor its parents, and
    an earlier measurement's files are untouched."""
    p = cli("measure", "pingpong", "-n", "1", "--out", tmp_path / "new" / "pp", check=False)
    assert p.returncode == 2 and "pingpong failed under mpiexec" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []  # no directory, no temporary one
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "machine.json").write_text('{"kind": "pingpong", "ranks": 2}')
    (earlier / "pingpong.parquet").write_bytes(b"the earlier measurement")
    p = cli("measure", "pingpong", "-n", "1", "--out", earlier, check=False)
    assert p.returncode == 2, p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["earlier"]
    assert sorted(f.name for f in earlier.iterdir()) == ["machine.json", "pingpong.parquet"]
    assert (earlier / "pingpong.parquet").read_bytes() == b"the earlier measurement"
    # what cannot be compared is said before anything runs, naming the file
    (earlier / "kernels.parquet").write_bytes(b"")
    p = cli("measure", "compare", earlier, "--platform", tmp_path / "none.toml", check=False)
    assert p.returncode == 2 and f"--platform {tmp_path / 'none.toml'}: no such file" in p.stderr, p.stderr
