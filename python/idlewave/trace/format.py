"""The tracer's file format: per rank `rank-<r>.iwt`, an 8-byte magic
`IWTRACE1`, int32 rank, int32 size, then 48-byte records (op, flags, comm,
peer, tag, root, bytes, request, t0, t1). Peers and roots are world ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np

RECORD = np.dtype([("op", "u1"), ("flags", "u1"), ("comm", "<u2"), ("peer", "<i4"), ("tag", "<i4"), ("root", "<i4"),
                   ("bytes", "<u8"), ("req", "<u8"), ("t0", "<f8"), ("t1", "<f8")])
assert RECORD.itemsize == 48

OPS = {
    1: "init", 2: "finalize", 3: "send", 4: "recv", 5: "isend", 6: "irecv", 7: "sendrecv_send", 8: "sendrecv_recv",
    9: "probe", 10: "iprobe", 11: "mprobe", 12: "mrecv", 13: "wait", 14: "test",
    32: "barrier", 33: "bcast", 34: "reduce", 35: "allreduce", 36: "gather", 37: "scatter", 38: "allgather", 39: "alltoall",
    48: "ibarrier", 49: "ibcast", 50: "ireduce", 51: "iallreduce", 52: "igather", 53: "iscatter", 54: "iallgather", 55: "ialltoall",
    64: "comm_split", 65: "comm_dup", 66: "cart_create", 67: "comm_free", 68: "comm_member",
}
CODES = {v: k for k, v in OPS.items()}


class TraceError(ValueError):
    """A trace that cannot be read or replayed; the message says why."""


def read(directory: str | Path) -> list[np.ndarray]:
    """Every rank's records, rank order."""
    d = Path(directory)
    files = sorted(d.glob("rank-*.iwt"), key=lambda p: int(p.stem.split("-")[1]))
    if not files:
        raise TraceError(f"{d}: no rank-*.iwt files (was the tracer preloaded?)")
    traces, size = [], None
    for i, f in enumerate(files):
        raw = f.read_bytes()
        if raw[:8] != b"IWTRACE1" or len(raw) < 16 or (len(raw) - 16) % RECORD.itemsize:
            raise TraceError(f"{f}: not an idlewave trace (bad header or truncated record)")
        rank, n = np.frombuffer(raw[8:16], dtype="<i4")
        if rank != i:
            raise TraceError(f"{d}: rank-{i}.iwt is missing (found rank {rank})")
        if size is None:
            size = int(n)
        traces.append(np.frombuffer(raw[16:], dtype=RECORD))
    if len(traces) != size:
        raise TraceError(f"{d}: {len(traces)} rank files for a run of {size} ranks")
    return traces


def calls(rec: np.ndarray) -> list[tuple]:
    """(name, peer, tag, bytes) per record, for inspection and tests."""
    return [(OPS.get(int(r["op"]), f"op{r['op']}"), int(r["peer"]), int(r["tag"]), int(r["bytes"])) for r in rec]
