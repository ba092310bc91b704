"""liballprof traces (LogGOPSim's and ATLAHS's PMPI tracer) imported into
idlewave's trace format: each call's fields as the tracer wrote them, a
replay that pairs every message, what the format cannot give refused with
file:line; ATLAHS's published sweep3d 2x2 sample where it is on disk."""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from idlewave.trace import TraceError
from idlewave.trace.format import CODES, read
from idlewave.trace.liballprof_import import read_liballprof, write_iwt

pytestmark = pytest.mark.integration

DT8 = "11,8,8"  # MPI_DOUBLE as liballprof writes a datatype: handle, size, extent
WORLD = "0,{r},2"  # a communicator: handle, this rank, size


def write(tmp: Path, ranks: dict[int, list[str]]) -> Path:
    for r, lines in ranks.items():
        body = ["# collprof 0.9 output file", "MPI_Init:-:1:2:1000.000000"]
        t = 1000.0
        for call in lines:
            body.append(f"{call.split(':')[0]}:{t + 10:.6f}:{call.split(':', 1)[1].format(r=r)}:{t + 20:.6f}")
            t += 100
        body.append(f"MPI_Finalize:{t + 10:.6f}:-")
        (tmp / f"pmpi-trace-rank-{r}.txt").write_text("\n".join(body) + "\n")
    return tmp


GOOD = {
    0: ["MPI_Comm_rank:" + WORLD + ":77", f"MPI_Send:5:100:{DT8}:1:3:{WORLD}", f"MPI_Isend:5:4:{DT8}:1:4:{WORLD}:900",
        "MPI_Wait:900:901", f"MPI_Allreduce:5:6:2:{DT8}:3:{WORLD}", f"MPI_Bcast:5:16:{DT8}:0:{WORLD}", f"MPI_Barrier:{WORLD}"],
    1: [f"MPI_Recv:5:100:{DT8}:0:3:{WORLD}:66", f"MPI_Irecv:5:4:{DT8}:0:4:{WORLD}:900", "MPI_Wait:900:901",
        f"MPI_Allreduce:5:6:2:{DT8}:3:{WORLD}", f"MPI_Bcast:5:16:{DT8}:0:{WORLD}", f"MPI_Barrier:{WORLD}"],
}


def test_each_call_becomes_its_record_and_the_trace_replays(tmp_path, cli):
    src = write(tmp_path, GOOD)
    traces, notes = read_liballprof(src)
    ops = [[int(x) for x in t["op"]] for t in traces]
    assert ops[0] == [CODES[o] for o in ("init", "send", "isend", "wait", "allreduce", "bcast", "barrier", "finalize")]
    assert ops[1] == [CODES[o] for o in ("init", "recv", "irecv", "wait", "allreduce", "bcast", "barrier", "finalize")]
    send = traces[0][1]
    assert (send["peer"], send["tag"], send["bytes"]) == (1, 3, 800)  # 100 doubles
    assert traces[0][2]["req"] == traces[0][3]["req"] != 0  # the Wait completes the Isend at its address
    assert traces[0][4]["bytes"] == 16 and traces[0][5]["peer"] == 0  # allreduce: 2 doubles; bcast's root
    assert np.isclose(send["t0"], 1110e-6) and np.isclose(send["t1"], 1120e-6)  # µs → s
    assert notes == ["1 calls of MPI_Comm_rank left out (they do not communicate; their time joins the computation)"]
    out = write_iwt(traces, tmp_path / "iwt")
    assert [len(r.records) for r in read(out)] == [8, 8]
    p = cli("trace", "replay", out, "--json", "--out", tmp_path / "replay")
    import json

    doc = json.loads(p.stdout)
    assert doc["ranks"] == 2 and doc["messages"] >= 2


@pytest.mark.parametrize("call, words", [
    (f"MPI_Recv:5:100:{DT8}:-1:3:{WORLD}:66", "a wildcard receive"),
    (f"MPI_Send:5:100:{DT8}:1:3:7,0,1", "a communicator of 1 ranks"),
    ("MPI_Waitall:2:900:901", "MPI_Waitall"),
    ("MPI_Wait:123:901", "no request was started at address 123"),
    (f"MPI_Send:5:100:{DT8}:9:3:{WORLD}", "rank 9 of 2"),
    ("MPI_Send:5:x", "its fields do not read"),
    (f"MPI_Send:5:-100:{DT8}:1:3:{WORLD}", "-100 elements of 8 bytes is not a message's size"),
    (f"MPI_Send:5:100:11,-8,8:1:3:{WORLD}", "100 elements of -8 bytes"),
    (f"MPI_Send:5:1180591620717411303424:{DT8}:1:3:{WORLD}", "not a message's size"),
    (f"MPI_Send:5:100:{DT8}:1:99999999999:{WORLD}", "tag 99999999999 is beyond what MPI's int holds"),
])
def test_what_the_format_cannot_give_is_refused_at_its_line(tmp_path, call, words):
    write(tmp_path, {0: [call], 1: []})
    with pytest.raises(TraceError) as e:
        read_liballprof(tmp_path)
    assert "pmpi-trace-rank-0.txt:3: " in str(e.value) and words in str(e.value)


@pytest.mark.parametrize("start, end, words", [("nan", "1120.0", "not finite"), ("1110.0", "inf", "not finite"),
                                               ("1110.0", "1100.0", "ends (1100.0 µs) before it starts (1110.0 µs)")])
def test_times_that_are_no_interval_are_refused_at_their_line(tmp_path, start, end, words):
    write(tmp_path, {0: [], 1: []})
    f = tmp_path / "pmpi-trace-rank-0.txt"
    lines = f.read_text().splitlines()
    lines.insert(2, f"MPI_Barrier:{start}:{WORLD.format(r=0)}:{end}")
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"pmpi-trace-rank-0.txt:3: MPI_Barrier: .*" + re.escape(words)):
        read_liballprof(tmp_path)


def test_a_rank_file_that_is_a_directory_is_named_as_the_input(tmp_path, cli):
    (tmp_path / "in").mkdir()
    write(tmp_path / "in", {0: [], 1: []})
    (tmp_path / "in" / "pmpi-trace-rank-1.txt").unlink()
    (tmp_path / "in" / "pmpi-trace-rank-1.txt").mkdir()
    p = cli("trace", "import", "--format", "liballprof", tmp_path / "in", "--out", tmp_path / "out", check=False)
    assert p.returncode == 2 and f"{tmp_path / 'in' / 'pmpi-trace-rank-1.txt'}: not a file of liballprof's" in p.stderr, p.stderr
    assert "--out" not in p.stderr and not (tmp_path / "out").exists()


def test_an_empty_rank_file_is_refused(tmp_path):
    write(tmp_path, {0: [], 1: []})
    (tmp_path / "pmpi-trace-rank-1.txt").write_text("")
    with pytest.raises(TraceError, match="pmpi-trace-rank-1.txt: no MPI call in it"):
        read_liballprof(tmp_path)


def test_a_missing_rank_is_refused(tmp_path):
    write(tmp_path, {0: [], 2: []})
    with pytest.raises(TraceError, match="rank 1's trace is missing"):
        read_liballprof(tmp_path)


SECRET = "hunter2:$6$SECRET:19000:0:99999:7:::\nalice:x:1000:1000::/home/alice:/bin/bash\n"


@pytest.mark.parametrize("content, kind", [
    (SECRET, "a word of 7 characters"),
    ("\x89PNG\r\n\x1a\n" + "s3cr3t" * 10, "a character that is not ASCII"),
    ("123456:SECRET\n", "a number of 6 digits"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET\n", "'-'"),
])
def test_a_file_of_another_kind_is_refused_without_echoing_it(tmp_path, cli, content, kind):
    """docs/reliability.md: what the file holds is named by its kind only, until it is recognisably liballprof's."""
    for r in range(2):
        (tmp_path / f"pmpi-trace-rank-{r}.txt").write_bytes(content.encode("latin-1"))
    p = cli("trace", "import", tmp_path, "--out", tmp_path / "out", check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"{tmp_path / 'pmpi-trace-rank-0.txt'}:1: not a liballprof trace" in p.stderr and kind in p.stderr, p.stderr
    for secret in ("hunter2", "SECRET", "s3cr3t", "PNG", "OPENSSH"):
        assert secret not in p.stderr + p.stdout
    assert not (tmp_path / "out").exists()


def test_a_line_of_another_kind_is_quoted_once_the_file_is_liballprofs(tmp_path):
    write(tmp_path, {0: ["garbage here:x"], 1: []})
    with pytest.raises(TraceError, match=r"pmpi-trace-rank-0.txt:3: not a liballprof line: 'garbage here"):
        read_liballprof(tmp_path)


CUT = "# collprof 0.9 output file\nMPI_Init:-:1:2:1000.0\nMPI_Barrier:1010.0:0,1,2:10"


@pytest.mark.parametrize("rank1, where, words", [
    (CUT, ":3: ", "the file ends within this line"),  # the tester's cut: no MPI_Finalize, no newline
    (CUT + "20.0", ":3: ", "the file ends within this line"),  # cut where the line still reads as a call
    ("# collprof 0.9 output file\nMPI_Init:-:1:2:1000.0\nMPI_Barrier:1010.0:0,1,2:1020.0\n", ":3: ",
     "ends here without MPI_Finalize"),
    ("# collprof 0.9 output file\nMPI_Init:-:1:2:1000.0\nMPI_Barrier:1010.0:0,1,2:1020.0\nMPI_Finalize:1110.0:-",
     ":4: ", "the file ends within this line"),
])
def test_a_cut_trace_is_refused_naming_the_file_and_line(tmp_path, cli, rank1, where, words):
    (tmp_path / "pmpi-trace-rank-0.txt").write_text(
        "# collprof 0.9 output file\nMPI_Init:-:0:2:1000.0\nMPI_Barrier:1010.0:0,0,2:1020.0\nMPI_Finalize:1110.0:-\n")
    (tmp_path / "pmpi-trace-rank-1.txt").write_text(rank1)
    p = cli("trace", "import", tmp_path, "--out", tmp_path / "out", "--json", check=False)
    assert p.returncode == 2 and f"{tmp_path / 'pmpi-trace-rank-1.txt'}{where}" in p.stderr and words in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()


def test_a_trace_in_liballprofs_older_layout_imports(tmp_path):
    """LogGOPSim's liballprof: `# htor's PMPI Tracer … Output File`, comments, a blank line, integer times."""
    for r in range(2):
        (tmp_path / f"pmpi-trace-rank-{r}.txt").write_text(
            "# htor's PMPI Tracer 0.6 Output File\n# time: Sat Mar 21 16:07:26 2009\n\n"
            f"MPI_Init:-:140737488343500:140737488344604:1000\nMPI_Barrier:1010:0,{r},2:1020\n"
            "# Finalize clockdiff: 0.000000\nMPI_Finalize:1110:-\n")
    traces, _ = read_liballprof(tmp_path)
    assert [len(t) for t in traces] == [3, 3]


@pytest.mark.parametrize("world, words", [
    ("0,0,5", "a communicator of 5 ranks, but {d} holds the traces of 2 (pmpi-trace-rank-0.txt to "
              "pmpi-trace-rank-1.txt)"),
    ("0,0,99999999999", "a communicator of 99999999999 ranks, but {d} holds the traces of 2"),
    ("0,1,2", "rank 1 of the 2 ranks calls it, but the file is rank 0's"),
])
def test_a_trace_of_another_rank_count_or_rank_is_refused_naming_both(tmp_path, world, words):
    """The rank count a trace states is in its communicators (handle, rank, size): MPI_Init's fields are the
    addresses of argc and argv."""
    write(tmp_path, {0: [f"MPI_Barrier:{world}"], 1: []})
    with pytest.raises(TraceError) as e:
        read_liballprof(tmp_path)
    assert "pmpi-trace-rank-0.txt:3: MPI_Barrier: " + words.format(d=tmp_path) in str(e.value)


SAMPLES = os.environ.get("IDLEWAVE_LIBALLPROF_SAMPLES")


@pytest.mark.skipif(not SAMPLES or not Path(SAMPLES, "sweep3d-2x2").is_dir(),
                    reason="ATLAHS's liballprof samples (goal_gen/hpc/Schedgen/liballprof-samples) not given in "
                           "IDLEWAVE_LIBALLPROF_SAMPLES")
def test_atlahs_sweep3d_sample_imports_and_replays(tmp_path, cli):
    import json

    traces, _ = read_liballprof(Path(SAMPLES, "sweep3d-2x2"))
    assert [int((t["op"] == CODES["send"]).sum()) for t in traces] == [1440] * 4
    out = write_iwt(traces, tmp_path / "iwt")
    doc = json.loads(cli("trace", "replay", out, "--json", "--out", tmp_path / "replay").stdout)
    # the makespan of the calls as traced is predicted within 1% (0.2% with the default network)
    assert abs(doc["makespan_s"] / doc["traced_makespan_s"] - 1) < 0.01
