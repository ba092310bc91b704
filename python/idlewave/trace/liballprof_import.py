"""liballprof traces (the PMPI tracer LogGOPSim and ATLAHS ship:
`pmpi-trace-rank-<r>.txt`, one line per call) → idlewave's per-rank
records (trace format version 2, docs/trace-format.md).

A line is `MPI_Name:t_start:arg:…:t_end`, times in µs (`-` where the tracer
had none: MPI_Init's start, MPI_Finalize's end), the arguments in the order
of the C signature: buffers and other pointers as addresses, counts and ranks
as integers, a datatype as `handle,size,extent`, a communicator as
`handle,rank,size`. Requests are the addresses of the application's request
variables: a Wait completes the latest request started at its address.

What the format cannot give is refused, naming the file and line: a
wildcard receive (the tracer logs no status, so the sender is unknown),
a communicator other than the whole job, and calls with several requests
(Waitall and the like: their array is logged as one address). Calls that do
not communicate (MPI_Comm_rank, MPI_Wtime, …) are left out: their time joins
the computation around them.

A file is quoted in an error only once it is recognisably liballprof's (its
header, `# collprof … output file`, or a call of the form above): before that
only the kind of what was found is named, so that a file given by mistake (a
password file, a key) is not echoed. A trace must end as liballprof ends it,
with MPI_Finalize's line and a newline: a file cut short is refused, not
imported as a shorter run."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from idlewave.trace.format import CODES, RECORD, TraceError

FILE = re.compile(r"pmpi-trace-rank-(\d+)\.txt$")
#: The first line liballprof writes: `# collprof 0.9 output file` (ATLAHS's samples), `# htor's PMPI Tracer
#: VERSION Output File` (LogGOPSim's liballprof).
HEADER = re.compile(r"#\s*(collprof|htor's PMPI Tracer)\b.*output file\s*$", re.IGNORECASE)

#: Per call imported: the record's op, and where (after the start time) its
#: fields are: (count, datatype, peer, tag, comm, request) argument indices
#: or None.
CALLS = {
    "MPI_Send": ("send", (1, 2, 3, 4, 5, None)),
    "MPI_Ssend": ("send", (1, 2, 3, 4, 5, None)),
    "MPI_Rsend": ("send", (1, 2, 3, 4, 5, None)),
    "MPI_Bsend": ("send", (1, 2, 3, 4, 5, None)),
    "MPI_Recv": ("recv", (1, 2, 3, 4, 5, None)),
    "MPI_Isend": ("isend", (1, 2, 3, 4, 5, 6)),
    "MPI_Issend": ("isend", (1, 2, 3, 4, 5, 6)),
    "MPI_Irecv": ("irecv", (1, 2, 3, 4, 5, 6)),
    "MPI_Wait": ("wait", (None, None, None, None, None, 0)),
    "MPI_Barrier": ("barrier", (None, None, None, None, 0, None)),
    "MPI_Bcast": ("bcast", (1, 2, 3, None, 4, None)),
    "MPI_Reduce": ("reduce", (2, 3, 5, None, 6, None)),
    "MPI_Allreduce": ("allreduce", (2, 3, None, None, 5, None)),
    "MPI_Alltoall": ("alltoall", (1, 2, None, None, 6, None)),
    "MPI_Allgather": ("allgather", (1, 2, None, None, 6, None)),
    "MPI_Gather": ("gather", (1, 2, 6, None, 7, None)),
    "MPI_Scatter": ("scatter", (4, 5, 6, None, 7, None)),
    "MPI_Init": ("init", (None,) * 6),
    "MPI_Init_thread": ("init", (None,) * 6),
    "MPI_Finalize": ("finalize", (None,) * 6),
}

#: Calls that communicate but cannot be imported from what the tracer logs.
REFUSED = {"MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Testall", "MPI_Testany", "MPI_Testsome",
           "MPI_Startall", "MPI_Sendrecv", "MPI_Sendrecv_replace"}


def _fail(path: Path, line: int, message: str) -> TraceError:
    return TraceError(f"{path}:{line}: {message}")


def kind_of(text: str) -> str:
    """What the start of `text` is, without its text (for a file not yet known
    to be liballprof's: docs/reliability.md), as the GOAL reader names a token:
    "a word of 4 characters", "a number of 3 digits", one punctuation mark."""
    if not text:
        return "an empty line"
    c = text[0]
    if c.isascii() and (c.isalpha() or c == "_"):
        word = re.match(r"[A-Za-z0-9_.]*", text)
        return f"a word of {len(word[0]) if word else 1} characters"
    if c.isascii() and c.isdigit():
        digits = re.match(r"[0-9]*", text)
        return f"a number of {len(digits[0]) if digits else 1} digits"
    if c == "\ufffd" or not c.isascii():
        return "a character that is not ASCII"
    if not c.isprintable() or c.isspace():
        return f"character U+{ord(c):04X}"
    return f"'{c}'"


def _known(name: str, fields: list[str]) -> bool:
    """Whether a line is of liballprof's form: a call it imports or refuses, or another MPI call."""
    return name in CALLS or name in REFUSED or (name.startswith("MPI_") and len(fields) >= 3)


def read_rank(path: Path, rank: int, ranks: int) -> tuple[np.ndarray, dict[str, int]]:
    """One rank's records, and the calls left out by name (how many)."""
    recs: list[tuple] = []
    skipped: dict[str, int] = {}
    open_req: dict[int, list[int]] = {}  # request address -> ids started there, not yet waited for
    next_req = 1
    recognised = False  # liballprof's header or a call seen: from then on, lines may be quoted
    finalized = 0  # the line of MPI_Finalize
    n = 0
    with open(path, encoding="ascii", errors="replace") as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if n == 1 and HEADER.match(line):
                recognised = True
                continue
            fields = line.split(":")
            name = fields[0]
            recognised = recognised or _known(name, fields)
            if recognised and line and not raw.endswith("\n"):  # (liballprof ends every line it writes)
                raise _fail(path, n, "the file ends within this line (no newline after it): a cut trace, "
                                     "or one whose run did not finish")
            if not line or line.startswith("#"):
                continue
            if not recognised:
                raise _fail(path, n, "not a liballprof trace: expected its header ('# collprof … output file') "
                                     f"or an MPI call (MPI_Name:start:…:end), found {kind_of(line)}")
            if name in REFUSED:
                raise _fail(path, n, f"{name}: liballprof logs its requests as one array address (or its two "
                                     "halves as one call); this trace cannot be imported")
            if name not in CALLS:
                if not name.startswith("MPI_") or len(fields) < 3:
                    raise _fail(path, n, f"not a liballprof line: {line[:60]!r}")
                skipped[name] = skipped.get(name, 0) + 1
                continue
            op, (ci, di, pi, ti, mi, ri) = CALLS[name]
            try:
                t0 = float(fields[1]) * 1e-6 if fields[1] != "-" else None
                t1 = float(fields[-1]) * 1e-6 if fields[-1] != "-" else None
                args = fields[2:-1]
                count = int(args[ci]) if ci is not None else 0
                size = int(args[di].split(",")[1]) if di is not None else 0
                peer = int(args[pi]) if pi is not None else -1
                tag = int(args[ti]) if ti is not None else 0
                comm_rank, comm_size = (int(args[mi].split(",")[1]), int(args[mi].split(",")[2])) if mi is not None \
                    else (rank, ranks)
                address = int(args[ri]) if ri is not None else 0
            except (ValueError, IndexError, AttributeError):
                raise _fail(path, n, f"{name}: its fields do not read as liballprof writes this call") from None
            given = [t for t in (t0, t1) if t is not None]  # "-" for a time liballprof did not take
            if not given:
                raise _fail(path, n, f"{name}: no time")
            start, end = given[0], given[-1]
            if not (math.isfinite(start) and math.isfinite(end)):
                raise _fail(path, n, f"{name}: its times ({fields[1]}, {fields[-1]}) are not finite numbers")
            if end < start:
                raise _fail(path, n, f"{name}: it ends ({fields[-1]} µs) before it starts ({fields[1]} µs)")
            if count < 0 or size < 0 or count * size >= 2**63:
                raise _fail(path, n, f"{name}: {count} elements of {size} bytes is not a message's size")
            if not (-2**31 <= peer < 2**31 and -2**31 <= tag < 2**31):
                raise _fail(path, n, f"{name}: rank {peer} or tag {tag} is beyond what MPI's int holds")
            if comm_size > ranks:  # a larger run than the files present (a sub-communicator is smaller)
                raise _fail(path, n, f"{name}: a communicator of {comm_size} ranks, but {path.parent} holds the "
                                     f"traces of {ranks} (pmpi-trace-rank-0.txt to pmpi-trace-rank-{ranks - 1}.txt): "
                                     "a run of more ranks, some of whose files are missing")
            if comm_size != ranks:
                raise _fail(path, n, f"{name}: a communicator of {comm_size} ranks (of {ranks}); only calls on "
                                     "the whole job are imported")
            if comm_rank != rank:
                raise _fail(path, n, f"{name}: rank {comm_rank} of the {ranks} ranks calls it, but the file is rank "
                                     f"{rank}'s (a file renamed or copied from another rank's, or the ranks of a "
                                     "communicator reordered, which is not imported)")
            if op in ("recv", "irecv") and (peer < 0 or tag < 0):
                raise _fail(path, n, f"{name}: a wildcard receive (source {peer}, tag {tag}); liballprof logs no "
                                     "status, so its sender is unknown")
            if op in ("send", "recv", "isend", "irecv", "bcast", "reduce", "gather", "scatter") and not 0 <= peer < ranks:
                raise _fail(path, n, f"{name}: rank {peer} of {ranks}")
            req = 0
            if op in ("isend", "irecv"):
                req, next_req = next_req, next_req + 1
                open_req.setdefault(address, []).append(req)
            elif op == "wait":
                started = open_req.get(address)
                if not started:
                    raise _fail(path, n, f"{name}: no request was started at address {address}")
                req = started.pop()
            recs.append((CODES[op], 0, 0, peer, tag, count * size, req, start, end))
            if op == "finalize":
                finalized = n
    if not recs:
        raise TraceError(f"{path}: no MPI call in it (an empty or cut trace)")
    if not finalized:
        raise _fail(path, n, "the trace ends here without MPI_Finalize: a cut trace, or one whose run did not "
                             "finish (liballprof writes MPI_Finalize's line last)")
    if any(open_req.values()):
        raise TraceError(f"{path}: {sum(map(len, open_req.values()))} requests never waited for")
    return np.array(recs, dtype=RECORD), skipped


def read_liballprof(directory: str | Path) -> tuple[list[np.ndarray], list[str]]:
    """Every rank's records, and notes on what was left out."""
    directory = Path(directory)
    if not directory.is_dir():
        raise TraceError(f"{directory}: not a directory of liballprof traces (pmpi-trace-rank-<r>.txt)")
    files = {int(m.group(1)): p for p in directory.iterdir() if (m := FILE.search(p.name))}
    if not files:
        raise TraceError(f"{directory}: no liballprof trace (pmpi-trace-rank-<r>.txt)")
    ranks = len(files)
    missing = sorted(set(range(ranks)) - set(files))
    if missing:
        raise TraceError(f"{directory}: rank {missing[0]}'s trace is missing (ranks 0 to {ranks - 1} expected)")
    for p in files.values():
        if not p.is_file():
            raise TraceError(f"{p}: not a file of liballprof's")
    traces: list[np.ndarray] = []
    skipped_all: dict[str, int] = {}
    for r in range(ranks):
        rec, skipped = read_rank(files[r], r, ranks)
        traces.append(rec)
        for k, v in skipped.items():
            skipped_all[k] = skipped_all.get(k, 0) + v
    notes = [f"{v:,} calls of {k} left out (they do not communicate; their time joins the computation)"
             for k, v in sorted(skipped_all.items())]
    return traces, notes


def write_iwt(traces: list[np.ndarray], out: str | Path) -> Path:
    """Writes the records as the tracer would (rank-<r>.iwt), atomically per file."""
    from idlewave.trace.otf2_import import write_iwt as write_all

    return write_all([(rec, {}) for rec in traces], out, library="imported from liballprof by idlewave")
