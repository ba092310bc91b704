"""Platforms: presets and platform files for the scenario's [network]
table (the engine turns the table into its platform).

A platform file is TOML with the keys of [network] (at top level or under
[network]); a scenario names it with ``network.platform = "file.toml"`` or a
preset name, and its own [network] keys override the file's. The engine reads
and layers them (``src/scenario/load.rs``); the presets in ``platforms/`` are
compiled into it.
"""

from __future__ import annotations

from pathlib import Path

from idlewave import _engine

PRESET_DIR = Path(__file__).parent / "platforms"


def presets() -> dict[str, str]:
    """Preset name -> its first comment line (what it describes)."""
    return dict(_engine.platform_presets())
