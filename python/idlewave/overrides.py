"""Layering tables: command-line or sweep overrides over a scenario dict
(the engine applies them: ``src/scenario/load.rs``, as it does for a file)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from idlewave import _engine


def apply(raw: dict, overrides: dict[str, Any], fail: Callable[[str, str], None]) -> dict:
    """Overrides on top of `raw` (which is left untouched). A key may be
    dotted (``"workload.ranks"``) to set one key inside a table; a table
    value is merged into the table it lands on (a table that changes `kind`
    replaces the one below). ``fail(key, message)`` reports a key that cannot be set."""
    from idlewave.scenario import ScenarioError

    for key in overrides:
        if not isinstance(key, str) or not key:
            fail("overrides", f"keys must be non-empty strings, got {key!r}")
    try:
        return _engine.apply_overrides(raw, overrides)
    except ScenarioError as e:
        fail(e.key, e.message)
        raise
