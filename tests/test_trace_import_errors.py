"""Inputs of `trace import` and `trace model` that are not what they should be: a file that is not an
OTF2 anchor, a trace directory with a rank file beyond its run or an empty rank file. Each is named
with what it is, never with the OTF2 library's "INVALID (1)" or a rank file it does not concern."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from idlewave.trace import TraceError
from idlewave.trace.format import read

pytestmark = pytest.mark.integration

SECRET = "hunter2:$6$SECRET:19000:0:99999:7:::\n"


@pytest.mark.parametrize("content, kind", [
    (SECRET.encode(), "it is text, 37 bytes"),
    (b"", "it is empty"),
    (b"\x7fELF\x02\x01\x01" + bytes(40), "47 bytes that do not begin as an anchor file does"),
])
@pytest.mark.parametrize("as_dir", [False, True])
def test_a_file_that_is_not_an_otf2_anchor_is_named_so(tmp_path, cli, content, kind, as_dir):
    anchor = tmp_path / ("traces.otf2" if as_dir else "passwd")
    anchor.write_bytes(content)
    p = cli("trace", "import", tmp_path if as_dir else anchor, "--out", tmp_path / "out", check=False)
    assert p.returncode == 2 and f"{anchor}: not an OTF2 anchor file ({kind})" in p.stderr, p.stderr
    assert "INVALID" not in p.stderr and "hunter2" not in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()


def traces(root: Path, *sizes: int) -> list[Path]:
    from idlewave import _engine

    for n in sizes:
        _engine.write_synthetic_trace(str(root / f"u{n}"), n, 5)
    return [root / f"u{n}" for n in sizes]


def test_a_rank_file_beyond_the_run_is_blamed_not_a_missing_one(tmp_path, cli):
    dirs = traces(tmp_path, 9, 16, 25)
    shutil.copy(dirs[0] / "rank-0.iwt", dirs[0] / "rank-99.iwt")
    p = cli("trace", "model", *dirs, check=False)
    assert p.returncode == 2 and f"{dirs[0] / 'rank-99.iwt'}: not a rank of this run: rank-0.iwt says the run " \
        "had 9 ranks (rank-0.iwt to rank-8.iwt)" in p.stderr, p.stderr
    assert "rank-9.iwt is missing" not in p.stderr


def test_an_empty_or_cut_rank_file_is_called_so_not_bad_magic(tmp_path, cli):
    dirs = traces(tmp_path, 9, 16)
    (dirs[0] / "rank-4.iwt").write_bytes(b"")
    p = cli("trace", "model", *dirs, check=False)
    assert p.returncode == 2 and f"{dirs[0] / 'rank-4.iwt'}: empty (0 bytes)" in p.stderr, p.stderr
    assert "bad magic" not in p.stderr
    (dirs[0] / "rank-4.iwt").write_bytes((dirs[1] / "rank-4.iwt").read_bytes()[:5])
    with pytest.raises(TraceError, match="rank-4.iwt: truncated header"):
        read(dirs[0])


def test_missing_and_doubled_rank_files_are_named(tmp_path):
    (d,) = traces(tmp_path, 4)
    (d / "rank-3.iwt").unlink()
    with pytest.raises(TraceError, match=r"rank-3.iwt is missing \(4 ranks, rank-0.iwt says\)"):
        read(d)
    shutil.copy(d / "rank-2.iwt", d / "rank-02.iwt")
    with pytest.raises(TraceError, match=r"two files name rank 2 \(rank-02.iwt, rank-2.iwt\)"):
        read(d)
    (d / "rank-02.iwt").unlink()
    (d / "rank-0.iwt").unlink()
    with pytest.raises(TraceError, match="rank-0.iwt is missing"):
        read(d)
