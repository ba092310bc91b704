"""Sweeps (issue 48): the same bytes run after run and with any number of
workers; a million-point grid starts within seconds; a scheduler that is
not one, has no worker or loses its only worker is a clear error within a
bounded time, keeping the finished points for a rerun."""

import contextlib
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from test_sweep_report import DASK, DASK_ENV, start_worker, stop

pytestmark = pytest.mark.integration

EXE = str(Path(sys.executable).parent / "idlewave")

# two strategies × two conditions × two seeds, under noise: a ranking too
STUDY = """
name = "same bytes"
strategy = "workload.algorithm"
replications = 2
[base.workload]
kind = "collective"
collective = "bcast"
ranks = 32
iterations = 10
message_bytes = 1024
compute_s = 1e-4
[grid]
"workload.algorithm" = ["binomial", "linear"]
"noise" = [[{kind = "poisson", rate_hz = 2000.0, duration_s = 2e-5}], [{kind = "poisson", rate_hz = 500.0, duration_s = 5e-5}]]
"""


def sweep(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, "sweep", *map(str, args)], capture_output=True, text=True, timeout=timeout)


def files(out: Path) -> dict[str, bytes]:
    """Every file a sweep wrote, the documented timing fields masked."""
    from idlewave.sweep import TIMING_FIELDS

    timing = [f.split(": ")[1] for f in TIMING_FIELDS if f.startswith("summary.json: ")]
    found = {}
    for p in sorted(out.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.name == "summary.json":
                for key in timing:
                    data, n = re.subn(rb'("%s": )[^,\n]+' % key.encode(), rb"\1<timing>", data)
                    assert n == 1, (p, key)
            found[str(p.relative_to(out))] = data
    return found


def test_a_seeded_sweep_writes_the_same_bytes_whatever_the_run_workers_or_scheduler(tmp_path):
    from distributed import LocalCluster

    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    runs = {}
    for name, args in {"2 workers": ["--workers", "2"], "1 worker": ["--workers", "1"]}.items():
        p = sweep(study, "--out", tmp_path / name, "--quiet", *args)
        assert p.returncode == 0, p.stderr
        runs[name] = files(tmp_path / name)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        p = sweep(study, "--out", tmp_path / "scheduler", "--quiet", "--scheduler", cluster.scheduler_address)
        assert p.returncode == 0, p.stderr
        runs["on a scheduler"] = files(tmp_path / "scheduler")
    first = runs.pop("2 workers")
    assert {"sweep.parquet", "ranking.json", "ranking.png", "study.json"} <= set(first)
    assert sum(k.endswith("summary.json") for k in first) == 8
    for name, other in runs.items():
        assert sorted(other) == sorted(first), name
        differ = [k for k in first if other[k] != first[k]]
        assert not differ, f"{name}: {differ} differ"


@pytest.mark.serial  # the first point within seconds
def test_a_million_point_grid_starts_its_first_point_within_seconds(tmp_path):
    values = ", ".join(str(i) for i in range(1, 1001))
    study = tmp_path / "big.toml"
    study.write_text('[base.workload]\nkind = "bsp"\nranks = 8\niterations = 5\ncompute_s = 1e-6\ndistances = [1]\n'
                     f'[grid]\n"workload.iterations" = [{values}]\n"seed" = [{values}]\n')
    script = tmp_path / "first.py"
    script.write_text(f"""
import json, sys, time
start = time.perf_counter()
from idlewave.sweep import run_sweep

class Enough(Exception):
    pass

said = []

def progress(done, total):
    said.append([done, total, time.perf_counter() - start])
    if done >= 1:
        raise Enough

if __name__ == "__main__":
    try:
        run_sweep({str(study)!r}, {str(tmp_path / 'out')!r}, workers=1, progress=progress)
    except Enough:
        pass
    print(json.dumps(said))
""")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    said = json.loads(p.stdout.strip().splitlines()[-1])
    # the count first, then the first point done: cluster start-up included, seconds (it was about 25 minutes)
    assert said[0][:2] == [0, 1_000_000] and said[0][2] < 5, said
    assert said[-1][:2] == [1, 1_000_000] and said[-1][2] < 20, said
    assert len(list((tmp_path / "out" / "points").glob("*/summary.json"))) >= 1


@pytest.mark.serial  # refused within 10 s
def test_a_study_beyond_the_bound_is_refused_at_once_with_advice(tmp_path):
    values = ", ".join(str(i) for i in range(1, 1001))
    study = tmp_path / "huge.toml"
    study.write_text('[base.workload]\nkind = "bsp"\nranks = 8\niterations = 5\n'
                     f'[grid]\n"workload.iterations" = [{values}]\n"seed" = [{values}]\n"workload.compute_s" = [1e-6, 2e-6, 3e-6]\n')
    start = time.perf_counter()
    p = sweep(study, "--out", tmp_path / "out", "--quiet")
    assert time.perf_counter() - start < 10
    assert p.returncode == 2 and "3,000,000 points" in p.stderr and "split the study" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "out").exists()


def test_a_key_no_scenario_has_is_refused_before_any_point_runs(tmp_path):
    """An unknown [grid] or [[points]] key failed every point one by one (a
    cluster started, a directory per point); it is one error naming the key
    path and the file, and nothing is written."""
    (tmp_path / "base.toml").write_text('[workload]\nkind = "bsp"\nranks = 8\niterations = 5\n')
    cases = {
        '[base.workload]\nkind = "bsp"\nranks = 8\niterations = 5\n[grid]\n"workload.rank" = [4, 8]\n':
            "grid.workload.rank: unknown key",
        'base = "base.toml"\n[grid]\n"workload.ranks" = [4]\n"netwrk.L_s" = [1e-6, 2e-6]\n':
            "grid.netwrk.L_s: unknown key netwrk",
        'base = "base.toml"\n[grid]\n"workload.ranks" = [4]\n[[points]]\nnetwork.topology.dimz = [2, 2]\n':
            "points[0].network.topology.dimz: unknown key",
        'base = "base.toml"\n[grid]\n"noise.rate_hz" = [1.0]\n': "grid.noise.rate_hz: noise is not a table",
    }
    for text, says in cases.items():
        study = tmp_path / "study.toml"
        study.write_text(text)
        p = sweep(study, "--out", tmp_path / "out", "--quiet", "--workers", "1")
        assert p.returncode == 2 and f"{study}: {says}" in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    # a key of another kind than the base's is known (the grid may change the kind too): the sweep runs its point
    study.write_text('[base.workload]\nkind = "bsp"\nranks = 8\niterations = 2\n[grid]\n'
                     '"workload.kind" = ["collective"]\n"workload.collective" = ["bcast"]\n')
    p = sweep(study, "--out", tmp_path / "out", "--quiet", "--workers", "1")
    assert p.returncode != 2 and "unknown key" not in p.stderr, p.stderr
    assert len(list((tmp_path / "out" / "points").iterdir())) == 1


@pytest.fixture
def junk_listener():
    """A TCP listener that answers every connection with junk (an HTTP error)."""
    server = socket.create_server(("127.0.0.1", 0))
    stop_ = threading.Event()

    def serve():
        server.settimeout(0.1)
        while not stop_.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                try:
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" + b"\xff" * 4096)
                    conn.recv(1 << 16)
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop_.set()
    t.join(5)
    server.close()


@pytest.mark.serial  # an answer within 20 s
def test_a_listener_that_answers_junk_is_not_taken_for_a_scheduler(tmp_path, junk_listener):
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    start = time.perf_counter()
    p = sweep(study, "--out", tmp_path / "out", "--quiet", "--scheduler", junk_listener, timeout=60)
    assert time.perf_counter() - start < 20  # CONNECT_TIMEOUT_S and the start-up
    assert p.returncode == 2 and f"{junk_listener} is not a Dask scheduler" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "MemoryError" not in p.stderr and len(p.stderr.strip().splitlines()) <= 3


@pytest.mark.serial  # an answer within 20 s
def test_a_scheduler_without_workers_is_an_error_after_the_worker_timeout(tmp_path):
    from distributed import LocalCluster

    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    with LocalCluster(n_workers=0, processes=True, dashboard_address=None) as cluster:  # a tcp:// scheduler, no worker
        start = time.perf_counter()
        p = sweep(study, "--out", tmp_path / "out", "--quiet", "--scheduler", cluster.scheduler_address,
                  "--worker-timeout", "2", timeout=60)
        took = time.perf_counter() - start
    assert p.returncode == 2 and "has no worker, and none joined within 2 s (--worker-timeout)" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and took < 20


@pytest.fixture
def lone_scheduler(tmp_path):
    """A real `dask scheduler` process; yields its address."""
    info = tmp_path / "scheduler.json"
    proc = subprocess.Popen([DASK, "scheduler", "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=DASK_ENV)
    try:
        for _ in range(300):
            if info.exists() and info.stat().st_size:
                break
            time.sleep(0.1)
        yield json.loads(info.read_text())["address"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.serial  # stopped within 13 s
def test_losing_the_only_worker_stops_the_sweep_in_bounded_time_and_a_rerun_resumes(tmp_path, lone_scheduler):
    """One real worker, killed once the first of 8 points is written: the
    sweep says so within --worker-timeout (it waited forever); the points
    written are kept, and a rerun with a new worker does only the rest."""
    study = tmp_path / "study.toml"
    # 8 points of about half a second each
    study.write_text('[base.workload]\nkind = "bsp"\nranks = 1024\ncompute_s = 1e-5\ndistances = [1]\n'
                     "[grid]\n\"workload.iterations\" = [100, 101, 102, 103, 104, 105, 106, 107]\n")
    out = tmp_path / "out"
    worker = start_worker(lone_scheduler)
    run = None
    try:
        run = subprocess.Popen([EXE, "sweep", str(study), "--out", str(out), "--scheduler", lone_scheduler, "--quiet",
                                "--worker-timeout", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and not list(out.glob("points/*/summary.json")):
            time.sleep(0.02)
        stop(worker, signal.SIGKILL)  # the worker and its nanny
        lost = time.perf_counter()
        _, stderr = run.communicate(timeout=60)
        took = time.perf_counter() - lost
        kept = len(list(out.glob("points/*/summary.json")))
        assert 1 <= kept < 8
        assert run.returncode == 2 and "has had no worker for 3 s (--worker-timeout)" in stderr, stderr
        assert f"{kept} of 8 points are done and kept in" in stderr and "Traceback" not in stderr, stderr
        assert took < 3 + 10, took
        worker = start_worker(lone_scheduler)
        p = sweep(study, "--out", out, "--scheduler", lone_scheduler, "--quiet", timeout=120)
        assert p.returncode == 0 and f"{kept} reused" in p.stdout, p.stdout + p.stderr
        assert len(list(out.glob("points/*/summary.json"))) == 8
    finally:
        if run is not None and run.poll() is None:
            run.kill()
        stop(worker)


@pytest.mark.serial  # answered within seconds
def test_sigterm_while_the_local_cluster_starts_ends_the_sweep_where_ctrl_c_is_ignored(tmp_path):
    """Where Ctrl-C is ignored (a sweep a script starts with `&`, a batch
    job), a SIGTERM while the local cluster started was held as a Ctrl-C,
    and that Ctrl-C ignored when the start ended: the sweep ran on to its
    end, exit code 0. It is answered once the cluster has started: 143."""
    study = tmp_path / "study.toml"
    study.write_text('[base.workload]\nkind = "bsp"\nranks = 8\niterations = 5\n[grid]\n"workload.ranks" = [4, 8]\n')
    out = tmp_path / "out"
    p = subprocess.Popen([EXE, "sweep", str(study), "--out", str(out), "--quiet", "--workers", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        if not Path(f"/proc/{p.pid}/task/{p.pid}/children").exists():
            pytest.skip("no /proc/PID/task/TID/children here: the cluster's start cannot be seen")

        def children() -> list[str]:  # of every thread: Dask's event loop starts the workers
            found = []
            for task in Path(f"/proc/{p.pid}/task").iterdir():
                with contextlib.suppress(OSError):
                    found += (task / "children").read_text().split()
            return found

        deadline = time.monotonic() + 60
        while p.poll() is None and not children():
            assert time.monotonic() < deadline, "no worker process within 60 s"
            time.sleep(0.01)
        assert p.poll() is None, "the sweep ended before its cluster started"
        p.send_signal(signal.SIGTERM)  # its first worker process is starting
        sent = time.monotonic()
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 143 and "interrupted" in err and "Traceback" not in err, (p.returncode, err)
    assert time.monotonic() - sent < 20 and not (out / "sweep.parquet").exists()
