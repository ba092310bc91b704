"""The idlewave trace format, version 2 (docs/trace-format.md): reading for
inspection and tests, writing for importers. Pure numpy, no engine import.

One file per rank, `rank-<r>.iwt`: a 64-byte header (with the clock that
timed the run), 48-byte records (some followed by a payload of u64 values),
and a footer with the MPI library's version, a per-function table of calls and
seconds, and what the tracer was built for and ran with."""

from __future__ import annotations

import os
import struct
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from idlewave.trace.ops import FLAGS, OPS

MAGIC = b"IWTRACE2"
FOOTER_MAGIC = b"IWFOOT02"
HEADER = struct.Struct("<8siiQQdI20x")
assert HEADER.size == 64
# the header's clock field: what the times between calls measure (0 in traces
# older than the field: the wall clock)
CLOCKS = {0: "wall", 1: "cpu"}
CLOCK_CODES = {v: k for k, v in CLOCKS.items()}
UNSET = 2**64 - 1  # record count / footer offset until MPI_Finalize patches them

RECORD = np.dtype([("op", "<u2"), ("flags", "<u2"), ("comm", "<u4"), ("peer", "<i4"), ("tag", "<i4"),
                   ("bytes", "<u8"), ("req", "<u8"), ("t0", "<f8"), ("t1", "<f8")])
assert RECORD.itemsize == 48

# the op codes and flags: generated from src/trace/ops.txt, the table the tracer and the engine share
CODES: dict[str, int] = {v: k for k, v in OPS.items()}

PAYLOAD = FLAGS["PAYLOAD"]

# comm_new's tag: how the communicator was made
KINDS = {1: "split", 2: "split_type", 3: "dup", 4: "idup", 5: "create", 6: "create_group", 7: "cart_create",
         8: "cart_sub", 9: "graph_create", 10: "dist_graph_create", 11: "dist_graph_create_adjacent",
         12: "intercomm_create", 13: "intercomm_merge", 14: "first_seen"}


class TraceError(ValueError):
    """A trace that cannot be read or replayed; the message says why."""


@dataclass
class RankTrace:
    rank: int
    size: int
    records: np.ndarray                       # RECORD structured array
    payloads: dict[int, np.ndarray] = field(default_factory=dict)  # record index -> uint64 values
    functions: list[tuple[str, int, float]] = field(default_factory=list)  # (name, calls, seconds)
    library: str = ""
    finalized: bool = True
    t_init: float = 0.0
    # "wall", or "cpu": computation between calls timed by the thread's CPU time (IDLEWAVE_TRACE_CLOCK=cpu)
    clock: str = "wall"
    # what the tracer was built for and ran with (built_for, built_for_library, built_with_mpicc,
    # ran_with_library); empty in older traces and imported ones
    info: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i):
        return self.records[i]


# ---------------------------------------------------------------- reading


def _records(raw: memoryview, start: int, end: int, path: Path, strict: bool) -> tuple[np.ndarray, dict, int]:
    """Records and payloads in raw[start:end]; returns (records, payloads,
    offset reached). Payloads are found by their flag: the records between
    two payloads are taken in one numpy view, looked at through a window that
    doubles while it holds no payload (linear time whether payloads are
    rare or dense)."""
    pieces, payloads, n, pos, window = [], {}, 0, start, 64
    while pos < end:
        avail = (end - pos) // RECORD.itemsize
        if avail == 0:
            if strict:
                raise TraceError(f"{path}: truncated at record {n} ({end - pos} stray bytes)")
            break
        k = min(window, avail)
        chunk = np.frombuffer(raw, dtype=RECORD, count=k, offset=pos)
        hit = np.flatnonzero(chunk["flags"] & PAYLOAD)
        if not len(hit):
            pieces.append(chunk)
            n += k
            pos += k * RECORD.itemsize
            window *= 2
            continue
        j = int(hit[0])
        pieces.append(chunk[:j + 1])
        n += j + 1
        pos += (j + 1) * RECORD.itemsize
        window = 64
        if pos + 8 > end:
            if strict:
                raise TraceError(f"{path}: truncated at record {n - 1} (payload length missing)")
            pieces[-1] = pieces[-1][:-1]
            n -= 1
            break
        (count,) = struct.unpack_from("<Q", raw, pos)
        if pos + 8 + 8 * count > end:
            if strict:
                raise TraceError(f"{path}: truncated at record {n - 1} (payload of {count} values)")
            pieces[-1] = pieces[-1][:-1]
            n -= 1
            break
        payloads[n - 1] = np.frombuffer(raw, dtype="<u8", count=count, offset=pos + 8).copy()
        pos += 8 + 8 * count
    records = np.concatenate(pieces) if pieces else np.zeros(0, dtype=RECORD)
    return records, payloads, pos


def _footer(raw: memoryview, off: int, path: Path) -> tuple[str, list[tuple[str, int, float]], dict[str, str]]:
    info: dict[str, str] = {}
    try:
        if bytes(raw[off:off + 8]) != FOOTER_MAGIC:
            raise TraceError(f"{path}: no footer at offset {off} (bad magic)")
        pos = off + 8
        (n,) = struct.unpack_from("<I", raw, pos)
        library = bytes(raw[pos + 4:pos + 4 + n]).decode("utf-8", "replace")
        pos += 4 + n
        (nf,) = struct.unpack_from("<I", raw, pos)
        pos += 4
        functions = []
        for _ in range(nf):
            (ln,) = struct.unpack_from("<H", raw, pos)
            name = bytes(raw[pos + 2:pos + 2 + ln]).decode("ascii", "replace")
            calls, secs = struct.unpack_from("<Qd", raw, pos + 2 + ln)
            functions.append((name, calls, secs))
            pos += 2 + ln + 16
        if pos < len(raw):  # the (key, value) table; older footers end before it
            (ni,) = struct.unpack_from("<I", raw, pos)
            pos += 4
            for _ in range(ni):
                (kl,) = struct.unpack_from("<H", raw, pos)
                key = bytes(raw[pos + 2:pos + 2 + kl]).decode("utf-8", "replace")
                (vl,) = struct.unpack_from("<I", raw, pos + 2 + kl)
                start = pos + 6 + kl
                if start + vl > len(raw):
                    raise struct.error
                info[key] = bytes(raw[start:start + vl]).decode("utf-8", "replace")
                pos = start + vl
    except struct.error:
        raise TraceError(f"{path}: truncated footer") from None
    return library, functions, info


def read_rank(path: str | Path) -> RankTrace:
    """One rank's trace. A run that did not reach MPI_Finalize (unpatched
    header) is still read, up to the end of the file, with finalized=False."""
    path = Path(path)
    raw = memoryview(path.read_bytes())
    if bytes(raw[:8]) == b"IWTRACE1":
        raise TraceError(f"{path}: a version 1 trace (an older tracer); trace again with this version")
    if not len(raw):
        raise TraceError(f"{path}: empty (0 bytes): a rank file cut before its header, or not written")
    if len(raw) < 8 and MAGIC.startswith(bytes(raw)):
        raise TraceError(f"{path}: truncated header ({len(raw)} bytes)")
    if bytes(raw[:8]) != MAGIC:
        raise TraceError(f"{path}: not an idlewave trace (bad magic)")
    if len(raw) < HEADER.size:
        raise TraceError(f"{path}: truncated header ({len(raw)} bytes)")
    _, rank, size, nrec, footer, t_init, clock_code = HEADER.unpack_from(raw, 0)
    if clock_code not in CLOCKS:
        raise TraceError(f"{path}: unknown clock {clock_code} in the header (a newer tracer?)")
    finalized = nrec != UNSET and footer != UNSET
    if finalized and footer < HEADER.size:
        raise TraceError(f"{path}: bad footer offset {footer}")
    if finalized and footer > len(raw):  # cut short after MPI_Finalize wrote it: say where
        records, _, _ = _records(raw, HEADER.size, len(raw), path, strict=True)
        raise TraceError(f"{path}: truncated at record {len(records)} (the file ends before its footer)")
    end = footer if finalized else len(raw)
    records, payloads, _ = _records(raw, HEADER.size, end, path, strict=finalized)
    library: str = ""
    functions: list[tuple[str, int, float]] = []
    info: dict[str, str] = {}
    if finalized:
        if len(records) != nrec:
            raise TraceError(f"{path}: truncated at record {len(records)} (the header says {nrec} records)")
        library, functions, info = _footer(raw, footer, path)
    else:
        warnings.warn(f"{path}: did not reach MPI_Finalize; {len(records)} records read", stacklevel=2)
    return RankTrace(rank, size, records, payloads, functions, library, finalized, t_init, CLOCKS[clock_code], info)


def read(directory: str | Path) -> list[RankTrace]:
    """Every rank's trace, rank order; every rank of the run must be there."""
    d = Path(directory)
    if not d.is_dir():
        raise TraceError(f"{d}: {'not a directory' if d.exists() else 'no such directory'}")
    files: dict[int, Path] = {}
    for f in sorted(d.glob("rank-*.iwt")):
        number = f.stem[len("rank-"):]
        if not (number.isascii() and number.isdigit()):
            continue
        if int(number) in files:
            raise TraceError(f"{d}: two files name rank {int(number)} ({files[int(number)].name}, {f.name})")
        files[int(number)] = f
    if not files:
        raise TraceError(f"{d}: no rank-*.iwt files (was the tracer preloaded?)")
    if 0 not in files:
        raise TraceError(f"{d}: rank-0.iwt is missing")
    first = read_rank(files[0])  # its header says how many ranks the run had: rank-0.iwt to rank-(size − 1).iwt
    if first.rank != 0:
        raise TraceError(f"{files[0]}: holds rank {first.rank}")
    size = first.size
    if size < 1:
        raise TraceError(f"{files[0]}: a run of {size} ranks in its header")
    if stray := sorted(r for r in files if r >= size):
        raise TraceError(f"{files[stray[0]]}: not a rank of this run: rank-0.iwt says the run had {size} ranks "
                         f"(rank-0.iwt to rank-{size - 1}.iwt); move the file out of the trace")
    traces = [first]
    for r in range(1, size):
        if r not in files:
            raise TraceError(f"{d}: rank-{r}.iwt is missing ({size} ranks, rank-0.iwt says)")
        t = read_rank(files[r])
        if t.rank != r:
            raise TraceError(f"{files[r]}: holds rank {t.rank}")
        if t.size != size:
            raise TraceError(f"{files[r]}: a run of {t.size} ranks, rank-0.iwt says {size}")
        traces.append(t)
    return traces


def calls(trace: RankTrace | np.ndarray) -> list[tuple[str, int, int, int]]:
    """(name, peer, tag, bytes) per record, for inspection and tests."""
    rec = trace.records if isinstance(trace, RankTrace) else trace
    return [(OPS.get(int(op), f"op{int(op)}"), int(p), int(t), int(b))
            for op, p, t, b in zip(rec["op"], rec["peer"], rec["tag"], rec["bytes"])]


def function_name(trace: RankTrace, record: int) -> str:
    """The MPI function an `other` record stands for."""
    return trace.functions[int(trace.records[record]["tag"])][0]


# ---------------------------------------------------------------- writing


def write_rank(path: str | Path, rank: int, size: int, records: np.ndarray, payloads: dict | None = None,
               functions: Sequence[tuple[str, int, float]] = (), library: str = "", t_init: float | None = None,
               clock: str = "wall", info: dict[str, str] | None = None) -> Path:
    """Writes one rank's trace as the tracer does after MPI_Finalize
    (atomically: a temporary file renamed into place). `clock`: what the
    times between calls measure ("wall" or "cpu"); `info`: the footer's
    (key, value) table (what the tracer was built for and ran with)."""
    path = Path(path)
    if clock not in CLOCK_CODES:
        raise ValueError(f"clock {clock!r}: expected one of {', '.join(CLOCK_CODES)}")
    records = np.asarray(records, dtype=RECORD).copy()
    payloads = payloads or {}
    for i in payloads:
        records["flags"][i] |= PAYLOAD
    if t_init is None:
        t_init = float(records["t0"][0]) if len(records) else 0.0
    body = bytearray()
    prev = 0
    for i in sorted(payloads):
        body += records[prev:i + 1].tobytes()
        vals = np.asarray(payloads[i], dtype="<u8")
        body += struct.pack("<Q", len(vals)) + vals.tobytes()
        prev = i + 1
    body += records[prev:].tobytes()
    lib = library.encode()
    foot = bytearray(FOOTER_MAGIC + struct.pack("<I", len(lib)) + lib + struct.pack("<I", len(functions)))
    for name, n, secs in functions:
        b = name.encode()
        foot += struct.pack("<H", len(b)) + b + struct.pack("<Qd", n, secs)
    if info:
        foot += struct.pack("<I", len(info))
        for k, v in info.items():
            kb, vb = k.encode(), v.encode()
            foot += struct.pack("<H", len(kb)) + kb + struct.pack("<I", len(vb)) + vb
    header = HEADER.pack(MAGIC, rank, size, len(records), HEADER.size + len(body), t_init, CLOCK_CODES[clock])
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(header + bytes(body) + bytes(foot))
    os.replace(tmp, path)
    return path
