"""Replay: a trace becomes a GOAL schedule (the engine's LogGOPSim-compatible
input): gaps between MPI calls become computation, point-to-point calls keep
their peers, tags and sizes, waits become dependencies, and collectives
expand into the chosen algorithm's messages. Extrapolation scales a
periodic pattern from p to k·p ranks."""

from __future__ import annotations

import numpy as np

from idlewave import _engine
from idlewave.trace.format import OPS, TraceError

ANY_SOURCE, PROC_NULL, ANY_TAG = -1, -2, -1
COLL = {"barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall"}
TAG_COLL = 1 << 31  # collectives' tags; point-to-point ones stay below
P2P = {"send", "recv", "isend", "irecv", "sendrecv_send", "sendrecv_recv", "probe", "iprobe", "mprobe", "mrecv"}


def _completion_peers(rec: np.ndarray) -> dict[int, tuple[int, int]]:
    """Record index of a nonblocking receive -> (source, tag) from its completion."""
    out, open_ = {}, {}
    for i, r in enumerate(rec):
        op = OPS.get(int(r["op"]))
        if op in ("irecv", "isend") or (op or "").startswith("i") and op[1:] in COLL:
            open_[int(r["req"])] = i
        elif op in ("wait", "test") and int(r["req"]) in open_:
            j = open_.pop(int(r["req"]))
            out[j] = (int(r["peer"]), int(r["tag"]))
    return out


class _Rank:
    """GOAL text of one rank, with LogGOPSim's dependency rules."""

    def __init__(self):
        self.lines, self.n = [], 0
        self.prev = None  # the op before in program order
        self.must = []  # ops the next op must wait for (completed blocking ops, waited requests)

    def op(self, text: str, *, after: list[str] | None = None, chain: bool = True) -> str:
        self.n += 1
        label = f"l{self.n}"
        self.lines.append(f"{label}: {text}")
        deps = after if after is not None else self.must
        for d in deps:
            self.lines.append(f"{label} requires {d}")
        if chain and self.prev is not None:
            self.lines.append(f"{label} irequires {self.prev}")
        if after is None:
            self.must = []
        return label

    def step(self, label: str, blocking: bool) -> None:
        self.prev = label
        if blocking:
            self.must.append(label)


def _tag(key: int, tag: int) -> int:
    """A message tag with its communicator folded in (`key`: the same on every member)."""
    return (key << 20) | (tag & 0xFFFFF)


def _comm_key(members: tuple) -> int:
    """The same small number on every member of a communicator (world: 0)."""
    import zlib

    return 1 + zlib.crc32(np.asarray(members, dtype="<i4").tobytes()) % 2047


def _collective(g: _Rank, name: str, members: list[int], rank: int, root: int, nbytes: int, tag: int,
                algorithms: dict, blocking: bool) -> list[str]:
    """The collective's messages on `members` (world ranks) as GOAL ops;
    returns the ops its completion needs."""
    kind = name if blocking else name[1:]
    local_root = members.index(root) if root >= 0 else 0
    raw = _engine.collective_steps(kind, algorithms.get(kind), len(members), local_root, nbytes, members.index(rank))
    steps = [(k, members[to] if to >= 0 else to, sb, members[frm] if frm >= 0 else frm, rb) for k, to, sb, frm, rb in raw]
    start = list(g.must)
    done: list[str] = start
    fan: list[str] = []
    first = True  # the first messages also follow the program order (irequires)
    for kind_, to, sb, frm, rb in steps:
        if kind_ in ("send", "recv", "exchange"):
            ops = []
            if kind_ in ("recv", "exchange"):
                ops.append(g.op(f"recv {rb}b from {frm} tag {tag}", after=done, chain=first))
            if kind_ in ("send", "exchange"):
                ops.append(g.op(f"send {sb}b to {to} tag {tag}", after=done, chain=first))
            done, first = ops, False
        elif kind_ == "fanout":
            fan.append(g.op(f"send {sb}b to {to} tag {tag}", after=done, chain=first))
        else:
            done, fan, first = fan, [], False
    done = done + fan
    return done or start


def to_goal(traces: list[np.ndarray], algorithms: dict | None = None, compute_scale: float = 1.0) -> str:
    """The GOAL schedule of a trace (calc times in ns)."""
    algorithms = algorithms or {}
    p = len(traces)
    out = [f"num_ranks {p}"]
    for rank, rec in enumerate(traces):
        g = _Rank()
        peers = _completion_peers(rec)
        reqs: dict[int, list[str]] = {}
        last = None
        members: dict[int, list[int]] = {0: list(range(p))}  # this rank's communicator ids → world ranks
        seq: dict[tuple, int] = {}  # collectives so far per communicator
        sendrecv: list[str] = []
        for i, r in enumerate(rec):
            op = OPS.get(int(r["op"]), "")
            t0, t1 = float(r["t0"]), float(r["t1"])
            if op == "init":
                last = t1
                continue
            if last is not None and t0 > last and op != "finalize":
                ns = int(round((t0 - last) * 1e9 * compute_scale))
                if ns > 0:
                    g.step(g.op(f"calc {ns}"), True)
            last = max(t1, last or t1)
            comm, peer, tag, nbytes = int(r["comm"]), int(r["peer"]), int(r["tag"]), int(r["bytes"])
            if op == "comm_member":
                members.setdefault(comm, []).append(peer)
                continue
            if comm not in members:
                raise TraceError(f"rank {rank}: call {i}: communicator {comm} was used before its members were recorded")
            key = 0 if comm == 0 else _comm_key(tuple(members[comm]))
            if op == "send":
                if peer != PROC_NULL:
                    g.step(g.op(f"send {nbytes}b to {peer} tag {_tag(key, tag)}"), True)
            elif op == "sendrecv_send":
                # the send and the receive run together; the next call waits for both
                sendrecv = [g.op(f"send {nbytes}b to {peer} tag {_tag(key, tag)}")] if peer != PROC_NULL else []
                if sendrecv:
                    g.step(sendrecv[0], False)
            elif op == "sendrecv_recv":
                if peer != PROC_NULL:
                    lab = g.op(f"recv {nbytes}b from {peer} tag {_tag(key, tag)}", after=[])
                    g.step(lab, False)
                    sendrecv.append(lab)
                g.must.extend(sendrecv)
            elif op in ("recv", "mrecv"):
                if peer != PROC_NULL:
                    g.step(g.op(f"recv {nbytes}b from {peer} tag {_tag(key, tag)}"), True)
            elif op in ("isend", "irecv"):
                if peer == ANY_SOURCE or tag == ANY_TAG:
                    peer, tag = peers.get(i, (peer, tag))
                if peer in (PROC_NULL,) or peer < 0:
                    if peer == PROC_NULL:
                        continue
                    raise TraceError(f"rank {rank}: call {i}: a wildcard receive that never completed")
                word = "send" if op == "isend" else "recv"
                direction = "to" if op == "isend" else "from"
                lab = g.op(f"{word} {nbytes}b {direction} {peer} tag {_tag(key, tag)}")
                g.step(lab, False)
                reqs[int(r["req"])] = [lab]
            elif op in ("wait", "test"):
                done = reqs.pop(int(r["req"]), None)
                if done:
                    g.must.extend(done)
            elif op in COLL or (op.startswith("i") and op[1:] in COLL):
                blocking = op in COLL
                group = tuple(members[comm])
                n = seq.get(group, 0)
                seq[group] = n + 1
                tag = TAG_COLL + (key << 12) + n % 4096
                done = _collective(g, op, list(group), rank, int(r["root"]), nbytes, tag, algorithms, blocking)
                if blocking:
                    g.must = list(done)
                    g.prev = done[-1] if done else g.prev
                else:
                    reqs[int(r["req"])] = list(done)
            # probes, communicator creation, finalize: no messages
        out.append(f"rank {rank} {{")
        out += g.lines
        out.append("}")
    return "\n".join(out) + "\n"


def extrapolate(traces: list[np.ndarray], ranks: int) -> list[np.ndarray]:
    """A trace of p ranks scaled to `ranks` (a multiple of p) when every rank
    runs the same calls with the same neighbour offsets (mod p): rank q
    replays rank q mod p with its peers shifted. Refuses other patterns."""
    p = len(traces)
    if ranks % p or ranks < p:
        raise TraceError(f"can only scale {p} ranks to a multiple of {p}, not {ranks}")

    def signature(r: int) -> list[tuple]:
        rec = traces[r]
        sig = []
        for x in rec:
            op = int(x["op"])
            peer = int(x["peer"])
            name = OPS.get(op, "")
            if name not in P2P:
                off = None  # only point-to-point peers are neighbour offsets
            else:
                off = (peer - r) % p if peer >= 0 else peer
            sig.append((op, off, int(x["tag"]), int(x["bytes"]), int(x["comm"]), int(x["root"])))
        return sig

    if any((t["op"] == 68).any() for t in traces):
        raise TraceError("cannot extrapolate: the trace uses sub-communicators, whose membership does not scale by rank offsets")
    base = signature(0)
    for r in range(1, p):
        s = signature(r)
        if len(s) != len(base):
            raise TraceError(f"cannot extrapolate: rank {r} makes {len(s)} MPI calls, rank 0 makes {len(base)}")
        for i, (a, b) in enumerate(zip(base, s)):
            if a != b:
                raise TraceError(f"cannot extrapolate: rank {r} call {i} ({OPS.get(b[0], b[0])}, offset {b[1]}) "
                                 f"differs from rank 0's ({OPS.get(a[0], a[0])}, offset {a[1]}); only periodic patterns scale")
        if any(x[2] != 0 and OPS.get(x[0]) in COLL | {"i" + c for c in COLL} and x[5] not in (-1, 0) for x in s):
            raise TraceError("cannot extrapolate: rooted collectives with a root other than rank 0")
    out = []
    for q in range(ranks):
        src = traces[q % p].copy()
        for x in src:
            name = OPS.get(int(x["op"]), "")
            if int(x["peer"]) >= 0 and name in P2P | {"wait", "test"}:
                x["peer"] = (q + (int(x["peer"]) - q % p)) % ranks
        out.append(src)
    return out

