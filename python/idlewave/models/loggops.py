"""LogGOPS closed forms, charged exactly as the engine (and LogGOPSim)
charges them, in integer picoseconds: a send costs its CPU o + (s−1)·O and
its NIC g + (s−1)·G; the message's first byte arrives o + L after the send
starts; receiving costs the CPU o + max((s−1)·O, (s−1)·G). Per-byte terms
round to the nearest picosecond, as the engine does. Eager messages only
(s ≤ S): rendezvous adds matching waits that have no closed form here.
"""

from __future__ import annotations

from dataclasses import dataclass

from idlewave import _engine
from idlewave.scenario import default

PS = 10**12
LINK_KEYS = ("L_s", "o_s", "g_s", "G_s_per_byte", "O_s_per_byte", "S_bytes")


@dataclass(frozen=True)
class LogGOPS:
    L: int  # picoseconds
    o: int
    g: int
    G: float  # picoseconds per byte
    O: float = 0.0
    S: int = default("network.S_bytes")

    @classmethod
    def from_seconds(cls, L_s, o_s, g_s, G_s_per_byte, O_s_per_byte=0.0, S_bytes=default("network.S_bytes")) -> LogGOPS:
        return cls(round(L_s * PS), round(o_s * PS), round(g_s * PS), G_s_per_byte * PS, O_s_per_byte * PS, S_bytes)

    @classmethod
    def loggopsim_defaults(cls) -> LogGOPS:
        """LogGOPSim's defaults, as the scenario schema gives them."""
        return cls.from_seconds(**{k: default(f"network.{k}") for k in LINK_KEYS})

    def costs(self, s: int) -> tuple[int, int, int, int]:
        """(send CPU, send NIC, receive CPU, receive NIC) of an s-byte message, in ps: the engine's cost function."""
        return _engine.loggops_costs(self.L, self.o, self.g, self.G, self.O, self.S, s)

    def send_cpu(self, s: int) -> int:
        return self.costs(s)[0]

    def send_nic(self, s: int) -> int:
        return self.costs(s)[1]

    def recv_cpu(self, s: int) -> int:
        return self.costs(s)[2]

    def check_eager(self, s: int) -> None:
        if s > self.S:
            raise ValueError(f"closed forms cover eager messages only: {s} B > S = {self.S} B")


def p2p(p: LogGOPS, s: int) -> int:
    """One message of s bytes: send start to the end of the receive (ps)."""
    p.check_eager(s)
    return p.o + p.L + p.recv_cpu(s)


def binomial_bcast(p: LogGOPS, ranks: int, s: int) -> list[int]:
    """Finish time (ps) of every rank (relative to the root) in LogGOPSim's
    binomial tree: v sends to v + 2^k for 2^k > v, back to back, each child
    forwarding once it has received."""
    p.check_eager(s)
    done = [0] * ranks  # when each rank's CPU is last busy
    have = [0] * ranks  # when each rank has the data
    for v in range(ranks):  # parents come before their children
        t = have[v]
        k = v.bit_length()
        while v + (1 << k) < ranks:
            child = v + (1 << k)
            have[child] = t + p.o + p.L + p.recv_cpu(s)
            done[child] = have[child]
            done[v] = t + p.send_cpu(s)
            t += max(p.send_cpu(s), p.send_nic(s))
            k += 1
        done[v] = max(done[v], have[v])
    return done


def dissemination(p: LogGOPS, ranks: int, s: int) -> int:
    """Time (ps) of a dissemination allreduce/barrier: ⌈log2 p⌉ rounds of
    send to r+2^k while receiving from r−2^k, every rank in step."""
    p.check_eager(s)
    rounds = (ranks - 1).bit_length()
    t = 0
    for _ in range(rounds):
        cpu_free = t + p.send_cpu(s)
        arrive = t + p.o + p.L
        recv_done = max(arrive, cpu_free) + p.recv_cpu(s)
        t = max(recv_done, t + p.send_nic(s))
    return t
