"""Ctrl-C at any moment of a command ends it with exit code 130 and one
line: no traceback, no Rust panic (idlewave.interrupts)."""

import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

from conftest import as_at_a_terminal

pytestmark = [pytest.mark.integration, pytest.mark.serial]

EXE = str(Path(sys.executable).parent / "idlewave")

SCENARIO = """
seed = 1
[[noise]]
kind = "poisson"
rate_hz = 1000.0
duration_s = 5e-6
[workload]
kind = "bsp"
ranks = 1024
iterations = 25
compute_s = 1e-4
distances = [1, 2]
message_bytes = 1024
barrier = true
"""


def interrupted(cmd: list[str], delay: float) -> subprocess.CompletedProcess | None:
    """`cmd` sent SIGINT after `delay` seconds; None if it had finished by then."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_at_a_terminal)
    time.sleep(delay)
    if p.poll() is not None:
        p.communicate()
        return None
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


@pytest.mark.parametrize("explain", [False, True], ids=["simulate", "simulate --explain"])
def test_ctrl_c_at_any_moment_exits_130_without_a_traceback_or_panic(tmp_path, explain):
    scn = tmp_path / "s.toml"
    scn.write_text(SCENARIO)
    cmd = [EXE, "simulate", str(scn), "--quiet", "--out", str(tmp_path / "out")] + (["--explain"] if explain else [])
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    whole = time.perf_counter() - start
    # from the imports (0.05 s) to the last moments (writing, printing, shutting down)
    moments = [0.05 + (whole - 0.05) * i / 9 for i in range(10)]
    hit = 0
    for delay in moments:
        p = interrupted(cmd, delay)
        if p is None:
            continue
        hit += 1
        where = f"SIGINT after {delay:.3f} s of {whole:.3f} s: exit {p.returncode}\n{p.stderr}"
        assert "Traceback" not in p.stderr and "panicked" not in p.stderr and "Panic" not in p.stderr, where
        # 130; or, in the last instant of the interpreter's shutdown (Python has put
        # back the default action), death by SIGINT, which a shell reports as 130 too;
        # near the end, 0: the run ended between the check that it runs and the signal
        assert p.returncode in (130, -signal.SIGINT) or (p.returncode == 0 and delay > whole / 2), where
        if p.returncode == 130:
            assert "interrupted" in p.stderr and len(p.stderr.strip().splitlines()) == 1, where
    assert hit >= 6, f"only {hit} of 10 moments came before the run ended ({whole:.2f} s)"


def test_ctrl_c_as_the_command_ends_and_its_handler_is_swapped_exits_130_in_one_line():
    """The last moment of the sweep above, made certain: a Ctrl-C raised as KeyboardInterrupt right as
    `exit_at_once` starts (after the command's answer is out) printed a traceback."""
    script = ("import sys\n"
              "import idlewave.cli.root as root\n"
              "def swap():\n"
              "    raise KeyboardInterrupt\n"
              "root.exit_at_once = swap\n"
              "sys.argv = ['idlewave', '--version']\n"
              "root.main()\n")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 130 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.strip().splitlines() == ["error: interrupted"], p.stderr


def test_ctrl_c_at_the_terminal_stops_a_sweep_and_its_local_workers_in_one_line(tmp_path):
    """A terminal's Ctrl-C signals the whole process group: the sweep and its
    local cluster's workers. Only the sweep answers (they printed tracebacks)."""
    import os

    study = tmp_path / "study.toml"
    study.write_text('[base.workload]\nkind = "bsp"\nranks = 256\ncompute_s = 1e-5\ndistances = [1]\n'
                     "[grid]\n\"workload.iterations\" = [100, 101, 102, 103, 104, 105, 106, 107]\n")
    for delay in (1.0, 2.0, 3.0):
        p = subprocess.Popen([EXE, "sweep", str(study), "--out", str(tmp_path / f"out{delay}"), "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        time.sleep(delay)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=60)
        where = f"Ctrl-C after {delay} s: exit {p.returncode}\n{err}"
        assert "Traceback" not in err and "panicked" not in err, where
        assert p.returncode in (0, 130, -signal.SIGINT), where


def test_held_keeps_ctrl_c_back_until_the_block_ends():
    from idlewave.interrupts import held

    # Python's own handler, even in a pytest started with SIGINT ignored (as a shell's background job)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with held():
                signal.raise_signal(signal.SIGINT)
                for _ in range(1000):  # bytecode runs, the handler is asked, the interrupt waits
                    pass
                done = True
    finally:
        signal.signal(signal.SIGINT, before)
    assert done


def test_an_interrupt_inside_the_import_machinery_is_answered_outside_it():
    # A Ctrl-C that lands in importlib's module-lock weakref callback was printed as "Exception ignored"
    # and lost: the command went on and exited 0. The command's handler answers it at the next check
    # outside importlib's frozen code instead.
    from idlewave.interrupts import _interrupt

    scope: dict = {}
    # importlib's code, as the handler sees it: a frame whose code is the frozen module's
    exec(compile("def cb(ring, signum):\n    ring(signum)\n    for _ in range(100_000):\n        pass\n",
                 "<frozen importlib._bootstrap>", "exec"), scope)
    before = signal.signal(signal.SIGINT, _interrupt)
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            scope["cb"](signal.raise_signal, signal.SIGINT)  # Ctrl-C inside importlib's frame...
            time.sleep(1)  # ...answered out here
    finally:
        signal.signal(signal.SIGINT, before)
    frames = [f.name for f in traceback.extract_tb(caught.value.__traceback__)]
    assert "cb" not in frames, frames
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL


def test_a_lazy_module_interrupted_while_importing_is_imported_again():
    """The stdlib's LazyLoader left a half-initialised module in sys.modules
    when an import was interrupted ("module 'polars' has no attribute
    'DataFrame'"); lazy() imports the ordinary way, which an interrupt undoes."""
    import importlib
    import types

    from idlewave.cli.common import lazy

    name = "idlewave_lazy_probe"
    calls = {"n": 0}

    class Finder:
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            return importlib.util.spec_from_loader(name, Loader())

    class Loader:
        def create_module(self, spec):
            return None

        def exec_module(self, module: types.ModuleType) -> None:
            calls["n"] += 1
            module.early = 1
            if calls["n"] == 1:
                raise KeyboardInterrupt
            module.late = 2

    sys.meta_path.insert(0, Finder())
    try:
        m = lazy(name)
        with pytest.raises(KeyboardInterrupt):
            _ = m.late
        assert m.late == 2 and calls["n"] == 2
    finally:
        sys.meta_path.pop(0)
        sys.modules.pop(name, None)


@pytest.mark.parametrize("held", [False, True])
def test_a_module_whose_start_up_cannot_take_an_interrupt_finishes_its_import_first(tmp_path, held):
    """A Ctrl-C in the middle of polars' first import panics in its Rust
    start-up; the command line holds it back until the import is over. A
    module that interrupts itself half-way stands in for it: held, it runs to
    its last line and the interrupt comes after; not held, it stops half-way."""
    (tmp_path / "startup_stand_in.py").write_text(
        "import os, signal, sys\nos.kill(os.getpid(), signal.SIGINT)\n"
        "for _ in range(1000):\n    sum(range(100))\nsys.stdout.write('last line ran\\n')\n")
    code = ("import sys; from idlewave.interrupts import hold_during_import\n"
            + ("hold_during_import('startup_stand_in')\n" if held else "")
            + "try:\n    import startup_stand_in\nexcept KeyboardInterrupt:\n    print('interrupted')\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       preexec_fn=as_at_a_terminal)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == (["last line ran", "interrupted"] if held else ["interrupted"]), p.stdout


def test_a_sweep_worker_keeps_ignoring_ctrl_c_once_polars_is_loaded():
    """A local cluster's worker starts with SIGINT ignored (the command
    answers a terminal's Ctrl-C and stops it). polars' first import installs
    a handler of its own over that, and a query running when Ctrl-C came
    raised KeyboardInterrupt with a traceback in the worker. The kernel's view
    of the worker's SIGINT (/proc) must stay: ignored, not caught."""
    status = Path("/proc/self/status")
    if not status.is_file():
        pytest.skip("no /proc to read a process's signal dispositions from")
    code = ("import sys, multiprocessing\nsys.argv[0] = 'idlewave'\nimport idlewave, polars as pl\n"
            "pl.DataFrame({'a': [1]}).lazy().collect()\n"
            "print(*[l.split()[1] for l in open('/proc/self/status') if l.startswith(('SigIgn', 'SigCgt'))])\n")
    # started as the cluster starts its workers: through `sh`, which ignores SIGINT, then Python
    p = subprocess.run(["sh", "-c", "trap '' INT; exec \"$0\" -c \"$1\"", sys.executable, code],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    ignored, caught = (int(x, 16) >> (signal.SIGINT - 1) & 1 for x in p.stdout.split())
    assert (ignored, caught) == (1, 0), p.stdout


def test_sigterm_is_answered_as_ctrl_c_with_its_own_exit_code(tmp_path):
    """`kill`, `timeout` and batch systems send SIGTERM: the run stops as on
    Ctrl-C (nothing half written left behind: a timeline run left its
    temporary directory), with exit code 143."""
    scn = tmp_path / "s.toml"
    scn.write_text(SCENARIO.replace("iterations = 25", "iterations = 2500"))
    cmd = [EXE, "simulate", str(scn), "--quiet", "--timeline", "--out", str(tmp_path / "out")]
    # while loading (its imports) and while running: one line and 143 either way
    for delay in (0.05, 3.0):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        assert p.poll() is None, "the run ended before the signal"
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 143 and "interrupted" in err and "Traceback" not in err, (delay, p.returncode, err)
        assert len(err.strip().splitlines()) == 1, err
        assert sorted(f.name for f in tmp_path.iterdir()) == ["s.toml"]


def test_sigterm_cleans_up_where_ctrl_c_is_ignored(tmp_path):
    """A command a script starts with `&` (or a CI job) has Ctrl-C ignored:
    SIGTERM killed it by its default action there, leaving the timeline run's
    temporary directory behind."""
    scn = tmp_path / "s.toml"
    scn.write_text(SCENARIO.replace("iterations = 25", "iterations = 2500"))
    cmd = [EXE, "simulate", str(scn), "--quiet", "--timeline", "--out", str(tmp_path / "out")]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    time.sleep(3.0)
    assert p.poll() is None, "the run ended before the signal"
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143 and "interrupted" in err and "Traceback" not in err, (p.returncode, err)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["s.toml"]
