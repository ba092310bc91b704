"""The measurement kernels, run on every rank of an MPI job. Each returns
{name: rows} for rank 0 to write (rows: a dict of columns, or text for a
file written as is)."""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from idlewave import _engine


def busy(seconds: float, test=None, chunks: int = 1) -> int:
    """Spin for `seconds`, optionally calling `test()` between `chunks` pieces; returns the tests made."""
    tests = 0
    end = MPI.Wtime() + seconds
    for k in range(chunks):
        stop = MPI.Wtime() + (end - MPI.Wtime()) / (chunks - k)
        while MPI.Wtime() < stop:
            pass
        if test is not None and k + 1 < chunks:
            test()
            tests += 1
    return tests

def _sizes(max_bytes: int) -> list[int]:
    return [1 << k for k in range(0, max(max_bytes, 1).bit_length()) if (1 << k) <= max_bytes]


def _largest(max_bytes: int) -> int:
    """The largest message of a size sweep up to max_bytes."""
    return _sizes(max_bytes)[-1]


def _partners(comm) -> dict[str, int]:
    """Rank 0's partner on its own node and on another node, where present."""
    names = comm.allgather(MPI.Get_processor_name())
    out = {}
    same = [r for r in range(1, len(names)) if names[r] == names[0]]
    other = [r for r in range(1, len(names)) if names[r] != names[0]]
    if same:
        out["on_node"] = same[0]
    if other:
        out["off_node"] = other[0]
    return out


def _compiled_library(comm):
    """The C loops (pingpong.c) built with the mpicc of this MPI, or None if
    they cannot be built; rank 0 builds them once into a cache keyed by the
    source and compiler, the other ranks load them."""
    import ctypes
    import hashlib
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).with_name("pingpong.c")
    here = Path(sys.executable).parent / "mpicc"
    mpicc = str(here) if here.exists() else shutil.which("mpicc")
    path = None
    if mpicc:
        key = hashlib.sha256(src.read_bytes() + mpicc.encode()).hexdigest()[:16]
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "idlewave"
        path = cache / f"pingpong-{key}.so"
    ok = True
    if comm.Get_rank() == 0 and path is not None and not path.exists():
        try:  # (an unwritable cache or a failing compiler leaves the mpi4py loop, named in machine.json)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            p = subprocess.run([str(mpicc), "-O2", "-shared", "-fPIC", "-o", str(tmp), str(src)], capture_output=True, text=True)
            ok = p.returncode == 0
            if ok:
                os.replace(tmp, path)
        except OSError:
            ok = False
    ok = comm.bcast(ok and path is not None, root=0)
    if not ok:
        return None
    lib = ctypes.CDLL(str(path))
    lib.iw_pingpong.restype = ctypes.c_double
    lib.iw_pingpong.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                ctypes.c_long, ctypes.c_long]
    lib.iw_exchange.restype = ctypes.c_double
    lib.iw_exchange.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_long,
                                ctypes.c_long]
    return lib


class _Slots:
    """The slot cursor of pingpong.c for the mpi4py loops: message i of a
    region's loop uses slot i, round robin, `stride` bytes apart; the cursor
    persists across loops."""

    def __init__(self) -> None:
        self.next = 0

    def at(self, slots: int, stride: int) -> int:
        if slots <= 1:
            return 0
        s = self.next if self.next < slots else 0  # (the last loop's slots may have been smaller)
        self.next = 0 if s + 1 >= slots else s + 1
        return s * stride


def _python_loop(comm):
    """The ping-pong loop in mpi4py: one-way seconds of `iterations` round trips (pingpong.c's iw_pingpong)."""
    cursor = _Slots()

    def loop(me: int, peer: int, send, recv, size: int, iterations: int, slots: int = 1, stride: int = 0) -> float:
        out, into = [send[:size], MPI.BYTE], [recv[:size], MPI.BYTE]  # one buffer: no slicing inside the timed loop
        t0 = MPI.Wtime()
        for _ in range(iterations):
            if slots > 1:
                at = cursor.at(slots, stride)
                out, into = [send[at:at + size], MPI.BYTE], [recv[at:at + size], MPI.BYTE]
            if me == 0:
                comm.Send(out, peer, 7)
                comm.Recv(into, peer, 7)
            else:
                comm.Recv(into, peer, 7)
                comm.Send(out, peer, 7)
        return (MPI.Wtime() - t0) / (2 * iterations)

    return loop


def _python_exchange(comm):
    """The exchange loop in mpi4py: seconds per simultaneous exchange (MPI_Sendrecv) of `iterations`."""
    cursor = _Slots()

    def exchange(peer: int, send, recv, size: int, iterations: int, slots: int = 1, stride: int = 0) -> float:
        out, into = [send[:size], MPI.BYTE], [recv[:size], MPI.BYTE]  # one buffer: no slicing inside the timed loop
        t0 = MPI.Wtime()
        for _ in range(iterations):
            if slots > 1:
                at = cursor.at(slots, stride)
                out, into = [send[at:at + size], MPI.BYTE], [recv[at:at + size], MPI.BYTE]
            comm.Sendrecv(out, peer, 8, into, peer, 8)
        return (MPI.Wtime() - t0) / iterations

    return exchange


def _timers(comm):
    """(name, ping-pong loop(me, peer, send, recv, size, iterations, slots, stride) → one-way seconds,
    exchange loop(peer, send, recv, size, iterations, slots, stride) → seconds per exchange):
    the C loops where they build, else mpi4py's. `send` and `recv` are byte arrays (the same one for the
    usual ping-pong); with `slots` > 1, message i uses bytes [i·stride, i·stride + size) of them."""
    c = _compiled_library(comm) if comm.Get_size() > 1 else None
    if c is not None:
        return ("C",
                lambda me, peer, send, recv, size, iterations, slots=1, stride=0: c.iw_pingpong(
                    me, peer, send.ctypes.data, recv.ctypes.data, size, iterations, slots, stride),
                lambda peer, send, recv, size, iterations, slots=1, stride=0: c.iw_exchange(
                    peer, send.ctypes.data, recv.ctypes.data, size, iterations, slots, stride))
    return "mpi4py (includes the interpreter's per-call overhead)", _python_loop(comm), _python_exchange(comm)


def _timer(comm):
    """(name, ping-pong loop as `_timers` gives it): the C loop where it builds, else mpi4py's."""
    name, loop, _ = _timers(comm)
    return name, loop


def pingpong(comm, max_bytes: int = 4 << 20, reps: int = 10, iterations: int = 20, delay_s: float = 1e-3,
             span_bytes: int = 0) -> dict:
    """Krylov paper §5.2: a warm-up, then per test a barrier and a delay to
    clear the network, `iterations` round trips, repeated `reps` times; for
    the on-node and (when present) off-node pair of rank 0. Then, per size
    in the same way, `iterations` simultaneous exchanges (both ranks send at
    once, MPI_Sendrecv): "exchange", the time per exchange, which exceeds the
    one-way time where the CPU copies the messages (shared memory).

    With `span_bytes` > 0 (well above the last-level cache) each message
    is sent from and received into a fresh slot of two regions of that
    size, so that its data comes from memory, as an application's buffers
    often do; at 0 (the default) every message uses one buffer, which stays
    in the cache."""
    rank = comm.Get_rank()
    if comm.Get_size() < 2:
        raise SystemExit("pingpong needs at least 2 ranks")
    rows: dict[str, list] = {"link": [], "size_bytes": [], "rep": [], "time_s": []}
    xrows: dict[str, list] = {"link": [], "size_bytes": [], "rep": [], "time_s": []}
    timer, loop, exchange = _timers(comm)
    region = max(span_bytes, _largest(max_bytes))
    # written, so that every page is there (zeros may all map one zero page)
    buf = np.full(region, 1 if span_bytes else 0, dtype=np.uint8)
    recv = np.full(region, 2 if span_bytes else 0, dtype=np.uint8)
    for link, peer in _partners(comm).items():
        for size in _sizes(max_bytes):
            stride = (size + 63) // 64 * 64
            slots = region // stride if span_bytes else 1
            role = 0 if rank == 0 else 1 if rank == peer else None
            other = peer if role == 0 else 0
            for out in (rows, xrows):  # the ping-pong, then the exchange
                for rep in range(-1, reps):  # -1: the warm-up, untimed
                    if rep >= 0:
                        comm.Barrier()
                        busy(delay_s)
                    if role is not None:
                        n = 2 if rep < 0 else iterations
                        t = (loop(role, other, buf, recv if span_bytes else buf, size, n, slots, stride) if out is rows
                             else exchange(other, buf, recv, size, n, slots, stride))
                        if role == 0 and rep >= 0:
                            out["link"].append(link)
                            out["size_bytes"].append(size)
                            out["rep"].append(rep)
                            out["time_s"].append(t)
    return {"pingpong": rows, "exchange": xrows, "timer": timer}


def multipair(comm, max_bytes: int = 1 << 20, min_bytes: int = 1 << 14, reps: int = 5, iterations: int = 10,
              delay_s: float = 1e-3) -> dict:
    """1..n simultaneous pairs (i, i + P/2); the aggregate bandwidth gives the
    node bandwidth of the max-rate model when the halves sit on two nodes."""
    size_, rank = comm.Get_size(), comm.Get_rank()
    half = size_ // 2
    if half < 1:
        raise SystemExit("multipair needs at least 2 ranks")
    rows: dict[str, list] = {"pairs": [], "size_bytes": [], "rep": [], "time_s": []}
    timer, loop = _timer(comm)
    for pairs in range(1, half + 1):
        for size in [s for s in _sizes(max_bytes) if s >= min_bytes]:
            buf = np.zeros(size, dtype=np.uint8)
            for rep in range(reps):
                comm.Barrier()
                busy(delay_s)
                i = rank if rank < half else rank - half
                t = 0.0
                if i < pairs:
                    t = loop(0 if rank < half else 1, rank + half if rank < half else rank - half, buf, buf, size, iterations)
                worst = comm.reduce(t, op=MPI.MAX, root=0)
                if rank == 0:
                    rows["pairs"].append(pairs)
                    rows["size_bytes"].append(size)
                    rows["rep"].append(rep)
                    rows["time_s"].append(worst)
    return {"multipair": rows, "timer": timer}


def _halo_setup(comm, n: int):
    dims = MPI.Compute_dims(comm.Get_size(), 3)
    cart = comm.Create_cart(dims, periods=[False] * 3)
    peers = [p for d in range(3) for p in cart.Shift(d, 1) if p != MPI.PROC_NULL]
    send = [np.ones(n * n) for _ in peers]
    recv = [np.empty(n * n) for _ in peers]
    return cart, peers, send, recv


def kernels(comm, sizes: list[int] | None = None, halo_n: list[int] | None = None, overlap_s: float = 1e-4,
            trailing_s: float = 1e-4, iterations: int = 20, reps: int = 3, test_chunks: int = 1) -> dict:
    """Krylov paper §3.1: blocking and nonblocking allreduce and 3-D halo
    exchange (faces of n×n doubles) between two busy-waits, the first
    overlappable (with `test_chunks` − 1 MPI_Test calls inside it)."""
    sizes = sizes or [8, 1024, 65536]
    halo_n = halo_n or [4, 16, 64]
    rank = comm.Get_rank()
    rows: dict[str, list] = {"kernel": [], "mode": [], "size_bytes": [], "n": [], "rep": [], "time_s": [], "overlap_s": [], "trailing_s": []}

    def record(kernel, mode, size, n, rep, t):
        worst = comm.reduce(t, op=MPI.MAX, root=0)
        if rank == 0:
            for k, v in zip(rows, (kernel, mode, size, n, rep, worst, overlap_s, trailing_s)):
                rows[k].append(v)

    for size in sizes:
        a = np.ones(max(size // 8, 1))
        b = np.empty_like(a)
        comm.Allreduce(a, b, op=MPI.SUM)  # warm-up: connections, buffers
        comm.Iallreduce(a, b, op=MPI.SUM).Wait()
        for mode in ("blocking", "nonblocking"):
            for rep in range(reps):
                comm.Barrier()
                t0 = MPI.Wtime()
                for _ in range(iterations):
                    if mode == "blocking":
                        comm.Allreduce(a, b, op=MPI.SUM)
                        busy(overlap_s)
                    else:
                        req = comm.Iallreduce(a, b, op=MPI.SUM)
                        busy(overlap_s, req.Test, test_chunks)
                        req.Wait()
                    busy(trailing_s)
                record("allreduce", mode, size, 0, rep, (MPI.Wtime() - t0) / iterations)
    for n in halo_n:
        cart, peers, send, recv = _halo_setup(comm, n)
        MPI.Request.Waitall([cart.Irecv(r, p, 3) for r, p in zip(recv, peers)] + [cart.Isend(s, p, 3) for s, p in zip(send, peers)])
        for mode in ("blocking", "nonblocking"):
            for rep in range(reps):
                cart.Barrier()
                t0 = MPI.Wtime()
                for _ in range(iterations):
                    reqs = [cart.Irecv(r, p, 3) for r, p in zip(recv, peers)] + [cart.Isend(s, p, 3) for s, p in zip(send, peers)]
                    if mode == "blocking":
                        MPI.Request.Waitall(reqs)
                        busy(overlap_s)
                    else:
                        busy(overlap_s, lambda reqs=reqs: MPI.Request.Testall(reqs), test_chunks)
                        MPI.Request.Waitall(reqs)
                    busy(trailing_s)
                record("halo", mode, 8 * n * n, n, rep, (MPI.Wtime() - t0) / iterations)
        cart.Free()
    return {"kernels": rows}


def noise(comm, duration_s: float = 1.0, threshold_ns: int = 1000, fwq_work: int = 20000, fwq_samples: int = 2000) -> dict:
    """Selfish detours and fixed work quanta on every rank (compiled helper);
    rank 0's detours also as a trace the simulator's noise replay reads."""

    rank = comm.Get_rank()
    comm.Barrier()
    detours = _engine.measure_selfish(duration_s, threshold_ns)
    quanta = _engine.measure_fwq(fwq_work, fwq_samples)
    all_detours = comm.gather(detours, root=0)
    all_quanta = comm.gather(quanta, root=0)
    if rank != 0:
        return {}
    d: dict[str, list] = {"rank": [], "start_ns": [], "duration_ns": []}
    for r, ds in enumerate(all_detours):
        for s, l in ds:
            d["rank"].append(r)
            d["start_ns"].append(s)
            d["duration_ns"].append(l)
    q: dict[str, list] = {"rank": [], "sample": [], "ns": []}
    for r, qs in enumerate(all_quanta):
        q["rank"] += [r] * len(qs)
        q["sample"] += list(range(len(qs)))
        q["ns"] += list(qs)
    trace = "# idlewave noise trace (selfish, rank 0): start<TAB>duration in ns\n"
    trace += "".join(f"{s}\t{l}\n" for s, l in all_detours[0])
    return {"detours": d, "fwq": q, "trace.txt": trace}


def stream(comm, elements: int = 1_000_000, iterations: int = 50, message_bytes: int = 16384, scalar: float = 3.0,
           reps: int = 3) -> dict:
    """MPI-augmented STREAM Triad (idle-waves paper §3.1): a = b + s·c over
    the local arrays, then Isend/Irecv with r ± 1 (open boundaries) and
    Waitall; once with a barrier after each sweep and once without. P_D
    subtracts the barrier cost measured by itself."""
    rank, size = comm.Get_rank(), comm.Get_size()
    a, b, c = np.zeros(elements), np.ones(elements), np.full(elements, 2.0)
    peers = [p for p in (rank - 1, rank + 1) if 0 <= p < size]
    sbuf = [np.zeros(message_bytes, np.uint8) for _ in peers]
    rbuf = [np.empty(message_bytes, np.uint8) for _ in peers]
    timers: dict[str, list] = {"rank": [], "rep": [], "iteration": [], "barrier": [], "compute_s": [], "comm_s": []}
    runtime: dict[bool, list[float]] = {True: [], False: []}
    np.multiply(c, scalar, out=a)  # warm-up: first touch of the arrays, connections
    MPI.Request.Waitall([comm.Irecv(r, p, 5) for r, p in zip(rbuf, peers)] + [comm.Isend(s, p, 5) for s, p in zip(sbuf, peers)])
    # alternate the two variants so drifts of the machine hit both alike
    for rep, with_barrier in [(r, b) for r in range(reps) for b in (True, False)]:
        comm.Barrier()
        start = MPI.Wtime()
        local = []
        for it in range(iterations):
            t0 = MPI.Wtime()
            np.multiply(c, scalar, out=a)
            a += b
            t1 = MPI.Wtime()
            reqs = [comm.Irecv(r, p, 5) for r, p in zip(rbuf, peers)] + [comm.Isend(s, p, 5) for s, p in zip(sbuf, peers)]
            MPI.Request.Waitall(reqs)
            if with_barrier:
                comm.Barrier()
            local.append((it, t1 - t0, MPI.Wtime() - t1))
        runtime[with_barrier].append(comm.reduce(MPI.Wtime() - start, op=MPI.MAX, root=0))
        gathered = comm.gather(local, root=0)
        if rank == 0:
            for r, rows in enumerate(gathered):
                for it, comp, com in rows:
                    for k, v in zip(timers, (r, rep, it, with_barrier, comp, com)):
                        timers[k].append(v)
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(iterations):
        comm.Barrier()
    cost = comm.reduce((MPI.Wtime() - t0) / iterations, op=MPI.MAX, root=0)
    if rank != 0:
        return {}
    with_b, free = float(np.median(runtime[True])), float(np.median(runtime[False]))
    t_b = with_b - iterations * cost
    summary = {"runtime_barrier_s": [with_b], "runtime_free_s": [free], "barrier_cost_s": [cost],
               "iterations": [iterations], "reps": [reps], "pd": [t_b / free - 1.0]}
    return {"stream": timers, "stream_summary": summary}


def cg(comm, n: int = 32, iterations: int = 50, hiding: str = "fixed_alpha", alpha0: float = 0.5, theta: float = 0.5,
       epsilon_s: float = 1e-5, test_chunk: int = 1) -> dict:
    """CG on a 3-D Poisson problem (7-point matrix-free operator, n×n×n
    points per rank, slab decomposition along z) whose MatVec follows the
    HMM paper's Algorithm 2: input exchange of ghost planes hidden behind
    the first block E1 of interior planes, mirror (boundary) planes, output
    exchange of the boundary results hidden behind E2. E1 is ⌊α·interior⌋:
    fixed α, dynamic α (Algorithm 3) or decided by MPI_Testall between
    chunks of `test_chunk` planes (MPI test; α inferred). Records T_in,
    T_out, the waits and α per (rank, iteration)."""
    if hiding not in ("fixed_alpha", "dynamic_alpha", "mpi_test"):
        raise SystemExit(f"hiding must be fixed_alpha, dynamic_alpha or mpi_test, got {hiding!r}")
    rank, size = comm.Get_rank(), comm.Get_size()
    if n < 3:
        raise SystemExit("n must be at least 3 (two mirror planes and an interior)")
    lo, hi = (rank - 1 if rank > 0 else MPI.PROC_NULL), (rank + 1 if rank < size - 1 else MPI.PROC_NULL)
    u_ghost_lo, u_ghost_hi = np.zeros((n, n)), np.zeros((n, n))
    out_lo, out_hi = np.zeros((n, n)), np.zeros((n, n))
    interior = n - 2
    alpha = alpha0
    records: dict[str, list] = {"rank": [], "iteration": [], "t_in_s": [], "t_out_s": [], "wait_in_s": [], "wait_out_s": [], "alpha": []}

    def plane(u, y, k):
        below = u[k - 1] if k > 0 else u_ghost_lo
        above = u[k + 1] if k < n - 1 else u_ghost_hi
        p = u[k]
        y[k] = 6 * p - below - above
        y[k, 1:, :] -= p[:-1, :]
        y[k, :-1, :] -= p[1:, :]
        y[k, :, 1:] -= p[:, :-1]
        y[k, :, :-1] -= p[:, 1:]

    def matvec(u, y, it):
        nonlocal alpha
        reqs_in = [comm.Irecv(u_ghost_lo, lo, 1), comm.Irecv(u_ghost_hi, hi, 2),
                   comm.Isend(np.ascontiguousarray(u[0]), lo, 2), comm.Isend(np.ascontiguousarray(u[-1]), hi, 1)]
        reqs_out = [comm.Irecv(out_lo, lo, 3), comm.Irecv(out_hi, hi, 4)]
        t0 = MPI.Wtime()
        if hiding == "mpi_test":
            done = 0
            while done < interior:
                for k in range(1 + done, 1 + min(done + test_chunk, interior)):
                    plane(u, y, k)
                done = min(done + test_chunk, interior)
                if MPI.Request.Testall(reqs_in):
                    break
            e1 = done
        else:
            e1 = int(alpha * interior)
            for k in range(1, 1 + e1):
                plane(u, y, k)
        tw = MPI.Wtime()
        MPI.Request.Waitall(reqs_in)
        t_in_end = MPI.Wtime()
        plane(u, y, 0)
        plane(u, y, n - 1)
        sends = [comm.Isend(np.ascontiguousarray(y[0]), lo, 4), comm.Isend(np.ascontiguousarray(y[-1]), hi, 3)]
        t1 = MPI.Wtime()
        for k in range(1 + e1, 1 + interior):
            plane(u, y, k)
        tw2 = MPI.Wtime()
        MPI.Request.Waitall(reqs_out + sends)
        t_out_end = MPI.Wtime()
        used = e1 / interior
        for k, v in zip(records, (rank, it, t_in_end - t0, t_out_end - t1, t_in_end - tw, t_out_end - tw2, used)):
            records[k].append(v)
        if hiding == "dynamic_alpha":
            alpha = _engine.alpha_update(alpha, t_in_end - tw, t_out_end - tw2, theta, epsilon_s)  # Algorithm 3, as the engine runs it

    rng = np.random.default_rng(rank)
    b = rng.random((n, n, n))
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    ap = np.empty_like(b)
    rr = comm.allreduce(float(np.vdot(r, r)))
    r0 = rr
    for it in range(iterations):
        matvec(p, ap, it)
        step = rr / comm.allreduce(float(np.vdot(p, ap)))
        x += step * p
        r -= step * ap
        rr_new = comm.allreduce(float(np.vdot(r, r)))
        p = r + (rr_new / rr) * p
        rr = rr_new
    gathered = comm.gather(records, root=0)
    if rank != 0:
        return {}
    merged = {k: [v for g in gathered for v in g[k]] for k in records}
    return {"cg": merged, "cg_summary": {"hiding": [hiding], "residual_ratio": [float(np.sqrt(rr / r0))], "iterations": [iterations]}}
