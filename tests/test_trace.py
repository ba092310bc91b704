"""The PMPI tracer on a C program and an mpi4py script (Open MPI from the
wheel), exact recorded calls, replay, extrapolation, GOAL export."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import idlewave
from idlewave.measure import MPI_ENV, mpiexec
from idlewave.trace import TraceError, build, calls, extrapolate, read, to_goal

RING = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    double x[128] = {0}, y[128];
    for (int it = 0; it < 3; it++) {
        MPI_Request q[2];
        MPI_Irecv(y, 128, MPI_DOUBLE, (r + p - 1) % p, 5, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(x, 128, MPI_DOUBLE, (r + 1) % p, 5, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
"""

SCRIPT = """
from mpi4py import MPI
import numpy as np
c = MPI.COMM_WORLD
a = np.ones(10)
c.Bcast(a, root=0)
if c.Get_rank() == 0:
    c.Send(a, 1, tag=3)
else:
    c.Recv(a, 0, tag=3)
c.Sendrecv(a, dest=1 - c.Get_rank(), sendtag=4, recvbuf=a, source=1 - c.Get_rank(), recvtag=4)
c.Barrier()
"""


SPLIT = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm row; MPI_Comm_split(MPI_COMM_WORLD, r / 2, r, &row);
    double x = r, y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, row);
    MPI_Bcast(&x, 1, MPI_DOUBLE, 1, row);
    int rr; MPI_Comm_rank(row, &rr);
    if (rr == 0) MPI_Send(&x, 1, MPI_DOUBLE, 1, 9, row); else MPI_Recv(&y, 1, MPI_DOUBLE, 0, 9, row, MPI_STATUS_IGNORE);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build(tmp_path_factory.mktemp("lib"))


def traced(lib: Path, out: Path, ranks: int, *cmd) -> Path:
    env = {**os.environ, **MPI_ENV, "IDLEWAVE_TRACE_DIR": str(out)}
    p = subprocess.run([mpiexec(), "--oversubscribe", "-n", str(ranks), "-x", f"LD_PRELOAD={lib}", "-x", "IDLEWAVE_TRACE_DIR",
                        *map(str, cmd)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return out


def test_c_program_calls_are_recorded_exactly_and_replay(lib, tmp_path):
    src = tmp_path / "ring.c"
    src.write_text(RING)
    exe = tmp_path / "ring"
    subprocess.run([str(Path(sys.executable).parent / "mpicc"), "-O2", "-o", str(exe), str(src)], check=True)
    t = read(traced(lib, tmp_path / "tr", 3, exe))
    it = [("irecv", 2, 5, 1024), ("isend", 1, 5, 1024)]
    got = [(n, peer, tag, b) for n, peer, tag, b in calls(t[0]) if n not in ("wait",)]
    assert got == [("init", -1, 0, 0)] + (it + [("allreduce", -1, 0, 8)]) * 3 + [("finalize", -1, 0, 0)]
    assert [c[0] for c in calls(t[0])].count("wait") == 6  # one per completed request of each Waitall
    assert all(calls(t[r])[1] == ("irecv", (r + 2) % 3, 5, 1024) for r in range(3))
    goal = tmp_path / "ring.goal"
    goal.write_text(to_goal(t))
    r = idlewave.simulate({"workload": {"kind": "goal", "path": str(goal)}})
    # 3 iterations × (2 messages + 3-rank dissemination allreduce: 2 rounds of an exchange) per rank, sent and received
    msgs = 3 * 3 * (1 + 2)
    calcs = sum(1 for line in goal.read_text().splitlines() if ": calc " in line)
    assert r.summary["events"] == 2 * msgs + calcs
    # a periodic pattern scales: 3 → 6 ranks, every rank exchanging with its ring neighbours
    t6 = extrapolate(t, 6)
    assert len(t6) == 6 and calls(t6[5])[1] == ("irecv", 4, 5, 1024)
    r6 = idlewave.simulate({"workload": {"kind": "goal", "path": str(_write(tmp_path / "r6.goal", to_goal(t6)))}})
    assert r6.summary["ranks"] == 6
    with pytest.raises(TraceError, match="multiple of 3"):
        extrapolate(t, 7)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_mpi4py_script_is_traced_and_replayed(lib, tmp_path, cli):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    t = read(traced(lib, tmp_path / "tr", 2, sys.executable, script))
    assert calls(t[0]) == [("init", -1, 0, 0), ("bcast", 0, 0, 80), ("send", 1, 3, 80), ("sendrecv_send", 1, 4, 80),
                           ("sendrecv_recv", 1, 4, 80), ("barrier", -1, 0, 0), ("finalize", -1, 0, 0)]
    assert calls(t[1])[2] == ("recv", 0, 3, 80)
    with pytest.raises(TraceError, match="only periodic patterns scale"):
        extrapolate(t, 4)
    r = json.loads(cli("trace", "replay", tmp_path / "tr", "--out", tmp_path / "rp", "--platform", "piz_daint",
                       "--algorithm", "bcast=linear", "--json").stdout)
    assert r["ranks"] == 2 and r["replayed_makespan_s"] > 0
    cli("trace", "export", tmp_path / "tr", "-o", tmp_path / "t.goal")
    p = cli("loggopsim", tmp_path / "t.goal")
    assert "Host 0:" in p.stdout and "Host 1:" in p.stdout


def test_sub_communicator_collectives_replay_on_their_members(lib, tmp_path):
    src = tmp_path / "split.c"
    src.write_text(SPLIT)
    exe = tmp_path / "split"
    subprocess.run([str(Path(sys.executable).parent / "mpicc"), "-O2", "-o", str(exe), str(src)], check=True)
    t = read(traced(lib, tmp_path / "tr", 4, exe))
    assert [c for c in calls(t[3]) if c[0] != "init"] == [
        ("comm_member", 2, 0, 0), ("comm_member", 3, 1, 0), ("comm_split", 1, 1, 0), ("allreduce", -1, 0, 8),
        ("bcast", 3, 0, 8), ("recv", 2, 9, 8), ("allreduce", -1, 0, 8), ("finalize", -1, 0, 0)]
    goal = _write(tmp_path / "s.goal", to_goal(t))
    r = idlewave.simulate({"workload": {"kind": "goal", "path": str(goal)}})
    # rows {0,1} and {2,3}: allreduce 2 messages each, bcast 1 each, the send 1 each; world allreduce 4 × 2 rounds
    msgs = 2 * 2 + 2 * 1 + 2 * 1 + 4 * 2
    calcs = sum(1 for line in goal.read_text().splitlines() if ": calc " in line)
    assert r.summary["events"] == 2 * msgs + calcs
    with pytest.raises(TraceError, match="sub-communicators"):
        extrapolate(t, 8)


def test_bad_traces_are_reported(tmp_path, cli):
    with pytest.raises(TraceError, match="no rank-"):
        read(tmp_path)
    (tmp_path / "rank-0.iwt").write_bytes(b"garbage")
    with pytest.raises(TraceError, match="not an idlewave trace"):
        read(tmp_path)
    p = cli("trace", "import", tmp_path / "x.otf2", check=False)
    assert p.returncode == 2 and "no OTF2 anchor" in p.stderr


def write_otf2(path: Path) -> None:
    """A 2-rank OTF2 trace: a send/receive pair and an allreduce, as Score-P records them."""
    import otf2
    from otf2.enums import CollectiveOp, GroupType, LocationGroupType, LocationType, Paradigm, RegionRole

    with otf2.writer.open(str(path), timer_resolution=1_000_000_000) as trace:
        defs = trace.definitions
        root = defs.system_tree_node("node")
        groups = [defs.location_group(f"rank {r}", location_group_type=LocationGroupType.PROCESS, system_tree_parent=root) for r in range(2)]
        locs = [defs.location(f"master {r}", type=LocationType.CPU_THREAD, group=groups[r]) for r in range(2)]
        world = defs.comm("MPI_COMM_WORLD", group=defs.group("world", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs))
        send = defs.region("MPI_Send", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
        recv = defs.region("MPI_Recv", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
        ar = defs.region("MPI_Allreduce", region_role=RegionRole.COLL_ALL2ALL, paradigm=Paradigm.MPI)
        w0, w1 = trace.event_writer_from_location(locs[0]), trace.event_writer_from_location(locs[1])
        w0.enter(1000, send); w0.mpi_send(1100, 1, world, 7, 800); w0.leave(2000, send)
        w1.enter(1500, recv); w1.mpi_recv(2500, 0, world, 7, 800); w1.leave(2600, recv)
        for w, t in ((w0, 50000), (w1, 50200)):
            w.enter(t, ar); w.mpi_collective_begin(t + 10)
            w.mpi_collective_end(t + 900, CollectiveOp.ALLREDUCE, world, 0xFFFFFFFF, 8, 8); w.leave(t + 1000, ar)


def test_otf2_traces_import_and_replay(tmp_path, cli):
    write_otf2(tmp_path / "otf2")
    cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "tr")
    t = read(tmp_path / "tr")
    assert calls(t[0]) == [("init", -1, 0, 0), ("send", 1, 7, 800), ("allreduce", -1, 0, 8), ("finalize", -1, 0, 0)]
    assert calls(t[1])[1] == ("recv", 0, 7, 800)
    assert t[1][1]["t0"] == pytest.approx(1.5e-6) and t[1][1]["t1"] == pytest.approx(2.6e-6)
    r = json.loads(cli("trace", "replay", tmp_path / "tr", "--out", tmp_path / "rp", "--json").stdout)
    assert r["ranks"] == 2 and r["replayed_makespan_s"] > 48e-6  # the 48 µs of computation between the calls
    # the same trace under noise, from a scenario file: a 20 µs detour on rank 0 delays the allreduce
    scn = tmp_path / "noisy.toml"
    scn.write_text('[[noise]]\nkind = "single"\nrank = 0\nstart_s = 1e-5\nduration_s = 2e-5\n')
    noisy = json.loads(cli("trace", "replay", tmp_path / "tr", "--out", tmp_path / "rn", "--scenario", scn, "--json").stdout)
    # (rank 1 reaches the allreduce a little later than rank 0 anyway, so part of the detour is absorbed)
    assert r["replayed_makespan_s"] + 5e-6 < noisy["replayed_makespan_s"] <= r["replayed_makespan_s"] + 2e-5 + 1e-12
