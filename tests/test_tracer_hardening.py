"""The tracer never loses a trace without saying so (issue 48): a trace
directory too long for its files' paths is one line and a non-zero exit (it
used to write a file named `rank`, exit 0); a rank file planted as a symbolic
link is refused, and what it points to is left alone; the directories it
creates are private to the user whatever the umask; every allocation is
checked (docs/tracing.md, "Where the trace goes")."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import compile_c
from idlewave.measure import MPI_ENV, mpiexec

pytestmark = [pytest.mark.integration, pytest.mark.mpi]

RING = r"""
#include <mpi.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    double x[16] = {0}, y[16];
    MPI_Request q[2];
    MPI_Irecv(y, 16, MPI_DOUBLE, (r + p - 1) % p, 5, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(x, 16, MPI_DOUBLE, (r + 1) % p, 5, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    MPI_Finalize();
    return 0;
}
"""

PATH_MAX = os.pathconf("/", "PC_PATH_MAX")
DIR_MAX = PATH_MAX - 1 - len("/rank-2147483647.iwt")


def run(lib: Path, app: Path, trace_dir: str | Path, ranks: int = 2, umask: int = -1) -> subprocess.CompletedProcess:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "OPAL_", "PMIX_", "PRTE_"))}
    env = {**keep, **MPI_ENV, "IDLEWAVE_TRACE_DIR": str(trace_dir)}
    return subprocess.run([mpiexec(), "--oversubscribe", "-n", str(ranks), "-x", f"LD_PRELOAD={lib}", "-x",
                           "IDLEWAVE_TRACE_DIR", str(app)], env=env, capture_output=True, text=True, timeout=60,
                          umask=umask)


def tracer_lines(p: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (p.stdout + p.stderr).splitlines() if line.startswith("idlewave tracer")]


def test_a_trace_dir_too_long_for_its_files_is_one_line_and_a_non_zero_exit(lib, tmp_path):
    app = compile_c(tmp_path, "ring", RING)
    base = tmp_path / "long"
    parts, need = [], DIR_MAX + 10 - len(str(base))  # 10 characters past the limit, whatever tmp_path's length
    while need > 1:
        parts.append("d" * min(200, need - 1))
        need -= len(parts[-1]) + 1
    long_dir = str(base.joinpath(*parts))
    assert DIR_MAX < len(long_dir) < PATH_MAX  # the old tracer cut `<dir>/rank-0.iwt` short at PATH_MAX
    p = run(lib, app, long_dir)
    out = p.stdout + p.stderr
    assert p.returncode not in (0, -11, 139) and "Segmentation fault" not in out, out
    lines = tracer_lines(p)
    assert len(lines) == 1, out
    assert "IDLEWAVE_TRACE_DIR" in lines[0] and f"{len(long_dir)} characters" in lines[0], lines[0]
    assert f"the limit is {DIR_MAX}" in lines[0] and "No trace is written" in lines[0], lines[0]
    assert not base.exists() or not [f for f in base.rglob("*") if f.is_file()], out  # nothing written, no `rank` file


def test_a_planted_symlink_is_refused_and_what_it_points_to_is_unchanged(lib, tmp_path):
    app = compile_c(tmp_path, "ring", RING)
    trace_dir = tmp_path / "tr"
    trace_dir.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("not a trace\n")
    (trace_dir / "rank-0.iwt").symlink_to("../outside.txt")
    p = run(lib, app, trace_dir)
    out = p.stdout + p.stderr
    assert outside.read_text() == "not a trace\n", out
    assert p.returncode not in (0, -11, 139), out
    lines = tracer_lines(p)
    assert len(lines) == 1 and "rank 0" in lines[0] and "rank-0.iwt" in lines[0], out
    assert "symbolic link" in lines[0] and "No trace is written" in lines[0], lines[0]
    assert (trace_dir / "rank-0.iwt").is_symlink()


def test_under_umask_000_the_trace_is_private_to_the_user(lib, tmp_path, cli):
    app = compile_c(tmp_path, "ring", RING)
    trace_dir = tmp_path / "made" / "tr"
    p = run(lib, app, trace_dir, umask=0)
    assert p.returncode == 0, p.stdout + p.stderr
    for d in (tmp_path / "made", trace_dir):
        assert d.stat().st_mode & 0o777 == 0o700, oct(d.stat().st_mode)
    files = sorted(trace_dir.glob("rank-*.iwt"))
    assert len(files) == 2
    for f in files:
        assert f.stat().st_mode & 0o777 == 0o600, (f, oct(f.stat().st_mode))
    cli("trace", "replay", trace_dir, "--out", tmp_path / "rp")


def test_every_allocation_of_the_tracer_is_checked(lib):
    """malloc, calloc and realloc appear only in the checked wrappers
    (iw_xmalloc, iw_xcalloc, iw_xrealloc: one line and exit 71 when they
    fail), in tracer_core.c and the wrappers gen_tracer.py generates."""
    source = (Path(lib).parent / ".libidlewave-trace.c").read_text()
    raw = [line.strip() for line in source.splitlines()
           if re.search(r"(?<![\w.])(malloc|calloc|realloc)\s*\(", line)]
    assert raw == ["void *p = malloc(n ? n : 1);", "void *p = calloc(k ? k : 1, n ? n : 1);",
                   "void *p = realloc(q, n ? n : 1);"], raw
    assert source.count("iw_out_of_memory(") == 4  # its definition and the three wrappers'
