"""Reading the small text inputs a user names (scenarios, studies, platform
files): regular files only and of bounded size, so that naming a device, a
FIFO or a huge file gives an error instead of a hang or exhausted memory
(the engine's own inputs are read the same way, src/files.rs)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: The largest TOML input read (scenarios are kilobytes; inline noise traces
#: can be megabytes).
MAX_TOML_BYTES = 256 << 20


def read_bytes(path: str | Path, what: str) -> bytes:
    """The file's bytes, or an OSError whose message names the file and why
    not. Opened without blocking, so a FIFO is refused rather than waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: the {what} must be a regular file")
        if st.st_size > MAX_TOML_BYTES:
            raise OSError(f"{path}: the {what} is {st.st_size >> 20} MiB, more than the {MAX_TOML_BYTES >> 20} MiB read")
        return f.read(MAX_TOML_BYTES + 1)


def describe_columns(columns: list[str]) -> str:
    """A table's column names for an error message, or only how many there
    are when they do not look like names: a file that is not a table at all
    (a password file read as CSV has its first line as the "header") must not
    have its contents copied into the message."""
    names = all(len(c) <= 32 and c.replace("_", "").replace(" ", "").isalnum() for c in columns)
    if names and len(columns) <= 20:
        return f"has {', '.join(columns)}" if columns else "has no columns"
    return f"has {len(columns)} column(s) whose names do not look like a measurement table's"
