"""Platforms: presets and platform files for the scenario's [network]
table (the engine turns the table into its platform).

A platform file is TOML with the keys of [network] (at top level or under
[network]); a scenario names it with ``network.platform = "file.toml"`` or a
preset name, and its own [network] keys override the file's.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

from idlewave.overrides import merge

PRESET_DIR = Path(__file__).parent / "platforms"


def presets() -> dict[str, str]:
    """Preset name -> its first comment line (what it describes)."""
    out = {}
    for f in sorted(PRESET_DIR.glob("*.toml")):
        first = f.read_text().splitlines()[0].lstrip("# ").strip()
        out[f.stem] = first
    return out


def load(name_or_path: str, resolve: Callable[[str], str]) -> tuple[dict, str]:
    """The [network] table of a preset or platform file, and where it came from."""
    preset = PRESET_DIR / f"{name_or_path}.toml"
    path = preset if preset.is_file() else Path(resolve(name_or_path))
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{name_or_path!r} is neither a preset ({', '.join(presets())}) nor a readable file") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: {e}") from None
    except RecursionError:
        raise ValueError(f"{path}: TOML nested too deeply to read") from None
    return data.get("network", data), str(path)


def merged(raw: dict, resolve: Callable[[str], str], fail: Callable[[str, str], None]) -> dict:
    """The scenario's [network] over its platform file's."""
    try:
        base, _ = load(raw["platform"], resolve)
    except (OSError, ValueError) as e:
        fail("network.platform", str(e))
    base = {k: v for k, v in base.items() if k != "platform"}
    return merge(base, raw)
