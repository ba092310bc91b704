"""Real MPI (mpi4py + Open MPI, 2 ranks, oversubscribed if need be). No
absolute times: structure, units and sanity only."""

import contextlib
import json
import os
import signal
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
        "    c.Barrier(); t['c'].append(loop_c(me, 1 - me, b, b, 1, 200))\n"
        "    c.Barrier(); t['py'].append(loop_py(me, 1 - me, b, b, 1, 200))\n"
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
    with pytest.raises(MeasureError, match="--set hiding='magic': one of fixed_alpha, dynamic_alpha, mpi_test"):
        launch("cg", 2, {"hiding": "magic"}, tmp_path / "x")
    p = cli("measure", "compare", tmp_path, "--platform", tmp_path / "p.toml", check=False)
    assert p.returncode == 2 and "no kernels.parquet" in p.stderr


@pytest.fixture
def broken_kernel(tmp_path_factory):
    """The environment in which the ranks' pingpong kernel fails (a
    sitecustomize the workers' Python runs): a failure no check can foresee."""
    site = tmp_path_factory.mktemp("broken")
    (site / "sitecustomize.py").write_text(
        "import os\n"
        "if 'OMPI_COMM_WORLD_RANK' in os.environ:  # the ranks, not idlewave\n"
        "    import idlewave.measure.kernels as k\n"
        "    def pingpong(comm, **params):\n"
        "        comm.Barrier()\n"
        "        raise TypeError(\"'int' object is not iterable\")\n"
        "    k.pingpong = pingpong\n")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


def test_a_failed_measurement_leaves_out_as_it_was(tmp_path, cli, broken_kernel):
    """A launch that fails (here: the kernel, on every rank) left an empty
    --out directory behind, and could leave an earlier measurement there
    half overwritten; now a new --out is not created at all, nor its
    parents, and an earlier measurement's files are untouched. What the
    ranks said is one line, not their tracebacks."""
    small = ["--set", "max_bytes=4", "--set", "reps=1", "--set", "iterations=1"]
    p = cli("measure", "pingpong", "--out", tmp_path / "new" / "pp", *small, env=broken_kernel, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr == "error: pingpong failed under mpiexec (exit 1):\nTypeError: 'int' object is not iterable\n", p.stderr
    assert list(tmp_path.iterdir()) == []  # no directory, no temporary one
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "machine.json").write_text('{"kind": "pingpong", "ranks": 2}')
    (earlier / "pingpong.parquet").write_bytes(b"the earlier measurement")
    p = cli("measure", "pingpong", "--out", earlier, *small, env=broken_kernel, check=False)
    assert p.returncode == 2 and "pingpong failed under mpiexec" in p.stderr, p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["earlier"]
    assert sorted(f.name for f in earlier.iterdir()) == ["machine.json", "pingpong.parquet"]
    assert (earlier / "pingpong.parquet").read_bytes() == b"the earlier measurement"
    # what cannot be compared is said before anything runs, naming the file
    (earlier / "kernels.parquet").write_bytes(b"")
    p = cli("measure", "compare", earlier, "--platform", tmp_path / "none.toml", check=False)
    assert p.returncode == 2 and f"--platform {tmp_path / 'none.toml'}: no such file" in p.stderr, p.stderr


@pytest.fixture
def no_launch(monkeypatch):
    """No process may start (the checks come before mpiexec): subprocess refuses to run anything."""
    import subprocess

    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0] if args else kwargs.get('args')}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)


def refused(cli, tmp_path, kind, *args):
    """`idlewave measure KIND ARGS` refused before anything runs or is written: its stderr."""
    p = cli("measure", kind, "--out", tmp_path / "m", *args, check=False)
    assert p.returncode == 2 and p.stderr.startswith("error: ") and "Traceback" not in p.stderr, p.stderr
    assert "failed under mpiexec" not in p.stderr and list(tmp_path.iterdir()) == [], p.stderr
    return " ".join(p.stderr.split())


@pytest.mark.parametrize("kind,sets,message", [
    # a single value where kernels.py iterates over a list (the workers' "'int' object is not iterable")
    ("kernels", ["halo_n=4"], "--set halo_n=4: a list of whole numbers is expected, e.g. --set halo_n=[4,16,64]"),
    ("kernels", ["sizes=8"], "--set sizes=8: a list of whole numbers is expected, e.g. --set sizes=[8,1024,65536]"),
    ("kernels", ["sizes=[]"], "--set sizes=[]: an empty list measures nothing"),  # (the kernel took its defaults)
    ("kernels", ["halo_n=[4,1.5]"], "--set halo_n=[4,1.5]: every element must be a whole number, not 1.5"),
    ("kernels", ["halo_n=[4,0]"], "--set halo_n=[4,0]: every element must be ≥ 1"),
    ("kernels", ["halo_n=[20000]"], "--set halo_n=[20000]: every element must be ≤ 16383"),
    ("pingpong", ["reps=[1,2]"], "--set reps=[1,2]: a single whole number is expected, not a list"),
    ("pingpong", ["iterations=3000000000"], "--set iterations=3000000000: must be ≤ 2147483647 (counts are C ints)"),
    ("pingpong", ["reps=1", "reps=2"], "--set reps: given twice (reps=1 and reps=2); give it once"),
    ("multipair", ["min_bytes=3", "max_bytes=3"], "no power of two lies between min_bytes (3) and max_bytes (3)"),
    ("noise", ["duration_s=0"], "--set duration_s=0: must be > 0"),
    ("pingpong", ["span_bytes=3000000000"], "--set span_bytes=3000000000: must be ≤ 2147483647 (each of its two regions below 2 GiB)"),
    ("pingpong", ["delay_s=" + "9" * 400], "--set delay_s=" + "9" * 30 + "… (400 characters): a finite number is expected"),
    # a choice, checked once per rank inside the job before
    ("cg", ["hiding=nosuch"], "--set hiding='nosuch': one of fixed_alpha, dynamic_alpha, mpi_test is expected"),
    ("cg", ["n=2"], "--set n=2: must be ≥ 3 (two mirror planes and an interior)"),
    ("cg", ["alpha0=1.5"], "--set alpha0=1.5: must be between 0 and 1"),
    ("cg", ["hiding=dynamic_alpha", "epsilon_s=0"], "--set epsilon_s=0: must be > 0 with hiding=dynamic_alpha"),
])
def test_parameters_are_checked_before_launching(cli, tmp_path, no_launch, kind, sets, message):
    text = refused(cli, tmp_path, kind, *[a for s in sets for a in ("--set", s)])
    assert message in text, text


def test_a_list_may_be_written_without_brackets(tmp_path):
    from idlewave.cli.measure import _params
    from idlewave.measure import check_params

    params = _params(["sizes=8,1024", "halo_n=[4]"])
    assert params == {"sizes": [8, 1024], "halo_n": [4]}
    check_params("kernels", params)


def test_arrays_that_cannot_fit_in_memory_are_refused_before_launching(cli, tmp_path, no_launch):
    """stream's three arrays of 10^13 doubles: numpy's _ArrayMemoryError
    (72.8 TiB) relayed from the workers before; now refused in the parent."""
    text = refused(cli, tmp_path, "stream", "--set", "elements=10000000000000")
    assert "--set elements=10000000000000: stream's arrays take about 218 TiB per rank; 437 TiB on 2 ranks, more than" in text
    assert "of memory" in text or "memory limit" in text
    text = refused(cli, tmp_path, "cg", "--set", "n=5000", "-n", "3")
    assert "--set n=5000: cg's arrays take about 7.28 TiB per rank; 21.8 TiB on 3 ranks" in text
    # the rows of results rank 0 keeps grow with the repetitions and iterations
    text = refused(cli, tmp_path, "kernels", "--set", "reps=2000000000")
    assert "--set reps=2000000000: kernels' arrays take about 512 KiB per rank, rank 0's 24,000,000,000 result rows" in text


def test_memory_is_counted_for_every_rank():
    from idlewave.measure import check_memory

    limit = (1 << 30, "a limit of {}")
    check_memory("stream", {"elements": 10_000_000}, 4, limit)  # 229 MiB per rank: 916 MiB
    with pytest.raises(MeasureError, match=r"^--set elements=10000000: stream's arrays take about 229 MiB per rank; "
                                           r"1\.12 GiB on 5 ranks, more than a limit of 1 GiB$"):
        check_memory("stream", {"elements": 10_000_000}, 5, limit)
    # the defaults on too many ranks: --ranks is named
    with pytest.raises(MeasureError, match=r"^--ranks 64: stream's arrays take about 23 MiB per rank, rank 0's 19,200 result rows about 5\.49 MiB; "
                                           r"1\.44 GiB on 64 ranks"):
        check_memory("stream", {}, 64, limit)


def test_a_pingpong_from_memory_counts_its_regions_and_refuses_a_negative_span(cli, tmp_path, no_launch):
    from idlewave.measure import check_memory

    limit = (1 << 30, "a limit of {}")
    check_memory("pingpong", {"span_bytes": 128 << 20}, 2, limit)  # two 128 MiB regions per rank: 512 MiB
    with pytest.raises(MeasureError, match=r"^--set span_bytes=268435456: pingpong's arrays take about 512 MiB per "
                                           r"rank; 1 GiB on 2 ranks"):
        check_memory("pingpong", {"span_bytes": 256 << 20}, 2, (1 << 29, "a limit of {}"))
    text = refused(cli, tmp_path, "pingpong", "--set", "span_bytes=-1")
    assert "--set span_bytes=-1: must be ≥ 0" in text, text


def test_the_slot_cursor_cycles_and_restarts_when_the_slots_shrink():
    """kernels.py's cursor, as pingpong.c's: message i of a run of loops uses slot i mod slots, on from where
    the last loop stopped; when a larger size leaves fewer slots it starts again at 0 (pingpong.c read past
    its regions there once)."""
    from idlewave.measure.kernels import _Slots

    c = _Slots()
    assert [c.at(1, 0) for _ in range(3)] == [0, 0, 0]  # the usual ping-pong: one buffer
    assert [c.at(4, 64) for _ in range(6)] == [0, 64, 128, 192, 0, 64]
    assert [c.at(4, 64) for _ in range(2)] == [128, 192]  # a new loop goes on where the last stopped
    c.at(8, 64), c.at(8, 64), c.at(8, 64)  # cursor at 3 (of 8)
    assert [c.at(2, 4096) for _ in range(3)] == [0, 4096, 0]


def test_a_pingpong_from_memory_runs_every_size(tmp_path):
    """span_bytes: every size of the sweep through regions the sizes share, in the C loop (pingpong.c read
    past its regions when a larger size left fewer slots than the cursor had reached: a segfault)."""
    out = launch("pingpong", 2, {"max_bytes": 1 << 16, "reps": 2, "iterations": 50, "span_bytes": 1 << 20}, tmp_path / "m")
    d = pl.read_parquet(out / "pingpong.parquet")
    assert d["size_bytes"].unique().sort().to_list() == [1 << k for k in range(17)] and (d["time_s"] > 0).all()
    assert pl.read_parquet(out / "exchange.parquet").height == d.height
    m = json.loads((out / "machine.json").read_text())
    assert m["timer"] == "C" and m["params"]["span_bytes"] == 1 << 20


@pytest.mark.parametrize("kind", ["pingpong", "multipair"])
def test_too_few_ranks_are_refused_before_launching(cli, tmp_path, no_launch, kind):
    """A ping-pong on one rank failed inside the MPI job, after mpiexec had started."""
    text = refused(cli, tmp_path, kind, "-n", "1")
    assert text == f"error: --ranks 1: {kind} needs at least 2 ranks (rank 0 and a partner)"


def test_ranks_beyond_16_per_cpu_are_refused(cli, tmp_path, no_launch):
    """--ranks 100000 started 100,000 oversubscribed processes on this machine."""
    from idlewave.measure import check_ranks, cpus

    limit = 16 * len(os.sched_getaffinity(0))
    assert cpus() * 16 == limit
    for ranks in (100_000, limit + 1):
        text = refused(cli, tmp_path, "pingpong", "--ranks", str(ranks))
        assert f"--ranks {ranks}: more than 16 × the {limit // 16} CPUs of this machine ({limit})" in text
        assert "start idlewave with your own launcher" in text
    check_ranks("pingpong", limit)  # the limit itself is taken
    check_ranks("noise", 1)


def _job_processes(marker: str) -> list[int]:
    """The live processes whose command line holds `marker` (a test's own directory)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            cmdline = open(f"/proc/{d}/cmdline", "rb").read()
            state = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(d))
    return found


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _ctrl_c_ignored() -> None:
    """For `preexec_fn`: as a command a script starts with `&` (its SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _at_a_terminal() -> None:
    """For `preexec_fn`: as a shell at a terminal starts a command, SIGINT and
    SIGHUP at their default actions (tests run under `nohup` hand SIGHUP
    ignored down, and idlewave rightly keeps ignoring it)."""
    from conftest import as_at_a_terminal

    as_at_a_terminal()
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize("sig,ctrl_c", [(signal.SIGTERM, True), (signal.SIGTERM, False), (signal.SIGINT, True),
                                        (signal.SIGHUP, True)], ids=["TERM", "TERM-ctrl-c-ignored", "INT", "HUP"])
def test_a_signal_ends_the_mpi_job_and_leaves_out_as_it_was(tmp_path, sig, ctrl_c):
    """`kill -TERM` on idlewave while its job ran: idlewave ended, and prterun
    and the ranks ran on (reparented to init) with `.mo.*.tmp` left behind;
    Ctrl-C (SIGINT to idlewave alone) killed prterun and left the ranks to
    notice it on their own. Now every process of the job is gone when
    idlewave exits, with 128 + the signal, and --out is as it was; also
    where Ctrl-C is ignored (`idlewave measure … &` in a script)."""
    import subprocess
    import sys
    import time

    exe = os.path.join(os.path.dirname(sys.executable), "idlewave")
    p = subprocess.Popen([exe, "measure", "pingpong", "--out", str(tmp_path / "mo"), "--set", "reps=2000",
                          "--set", "iterations=200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_at_a_terminal if ctrl_c else _ctrl_c_ignored)
    marker = str(tmp_path)
    try:
        deadline = time.monotonic() + 90
        while len([q for q in _job_processes(marker) if q != p.pid]) < 3:  # prterun and both ranks
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.1)
        time.sleep(0.5)  # the ranks are measuring
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=60)
        left = _job_processes(marker)
        assert left == [], f"still running after idlewave ended: {left}"
        assert p.returncode == 128 + sig, (p.returncode, stderr)
        assert stderr.strip().endswith("error: interrupted") and "Traceback" not in stderr, stderr
        assert list(tmp_path.iterdir()) == []  # no --out, no temporary directory
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        _kill_all(_job_processes(marker))


def test_a_timed_out_launch_leaves_no_rank_running(tmp_path):
    """The timeout killed mpiexec alone (SIGKILL): its ranks ran on."""
    marker = str(tmp_path)
    try:
        with pytest.raises(MeasureError, match="pingpong did not finish within 3 s"):
            launch("pingpong", 2, {"reps": 2000, "iterations": 200}, tmp_path / "pp", timeout=3)
        assert _job_processes(marker) == []
    finally:
        _kill_all(_job_processes(marker))
