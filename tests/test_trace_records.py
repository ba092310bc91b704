"""Records that make no sense are refused by `trace replay` and `trace
export`, naming the rank file, the record and what is wrong (issue 48): a
wait on a request never posted used to be replayed and exported without a
word (docs/trace-format.md, "Records the reader refuses")."""

import numpy as np
import pytest

from idlewave.trace.format import CODES, RECORD, write_rank

pytestmark = pytest.mark.integration


def write_pair(d, bad: dict | None = None) -> None:
    """Two ranks exchange 8 bytes with Isend/Irecv and wait for both;
    `bad`: {rank: (index, record)} puts `record` in at `index` on that rank."""
    d.mkdir(parents=True, exist_ok=True)
    for rank in range(2):
        other = 1 - rank
        recs = [(CODES["init"], 0, 0, -1, 0, 0, 0),
                (CODES["irecv"], 0, 0, other, 3, 8, 1),
                (CODES["isend"], 0, 0, other, 3, 8, 2),
                (CODES["wait"], 0, 0, other, 3, 0, 1),
                (CODES["wait"], 0, 0, -1, 0, 0, 2),
                (CODES["finalize"], 0, 0, -1, 0, 0, 0)]
        if bad and rank in bad:
            i, rec = bad[rank]
            recs.insert(i, rec)
        timed = [(*r, 1e-6 * k, 1e-6 * k + 5e-7) for k, r in enumerate(recs)]
        write_rank(d / f"rank-{rank}.iwt", rank, 2, np.array(timed, dtype=RECORD),
                   functions=[("MPI_Irecv", 1, 0.0), ("MPI_Isend", 1, 0.0), ("MPI_Wait", 2, 0.0)])


def refused(cli, tmp_path, d) -> list[str]:
    """The messages of `trace replay` and `trace export` on `d`: both exit 2, no traceback."""
    out = []
    for args in (("replay", d, "--out", tmp_path / "rp"), ("export", d, "-o", tmp_path / "x.goal")):
        p = cli("trace", *args, check=False)
        assert p.returncode == 2, (args[0], p.stdout, p.stderr)
        assert "Traceback" not in p.stderr and "panicked" not in p.stderr, p.stderr
        out.append(p.stderr)
    return out


def test_a_sound_exchange_replays_and_exports(cli, tmp_path):
    write_pair(tmp_path / "ok")
    cli("trace", "replay", tmp_path / "ok", "--out", tmp_path / "rp")
    cli("trace", "export", tmp_path / "ok", "-o", tmp_path / "x.goal")


def test_a_wait_on_a_request_never_posted_names_rank_and_record(cli, tmp_path):
    d = tmp_path / "never"
    write_pair(d, {1: (5, (CODES["wait"], 0, 0, -1, 0, 0, 77))})
    for err in refused(cli, tmp_path, d):
        assert "rank-1.iwt: record 5 (wait): completes request 77, which no earlier record posted" in err, err


def test_a_second_wait_on_a_completed_request_is_refused(cli, tmp_path):
    d = tmp_path / "twice"
    write_pair(d, {0: (5, (CODES["wait"], 0, 0, 1, 3, 0, 1))})
    for err in refused(cli, tmp_path, d):
        assert "rank-0.iwt: record 5 (wait): completes request 1, which is not open" in err, err


@pytest.mark.parametrize("record, says", [
    ((CODES["send"], 0, 0, 5, 1, 8, 0), "record 1 (send): peer 5 is not a rank of this 2-rank run"),
    ((CODES["isend"], 0, 0, 1, 1, 8, 1), "record 2 (irecv): posts request 1 again while it is open (posted at record 1)"),
    ((CODES["send"], 0, 0, 1, 1, 2**63 + 8, 0), "record 1: 9223372036854775816 bytes, past the engine's limit"),
    ((CODES["send"], 0, 9, 1, 1, 8, 0), "record 1 (send): communicator 9 is not live here"),
    ((CODES["request_free"], 0, 0, -1, 0, 0, 12), "record 1 (request_free): frees request 12, which is not open"),
    ((CODES["start"], 0, 0, 1, 0, 0, 2), "record 3 (start): starts request 2, which is not persistent"),
])
def test_records_that_make_no_sense_are_refused_naming_what_is_wrong(cli, tmp_path, record, says):
    d = tmp_path / "bad"
    # (the start goes after the isend of request 2: record 3)
    write_pair(d, {0: (3 if record[0] == CODES["start"] else 1, record)})
    for err in refused(cli, tmp_path, d):
        assert "rank-0.iwt" in err and says in err, err


def test_engine_refusals_say_where_as_attributes(tmp_path):
    """The engine's errors carry the file, record and line as attributes, so
    that Python code never reads them out of the message."""
    from idlewave import _engine

    trace = tmp_path / "t"
    _engine.write_synthetic_trace(str(trace), 2, 1)
    rank0 = trace / "rank-0.iwt"
    data = bytearray(rank0.read_bytes())
    data[64 + 48 + 8:64 + 48 + 12] = (99).to_bytes(4, "little")  # record 1's peer: no rank of 2
    rank0.write_bytes(bytes(data))
    with pytest.raises(_engine.TraceReplayError) as e:
        _engine.trace_grid(str(trace))
    assert (e.value.path, e.value.record) == (str(rank0), 1)
    assert str(e.value) == f"{rank0}: record 1 (irecv): peer 99 is not a rank of this 2-rank run " \
                           "(nor -1, any source, or -2, MPI_PROC_NULL)"

    other = tmp_path / "u"
    _engine.write_synthetic_trace(str(other), 2, 1)
    rank1 = other / "rank-1.iwt"  # an input file that is no file: InputFileError, naming it
    rank1.unlink()
    rank1.mkdir()
    with pytest.raises(_engine.InputFileError) as e:
        _engine.trace_grid(str(other))
    assert (e.value.path, e.value.line, str(e.value)) == (str(rank1), None, f"{rank1}: the rank file must be a regular file")
    assert isinstance(e.value, _engine.SimulationError)


@pytest.mark.parametrize("command", [("trace", "model"), ("trace", "replay", "--scale-to", "8"), ("trace", "export", "--scale-to", "8")])
def test_trace_directories_that_are_not_there_are_named_together_before_any_is_read(cli, tmp_path, command):
    """A missing directory and a file given as one, both said at once, before the
    existing trace's model is even tried (which would fail first, two ranks being no grid)."""
    write_pair(tmp_path / "two")
    (tmp_path / "f.txt").write_text("")
    extra = ["-o", str(tmp_path / "x.goal")] if "export" in command else []
    p = cli(*command, tmp_path / "two", tmp_path / "gone", tmp_path / "f.txt", *extra, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"{tmp_path / 'gone'}: no such directory; {tmp_path / 'f.txt'}: not a directory" in p.stderr, p.stderr
