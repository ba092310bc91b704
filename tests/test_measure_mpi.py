"""`idlewave measure KIND --mpicc PATH --mpiexec PATH`: the measurements as
a C program built with the application's MPI — the wheel's Open MPI 5 and,
where installed, Debian's Open MPI 4.1 — launched by idlewave or by the
user's own mpiexec. Small parameters; no absolute times, only structure,
positivity and that 1 MiB costs more than 1 B."""

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from conftest import preempted
from idlewave.measure import launch
from idlewave.measure.native import arguments, header_mismatch

pytestmark = [pytest.mark.integration, pytest.mark.mpi]

BIN = Path(sys.executable).parent
IDLEWAVE = str(BIN / "idlewave")
WHEEL = (str(BIN / "mpicc"), str(BIN / "mpiexec"))
DEBIAN = ("/usr/bin/mpicc", "/usr/bin/mpiexec")
no_debian = pytest.mark.skipif(not (Path(DEBIAN[0]).exists() and Path(DEBIAN[1]).exists()),
                               reason="Debian's Open MPI (/usr/bin/mpicc, /usr/bin/mpiexec) is not installed")
MPIS = [pytest.param(WHEEL, "Open MPI v5.0", id="wheel"), pytest.param(DEBIAN, "Open MPI v4.1", id="debian", marks=no_debian)]

# what a user's launcher needs in a container (idlewave adds the same for the runs it launches)
LAUNCHER_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_smsc": "^cma",
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}

COLUMNS = {
    "pingpong.parquet": ["link", "size_bytes", "rep", "time_s"],
    "exchange.parquet": ["link", "size_bytes", "rep", "time_s"],
    "multipair.parquet": ["pairs", "size_bytes", "rep", "time_s"],
    "kernels.parquet": ["kernel", "mode", "size_bytes", "n", "rep", "time_s", "overlap_s", "trailing_s"],
    "detours.parquet": ["rank", "start_ns", "duration_ns"],
    "fwq.parquet": ["rank", "sample", "ns"],
}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A build cache of this module's own, so that the build is tested too."""
    return {"XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))}


def measure(cli, env, kind, out, *args, check=True):
    return cli("measure", kind, "--out", out, *args, env=env, check=check)


def sets(**params):
    return [a for k, v in params.items() for a in ("--set", f"{k}={v}")]


def machine(out: Path, mpi: str, ranks: int) -> dict:
    m = json.loads((out / "machine.json").read_text())
    assert m["mpi_library"].startswith(mpi) and m["mpi_header"].startswith(mpi), m["mpi_library"]
    assert re.fullmatch(r"\d+\.\d+", m["mpi_version"])
    assert m["ranks"] == ranks and len(m["rank_hosts"]) == ranks and m["hosts"] == sorted(set(m["rank_hosts"]))
    assert sum(m["ranks_per_host"].values()) == ranks and m["nodes"] == len(m["hosts"])
    assert abs(datetime.fromisoformat(m["measured_at"]) - datetime.now().astimezone()) < timedelta(minutes=10)
    assert m["kernels"] == "C"
    return m


def check_exchange(out: Path) -> None:
    """exchange.parquet: the tests of pingpong.parquet (links, sizes, reps), positive, 1 MiB dearer than 1 B."""
    pp, x = pl.read_parquet(out / "pingpong.parquet"), pl.read_parquet(out / "exchange.parquet")
    keys = ["link", "size_bytes", "rep"]
    assert x.columns == COLUMNS["exchange.parquet"] and x.select(keys).sort(keys).equals(pp.select(keys).sort(keys))
    best = x.group_by("size_bytes").agg(pl.col("time_s").min()).sort("size_bytes")["time_s"].to_numpy()
    assert (best > 0).all()
    if x["size_bytes"].max() >= 1 << 20:
        assert best[-1] > 5 * best[0]  # 1 MiB costs more than 1 B


def test_arguments_carry_every_parameter_with_kernels_py_defaults():
    assert arguments("kernels", {"sizes": [8, 64], "overlap_s": 0}) == [
        "sizes=8,64", "halo_n=4,16,64", "overlap_s=0.0", "trailing_s=0.0001", "iterations=20", "reps=3", "test_chunks=1"]
    assert arguments("pingpong", {}) == ["max_bytes=4194304", "reps=10", "iterations=20", "delay_s=0.001", "span_bytes=0"]


def test_header_mismatch():
    assert header_mismatch("Open MPI v4.1.4", "Open MPI v5.0.11, package: Open MPI user")
    assert not header_mismatch("Open MPI v4.1.4", "Open MPI v4.1.5, package: Debian OpenMPI")
    assert not header_mismatch("MPICH Version: 4.1.2", "MPICH Version:      4.1.2")
    assert not header_mismatch("MPICH Version: 3.4a2", "Intel(R) MPI Library 2021.10 for Linux* OS")


@pytest.mark.parametrize("tools,mpi", MPIS)
@pytest.mark.serial
def test_pingpong(tools, mpi, tmp_path, cli, env):
    mpicc, mpiexec = tools
    # the measurement (not the checks) is taken again, at most twice more, while preemption shows in it
    for attempt in range(3):
        out = tmp_path / f"pp{attempt}"
        r = measure(cli, env, "pingpong", out, "--mpicc", mpicc, "--mpiexec", mpiexec, "--json",
                    *sets(max_bytes=1 << 20, reps=3, iterations=5))
        if not preempted(out):
            break
    assert json.loads(r.stdout)["files"] == ["exchange.parquet", "machine.json", "pingpong.parquet"]
    d = pl.read_parquet(out / "pingpong.parquet")
    assert d.columns == COLUMNS["pingpong.parquet"] and d["link"].unique().to_list() == ["on_node"]
    assert d["size_bytes"].unique().sort().to_list() == [1 << k for k in range(21)] and d.height == 21 * 3
    best = d.group_by("size_bytes").agg(pl.col("time_s").min()).sort("size_bytes")["time_s"].to_numpy()
    assert (best > 0).all() and best[-1] > 5 * best[0]  # 1 MiB costs more than 1 B
    check_exchange(out)
    m = machine(out, mpi, 2)
    assert (m["mpicc"], m["mpiexec"], m["timer"], m["under_launcher"]) == (mpicc, mpiexec, "C", False)
    assert m["params"] == {"max_bytes": 1 << 20, "reps": 3, "iterations": 5}
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # the program's CSV are gone


@pytest.mark.parametrize("tools,mpi", MPIS)
def test_multipair_kernels_noise(tools, mpi, tmp_path, cli, env):
    mpicc, mpiexec = tools
    # 4 ranks on this 2-core machine: --oversubscribe, which both launchers take
    measure(cli, env, "multipair", tmp_path / "mp", "--mpicc", mpicc, "-n", "4",
            *sets(max_bytes=65536, min_bytes=16384, reps=2, iterations=2))
    mp = pl.read_parquet(tmp_path / "mp" / "multipair.parquet")
    assert mp.columns == COLUMNS["multipair.parquet"] and mp.height == 2 * 3 * 2 and (mp["time_s"] > 0).all()
    machine(tmp_path / "mp", mpi, 4)

    measure(cli, env, "kernels", tmp_path / "k", "--mpiexec", mpiexec,
            *sets(sizes="[8,4096]", halo_n="[4,8]", iterations=2, reps=2, overlap_s=5e-5, trailing_s=5e-5, test_chunks=2))
    k = pl.read_parquet(tmp_path / "k" / "kernels.parquet")
    assert k.columns == COLUMNS["kernels.parquet"] and k.height == 2 * 2 * 2 * 2
    assert (k["time_s"] >= 1e-4 * 0.99).all()  # never faster than the busy-waits

    measure(cli, env, "noise", tmp_path / "n", "--mpicc", mpicc, *sets(duration_s=0.05, threshold_ns=2000, fwq_samples=20))
    det, fwq = pl.read_parquet(tmp_path / "n" / "detours.parquet"), pl.read_parquet(tmp_path / "n" / "fwq.parquet")
    assert det.columns == COLUMNS["detours.parquet"] and (det["duration_ns"] > 2000).all()
    assert set(det["rank"].to_list()) <= {0, 1} and (det["start_ns"] < 0.2e9).all()
    assert fwq.columns == COLUMNS["fwq.parquet"] and fwq.height == 2 * 20 and (fwq["ns"] > 0).all()
    trace = (tmp_path / "n" / "trace.txt").read_text().splitlines()
    assert trace[0].startswith("# idlewave noise trace") and len(trace) - 1 == det.filter(pl.col("rank") == 0).height


@pytest.mark.parametrize("tools,mpi", MPIS)
def test_under_the_users_launcher(tools, mpi, tmp_path, env):
    """`mpiexec -n 2 idlewave measure … --mpicc`: each rank's Python runs the
    program, which joins the launcher's job; rank 0 writes and reports."""
    mpicc, mpiexec = tools
    out = tmp_path / "pp"
    p = subprocess.run([mpiexec, "-n", "2", IDLEWAVE, "measure", "pingpong", "--mpicc", mpicc, "--out", str(out),
                        *sets(max_bytes=4096, reps=2, iterations=2)],
                       env={**os.environ, **LAUNCHER_ENV, **env}, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("wrote") == 1 and "Traceback" not in p.stderr
    assert pl.read_parquet(out / "pingpong.parquet").height == 13 * 2
    check_exchange(out)
    m = machine(out, mpi, 2)
    assert m["under_launcher"] and m["mpiexec"] is None


def test_a_program_outside_the_launchers_job_stops(tmp_path, cli, env):
    """A launcher's variables, but no launcher: the program starts as a job
    of one rank, not the rank 0 of 2 that idlewave was told."""
    p = measure(cli, {**env, "PMI_RANK": "0", "PMI_SIZE": "2"}, "pingpong", tmp_path / "pp", "--mpicc", WHEEL[0],
                *sets(max_bytes=4, reps=1, iterations=1), check=False)
    text = " ".join(p.stderr.split())
    assert p.returncode == 2 and "rank 0 of 2" in text and "did not join the launcher's job" in text
    assert "Traceback" not in p.stderr and not (tmp_path / "pp" / "machine.json").exists()


@pytest.mark.skipif(not Path(DEBIAN[0]).exists(), reason="Debian's Open MPI is not installed")
def test_another_library_at_run_time_is_named(tmp_path, cli, env):
    """Built with Debian's 4.1 headers, run with the wheel's 5.0 library
    first on LD_LIBRARY_PATH: machine.json names the library that ran."""
    out = tmp_path / "pp"
    p = measure(cli, {**env, "LD_LIBRARY_PATH": str(BIN.parent / "lib")}, "pingpong", out, "--mpicc", DEBIAN[0],
                *sets(max_bytes=4, reps=1, iterations=2))
    assert "compiled with the headers of Open MPI v4.1" in " ".join(p.stderr.split())
    m = json.loads((out / "machine.json").read_text())
    assert m["mpi_header"].startswith("Open MPI v4.1") and m["mpi_library"].startswith("Open MPI v5.0")


def test_the_default_path_records_the_same_machine(tmp_path, cli, env):
    """mpi4py's machine.json has the new keys; the C path's has all of its
    keys but mpi4py's version, and the same tables."""
    default = launch("pingpong", 2, {"max_bytes": 4096, "reps": 2, "iterations": 2}, tmp_path / "py")
    m = json.loads((default / "machine.json").read_text())
    assert m["mpi_library"].startswith("Open MPI v5.0") and m["mpi_version"] == "3.1"
    assert m["rank_hosts"] and m["ranks_per_host"] and datetime.fromisoformat(m["measured_at"]).utcoffset() == timedelta(0)
    measure(cli, env, "pingpong", tmp_path / "c", "--mpicc", WHEEL[0], *sets(max_bytes=4096, reps=2, iterations=2))
    c = machine(tmp_path / "c", "Open MPI v5.0", 2)
    assert set(m) - set(c) == {"mpi4py"}
    for name in ("pingpong.parquet", "exchange.parquet"):
        assert pl.read_parquet(default / name).schema == pl.read_parquet(tmp_path / "c" / name).schema
    # built once: a second run finds the program in the cache
    cache = Path(env["XDG_CACHE_HOME"]) / "idlewave"
    built = {p.name: p.stat().st_mtime_ns for p in cache.iterdir() if not p.name.startswith(".")}
    measure(cli, env, "pingpong", tmp_path / "c", "--mpicc", WHEEL[0], *sets(max_bytes=4096, reps=2, iterations=2))
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir() if not p.name.startswith(".")} == built
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


def test_bad_tools_are_clear_errors(tmp_path, cli, env):
    p = measure(cli, env, "pingpong", tmp_path / "a", "--mpicc", tmp_path / "nowhere" / "mpicc", check=False)
    assert p.returncode == 2 and "no such file" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "a").exists()  # nothing written before the tools are found
    lone = tmp_path / "bin"
    lone.mkdir()
    (lone / "mpicc").symlink_to(WHEEL[0])
    p = measure(cli, env, "pingpong", tmp_path / "b", "--mpicc", lone / "mpicc", check=False)
    assert p.returncode == 2 and "no mpiexec or mpirun beside it" in " ".join(p.stderr.split())
    p = measure(cli, env, "stream", tmp_path / "c", "--mpicc", WHEEL[0], check=False)
    assert p.returncode == 2 and "runs on mpi4py only" in p.stderr
    p = measure(cli, env, "pingpong", tmp_path / "d", "--mpicc", WHEEL[0], "--set", "colour=1", check=False)
    assert p.returncode == 2 and "pingpong takes" in p.stderr


def test_a_failing_compiler_is_a_clear_error(tmp_path, cli, env):
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "mpicc").write_text("#!/bin/sh\necho 'kernels.c:1:1: error: this compiler is broken' >&2\nexit 1\n")
    (tools / "mpicc").chmod(0o755)
    (tools / "mpiexec").symlink_to(WHEEL[1])
    p = measure(cli, env, "noise", tmp_path / "n", "--mpicc", tools / "mpicc", check=False)
    text = " ".join(p.stderr.split())
    assert p.returncode == 2 and "could not build the C kernels (exit 1)" in text and "this compiler is broken" in text
    assert "Traceback" not in p.stderr and not (tmp_path / "n").exists()


@pytest.mark.parametrize("tools,mpi", MPIS)
def test_sigterm_ends_the_c_kernels_job(tools, mpi, tmp_path, env):
    """`kill -TERM` on idlewave while the application's mpiexec ran the C
    kernels: idlewave ended and left mpiexec and the ranks running. Now all
    are gone when it exits (143), and --out is as it was."""
    import signal
    import time

    from test_measure import _job_processes, _kill_all

    mpicc, mpiexec = tools
    p = subprocess.Popen([IDLEWAVE, "measure", "pingpong", "--mpicc", mpicc, "--mpiexec", mpiexec, "--out",
                          str(tmp_path / "pp"), *sets(reps=20000, iterations=2000)], env={**os.environ, **env},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marker = str(tmp_path)
    try:
        deadline = time.monotonic() + 120  # (the first run builds the kernels)
        while len([q for q in _job_processes(marker) if q != p.pid]) < 3:  # mpiexec and both ranks
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.1)
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        _, stderr = p.communicate(timeout=60)
        assert _job_processes(marker) == [], "still running after idlewave ended"
        assert p.returncode == 143 and stderr.strip().endswith("error: interrupted"), (p.returncode, stderr)
        assert list(tmp_path.iterdir()) == []
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        _kill_all(_job_processes(marker))
