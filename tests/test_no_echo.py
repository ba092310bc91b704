"""A file given by mistake (a password file, a key) is refused without its
contents reaching the terminal: every reader names the file and what it
expected, and quotes text only once the file is recognisably of its format."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SECRETS = ("hunter2", "SECRET", "s3cr3t")
CONTENT = "hunter2:$6$SECRET:19000:0:99999:7:::\nalice:x:s3cr3t\n"


@pytest.mark.parametrize(("argv", "suffix"), [
    (["loggopsim", "{f}"], ".goal"),
    (["loggopsim", "{f}"], ".txt"),
    (["simulate", "{f}"], ".toml"),
    (["fit", "postal", "{f}", "-o", "{tmp}/platform.toml"], ".csv"),
    (["fit", "postal", "{f}", "-o", "{tmp}/platform.toml"], ".txt"),
    (["regimes", "{f}"], ".csv"),
    (["trace", "replay", "{f}"], ".txt"),
])
def test_a_file_of_another_kind_is_refused_without_echoing_it(tmp_path: Path, argv: list[str], suffix: str) -> None:
    f = tmp_path / f"passwd{suffix}"
    f.write_text(CONTENT)
    args = [a.format(f=f, tmp=tmp_path) for a in argv]
    r = subprocess.run([sys.executable, "-m", "idlewave", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    output = r.stdout + r.stderr
    assert str(f) in output, output
    assert "Traceback" not in output
    for secret in SECRETS:
        assert secret not in output, f"{args}: echoes {secret!r}: {output}"
