"""Cross-checks idlewave's shared-links flow model (docs/links.md) against
SimGrid's flow model on the same networks: each case's flows run once
through idlewave.simulate and once through SimGrid's LMM solver, and each
flow's completion time is compared.

    PYTHONPATH=python .venv/bin/python scripts/simgrid_crosscheck.py   # the table; exit 1 on a mismatch

SimGrid comes from pip (`pip install -e '.[crosscheck]'`, built from source:
there is no wheel; see docs/links.md) or from Debian (`apt-get install
python3-simgrid`, whose module for the system's Python 3.11 this script
loads when no pip SimGrid is installed). SimGrid runs in a subprocess per case (this file with --worker):
its engine can be created only once per process.

How the two models are made the same:

- idlewave: latency L, overheads o = g = O = 0, G per byte, eager at every
  size; a message of s bytes moves s − 1 bytes as a flow along its route
  (src/network/routes.rs) and arrives L after its last byte. Its arrival is
  read from the timeline (the message's span), minus L.
- SimGrid: one pair of hosts per flow and one link per idlewave link (the
  receiving rank's NIC at 1/G, torus, fat-tree and dragonfly links at their
  bandwidth), plus the sending rank's NIC as a link at 1/G. Every link has
  latency 0 and the settings of SIMGRID_CONFIG make CM02's LMM a plain
  max-min over link bandwidths; a flow of s − 1 bytes ends at its
  completion time.

In the cases every rank sends at most one message, where idlewave's cap of
a flow at 1/G and a sending NIC shared as a link are the same thing. Where a
rank sends two, they differ (DIFFERENCES): idlewave's NIC sends them one
after the other (LogGOPS's gap), SimGrid's link shares it between them.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import random
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from xml.sax.saxutils import quoteattr

L_S = 1e-6  # latency between nodes, added once by both after the last byte
G_S_PER_BYTE = 1e-9  # 1 GB/s NICs
LINK_BYTES_PER_S = 1e9  # links between switches
MB = 1_000_000
TOLERANCE = 1e-6  # relative, on each flow's time without L

# CM02 is the LMM model without LV08's correction factors (factors 1, weight-S 0:
# its defaults, written out); without cross traffic a flow uses only its own
# route; TCP-gamma 0 leaves the variables unbounded (the window bound
# gamma / (2·latency) applies only where latency > 0, and a bound of 0 is none).
# SimGrid 3.32: src/surf/network_cm02.cpp; SimGrid 4.x calls these settings the "raw" model.
SIMGRID_CONFIG = (
    "network/model:CM02",
    "network/crosstraffic:0",
    "network/TCP-gamma:0",
    "network/weight-S:0",
    "network/bandwidth-factor:1",
    "network/latency-factor:1",
)

# Debian's python3-simgrid: a module for the system's Python, outside any venv
DEBIAN_DIST = Path("/usr/lib/python3/dist-packages")


def load_simgrid() -> ModuleType | None:
    """SimGrid's Python module: the installed one, or Debian's for this Python's ABI; None without either."""
    try:
        import simgrid

        return simgrid
    except ImportError:
        pass
    if _preload_pip_libsimgrid():
        import simgrid

        return simgrid
    path = DEBIAN_DIST / f"simgrid{sysconfig.get_config_var('EXT_SUFFIX')}"
    if not path.is_file():
        return None
    loader = importlib.machinery.ExtensionFileLoader("simgrid", str(path))
    spec = importlib.util.spec_from_file_location("simgrid", path, loader=loader)
    if spec is None:
        return None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules["simgrid"] = module
    return module


def _preload_pip_libsimgrid() -> bool:
    """Whether pip's SimGrid is installed, its library now loaded. pip's build puts
    libsimgrid.so.X.Y beside the module without a run path to it (the dynamic
    loader does not find it unless LD_LIBRARY_PATH names site-packages): loaded
    first, by path, it is the library the module then links to."""
    import ctypes
    import importlib.metadata as md
    import re

    try:
        files = md.files("simgrid") or []
    except md.PackageNotFoundError:
        return False
    libs = [f for f in files if re.fullmatch(r"libsimgrid\.so\.\d+\.\d+", f.name)]
    if not libs:
        return False
    ctypes.CDLL(str(libs[0].locate()), mode=ctypes.RTLD_GLOBAL)
    return True


@dataclass(frozen=True)
class Flow:
    src: int
    dst: int
    size: int  # the message's bytes s; its flow moves s − 1


@dataclass(frozen=True)
class Case:
    name: str
    ranks: int
    flows: tuple[Flow, ...]
    topology: dict = field(default_factory=lambda: {"kind": "fully_connected"})
    links: dict = field(default_factory=dict)  # [network.links] beside model = "flow"
    ranks_per_node: int = 1

    def node(self, rank: int) -> int:
        return rank // self.ranks_per_node  # idlewave's default block mapping

    @property
    def nodes(self) -> int:
        return -(-self.ranks // self.ranks_per_node)


# --- the links a flow crosses, as src/network/routes.rs numbers and routes them ---

Link = tuple[str, float]  # a name unique to the link, its bandwidth in bytes per second


def switch_links(case: Case, a: int, b: int) -> Iterator[Link]:
    """The links between switches from node a to node b (d-mod-k, dimension order, minimal)."""
    t, bw = case.topology, case.links.get("bandwidth_bytes_per_s", LINK_BYTES_PER_S)
    if t["kind"] == "torus":
        dims = t["dims"]
        coord = [a % dims[0], (a // dims[0]) % dims[1], a // (dims[0] * dims[1])]
        to = [b % dims[0], (b // dims[0]) % dims[1], b // (dims[0] * dims[1])]
        for d in range(3):
            n = dims[d]
            ahead = (to[d] - coord[d]) % n
            steps, back = (ahead, False) if ahead <= n - ahead else (n - ahead, True)
            for _ in range(steps):
                node = coord[0] + dims[0] * (coord[1] + dims[1] * coord[2])
                yield f"torus_{node}_{'xyz'[d]}{'-' if back else '+'}", bw
                coord[d] = (coord[d] + (-1 if back else 1)) % n
    elif t["kind"] == "fat_tree":
        assert case.links.get("routing", "d_mod_k") == "d_mod_k", "random up-links are drawn by the engine's hash"
        k = max(t["radix"] // 2, 2)
        level, span = 1, k
        bw /= case.links.get("taper", 1.0)
        while span < case.nodes and a // span != b // span:
            yield f"up_{level}_{(a // span) * span + b % span}", bw
            yield f"down_{level}_{(b // span) * span + b % span}", bw
            level, span = level + 1, span * k
    elif t["kind"] == "dragonfly":
        assert case.links.get("routing", "minimal") == "minimal", "Valiant and UGAL draw their groups by the engine's hash"
        per_group = t["nodes_per_router"] * t["routers_per_group"]
        ga, gb = a // per_group, b // per_group
        if ga != gb:
            yield f"global_{ga}_{gb}", case.links.get("global_bandwidth_bytes_per_s", bw)
    else:
        assert t["kind"] == "fully_connected", t


def route(case: Case, i: int) -> list[Link]:
    """Flow i's links in SimGrid: the sending and the receiving rank's NICs (1/G), the links between switches."""
    f = case.flows[i]
    assert case.node(f.src) != case.node(f.dst), "a flow runs between nodes"
    nic = 1.0 / G_S_PER_BYTE
    return [(f"nic_out_{f.src}", nic), (f"nic_in_{f.dst}", nic), *switch_links(case, case.node(f.src), case.node(f.dst))]


# --- idlewave ---


def goal(case: Case) -> str:
    """The case as a GOAL schedule: flow i is a send and a receive with tag i, all posted at 0."""
    ops: list[list[str]] = [[] for _ in range(case.ranks)]
    for i, f in enumerate(case.flows):
        ops[f.src].append(f"s{i}: send {f.size}b to {f.dst} tag {i}")
        ops[f.dst].append(f"r{i}: recv {f.size}b from {f.src} tag {i}")
    body = ("".join(op + "\n" for op in o) for o in ops)
    return f"num_ranks {case.ranks}\n" + "".join(f"rank {r} {{\n{b}}}\n" for r, b in enumerate(body))


def idlewave_times(case: Case) -> list[float]:
    """Each flow's last byte in idlewave, in seconds: its message's arrival (timeline) minus L."""
    import numpy as np

    import idlewave
    from idlewave.timeline import MESSAGE

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{case.name}.goal"
        path.write_text(goal(case))
        net = {"L_s": L_S, "o_s": 0.0, "g_s": 0.0, "O_s_per_byte": 0.0, "G_s_per_byte": G_S_PER_BYTE, "S_bytes": 1 << 40,
               "ranks_per_node": case.ranks_per_node, "topology": case.topology, "links": {"model": "flow", **case.links}}
        tl = idlewave.simulate({"network": net, "workload": {"kind": "goal", "path": str(path)}}, timeline=True).timeline
    assert tl is not None and not tl["truncated"]
    times = []
    for i in range(len(case.flows)):
        (span,) = np.flatnonzero((tl["activity"] == MESSAGE) & (tl["tag"] == i))
        times.append(int(tl["end_ps"][span]) * 1e-12 - L_S)
    return times


# --- SimGrid ---


def platform_xml(case: Case) -> str:
    """A SimGrid platform: hosts s<i>, d<i> per flow, every link once (latency 0), one route per flow."""
    routes = [route(case, i) for i in range(len(case.flows))]
    links: dict[str, float] = {}
    for r in routes:
        for name, bw in r:
            assert links.setdefault(name, bw) == bw, name
    lines = ["<?xml version='1.0'?>", '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">', '<platform version="4.1">',
             '<zone id="net" routing="Full">']
    lines += [f'<host id="{end}{i}" speed="1f"/>' for i in range(len(routes)) for end in "sd"]
    lines += [f'<link id={quoteattr(name)} bandwidth="{bw!r}Bps" latency="0s"/>' for name, bw in links.items()]
    for i, r in enumerate(routes):
        lines.append(f'<route src="s{i}" dst="d{i}" symmetrical="NO">' + "".join(f"<link_ctn id={quoteattr(n)}/>" for n, _ in r) + "</route>")
    return "\n".join([*lines, "</zone>", "</platform>", ""])


def simgrid_times(case: Case) -> list[float]:
    """Each flow's completion time in SimGrid, in seconds (a subprocess: --worker)."""
    job = {"platform": platform_xml(case), "bytes": [f.size - 1 for f in case.flows]}
    done = subprocess.run([sys.executable, __file__, "--worker"], input=json.dumps(job), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"SimGrid failed on {case.name}:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def worker() -> None:
    """Runs one case in SimGrid: reads {platform, bytes} on stdin, prints each flow's end as JSON."""
    sg = load_simgrid()
    assert sg is not None, "no SimGrid"
    job = json.load(sys.stdin)
    args = [f"--cfg={c}" for c in SIMGRID_CONFIG] + ["--log=root.thres:warning"]
    engine = sg.Engine([sys.argv[0], *args])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "platform.xml"
        path.write_text(job["platform"])
        engine.load_platform(str(path))
    ends = [0.0] * len(job["bytes"])

    def send(i: int, n: int) -> None:
        sg.Mailbox.by_name(f"m{i}").put(i, n)

    def receive(i: int) -> None:
        sg.Mailbox.by_name(f"m{i}").get()
        ends[i] = sg.Engine.clock

    for i, n in enumerate(job["bytes"]):
        sg.Actor.create(f"send{i}", sg.Host.by_name(f"s{i}"), send, i, n)
        sg.Actor.create(f"recv{i}", sg.Host.by_name(f"d{i}"), receive, i)
    engine.run()
    print(json.dumps(ends))


# --- the cases ---


def flows(pairs: list[tuple[int, int]], sizes: list[int]) -> tuple[Flow, ...]:
    return tuple(Flow(a, b, s) for (a, b), s in zip(pairs, sizes, strict=True))


def random_flows(ranks: int, apart: Callable[[int, int], bool], seed: int) -> tuple[Flow, ...]:
    """Per rank, a seeded random destination (one for which apart(rank, it) holds) and size (0.5 to 2 MB)."""
    rng = random.Random(seed)
    return tuple(Flow(r, rng.choice([d for d in range(ranks) if apart(r, d)]), rng.randint(1, 4) * MB // 2 + 1) for r in range(ranks))


def cases() -> list[Case]:
    """The cross-checked networks; sizes differ where that makes flows end apart (max-min re-solved as they end)."""
    fat_tree = {"kind": "fat_tree", "radix": 8}
    tapered = {"bandwidth_bytes_per_s": LINK_BYTES_PER_S, "taper": 2.0, "routing": "d_mod_k"}
    ring = {"kind": "torus", "dims": [8, 1, 1]}
    checked = [
        # 4 ranks of node 0 to the 4 ranks of node 1: one torus link x+ shared by 4, ending one by one
        Case("4 flows on one link", 8, flows([(r, 4 + r) for r in range(4)], [k * MB + 1 for k in (1, 2, 3, 4)]),
             ring, {"bandwidth_bytes_per_s": LINK_BYTES_PER_S}, ranks_per_node=4),
        Case("incast 5 to 1", 6, flows([(r, 0) for r in range(1, 6)], [k * MB + 1 for k in (1, 2, 3, 4, 5)])),
        # nodes 0..3 of a ring, two ranks each: the long flow crosses x+ 0→1, 1→2, 2→3, one short flow on each
        Case("parking lot (3 links)", 8, flows([(0, 6), (1, 2), (3, 4), (5, 7)], [2 * MB + 1, MB // 2 + 1, MB + 1, 3 * MB // 2 + 1]),
             ring, {"bandwidth_bytes_per_s": LINK_BYTES_PER_S}, ranks_per_node=2),
        Case("torus [4,1,1]: 0→2 and 1→2", 4, flows([(0, 2), (1, 2)], [MB + 1, MB + 1]), {"kind": "torus", "dims": [4, 1, 1]},
             {"bandwidth_bytes_per_s": LINK_BYTES_PER_S}),
        # seeded random destinations and sizes: flows meet on links and on NICs (incast)
        Case("torus [4,2,2], random pairs", 16, random_flows(16, lambda r, d: d != r, seed=7), {"kind": "torus", "dims": [4, 2, 2]},
             {"bandwidth_bytes_per_s": LINK_BYTES_PER_S}),
        Case("fat tree 2:1, shift by 32", 64, flows([(r, (r + 32) % 64) for r in range(64)], [MB + 1] * 64), fat_tree, tapered),
        # destinations off the sender's leaf: every flow crosses up- and down-links
        Case("fat tree 2:1, random pairs", 64, random_flows(64, lambda r, d: d // 4 != r // 4, seed=7), fat_tree, tapered),
        Case("dragonfly: a group's 4 to another", 8, flows([(r, 4 + r) for r in range(4)], [MB + 1] * 4),
             {"kind": "dragonfly", "nodes_per_router": 1, "routers_per_group": 4}, {"bandwidth_bytes_per_s": LINK_BYTES_PER_S, "routing": "minimal"}),
    ]
    assert all(len({f.src for f in c.flows}) == len(c.flows) for c in checked), "one message per sending rank (see DIFFERENCES)"
    return checked


# Where the models differ by design: a rank's two 1 MB messages, alone on the network.
# idlewave's NIC sends them one after the other (gap (s − 1)·G): they end at 1 and 2 ms;
# SimGrid's sending NIC, a link, carries both at half its rate: both end at 2 ms.
DIFFERENCES = [Case("a rank's two messages", 3, flows([(0, 1), (0, 2)], [MB + 1, MB + 1]))]


@dataclass(frozen=True)
class Row:
    case: str
    idlewave_s: list[float]
    simgrid_s: list[float]

    @property
    def worst(self) -> float:
        """The largest relative difference of a flow's time (L taken out of idlewave's)."""
        return max(abs(a - b) / b for a, b in zip(self.idlewave_s, self.simgrid_s, strict=True))


def crosscheck(selected: list[Case], run_simgrid: Callable[[Case], list[float]] = simgrid_times) -> list[Row]:
    return [Row(c.name, idlewave_times(c), run_simgrid(c)) for c in selected]


def flow_table(rows: list[Row]) -> str:
    """Markdown: every flow's end in both (without L)."""
    out = ["| case | flow | idlewave − L (ms) | SimGrid (ms) |", "| --- | --: | --: | --: |"]
    for r in rows:
        out += [f"| {r.case} | {i} | {a * 1e3:.6f} | {b * 1e3:.6f} |" for i, (a, b) in enumerate(zip(r.idlewave_s, r.simgrid_s, strict=True))]
    return "\n".join(out)


def table(rows: list[Row]) -> str:
    """Markdown: per case, the last flow's end in both (L added back to both), and the largest difference over its flows."""
    out = ["| case | flows | idlewave (ms) | SimGrid + L (ms) | largest relative difference |", "| --- | --: | --: | --: | --: |"]
    for r in rows:
        out.append(f"| {r.case} | {len(r.idlewave_s)} | {(max(r.idlewave_s) + L_S) * 1e3:.6f} | {(max(r.simgrid_s) + L_S) * 1e3:.6f} | {r.worst:.1e} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--version", action="store_true", help="print SimGrid's version and exit")
    parser.add_argument("--flows", action="store_true", help="also print every flow's two times")
    args = parser.parse_args()
    if args.worker:
        worker()
        return 0
    sg = load_simgrid()
    if args.version:
        if sg is None:
            return 1
        print(sg.simgrid_version)
        return 0
    if sg is None:
        print("SimGrid is not installed: pip install -e '.[crosscheck]' or apt-get install python3-simgrid", file=sys.stderr)
        return 2
    rows = crosscheck(cases())
    print(f"SimGrid {sg.simgrid_version}, --cfg={' --cfg='.join(SIMGRID_CONFIG)}\n")
    print(table(rows))
    if args.flows:
        print("\n" + flow_table(rows))
    print("\nWhere the models differ by design (a rank's sending NIC: idlewave's gap, SimGrid's shared link):\n")
    print(flow_table(crosscheck(DIFFERENCES)))
    bad = [r.case for r in rows if r.worst > TOLERANCE]
    if bad:
        print(f"\ndiffer by more than {TOLERANCE:g}: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
