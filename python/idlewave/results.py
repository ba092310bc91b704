"""Writing results so that nothing already written is lost.

Every file is written under a temporary name in its final directory and then
renamed into place (an atomic replace on POSIX); ``summary.json`` goes last,
so a directory whose summary is present holds a complete, consistent set.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic(path: Path, write: Callable[[Path], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 is for the temporary name only
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_file(path: Path, write: Callable[[Path], None]) -> None:
    """Lets `write` fill a temporary file, then renames it to `path`."""
    _atomic(path, write)


def write_json(path: Path, data: dict) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())

    _atomic(path, write)


def write_parquet(path: Path, frame) -> None:
    """Writes a polars DataFrame atomically."""
    _atomic(path, lambda tmp: frame.write_parquet(tmp))


def write_text(path: Path, text: str) -> None:
    def write(tmp: Path) -> None:
        tmp.write_text(text)

    _atomic(path, write)
