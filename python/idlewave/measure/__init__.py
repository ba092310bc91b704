"""Measurement on real MPI (mpi4py + Open MPI): ping-pong, multi-pair,
collective and halo kernels, noise, the STREAM desynchronization kernel and
the communication-hiding CG MatVec. ``launch`` runs a kind under mpiexec
(or in place when already started by the user's mpiexec/srun); rank 0
writes Parquet results and ``machine.json`` atomically. Given the
application's mpicc or mpiexec, the kernels run as a C program built with
that MPI instead (native.py, kernels.c).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

KINDS = ("pingpong", "multipair", "kernels", "noise", "stream", "cg")

# Settings that make Open MPI work in containers and VMs (see docs/how-to/measure-a-machine.md).
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_smsc": "^cma",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


class MeasureError(RuntimeError):
    """A measurement that could not run; the message says why."""


class OutNotWritten(MeasureError):
    """--out could not be written (a read-only or full disk): exit 1, where a refusal is 2."""


def under_mpi() -> bool:
    """Whether this process was started by an MPI launcher."""
    return any(v in os.environ for v in ("OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"))


def mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if not found:
        raise MeasureError("mpiexec not found: install the package's dependencies (make install brings Open MPI)")
    return found


#: What a rank prints before the line that says why it failed (worker.py, which imports mpi4py: not imported here).
WORKER_PREFIX = "idlewave worker: "

# Message sizes travel as C ints (the timed loop, MPI counts).
MAX_MESSAGE_BYTES = 2**31 - 1
# Counts (iterations, repetitions, samples) travel as C ints too (kernels.c, pingpong.c).
MAX_COUNT = 2**31 - 1

#: The parameters that name one of a few choices, and the choices (kernels.py checks them again).
CHOICES = {("cg", "hiding"): ("fixed_alpha", "dynamic_alpha", "mpi_test")}

#: Whole numbers with bounds other than 1 … MAX_COUNT: (least, why; greatest or None, why).
INT_BOUNDS = {
    ("cg", "n"): (3, "two mirror planes and an interior", 16383, "a plane of n×n doubles is one message, below 2^31 bytes"),
    ("pingpong", "span_bytes"): (0, "", 2**31 - 1, "each of its two regions below 2 GiB"),
    ("kernels", "halo_n"): (1, "", 16383, "a face of n×n doubles is one message, below 2^31 bytes"),
    ("stream", "elements"): (1, "", None, ""),
}

#: Numbers with bounds other than 0 … ∞: (least, greatest, whether the least is excluded).
FLOAT_BOUNDS = {
    ("cg", "alpha0"): (0.0, 1.0, False),
    ("cg", "theta"): (0.0, 1.0, False),
    ("noise", "duration_s"): (0.0, math.inf, True),
    ("stream", "scalar"): (-math.inf, math.inf, False),
}

#: The fewest ranks each kind measures with (the others: 1).
MIN_RANKS = {"pingpong": 2, "multipair": 2}

#: `--ranks` refused beyond this many processes per CPU: idlewave's own launch puts every rank on this
#: machine, and 100,000 oversubscribed processes make it unusable. More ranks: the user's own launcher.
MAX_RANKS_PER_CPU = 16


def _defaults(kind: str) -> dict:
    """The kernel's parameters and defaults, read from kernels.py's source
    (importing it would start MPI in this process)."""
    import ast

    tree = ast.parse((Path(__file__).parent / "kernels.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kind)
    args = fn.args.args[1:]  # after comm
    # (our own source's constant expressions, such as 4 << 20)
    value = lambda d: eval(compile(ast.Expression(d), "kernels.py", "eval"), {"__builtins__": {}})  # noqa: E731, S307
    return {a.arg: value(d) for a, d in zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults)}


def resolved_defaults(kind: str) -> dict:
    """The kernel's defaults with a None default replaced by the value its
    body puts in its place (`sizes = sizes or [8, 1024, 65536]`): a list."""
    import ast

    defaults = _defaults(kind)
    if any(v is None for v in defaults.values()):
        tree = ast.parse((Path(__file__).parent / "kernels.py").read_text())
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kind)
        for stmt in fn.body:
            if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and defaults.get(stmt.targets[0].id, 0) is None and isinstance(stmt.value, ast.BoolOp)
                    and isinstance(stmt.value.op, ast.Or)):
                defaults[stmt.targets[0].id] = ast.literal_eval(stmt.value.values[-1])
    return defaults


def _show(value) -> str:
    """A --set value as given (a list without spaces); a long one cut short."""
    text = repr(value).replace(" ", "") if isinstance(value, list) else repr(value)
    return text if len(text) <= 40 else f"{text[:30]}… ({len(text)} characters)"


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond a float's range
        return False


def _check_int(kind: str, key: str, v, what: str, element: bool) -> None:
    """`v` (the value, or an `element` of its list) within the parameter's bounds."""
    low, low_why, high, high_why = INT_BOUNDS.get((kind, key), (1, "", MAX_COUNT, "counts are C ints"))
    if ("bytes" in key or key == "sizes") and (kind, key) not in INT_BOUNDS:
        high, high_why = MAX_MESSAGE_BYTES, "message sizes must be below 2^31 bytes"
    if isinstance(v, bool) or not isinstance(v, int):
        raise MeasureError(f"{what}: " + (f"every element must be a whole number, not {_show(v)}" if element
                                          else "a whole number is expected"))
    bound = "every element must be" if element else "must be"
    if v < low:
        raise MeasureError(f"{what}: {bound} ≥ {low}" + (f" ({low_why})" if low_why else ""))
    if high is not None and v > high:
        raise MeasureError(f"{what}: {bound} ≤ {high}" + (f" ({high_why})" if high_why else ""))


def check_params(kind: str, params: dict) -> None:
    """Refuses, before any process starts, a parameter the kernel does not
    take or a value it cannot measure with: a list where kernels.py takes a
    list (and a single value elsewhere); counts and sizes whole numbers ≥ 1
    that fit a C int (sizes below 2^31 bytes); times finite and ≥ 0; a
    name among the kernel's choices."""
    defaults = resolved_defaults(kind)
    for key, value in params.items():
        if key not in defaults:
            raise MeasureError(f"--set {key}: {kind} takes {', '.join(defaults)}")
        default = defaults[key]
        what = f"--set {key}={_show(value)}"
        choices = CHOICES.get((kind, key))
        if choices is not None:
            if not isinstance(value, str) or value not in choices:
                raise MeasureError(f"{what}: one of {', '.join(choices)} is expected")
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise MeasureError(f"{what}: a name is expected (default {default!r})")
        elif isinstance(default, list):
            example = f"--set {key}={_show(default)}"
            if not isinstance(value, list):
                raise MeasureError(f"{what}: a list of whole numbers is expected, e.g. {example}")
            if not value:
                raise MeasureError(f"{what}: an empty list measures nothing; give at least one value, e.g. {example}")
            for v in value:
                _check_int(kind, key, v, what, True)
        elif isinstance(value, list):
            raise MeasureError(f"{what}: a single {'whole number' if isinstance(default, int) else 'number'} is expected, "
                               "not a list")
        elif isinstance(default, int):
            _check_int(kind, key, value, what, False)
        else:  # a float
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
                raise MeasureError(f"{what}: a finite number is expected")
            low, high, open_low = FLOAT_BOUNDS.get((kind, key), (0.0, math.inf, False))
            if value < low or (open_low and value == low) or value > high:
                raise MeasureError(f"{what}: must be {'> ' if open_low else '≥ '}{low:g}" if high == math.inf
                                   else f"{what}: must be between {low:g} and {high:g}")
    merged = {**defaults, **params}
    if kind == "multipair":
        low, high = merged["min_bytes"], merged["max_bytes"]
        if not any(low <= 1 << k <= high for k in range(high.bit_length())):
            given = " and ".join(f"--set {k}={merged[k]}" for k in ("min_bytes", "max_bytes") if k in params)
            raise MeasureError(f"{given}: no power of two lies between min_bytes ({low}) and max_bytes ({high}): "
                               "nothing would be measured")
    if kind == "cg" and merged["hiding"] == "dynamic_alpha" and merged["epsilon_s"] == 0:
        raise MeasureError(f"--set epsilon_s={_show(merged['epsilon_s'])}: must be > 0 with hiding=dynamic_alpha "
                           "(waits below ε count as zero: α would never move)")


def cpus() -> int:
    """The CPUs this process may run on (its affinity), where the ranks idlewave launches run."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # (not Linux)
        return os.cpu_count() or 1


def launcher_size() -> int | None:
    """The job's size, as the user's launcher told this process (None when it did not)."""
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def check_ranks(kind: str, ranks: int) -> None:
    """The ranks idlewave launches (--ranks): at least the kind's minimum,
    at most MAX_RANKS_PER_CPU per CPU of this machine. Under the user's
    launcher, the job's size it tells (at least the minimum; no maximum:
    that launcher places the ranks)."""
    least = MIN_RANKS.get(kind, 1)
    if under_mpi():
        size = launcher_size()
        if size is not None and size < least:
            raise MeasureError(f"{kind} needs at least {least} ranks; the launcher started {size}")
        return
    if ranks < least:
        raise MeasureError(f"--ranks {ranks}: {kind} needs at least {least} rank{'s' if least > 1 else ''}"
                           + (" (rank 0 and a partner)" if least == 2 else ""))
    limit = MAX_RANKS_PER_CPU * cpus()
    if ranks > limit:
        raise MeasureError(
            f"--ranks {ranks}: more than {MAX_RANKS_PER_CPU} × the {cpus()} CPUs of this machine ({limit}): idlewave "
            "starts every rank on this machine, and so many oversubscribed processes would make it unusable. "
            f"For more ranks, start idlewave with your own launcher, which places them on your nodes (mpiexec -n {ranks} "
            f"--hostfile FILE idlewave measure {kind} …, or srun), or use fewer ranks")


def memory_limit() -> tuple[int, str] | None:
    """The memory the ranks on this machine share: physical memory, or the
    container's (cgroup) limit where lower; and what it is ("{}": the size)."""
    found = None
    try:
        found = (os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "this machine's {} of memory")
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and (found is None or int(text) < found[0]):
            found = (int(text), "this container's memory limit of {} (cgroup)")
    return found


def _largest_size(max_bytes: int) -> int:
    """The largest power of two ≤ max_bytes: the largest message of a size sweep."""
    return 1 << (max(max_bytes, 1).bit_length() - 1)


def memory_per_rank(kind: str, params: dict) -> dict[str, int]:
    """Bytes a rank allocates for its arrays, by the parameter that sets
    them (an estimate from kernels.py's allocations; small ones left out)."""
    p = {**resolved_defaults(kind), **params}
    if kind == "pingpong":
        largest = _largest_size(p["max_bytes"])  # send and receive buffers, or regions of span_bytes
        return {"span_bytes": 2 * p["span_bytes"]} if p["span_bytes"] > largest else {"max_bytes": 2 * largest}
    if kind == "multipair":
        return {"max_bytes": _largest_size(p["max_bytes"])}
    if kind == "kernels":
        return {"sizes": 2 * 8 * max(max(s // 8, 1) for s in p["sizes"]),  # allreduce's two arrays
                "halo_n": 2 * 6 * 8 * max(p["halo_n"]) ** 2}  # a face per neighbour, sent and received
    if kind == "noise":
        # the samples in Rust and as Python ints, and rank 0's gathered table (counted on every rank)
        return {"fwq_samples": 200 * p["fwq_samples"]}
    if kind == "stream":
        return {"elements": 3 * 8 * p["elements"], "message_bytes": 4 * p["message_bytes"]}  # a, b, c; r±1 buffers
    if kind == "cg":
        return {"n": 8 * 8 * p["n"] ** 3}  # b, x, r, p, Ap and the temporaries of an update: n³ doubles each
    return {}


#: Bytes rank 0 holds per row of its results (a Python list slot, a float or int object, the table's copy
#: for each of a row's ~8 values).
ROW_BYTES = 300


def result_rows(kind: str, params: dict, ranks: int) -> tuple[int, str]:
    """The rows of rank 0's result tables, and the count parameter they grow with (reps or iterations)."""
    p = {**resolved_defaults(kind), **params}
    sizes = _largest_size(p.get("max_bytes", 1)).bit_length()
    rows = {"pingpong": 2 * sizes * p.get("reps", 1) * 2,  # on- and off-node, ping-pong and exchange
            "multipair": max(ranks // 2, 1) * sizes * p.get("reps", 1),
            "kernels": (len(p.get("sizes", [])) + len(p.get("halo_n", []))) * 2 * p.get("reps", 1),
            "stream": ranks * p.get("reps", 1) * 2 * p.get("iterations", 1),  # every rank's timers
            "cg": ranks * p.get("iterations", 1)}.get(kind, 0)
    counts = [k for k in ("iterations", "reps") if k in params and k in p]
    return rows, max(counts, key=lambda k: p[k]) if counts else ""


def local_ranks(ranks: int) -> int:
    """The ranks that share this machine's memory: all that idlewave launches;
    under the user's launcher, those it placed on this node (when it says)."""
    if not under_mpi():
        return ranks
    for name in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 1


def check_memory(kind: str, params: dict, ranks: int, limit: tuple[int, str] | None = None) -> None:
    """Refuses a measurement whose ranks' arrays, and rank 0's results, cannot
    fit in this machine's memory together, naming the parameter that takes
    the most (or --ranks)."""
    from idlewave.units import fmt_bytes

    limit = limit or memory_limit()
    parts = memory_per_rank(kind, params)
    if limit is None or not parts:
        return
    local = local_ranks(ranks)
    per_rank = sum(parts.values())
    rows, count = result_rows(kind, params, launcher_size() or ranks if under_mpi() else ranks)
    table = ROW_BYTES * rows
    total = per_rank * local + table
    if total <= limit[0]:
        return
    size = lambda n: fmt_bytes(n, binary=True)  # noqa: E731
    key = max(parts, key=lambda k: parts[k]) if per_rank * local >= table else count
    where = f"on the {local} ranks of this node" if under_mpi() else f"on {local} rank{'s' if local > 1 else ''}"
    need = f"{kind}{chr(39) if kind.endswith('s') else chr(39) + 's'} arrays take about {size(per_rank)} per rank"
    if table >= 1 << 20:
        need += f", rank 0's {rows:,} result rows about {size(table)}"
    need += f"; {size(total)} {where}"
    named = f"--set {key}={_show(params[key])}" if key in params else kind if under_mpi() else f"--ranks {ranks}"
    raise MeasureError(f"{named}: {need}, more than {limit[1].format(size(limit[0]))}")


def check(kind: str, params: dict, ranks: int) -> None:
    """Everything about a measurement that can be refused before a process starts."""
    check_params(kind, params)
    check_ranks(kind, ranks)
    check_memory(kind, params, ranks)


_wheel_mpiexec = mpiexec  # (launch's argument of the same name hides it)


def launch(kind: str, ranks: int, params: dict, out: Path, timeout: float = 3600, *, mpicc: str | None = None,
           mpiexec: str | None = None, note: Callable[[str], None] | None = None) -> Path:
    """Runs one measurement kind on `ranks` processes; returns the output
    directory. With `mpicc` or `mpiexec` (the application's MPI), the C
    kernels built with that MPI run instead of mpi4py (native.py); `note`
    receives what was assumed (a tool taken from the other's directory)."""
    if kind not in KINDS:
        raise MeasureError(f"unknown kind {kind!r} (choose from {', '.join(KINDS)})")
    native = mpicc is not None or mpiexec is not None
    if native:
        from idlewave.measure import native as c_kernels

        if kind not in c_kernels.KINDS:
            raise MeasureError(f"{kind} runs on mpi4py only: --mpicc and --mpiexec measure {', '.join(c_kernels.KINDS)}")
    check(kind, params, ranks)
    tools = c_kernels.prepare(mpicc, mpiexec, note) if native else None
    out = Path(out)
    if out.is_dir() and next(out.iterdir(), None) is not None and not (out / "machine.json").is_file():
        raise MeasureError(f"--out {out}: holds files of something else; a measurement writes into a new or empty "
                           "directory, or one it wrote before")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise MeasureError(f"--out {out}: cannot create the directory: {e.strerror or e}") from None
    if tools is not None:
        return c_kernels.launch(kind, ranks, params, out, tools, timeout, note)
    args = [sys.executable, "-m", "idlewave.measure.worker", kind, json.dumps(params), str(out)]
    if under_mpi():
        from idlewave.measure.worker import run

        run(kind, params, out)
        return out
    cmd = [_wheel_mpiexec(), "--oversubscribe", "-n", str(ranks), *args]
    p = run_job(kind, cmd, {**os.environ, **MPI_ENV}, timeout)
    if p.returncode != 0:
        # the ranks' own lines (worker.py: PREFIX), once each; else the end of what the job printed
        text = f"{p.stderr or ''}\n{p.stdout or ''}"
        ours = list(dict.fromkeys(line[len(WORKER_PREFIX):] for line in text.splitlines() if line.startswith(WORKER_PREFIX)))
        detail = "\n".join(ours[:6]) if ours else "\n".join((p.stderr or p.stdout).strip().splitlines()[-12:])
        raise MeasureError(f"{kind} failed under mpiexec (exit {p.returncode}):\n{detail}")
    return out


#: Seconds a launcher has to end its job after SIGTERM, and its ranks after it, before SIGKILL.
GRACE_S = 5.0


def _started(pid: int) -> int | None:
    """The start time of process `pid` (its identity, with the pid), None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def _descendants(pid: int) -> dict[int, int]:
    """The processes below `pid` (pid → start time), from /proc; empty where there is none."""
    children: dict[int, list[int]] = {}
    try:
        entries = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return {}
    for p in entries:
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(p)
    found: dict[int, int] = {}
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop()
        started = _started(p)
        if started is not None:
            found[p] = started
        todo += children.get(p, [])
    return found


class _Held:
    """`with _Held():` Ctrl-C, SIGTERM and SIGHUP are noted and not acted on
    while the block runs (the end of a job must not be cut short: its ranks
    would outlive the command). Outside the main thread, nothing changes."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __enter__(self) -> None:
        self.before: dict = {}
        for s in self.SIGNALS:
            try:
                handler = signal.getsignal(s)
                if handler not in (signal.SIG_IGN, None):
                    self.before[s] = signal.signal(s, lambda signum, frame: None)
            except ValueError:  # not the main thread
                return

    def __exit__(self, *exc: object) -> None:
        for s, handler in self.before.items():
            signal.signal(s, handler)


def end_job(p: subprocess.Popen, own_group: bool) -> None:
    """Ends a launcher and its job: SIGTERM to the launcher (its process group,
    when it has one of its own), which ends its ranks as it ends a failed job;
    then SIGKILL to whatever is left after GRACE_S (the launcher, its group,
    ranks it left behind), found beforehand in /proc, as they are no longer
    its children once it has gone. Returns when all are gone."""
    import time

    with _Held():
        tree = _descendants(p.pid)
        try:
            if own_group:
                os.killpg(p.pid, signal.SIGTERM)
            else:
                p.terminate()
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + GRACE_S
        while p.poll() is None and time.monotonic() < deadline:
            tree.update(_descendants(p.pid))  # ranks it was still starting
            try:  # (reading its output: a launcher blocked on a full pipe would not end)
                p.communicate(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
            except (OSError, ValueError):
                time.sleep(0.05)
        alive = lambda: {q: t for q, t in tree.items() if _started(q) == t}  # noqa: E731
        while alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        for q in alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(q, signal.SIGKILL)
        if p.poll() is None:
            p.kill()
        if own_group:  # the group outlives the launcher while a member lives, so its id is still ours
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + GRACE_S
        while alive() and time.monotonic() < deadline:  # (not our children: gone once init has reaped them)
            time.sleep(0.02)
        for stream in (p.stdout, p.stderr):
            if stream is not None:
                stream.close()


def run_job(what: str, cmd: list[str], env: dict, timeout: float, *, own_group: bool = True,
            close_fds: bool = True) -> subprocess.CompletedProcess:
    """Runs `cmd` (a launcher: mpiexec; or under the user's launcher, this
    rank's program) and captures its output. With `own_group` the launcher
    runs in a process group of its own, its stdin /dev/null (a launcher
    forwards stdin to rank 0, and reading the terminal from outside its
    foreground group would stop it). Whatever ends the wait early — the
    timeout, Ctrl-C, a signal the caller turns into an exception — ends the
    job first (`end_job`), so that no rank outlives the command."""
    try:
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL if own_group else None, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, close_fds=close_fds,
                             process_group=0 if own_group else None)
    except OSError as e:
        raise MeasureError(f"{cmd[0]}: cannot run: {e.strerror or e}") from None
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_job(p, own_group)
        raise MeasureError(f"{what} did not finish within {timeout:.0f} s") from None
    except BaseException:
        end_job(p, own_group)
        raise
    return subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr)
