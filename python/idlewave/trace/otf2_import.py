"""OTF2 (Score-P) traces → idlewave's per-rank records (trace format
version 2, docs/trace-format.md), through the `otf2` Python bindings. Every
process's first location is that rank; MPI event peers are mapped from their
communicator to world ranks; the enclosing region's Enter and Leave give each
call's start and end."""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from idlewave.trace.format import CODES, KINDS, RECORD, TraceError, write_rank

FIRST_SEEN = {v: k for k, v in KINDS.items()}["first_seen"]
NO_PARENT = 2**32 - 1

COLLECTIVES = {"BARRIER": "barrier", "BCAST": "bcast", "REDUCE": "reduce", "ALLREDUCE": "allreduce", "GATHER": "gather",
               "SCATTER": "scatter", "ALLGATHER": "allgather", "ALLTOALL": "alltoall", "SCAN": "scan", "EXSCAN": "exscan",
               "REDUCE_SCATTER_BLOCK": "reduce_scatter_block", "GATHERV": "gatherv", "SCATTERV": "scatterv",
               "ALLGATHERV": "allgatherv"}
# Their events give each member's total bytes only, not the per-peer counts they need.
PER_PEER = ("ALLTOALLV", "ALLTOALLW", "REDUCE_SCATTER")
# Their members' blocks differ: each member's event gives its own, and the
# call's other members' events (matched by order on the communicator) the rest.
V_COLLECTIVES = ("gatherv", "scatterv", "allgatherv")


def block_bytes(op: str, sent: int, received: int, size: int, me: int, root: int) -> int | None:
    """The bytes an idlewave record carries (the vector, or one member's
    block) from the counts Score-P records for member `me` of `size`
    (`root`: the root's member index, or -1). Score-P counts every byte a
    member sends or receives: the root of a gather or reduce receives `size`
    blocks (size − 1 in place), a bcast's or scatter's sends them, an
    allreduce, allgather, alltoall or reduce_scatter_block member sends and
    receives `size` blocks (size − 1 in place), a scan member sends its vector on to each higher
    member and receives it from each lower one. None when no block explains
    the counts."""
    if op == "barrier" or size == 1:
        return 0
    if op in ("scan", "exscan"):
        shares = [(size - me, me + 1), (size - me - 1, me)] if op == "scan" else [(size - me - 1, me)]
        for out, into in shares:
            b, rest = divmod(sent + received, out + into)
            if not rest and (sent, received) == (out * b, into * b):
                return b
        return None
    if op in ("gather", "reduce", "bcast", "scatter"):
        if me != root:
            return received if op in ("bcast", "scatter") else sent
        # the root: (block, size·block), or (0, (size − 1)·block) in place; bcast and scatter the other way
        own, total = (received, sent) if op in ("bcast", "scatter") else (sent, received)
        if own and total == size * own:
            return own
        return total // (size - 1) if not own and total % (size - 1) == 0 else None
    # allreduce, allgather, alltoall, reduce_scatter_block: size blocks each way, or size − 1 in place
    # (both when the count allows: the more common one, not in place, is taken)
    if sent != received:
        return None
    for n in (size, size - 1):
        if sent % n == 0:
            return sent // n
    return None


def v_blocks(op: str, counts: list[tuple[int, int]], root: int) -> list[int] | None:
    """Every member's block of one gatherv, scatterv or allgatherv from each
    member's (sent, received) as Score-P counts them: a gatherv member sends
    its block and the root receives them all (all but its own in place, when
    it sends nothing); a scatterv the other way; an allgatherv member sends
    its block to all p members and receives all p blocks (p − 1 and all but
    its own in place: every member alike, or none). None when the counts fit
    no blocks."""
    p = len(counts)
    if op in ("gatherv", "scatterv"):
        own = [s if op == "gatherv" else r for s, r in counts]  # what each member sends (gatherv) or gets
        total = counts[root][1] if op == "gatherv" else counts[root][0]
        others = sum(b for m, b in enumerate(own) if m != root)
        if own[root] == 0 and total == others:  # in place (or an empty block of the root's own)
            return own
        return own if total == others + own[root] else None
    for in_place in (False, True):
        share = p - 1 if in_place else p
        if share == 0 or any(s % share for s, _ in counts):
            continue
        blocks = [s // share for s, _ in counts]
        if all(r == sum(blocks) - (b if in_place else 0) for b, (_, r) in zip(blocks, counts)):
            return blocks
    return None


def in_place_ambiguous(op: str, sent: int, size: int) -> bool:
    """Whether an allreduce-family count fits both readings, `size` blocks
    (not in place, the one `block_bytes` takes) and size − 1 (in place)."""
    family = op in ("allreduce", "allgather", "alltoall", "reduce_scatter_block")
    return family and size > 1 and sent > 0 and sent % size == 0 and sent % (size - 1) == 0


# Requests the importer makes up for the send half of a Sendrecv (above any Score-P request id).
SENDRECV_REQ = 1 << 62

#: How an anchor file begins: a chunk header (its type, its byte order), then OTF2's name.
ANCHOR_MAGIC = b"OTF2\x00"


def not_an_anchor(anchor: Path) -> str | None:
    """Why `anchor` (a regular file) is not an OTF2 anchor file, naming only
    the kind of what it holds (docs/reliability.md: a file given by mistake is
    not echoed); None when it begins as one does."""
    with open(anchor, "rb") as f:
        head = f.read(64)
    if ANCHOR_MAGIC in head[:16]:
        return None
    if not head:
        return "it is empty"
    size = anchor.stat().st_size
    if all(b in b"\t\n\r" or 32 <= b < 127 for b in head):
        return f"it is text, {size:,} bytes"
    return f"{size:,} bytes that do not begin as an anchor file does"


def read_otf2(path: str | Path) -> tuple[list[tuple[np.ndarray, dict]], list[str]]:
    """Per rank: its records and their payloads (record index -> values);
    and notes on what the counts left uncertain."""
    try:
        import otf2
    except ImportError:
        raise TraceError("OTF2 import needs the `otf2` package (pip install otf2)") from None
    path = Path(path)
    anchor = path / "traces.otf2" if path.is_dir() else path
    if not anchor.exists():
        raise TraceError(f"{path}: no OTF2 anchor file (traces.otf2)")
    if not anchor.is_file():  # a FIFO would be waited on forever
        raise TraceError(f"{anchor}: the OTF2 anchor file must be a regular file")
    try:
        why = not_an_anchor(anchor)
    except OSError as e:  # (not a failed write: the CLI's OSError is --out's)
        raise TraceError(f"{anchor}: cannot read: {e.strerror or e}") from None
    if why is not None:  # the library's own error says only "INVALID (1): Unknown error code"
        raise TraceError(f"{anchor}: not an OTF2 anchor file ({why}); give an OTF2 archive's traces.otf2 or its "
                         "directory")
    with _library_errors() as (said, library_error):
        try:
            with otf2.reader.open(str(anchor)) as tr:
                read = _read_archive(tr, anchor)
        except TraceError:
            raise
        except Exception as e:  # the bindings raise their own error types, as far into the archive as it is read
            what = str(e).split(": ", 1)[-1]
            detail = said().removeprefix(f"{what}: ")
            raise TraceError(f"{anchor}: {e}{f' ({detail})' if detail else ''}: the archive is damaged or incomplete") from None
        # the library can report an error reading a location's events (a file cut
        # short) and go on without it, the bindings raising nothing: the rank's
        # events would be left out
        error = library_error()
        if error:
            raise TraceError(f"{anchor}: the OTF2 library reported an error reading it ({error}): the archive is "
                             "damaged or incomplete")
        return read


@contextmanager
def _library_errors() -> Iterator[tuple[Callable[[], str], Callable[[], str]]]:
    """The OTF2 library prints its errors to file descriptor 2 itself, line
    by line, before the bindings raise, and the bindings print a traceback
    of an exception in their reader callbacks to sys.stderr (a damaged
    definition: "Duplicate ClockProperties entry"): both are held here, and
    the most precise line goes into the error (the library's first, "This is
    no chunk header!", else the callback's exception). What they printed on
    an archive that was read is passed on as it is."""
    held = tempfile.TemporaryFile()
    python = io.StringIO()
    saved, saved_stderr = os.dup(2), sys.stderr
    sys.stderr.flush()
    os.dup2(held.fileno(), 2)
    sys.stderr = python
    told = False

    def said() -> str:
        nonlocal told
        told = True
        held.seek(0)
        first = held.read(4096).decode(errors="replace").strip().splitlines()[:1]
        if first:
            return first[0].split(": error: ")[-1]
        last = python.getvalue().strip().splitlines()[-1:]
        return last[0].split(": ", 1)[-1] if last else ""

    def error() -> str:
        """The library's first error line so far, if it printed one (then told, not passed on)."""
        nonlocal told
        held.seek(0)
        errors = [line for line in held.read().decode(errors="replace").splitlines() if ": error: " in line]
        if errors:
            told = True
            return errors[0].split(": error: ")[-1]
        return ""


    try:
        yield said, error
    finally:
        sys.stderr = saved_stderr
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        if not told:
            held.seek(0)
            sys.stderr.write(held.read().decode(errors="replace") + python.getvalue())
        held.close()


def _read_archive(tr, anchor: Path) -> tuple[list[tuple[np.ndarray, dict]], list[str]]:
    """read_otf2's work on an open archive."""
    import _otf2  # the bindings' C module: the anchor file's counts

    # definitions cut short can still read without an error from the
    # library, with locations missing: their ranks would be left out silently
    announced, defined = _otf2.Reader_GetNumberOfLocations(tr.handle), len(list(tr.definitions.locations))
    if defined < announced:
        raise TraceError(f"{anchor}: the definitions hold {defined} of the {announced} locations the anchor file "
                         "announces: the archive is damaged or incomplete")
    res = tr.definitions.clock_properties.timer_resolution
    groups = [g for g in tr.definitions.location_groups if str(g.location_group_type).endswith("PROCESS")]
    rank_of_group = {g: r for r, g in enumerate(groups)}
    first_loc: dict = {}
    for loc in tr.definitions.locations:
        first_loc.setdefault(loc.group, loc)
    rank_of_loc = {loc: rank_of_group[g] for g, loc in first_loc.items() if g in rank_of_group}

    def world(comm, r):
        if r is None or r < 0 or r >= 2**31:
            return -1
        try:
            member = comm.group.members[r]
        except (AttributeError, IndexError, TypeError):
            return int(r)
        return rank_of_group.get(getattr(member, "group", None), rank_of_loc.get(member, int(r)))

    index_in: dict = {}  # communicator -> {world rank: its index there}

    def member_index(comm) -> dict:
        if comm not in index_in:
            try:
                index_in[comm] = {world(comm, i): i for i in range(len(comm.group.members))}
            except (AttributeError, TypeError):
                index_in[comm] = {}
        return index_in[comm]

    recs: list[list[tuple]] = [[] for _ in groups]
    ambiguous: dict[str, int] = {}  # op -> calls whose counts fit both in place and not
    seen_on: list[dict] = [{} for _ in groups]  # per rank: (communicator, v-collective) -> calls so far
    pending: dict = {}  # (communicator, v-collective, k) -> {member: (rank, record, sent, received, root)}
    comm_ids: list[dict] = [{} for _ in groups]  # per rank: communicator -> id (0: all ranks)

    def comm_id(r, comm, t):
        """The id of `comm` on rank r; its members are recorded the first time."""
        ids = comm_ids[r]
        if comm in ids:
            return ids[comm]
        try:
            members = [world(comm, i) for i in range(len(comm.group.members))]
        except (AttributeError, TypeError):
            members = list(range(len(groups)))
        cid = 0 if members == list(range(len(groups))) else len(ids) + 1
        ids[comm] = cid
        if cid:  # a communicator the importer met first here, then its members
            recs[r].append((CODES["comm_new"], NO_PARENT, cid, FIRST_SEEN, -1, 0, 0, t, t))
            for i, m in enumerate(members):
                recs[r].append((CODES["comm_member"], cid, m, i, -1, 0, 0, t, t))
        return cid
    open_since = {}  # rank -> (enter time, first record index of the region)
    in_sendrecv = [False for _ in groups]  # inside an MPI_Sendrecv region
    sendrecv_req: list[int | None] = [None for _ in groups]  # its send half's request, until the region ends
    irecv: list[dict] = [{} for _ in groups]
    for loc, ev in tr.events:
        r = rank_of_loc.get(loc)
        if r is None:
            continue
        t = ev.time / res
        name = type(ev).__name__
        out = recs[r]
        if not out:
            out.append((CODES["init"], 0, -1, 0, -1, 0, 0, t, t))
        if name == "Enter":
            open_since[r] = (t, len(out))
            in_sendrecv[r] = "sendrecv" in str(getattr(ev.region, "name", "")).lower()
            continue
        if name == "Leave":
            t0, first = open_since.pop(r, (t, len(out)))
            if sendrecv_req[r] is not None:  # the send half of a Sendrecv completes with the call
                out.append((CODES["wait"], 0, -1, 0, -1, 0, sendrecv_req[r], t0, t))
                sendrecv_req[r] = None
            in_sendrecv[r] = False
            for i in range(first, len(out)):
                out[i] = out[i][:7] + (t0, t)
            continue
        t0 = open_since.get(r, (t, 0))[0]
        if name == "MpiSend" and in_sendrecv[r]:
            # Score-P records MPI_Sendrecv as a send then a receive: both are posted
            # at once (as blocking calls in a row, two ranks exchanging would deadlock)
            sendrecv_req[r] = SENDRECV_REQ + len(out)
            out.append((CODES["isend"], 0, world(ev.communicator, ev.receiver), ev.msg_tag, -1, ev.msg_length,
                        sendrecv_req[r], t0, t))
        elif name == "MpiSend":
            out.append((CODES["send"], 0, world(ev.communicator, ev.receiver), ev.msg_tag, -1, ev.msg_length, 0, t0, t))
        elif name == "MpiRecv":
            out.append((CODES["recv"], 0, world(ev.communicator, ev.sender), ev.msg_tag, -1, ev.msg_length, 0, t0, t))
        elif name == "MpiIsend":
            out.append((CODES["isend"], 0, world(ev.communicator, ev.receiver), ev.msg_tag, -1, ev.msg_length, ev.request_id, t0, t))
        elif name == "MpiIsendComplete":
            out.append((CODES["wait"], 0, -1, 0, -1, 0, ev.request_id, t0, t))
        elif name == "MpiIrecvRequest":
            irecv[r][ev.request_id] = len(out)
            out.append((CODES["irecv"], 0, -1, 0, -1, 0, ev.request_id, t0, t))
        elif name == "MpiIrecv":
            src, tag, n = world(ev.communicator, ev.sender), ev.msg_tag, ev.msg_length
            i = irecv[r].pop(ev.request_id, None)
            if i is not None:
                out[i] = (CODES["irecv"], 0, src, tag, -1, n, ev.request_id) + out[i][7:]
            else:  # completed without a recorded request: a blocking receive in effect
                out.append((CODES["irecv"], 0, src, tag, -1, n, ev.request_id, t0, t))
            out.append((CODES["wait"], 0, src, tag, -1, 0, ev.request_id, t0, t))
        elif name == "MpiCollectiveEnd":
            kind = str(ev.collective_op).split(".")[-1]
            op = COLLECTIVES.get(kind)
            if op is None:
                why = ("its events give each member's total bytes, not the per-peer counts it needs"
                       if kind in PER_PEER else "not an MPI collective idlewave replays")
                raise TraceError(f"{anchor}: rank {r}: {kind.lower()} cannot be imported: {why}")
            try:  # the communicator's size
                p = len(ev.communicator.group.members) or len(groups)
            except (AttributeError, TypeError):
                p = len(groups)
            root = -1 if ev.root >= 2**31 else world(ev.communicator, ev.root)
            cid = comm_id(r, ev.communicator, t0)
            me = member_index(ev.communicator).get(r, r)
            root_me = -1 if ev.root >= 2**31 else int(ev.root)
            if op in V_COLLECTIVES:  # its blocks once every member's call is read
                k = seen_on[r].get((ev.communicator, op), 0)
                seen_on[r][(ev.communicator, op)] = k + 1
                pending.setdefault((ev.communicator, op, k), {})[me] = (r, len(out), ev.size_sent, ev.size_received, root_me)
                out.append((CODES[op], cid, root, 0, root, 0, 0, t0, t))
                continue
            nbytes = block_bytes(op, ev.size_sent, ev.size_received, p, me, root_me)
            if in_place_ambiguous(op, ev.size_sent, p):
                ambiguous[op] = ambiguous.get(op, 0) + 1
            if nbytes is None:
                raise TraceError(f"{anchor}: rank {r}'s {op} sent {ev.size_sent} and received {ev.size_received} "
                                 f"bytes, which no block size explains for member {me} of {p}"
                                 + (f" (root {root_me})" if root_me >= 0 else "") + " as Score-P counts them")
            out.append((CODES[op], cid, root, 0, root, nbytes, 0, t0, t))
    payloads: list[dict] = [{} for _ in groups]
    for (comm, op, k), members in pending.items():
        p = len(member_index(comm)) or len(groups)
        rank_of = {m: v[0] for m, v in members.items()}
        missing = sorted(set(range(p)) - set(members))
        if missing:
            raise TraceError(f"{anchor}: {op} call {k + 1} on a communicator of {p} members has no event from "
                             f"member {missing[0]} (every member's call is needed for the blocks)")
        root = next(iter(members.values()))[4]
        if op != "allgatherv" and not 0 <= root < p:
            raise TraceError(f"{anchor}: {op} call {k + 1} names no root among its {p} members")
        blocks = v_blocks(op, [members[m][2:4] for m in range(p)], root)
        if blocks is None:
            counts = ", ".join(f"rank {rank_of[m]} {members[m][2]}/{members[m][3]}" for m in range(p))
            raise TraceError(f"{anchor}: {op} call {k + 1}: the bytes sent/received ({counts}) fit no blocks "
                             "as Score-P counts them")
        for m, (r, i, *_rest) in members.items():
            recs[r][i] = recs[r][i][:5] + (blocks[m],) + recs[r][i][6:]
            if op == "allgatherv" or m == root:
                payloads[r][i] = np.array(blocks, dtype=np.uint64)
    arrays = []
    for out in recs:
        last = out[-1][8] if out else 0.0
        out.append((CODES["finalize"], 0, -1, 0, -1, 0, 0, last, last))
        a = np.zeros(len(out), dtype=RECORD)
        for i, x in enumerate(out):  # (op, comm, peer, tag, root, bytes, req, t0, t1): the root is the peer
            a[i] = (x[0], 0, x[1], x[2], x[3], x[5], x[6], x[7], x[8])
        arrays.append(a)
    notes = [f"{n:,} {op} record(s) (one per member and call) count bytes that fit both MPI_IN_PLACE and not: read as not in place "
             "(if they were in place, their size is (p − 1)/p of what it should be)" for op, n in ambiguous.items()]
    return [(a, pl) for a, pl in zip(arrays, payloads)], notes


def write_iwt(traces: list[tuple[np.ndarray, dict]], out: str | Path, library: str = "imported from OTF2 by idlewave") -> Path:
    """Writes records and payloads as the tracer would (rank-<r>.iwt, format
    version 2, a footer without a function table, `library` where the
    tracer names the MPI library), atomically per file."""
    out = Path(out)
    if out.is_dir():
        other = [f.name for f in out.iterdir() if not (f.name.startswith("rank-") and f.name.endswith(".iwt"))]
        if other:
            raise TraceError(f"{out}: holds {other[0]!r}, not a trace; import into a new or empty directory, or a trace")
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("rank-*.iwt"):  # an earlier trace's ranks beyond this one's would join it
        stale.unlink()
    for r, (rec, payloads) in enumerate(traces):
        write_rank(out / f"rank-{r}.iwt", r, len(traces), rec, payloads, library=library)
    return out
