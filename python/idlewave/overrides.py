"""Layering tables: a scenario's [network] over its platform file's, and
command-line or sweep overrides over a scenario file."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any


def merge(base: dict, over: dict) -> dict:
    """`over` on top of `base`, table by table. A table that changes `kind`
    replaces the one below (its keys belong to another kind)."""
    out = dict(base)
    for k, v in over.items():
        old = out.get(k)
        if isinstance(v, dict) and isinstance(old, dict) and v.get("kind", old.get("kind")) == old.get("kind"):
            out[k] = merge(old, v)
        else:
            out[k] = v
    return out


def apply(raw: dict, overrides: dict[str, Any], fail: Callable[[str, str], None]) -> dict:
    """Overrides on top of `raw` (which is left untouched). A key may be
    dotted (``"workload.ranks"``) to set one key inside a table; a table
    value is merged into the table it lands on (see :func:`merge`).
    ``fail(key, message)`` reports a key that cannot be set."""
    out = copy.deepcopy(raw)
    for key, value in overrides.items():
        if not isinstance(key, str) or not key:
            fail("overrides", f"keys must be non-empty strings, got {key!r}")
        *parents, last = key.split(".")
        table = out
        for i, part in enumerate(parents):
            sub = table.setdefault(part, {})
            if not isinstance(sub, dict):
                path = ".".join(parents[: i + 1])
                fail(path, f"cannot override {key!r}: {path} is not a table")
            table = sub
        table[last] = merge(table, {last: value})[last]
    return out
