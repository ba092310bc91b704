"""Replay of traced runs: the PMPI tracer on C programs and an mpi4py script
(Open MPI from the wheel), exact recorded calls, replay against its own GOAL
export, extrapolation, the report of what is not modelled, broken files.
(Coverage of every MPI family by the tracer: test_trace_coverage.py.)"""

import json
import re
import sys
from pathlib import Path

import polars as pl
import pytest

from conftest import compile_c, traced
from idlewave import _engine
from idlewave._engine import SimulationError
from idlewave.trace import TraceError, calls, export_goal, read, replay

pytestmark = [pytest.mark.integration, pytest.mark.mpi]

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


def goal_of(trace_dir: Path, path: Path, **kw) -> str:
    export_goal(trace_dir, path, **kw)
    return path.read_text()


def loggopsim_hosts(cli, goal: Path) -> list[int]:
    return [int(line.split(": ")[1]) for line in cli("loggopsim", goal).stdout.splitlines() if line.startswith("Host ")]


def test_c_program_calls_are_recorded_exactly_and_replay_as_their_goal_export(lib, tmp_path, cli):
    exe = compile_c(tmp_path, "ring", RING)
    d = traced(lib, tmp_path / "tr", 3, exe)
    t = read(d)
    it = [("irecv", 2, 5, 1024), ("isend", 1, 5, 1024)]
    got = [(n, peer, tag, b) for n, peer, tag, b in calls(t[0]) if n not in ("wait", "poll")]
    assert got == [("init", -1, 0, 0)] + (it + [("allreduce", -1, 0, 8)]) * 3 + [("finalize", -1, 0, 0)]
    assert [c[0] for c in calls(t[0])].count("wait") == 6  # one per completed request of each Waitall
    assert all(calls(t[r])[1] == ("irecv", (r + 2) % 3, 5, 1024) for r in range(3))
    r = replay(d)
    goal = goal_of(d, tmp_path / "ring.goal")
    # 3 iterations × (3 ring messages + the 8-byte allreduce on 3 ranks, which Open MPI's rule
    # runs as recursive doubling: 0 → 1, 1 ↔ 2, 1 → 0, 4 messages), sent and received
    msgs = 3 * (3 + 4)
    calcs = sum(1 for line in goal.splitlines() if ": calc " in line)
    assert r.summary["events"] == 2 * msgs + calcs
    # the lazy replay and LogGOPSim's mode on the exported schedule agree to the nanosecond
    assert loggopsim_hosts(cli, tmp_path / "ring.goal") == [int(ps) // 1000 for ps in r.finish_times_ps]
    assert not r.summary["approximate"]
    # a periodic pattern scales: 3 → 6 ranks, every rank exchanging with its ring neighbours
    r6 = replay(d, scale_to=6)
    assert r6.summary["ranks"] == 6 and r6.summary["traced_ranks"] == 3
    assert "recv 1024b from 4 " in goal_of(d, tmp_path / "r6.goal", scale_to=6).split("rank 5 {")[1]
    with pytest.raises(SimulationError, match="not a multiple of the 3 traced ranks"):
        replay(d, scale_to=7)


def test_mpi4py_script_is_traced_and_replayed(lib, tmp_path, cli):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    d = traced(lib, tmp_path / "tr", 2, sys.executable, script)
    t = read(d)
    assert calls(t[0]) == [("init", -1, 0, 0), ("bcast", 0, 0, 80), ("send", 1, 3, 80), ("sendrecv_send", 1, 4, 80),
                           ("sendrecv_recv", 1, 4, 80), ("barrier", -1, 0, 0), ("finalize", -1, 0, 0)]
    assert calls(t[1])[2] == ("recv", 0, 3, 80)
    p = cli("trace", "replay", d, "--scale-to", "4", "--out", tmp_path / "x", check=False)
    assert p.returncode == 2 and "only periodic patterns scale" in p.stderr and "Traceback" not in p.stderr
    r = json.loads(cli("trace", "replay", d, "--out", tmp_path / "rp", "--platform", "piz_daint",
                       "--algorithm", "bcast=linear", "--json").stdout)
    assert r["ranks"] == 2 and r["makespan_s"] > 0 and r["traced_ranks"] == 2
    assert (tmp_path / "rp" / "trace_report.json").exists() and (tmp_path / "rp" / "summary.json").exists()
    cli("trace", "export", d, "-o", tmp_path / "t.goal")
    p = cli("loggopsim", tmp_path / "t.goal")
    assert "Host 0:" in p.stdout and "Host 1:" in p.stdout
    p = cli("trace", "replay", d, "--algorithm", "allreduce=bogus", "--out", tmp_path / "y", check=False)
    assert p.returncode == 2 and "dissemination" in p.stderr and "Traceback" not in p.stderr


LATE_ROOT = RING.replace("        MPI_Allreduce(x, y", "        if (r == 0) usleep(50000);\n        MPI_Allreduce(x, y").replace(
    "#include <mpi.h>", "#include <unistd.h>\n#include <mpi.h>")


def test_waits_for_a_late_member_inside_a_traced_allreduce_are_collective_imbalance(lib, tmp_path):
    """Rank 0 computes 50 ms before each of 3 allreduces: the others wait for it
    inside the collective, traced ranks and a periodic extrapolation alike.
    Some of those 150 ms may instead be spent in the next ring exchange, for a
    neighbour the late rank held up (a late sender, rightly): which, depends on
    the traced timings of the oversubscribed run."""
    assert "usleep(50000);" in LATE_ROOT
    d = traced(lib, tmp_path / "tr", 3, compile_c(tmp_path, "late", LATE_ROOT))
    for scale_to, late in ((None, {0}), (6, {0, 3})):
        w = replay(d, scale_to=scale_to, explain=True).explain.waits_frame()
        waited = w.filter(~pl.col("rank").is_in(list(late)))
        held = waited["collective_s"] + waited["late_sender_s"]
        assert (held > 0.8 * 0.15).all() and (waited["collective_s"] > 0.045).all(), w
        assert waited["collective_s"].sum() > 0.6 * held.sum(), w
        assert (w.filter(pl.col("rank").is_in(list(late)))["collective_s"] < 5e-3).all(), w


def test_sub_communicator_collectives_replay_on_their_members(lib, tmp_path):
    exe = compile_c(tmp_path, "split", SPLIT)
    d = traced(lib, tmp_path / "tr", 4, exe)
    t = read(d)
    mine = [c for c in calls(t[3]) if c[0] not in ("init", "comm_new", "comm_member")]
    assert mine == [("allreduce", -1, 0, 8), ("bcast", 3, 0, 8), ("recv", 2, 9, 8), ("allreduce", -1, 0, 8),
                    ("finalize", -1, 0, 0)]
    assert [c for c in calls(t[3]) if c[0] == "comm_member"] == [("comm_member", 2, 0, 0), ("comm_member", 3, 1, 0)]
    r = replay(d)
    goal = goal_of(d, tmp_path / "s.goal")
    # rows {0,1} and {2,3}: allreduce 2 messages each, bcast 1 each, the send 1 each; world allreduce 4 × 2 rounds
    msgs = 2 * 2 + 2 * 1 + 2 * 1 + 4 * 2
    calcs = sum(1 for line in goal.splitlines() if ": calc " in line)
    assert r.summary["events"] == 2 * msgs + calcs
    with pytest.raises(SimulationError, match="creates a communicator"):
        replay(d, scale_to=8)


RMA = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    double x[64] = {0}, y = 1;
    MPI_Win w; MPI_Win_create(x, sizeof x, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    for (int i = 0; i < 3; i++) {
        MPI_Win_fence(0, w);
        MPI_Put(&y, 1, MPI_DOUBLE, (r + 1) % p, r, 1, MPI_DOUBLE, w);
        MPI_Win_fence(0, w);
        MPI_Allreduce(&y, &x[1], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Win_free(&w);
    MPI_Finalize();
    return 0;
}
"""


def test_unmodelled_calls_are_reported_with_counts_and_share(lib, tmp_path, cli):
    d = traced(lib, tmp_path / "tr", 2, compile_c(tmp_path, "rma", RMA))
    p = cli("trace", "replay", d, "--out", tmp_path / "rp")
    assert "Not modelled" in p.stdout and "MPI_Win_fence" in p.stdout and "MPI_Put" in p.stdout
    assert "approximate:" in p.stdout
    r = json.loads(cli("trace", "replay", d, "--out", tmp_path / "rp", "--json").stdout)
    assert r["approximate"] is True
    table = {name: calls for name, calls, secs, share in r["unmodelled"]}
    # per rank: 6 fences and 3 puts, plus the window's creation and free
    assert table["MPI_Win_fence"] == 2 * 6 and table["MPI_Put"] == 2 * 3
    assert table["MPI_Win_create"] == 2 and table["MPI_Win_free"] == 2
    assert 0 < r["unmodelled_share"] <= 1
    assert all(0 <= share <= 1 for *_, share in r["unmodelled"])


def test_bad_traces_are_reported(tmp_path, cli):
    with pytest.raises(TraceError, match="no rank-"):
        read(tmp_path)
    (tmp_path / "rank-0.iwt").write_bytes(b"garbage")
    with pytest.raises(TraceError, match="not an idlewave trace"):
        read(tmp_path)
    p = cli("trace", "replay", tmp_path, "--out", tmp_path / "o", check=False)
    assert p.returncode == 2 and "rank-0.iwt: not an idlewave trace" in p.stderr and "Traceback" not in p.stderr
    p = cli("trace", "import", tmp_path / "x.otf2", check=False)  # not there: said so, not "no anchor"
    assert p.returncode == 2 and f"{tmp_path / 'x.otf2'}: no such file or directory" in p.stderr, p.stderr
    (tmp_path / "empty").mkdir()
    p = cli("trace", "import", tmp_path / "empty", check=False)  # there, without its anchor file
    assert p.returncode == 2 and "no OTF2 anchor" in p.stderr
    # a truncated file names the file and the record
    _engine.write_synthetic_trace(str(tmp_path / "syn"), 2, 5)
    f = tmp_path / "syn" / "rank-1.iwt"
    f.write_bytes(f.read_bytes()[:64 + 48 * 4 + 10])
    p = cli("trace", "replay", tmp_path / "syn", "--out", tmp_path / "o", check=False)
    assert p.returncode == 2 and "rank-1.iwt" in p.stderr and "Traceback" not in p.stderr


def otf2_ranks(trace, n: int, members: int | None = None):
    """An OTF2 trace's definitions for `n` ranks: (defs, locations, a communicator of the first `members`)."""
    from otf2.enums import GroupType, LocationGroupType, LocationType, Paradigm

    defs = trace.definitions
    root = defs.system_tree_node("node")
    groups = [defs.location_group(f"rank {r}", location_group_type=LocationGroupType.PROCESS, system_tree_parent=root)
              for r in range(n)]
    locs = [defs.location(f"master {r}", type=LocationType.CPU_THREAD, group=groups[r]) for r in range(n)]
    name = "MPI_COMM_WORLD" if members is None else "sub"
    comm = defs.comm(name, group=defs.group(name, group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                                             members=locs[:members]))
    return defs, locs, comm


def write_otf2(path: Path) -> None:
    """A 2-rank OTF2 trace: a send/receive pair and an allreduce of 8 bytes, as Score-P records them."""
    import otf2
    from otf2.enums import CollectiveOp, Paradigm, RegionRole

    with otf2.writer.open(str(path), timer_resolution=1_000_000_000) as trace:
        defs, locs, world = otf2_ranks(trace, 2)
        send = defs.region("MPI_Send", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
        recv = defs.region("MPI_Recv", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
        ar = defs.region("MPI_Allreduce", region_role=RegionRole.COLL_ALL2ALL, paradigm=Paradigm.MPI)
        w0, w1 = trace.event_writer_from_location(locs[0]), trace.event_writer_from_location(locs[1])
        w0.enter(1000, send)
        w0.mpi_send(1100, 1, world, 7, 800)
        w0.leave(2000, send)
        w1.enter(1500, recv)
        w1.mpi_recv(2500, 0, world, 7, 800)
        w1.leave(2600, recv)
        for w, t in ((w0, 50000), (w1, 50200)):
            w.enter(t, ar)
            w.mpi_collective_begin(t + 10)
            w.mpi_collective_end(t + 900, CollectiveOp.ALLREDUCE, world, 0xFFFFFFFF, 16, 16)  # 8 B, as Score-P counts
            w.leave(t + 1000, ar)


def test_otf2_traces_import_and_replay(tmp_path, cli):
    write_otf2(tmp_path / "otf2")
    p = cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "tr")
    # on 2 members an allreduce's 16 counted bytes are 8 not in place or 16 in place: taken as 8, and said
    assert "2 allreduce record(s) (one per member and call) count bytes that fit both MPI_IN_PLACE and not" in p.stderr
    t = read(tmp_path / "tr")
    assert calls(t[0]) == [("init", -1, 0, 0), ("send", 1, 7, 800), ("allreduce", -1, 0, 8), ("finalize", -1, 0, 0)]
    assert calls(t[1])[1] == ("recv", 0, 7, 800)
    assert t[1].records[1]["t0"] == pytest.approx(1.5e-6) and t[1].records[1]["t1"] == pytest.approx(2.6e-6)
    r = json.loads(cli("trace", "replay", tmp_path / "tr", "--out", tmp_path / "rp", "--json").stdout)
    assert r["ranks"] == 2 and r["makespan_s"] > 48e-6  # the 48 µs of computation between the calls
    # the same trace under noise, from a scenario file: a 20 µs detour on rank 0 delays the allreduce
    scn = tmp_path / "noisy.toml"
    scn.write_text('[[noise]]\nkind = "single"\nrank = 0\nstart_s = 1e-5\nduration_s = 2e-5\n')
    noisy = json.loads(cli("trace", "replay", tmp_path / "tr", "--out", tmp_path / "rn", "--scenario", scn, "--json").stdout)
    # (rank 1 reaches the allreduce a little later than rank 0 anyway, so part of the detour is absorbed)
    assert r["makespan_s"] + 5e-6 < noisy["makespan_s"] <= r["makespan_s"] + 2e-5 + 1e-12
    # the two ranks on one node (block) or on two (a mapping file: the mapping is built once the trace is read)
    (tmp_path / "nodes.txt").write_text("0\n1\n")
    by_mapping = {}
    for name, mapping in (("block", '{kind = "block"}'), ("file", f'{{kind = "file", path = "{tmp_path / "nodes.txt"}"}}')):
        (tmp_path / f"{name}.toml").write_text(f"[network]\nL_s = 2e-5\nranks_per_node = 2\nmapping = {mapping}\n"
                                               "[network.intra_node]\nL_s = 1e-6\n")
        by_mapping[name] = json.loads(cli("trace", "replay", tmp_path / "tr", "--out", tmp_path / name, "--scenario",
                                          tmp_path / f"{name}.toml", "--json").stdout)["makespan_s"]
    # the send and the allreduce's exchange each cross between the nodes
    assert by_mapping["file"] >= by_mapping["block"] + 19e-6


def test_a_damaged_otf2_archive_is_one_line_naming_what_the_library_found(tmp_path, cli):
    """Truncated definitions, a truncated event file, a missing one: one
    line, exit 2, with the library's own finding; none of the lines the
    OTF2 library prints itself, no traceback (the event reader's error was
    one)."""
    import shutil

    write_otf2(tmp_path / "good")
    damage = {"defs": lambda d: (d / "traces.def").write_bytes((d / "traces.def").read_bytes()[:40]),
              "events": lambda d: (d / "traces" / "1.evt").write_bytes((d / "traces" / "1.evt").read_bytes()[:30]),
              "missing": lambda d: (d / "traces" / "0.evt").unlink()}
    # What a truncation makes the library find depends on the bytes cut (the
    # writer's clock properties among them): a chunk header, or a duplicate
    # definition its callback refused. Either is its own finding, told.
    found = {"defs": r"(no chunk header|Semantic error in the input trace)", "events": "no chunk header",
             "missing": r"0\.evt"}
    for name, spoil in damage.items():
        shutil.copytree(tmp_path / "good", tmp_path / name)
        spoil(tmp_path / name)
        p = cli("trace", "import", tmp_path / name, "--out", tmp_path / f"out-{name}", check=False)
        assert p.returncode == 2, (name, p.stderr)
        assert p.stderr.count("\n") == 1 and "[OTF2]" not in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert re.search(found[name], p.stderr) and "the archive is damaged or incomplete" in p.stderr, p.stderr
        assert not (tmp_path / f"out-{name}").exists()


def test_definitions_missing_a_location_the_anchor_announces_are_refused(tmp_path, cli, monkeypatch):
    """Definitions cut short can read without an error from the library and
    lack a location (seen once in a parallel test run: one rank's allreduce
    imported, exit 0); the anchor file's count of locations tells."""
    import _otf2

    write_otf2(tmp_path / "otf2")
    monkeypatch.setattr(_otf2, "Reader_GetNumberOfLocations", lambda handle: 3)
    p = cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "tr", check=False)
    assert p.returncode == 2, p.stderr
    assert "the definitions hold 2 of the 3 locations the anchor file announces" in p.stderr, p.stderr
    assert not (tmp_path / "tr").exists()


def test_an_otf2_reader_callbacks_traceback_is_held_and_its_exception_told(capfd):
    """The bindings print a traceback of an exception in a reader callback to
    sys.stderr (a damaged definition, depending on the bytes a truncation
    leaves: "Duplicate ClockProperties entry"); it reached the terminal
    beside the one-line error."""
    import sys

    from idlewave.trace.otf2_import import _library_errors

    with _library_errors() as (said, _):
        sys.stderr.write("An unhandled python exception has occurred in an OTF2_GlobalDefReaderCallback:\nTraceback "
                         "(most recent call last):\notf2.error.TraceReaderError: Semantic error in the input trace: "
                         "Duplicate ClockProperties entry.\n")
        assert said() == "Semantic error in the input trace: Duplicate ClockProperties entry."
    assert capfd.readouterr().err == ""


def test_an_error_the_otf2_library_reports_without_raising_refuses_the_archive(tmp_path, cli, monkeypatch):
    """The library can print an error about a location's events (a file cut
    short) and go on without them, the bindings raising nothing (seen in a
    parallel test run: one rank's events left out, exit 0)."""
    import os

    from idlewave.trace import otf2_import

    write_otf2(tmp_path / "otf2")
    read = otf2_import._read_archive

    def reads_with_a_library_error(tr, anchor):
        os.write(2, b"[OTF2] src/otf2_archive_int.c:1: error: INVALID_DATA: This is no chunk header!\n")
        return read(tr, anchor)

    monkeypatch.setattr(otf2_import, "_read_archive", reads_with_a_library_error)
    p = cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "tr", check=False)
    assert p.returncode == 2, p.stderr
    assert "the OTF2 library reported an error reading it (INVALID_DATA: This is no chunk header!)" in p.stderr
    assert not (tmp_path / "tr").exists()


def test_an_otf2_alltoall_on_a_sub_communicator_sends_its_bytes_over_its_members(tmp_path, cli):
    import otf2
    from otf2.enums import CollectiveOp, Paradigm, RegionRole

    with otf2.writer.open(str(tmp_path / "otf2"), timer_resolution=1_000_000_000) as trace:
        defs, locs, pair = otf2_ranks(trace, 4, members=2)
        a2a = defs.region("MPI_Alltoall", region_role=RegionRole.COLL_ALL2ALL, paradigm=Paradigm.MPI)
        for w in (trace.event_writer_from_location(loc) for loc in locs[:2]):
            w.enter(1000, a2a)
            w.mpi_collective_begin(1010)
            w.mpi_collective_end(1900, CollectiveOp.ALLTOALL, pair, 0xFFFFFFFF, 2000, 2000)
            w.leave(2000, a2a)
    cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "tr")
    # 2,000 bytes over the pair's 2 members: 1,000 to each (it said 500: over the world's 4)
    assert [c for c in calls(read(tmp_path / "tr")[0]) if c[0] == "alltoall"] == [("alltoall", -1, 0, 1000)]
    # an import never mixes with an earlier trace's ranks, nor writes among other files
    (tmp_path / "tr" / "rank-7.iwt").write_bytes((tmp_path / "tr" / "rank-3.iwt").read_bytes())
    cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "tr")
    assert sorted(f.name for f in (tmp_path / "tr").iterdir()) == [f"rank-{r}.iwt" for r in range(4)]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    p = cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "mine", check=False)
    assert p.returncode == 2 and "holds 'notes.txt', not a trace" in p.stderr


def test_otf2_collectives_take_their_block_from_score_ps_byte_counts(tmp_path, cli):
    import otf2
    from otf2.enums import CollectiveOp, Paradigm, RegionRole

    n, b, root = 3, 25, 1  # members, the vector (or one member's block), the root of rooted calls

    def score_p(op, me, in_place):
        """What Score-P records for member `me`: every byte it sends and receives."""
        if op in (CollectiveOp.GATHER, CollectiveOp.REDUCE):
            return ((0, (n - 1) * b) if in_place else (b, n * b)) if me == root else (b, 0)
        if op in (CollectiveOp.BCAST, CollectiveOp.SCATTER):
            return (((n - 1) * b, 0) if in_place else (n * b, b)) if me == root else (0, b)
        if op == CollectiveOp.SCAN:
            return ((n - me - 1) * b, me * b) if in_place else ((n - me) * b, (me + 1) * b)
        if op == CollectiveOp.EXSCAN:
            return ((n - me - 1) * b, me * b)
        return ((n - 1) * b,) * 2 if in_place else (n * b,) * 2  # allreduce, allgather, alltoall

    def write(path, made, counts):
        with otf2.writer.open(str(path), timer_resolution=1_000_000_000) as trace:
            defs, locs, world = otf2_ranks(trace, n)
            region = defs.region("MPI_Collective", region_role=RegionRole.COLL_ALL2ALL, paradigm=Paradigm.MPI)
            for me, w in enumerate(trace.event_writer_from_location(loc) for loc in locs):
                for k, (op, rooted, in_place) in enumerate(made):
                    t = 1000 + 2000 * k
                    w.enter(t, region)
                    w.mpi_collective_begin(t + 10)
                    w.mpi_collective_end(t + 900, op, world, root if rooted else 0xFFFFFFFF, *counts(op, me, in_place))
                    w.leave(t + 1000, region)

    rooted = (CollectiveOp.GATHER, CollectiveOp.REDUCE, CollectiveOp.BCAST, CollectiveOp.SCATTER)
    made = [(op, True, in_place) for op in rooted for in_place in (False, True) if op != CollectiveOp.BCAST or not in_place]
    made += [(op, False, False) for op in (CollectiveOp.ALLREDUCE, CollectiveOp.ALLGATHER, CollectiveOp.ALLTOALL,
                                           CollectiveOp.REDUCE_SCATTER_BLOCK)]
    # an allreduce in place counts (n − 1)·b = 50 B each way: not a multiple of 3 members, so read as in place
    made += [(CollectiveOp.ALLREDUCE, False, True), (CollectiveOp.SCAN, False, False), (CollectiveOp.SCAN, False, True),
             (CollectiveOp.EXSCAN, False, False)]
    write(tmp_path / "otf2", made, score_p)
    assert "note:" not in cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "tr").stderr  # none ambiguous
    for t in read(tmp_path / "tr"):
        got = [(c[0], c[3]) for c in calls(t) if c[0] not in ("init", "finalize")]
        assert got == [(str(op).split(".")[-1].lower(), b) for op, _, _ in made]
    r = json.loads(cli("trace", "replay", tmp_path / "tr", "--out", tmp_path / "rp", "--json").stdout)
    assert r["ranks"] == n and r["unmodelled"] == [] and r["makespan_s"] > 2e-6 * len(made)
    # counts that fit no block are refused, naming the rank and the call
    write(tmp_path / "bad", [(CollectiveOp.SCAN, False, False)], lambda op, me, in_place: (100, 7))
    p = cli("trace", "import", tmp_path / "bad", "--out", tmp_path / "tb", check=False)
    assert p.returncode == 2 and "rank 0's scan sent 100 and received 7 bytes" in p.stderr, p.stderr
    # an alltoallv's per-peer counts are not in the trace: refused, saying so
    write(tmp_path / "a2av", [(CollectiveOp.ALLTOALLV, False, False)], score_p)
    p = cli("trace", "import", tmp_path / "a2av", "--out", tmp_path / "ta", check=False)
    assert p.returncode == 2 and "alltoallv cannot be imported: its events give each member's total bytes" in p.stderr


def test_otf2_v_collectives_take_each_members_block_from_its_own_event(tmp_path, cli):
    import otf2
    from otf2.enums import CollectiveOp, Paradigm, RegionRole

    blocks, root = [10, 20, 30], 1
    n, total = len(blocks), sum(blocks)

    def score_p(op, me, in_place):
        """What Score-P records for member `me` of a v-collective: every byte it sends and receives."""
        own = blocks[me]
        if op == CollectiveOp.GATHERV:
            return ((0, total - own) if in_place else (own, total)) if me == root else (own, 0)
        if op == CollectiveOp.SCATTERV:
            return ((total - own, 0) if in_place else (total, own)) if me == root else (0, own)
        return ((n - 1) * own, total - own) if in_place else (n * own, total)  # allgatherv

    made = [(CollectiveOp.GATHERV, False), (CollectiveOp.GATHERV, True), (CollectiveOp.SCATTERV, False),
            (CollectiveOp.SCATTERV, True), (CollectiveOp.ALLGATHERV, False), (CollectiveOp.ALLGATHERV, True)]

    def write(path, members):
        with otf2.writer.open(str(path), timer_resolution=1_000_000_000) as trace:
            defs, locs, world = otf2_ranks(trace, n)
            region = defs.region("MPI_Collective", region_role=RegionRole.COLL_ALL2ALL, paradigm=Paradigm.MPI)
            for me, w in enumerate(trace.event_writer_from_location(loc) for loc in locs[:members]):
                for k, (op, in_place) in enumerate(made):
                    t = 1000 + 2000 * k
                    w.enter(t, region)
                    w.mpi_collective_begin(t + 10)
                    rooted = op != CollectiveOp.ALLGATHERV
                    w.mpi_collective_end(t + 900, op, world, root if rooted else 0xFFFFFFFF, *score_p(op, me, in_place))
                    w.leave(t + 1000, region)

    write(tmp_path / "otf2", n)
    cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "tr")
    for me, t in enumerate(read(tmp_path / "tr")):
        at = [i for i, c in enumerate(calls(t)) if c[0] not in ("init", "finalize")]
        for i, (op, in_place) in zip(at, made):
            name = str(op).split(".")[-1].lower()
            # each member's own block (an in-place root's is not sent: 0), and where the tracer
            # records them (the root; every allgatherv member), every member's block
            unsent = in_place and me == root and name != "allgatherv"
            assert (calls(t)[i][0], int(t.records[i]["bytes"])) == (name, 0 if unsent else blocks[me])
            if name == "allgatherv" or me == root:
                assert t.payloads[i].tolist() == [0 if unsent and m == root else b for m, b in enumerate(blocks)]
            else:
                assert i not in t.payloads
    r = json.loads(cli("trace", "replay", tmp_path / "tr", "--out", tmp_path / "rp", "--json").stdout)
    assert r["ranks"] == n and r["unmodelled"] == []
    # a member without its event: the blocks cannot be known, and the import says why
    write(tmp_path / "partial", 2)
    p = cli("trace", "import", tmp_path / "partial", "--out", tmp_path / "tp", check=False)
    assert p.returncode == 2 and "gatherv call 1 on a communicator of 3 members has no event from member 2" in p.stderr


def test_an_otf2_sendrecv_exchange_replays_without_deadlock(tmp_path, cli):
    import otf2
    from otf2.enums import Paradigm, RegionRole

    with otf2.writer.open(str(tmp_path / "otf2"), timer_resolution=1_000_000_000) as trace:
        defs, locs, world = otf2_ranks(trace, 2)
        sr = defs.region("MPI_Sendrecv", region_role=RegionRole.POINT2POINT, paradigm=Paradigm.MPI)
        for r, w in enumerate(trace.event_writer_from_location(loc) for loc in locs):
            w.enter(1000, sr)
            w.mpi_send(1100, 1 - r, world, 0, 1 << 20)  # Score-P: the send, then the receive
            w.mpi_recv(5000, 1 - r, world, 0, 1 << 20)
            w.leave(6000, sr)
    cli("trace", "import", tmp_path / "otf2", "--out", tmp_path / "tr")
    r = json.loads(cli("trace", "replay", tmp_path / "tr", "--out", tmp_path / "rp", "--json").stdout)
    # both directions at once: one message's time, (2^20 − 1)·G after o + L + o (LogGOPSim's defaults)
    assert r["makespan_s"] == pytest.approx(1.5e-6 + 2.5e-6 + 1.5e-6 + ((1 << 20) - 1) * 6e-9, rel=1e-3)


def test_the_python_and_rust_op_tables_agree():
    from idlewave.trace.format import OPS

    assert dict(_engine.trace_ops()) == OPS


def write_pingpong(trace_dir: Path, seconds_per_call: float, probe_s: float = 0.0) -> None:
    """Two ranks ping-pong 8 bytes 20 times, each call taking `seconds_per_call`,
    0.1 ms of computation between calls; with `probe_s`, an `MPI_Iprobe` of
    that length (replayed at no cost) after `MPI_Init`."""
    import numpy as np

    from idlewave.trace.format import CODES, RECORD, write_rank

    trace_dir.mkdir(exist_ok=True)
    for rank in range(2):
        recs: list[tuple] = []
        t = 0.0
        calls_ = [("init", -1, 0)] + [("iprobe", 1 - rank, 0)] * (probe_s > 0)
        calls_ += [("send" if turn == rank else "recv", 1 - rank, 8) for _ in range(20) for turn in (0, 1)]
        for op, peer, nbytes in calls_ + [("finalize", -1, 0)]:
            dt = probe_s if op == "iprobe" else seconds_per_call if nbytes else 0.0
            recs.append((CODES[op], 0, 0, peer, 1 if nbytes else 0, nbytes, 0, t, t + dt))
            t += dt + 1e-4
        write_rank(trace_dir / f"rank-{rank}.iwt", rank, 2, np.array(recs, dtype=RECORD),
                   functions=[("MPI_Send", 20, 0.1), ("MPI_Recv", 20, 0.1)])


def test_a_trace_far_slower_inside_mpi_than_the_replay_says_so(tmp_path, cli):
    """The trace spent 5 ms in each call (as on oversubscribed cores): the
    replay's few µs are flagged."""
    write_pingpong(tmp_path, 5e-3)
    r = json.loads(cli("trace", "replay", tmp_path, "--out", tmp_path / "rp", "--json").stdout)
    assert r["traced_mpi_s"] == pytest.approx(40 * 5e-3)
    assert r["replayed_mpi_s"] < 40 * 20e-6  # a few LogGOPS latencies per call
    assert any("inside MPI" in w and "dedicated cores" in w for w in r["warnings"])
    assert not r["approximate"]
    p = cli("trace", "replay", tmp_path, "--out", tmp_path / "rp")
    assert "warning:" in p.stdout and "0.2 s per rank inside MPI" in p.stdout


def test_time_in_calls_replayed_at_no_cost_is_named_with_its_share(tmp_path, cli):
    """An MPI_Iprobe that took 20 ms of each rank's 24.6 ms (40 calls of 10 µs,
    42 gaps of 0.1 ms): the replay says the predicted makespan leaves that time
    out; a 0.1 ms one (2% of the traced time) is not worth a line."""
    write_pingpong(tmp_path / "long", 1e-5, probe_s=20e-3)
    r = json.loads(cli("trace", "replay", tmp_path / "long", "--out", tmp_path / "rp", "--json").stdout)
    share = r["zero_cost"][0][3]
    assert r["zero_cost"][0][:2] == ["iprobe", 2] and share == pytest.approx(20e-3 / (20e-3 + 40e-5 + 42e-4), rel=1e-6)
    assert [w for w in r["warnings"] if "no cost" in w] == [
        f"{100 * share:.0f}% of the traced time was spent in calls replayed at no cost (iprobe): "
        "the predicted makespan leaves that time out"]
    p = cli("trace", "replay", tmp_path / "long", "--out", tmp_path / "rp2")
    assert "time, all ranks" in p.stdout and "replayed at no cost (iprobe)" in " ".join(p.stdout.split())
    write_pingpong(tmp_path / "short", 1e-5, probe_s=1e-4)
    r = json.loads(cli("trace", "replay", tmp_path / "short", "--out", tmp_path / "rp3", "--json").stdout)
    assert r["zero_cost"] and not any("no cost" in w for w in r["warnings"])


def test_a_replay_far_slower_inside_mpi_than_the_trace_says_which_network_it_used(tmp_path, cli):
    """The trace spent 0.2 µs in each call (shared memory); LogGOPSim's default
    network takes L + 2o = 5.5 µs per message: the replay says why it is slower
    and how to replay the traced machine. On a network as fast as the trace's,
    no such note."""
    write_pingpong(tmp_path, 2e-7)
    r = json.loads(cli("trace", "replay", tmp_path, "--out", tmp_path / "rp", "--json").stdout)
    assert r["replayed_mpi_s"] > 10 * r["traced_mpi_s"]
    assert any("slower than the traced machine" in w and "--platform" in w for w in r["warnings"]), r["warnings"]
    assert not r["approximate"]
    # printed as written, not read as markup
    assert "[network]" in cli("trace", "replay", tmp_path, "--out", tmp_path / "rp1").stdout
    fast = tmp_path / "fast.toml"
    fast.write_text("[network]\nL_s = 1e-8\no_s = 1e-8\ng_s = 1e-8\n")
    r = json.loads(cli("trace", "replay", tmp_path, "--scenario", fast, "--out", tmp_path / "rp2", "--json").stdout)
    assert not r["warnings"], r["warnings"]
