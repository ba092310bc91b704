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

from idlewave.inputs import read_bytes
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
        data = tomllib.loads(read_bytes(path, "platform file").decode())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{name_or_path!r} is neither a preset ({', '.join(presets())}) nor a readable file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: {e}") from None
    except RecursionError:
        raise ValueError(f"{path}: TOML nested too deeply to read") from None
    if "network" not in data:
        return data, str(path)
    network = dict(data["network"]) if isinstance(data["network"], dict) else data["network"]
    outside = sorted(set(data) - {"network"})
    if outside == ["platform"] and isinstance(network, dict) and "platform" not in network:
        network["platform"] = data["platform"]  # the file's own base platform, written above [network]
    elif outside:
        raise ValueError(f"{path}: {', '.join(outside)}: a platform file's keys belong in [network] (or all at top level)")
    return network, str(path)


def merged(raw: dict, resolve: Callable[[str], str], fail: Callable[[str, str], None]) -> dict:
    """The scenario's [network] over its platform file's (itself over the
    platform it names, if any)."""
    name = raw["platform"]
    try:
        base = _inherited(name, resolve, ())
    except (OSError, ValueError) as e:
        fail("network.platform", str(e))
    out = merge(base, raw)
    if not (PRESET_DIR / f"{name}.toml").is_file():
        # a file named relative to its scenario: where it is, so that the
        # checked scenario finds it again wherever it is read (a sweep's workers)
        out["platform"] = resolve(name)
    return out


def _inherited(name: str, resolve: Callable[[str], str], seen: tuple[str, ...]) -> dict:
    """A platform file's keys over those of the platform it names in its own
    `platform` key (a preset, or a file relative to it)."""
    base, where = load(name, resolve)
    parent = base.pop("platform", None)
    if parent is None:
        return base
    if not isinstance(parent, str):
        raise ValueError(f"{where}: platform: expected a preset name or a file path, got {parent!r}")
    if where in seen:
        raise ValueError(f"{where}: platform files name each other in a cycle ({' -> '.join((*seen, where))})")
    here = Path(where).parent
    return merge(_inherited(parent, lambda p: str(here / p), (*seen, where)), base)
