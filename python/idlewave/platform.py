"""Platforms: presets and platform files for the scenario's [network]
table, and its conversion to the engine's platform (link classes with
per-protocol parameters, mapping, topology, injection bandwidth, latency
regimes, memory domains).

A platform file is TOML with the keys of [network] (at top level or under
[network]); a scenario names it with ``network.platform = "file.toml"`` or a
preset name, and its own [network] keys override the file's.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from pathlib import Path

from idlewave import mapping as mapping_mod

PRESET_DIR = Path(__file__).parent / "platforms"
PS_PER_S = 1e12


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
    return data.get("network", data), str(path)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def merged(raw: dict, resolve: Callable[[str], str], fail: Callable[[str, str], None]) -> dict:
    """The scenario's [network] over its platform file's."""
    try:
        base, _ = load(raw["platform"], resolve)
    except (OSError, ValueError) as e:
        fail("network.platform", str(e))
    base = {k: v for k, v in base.items() if k != "platform"}
    return _merge(base, raw)


def workload_ranks(w: dict) -> int | None:
    if "ranks" in w:
        return w["ranks"]
    if "grid" in w:
        return math.prod(w["grid"])
    return None


def workload_grid(w: dict) -> list[int] | None:
    """The workload's process grid, first dimension fastest in rank order."""
    if w["kind"] in ("krylov", "krylov_kernel"):
        return list(w["grid"])
    if w["kind"] == "dense2d":
        return list(w["grid"])[::-1]  # rank = row * Pc + column
    return None


def engine_platform(net: dict, workload: dict, engine_link: Callable[[dict], dict]) -> dict:
    """The engine's one description of the network (it takes the plain
    LogGOPS path itself when nothing more is needed)."""

    def link_class(t: dict | None) -> dict | None:
        if t is None:
            return None
        eager = engine_link(t)
        out = {"eager": eager}
        if t["short"]:
            out["short_max_bytes"] = t["short"]["max_bytes"]
            out["short"] = engine_link({**t["short"], "S_bytes": t["S_bytes"]})
        if t["rendezvous"]:
            out["rendezvous"] = engine_link({**t["rendezvous"], "S_bytes": t["S_bytes"]})
        return out

    ranks = workload_ranks(workload)
    m = net["mapping"]
    if m["kind"] == "block":
        engine_mapping = {"kind": "block"}
    elif ranks is None:
        raise mapping_mod.MappingError(f"network.mapping: {m['kind']} needs a workload with a known rank count")
    else:
        m = dict(m)
        if workload["kind"] == "dense2d" and m.get("node_grid"):
            m["node_grid"] = list(m["node_grid"])[::-1]
        engine_mapping = mapping_mod.engine_mapping(m, ranks, net["ranks_per_node"], workload_grid(workload), net["topology"])
    topo = {k: v for k, v in net["topology"].items()}
    bw = net["node_bandwidth_bytes_per_s"]
    mem = net["memory"]
    return {
        "inter_node": link_class(net),
        "intra_node": link_class(net["intra_node"]),
        "intra_socket": link_class(net["intra_socket"]),
        "ranks_per_node": net["ranks_per_node"],
        "ranks_per_socket": net["ranks_per_socket"],
        "mapping": engine_mapping,
        "topology": topo,
        "hop_latency_ps": round(net["hop_latency_s"] * PS_PER_S),
        "stalls_per_byte": net["stalls_per_byte"],
        "stall_ps": net["stall_s"] * PS_PER_S,
        "node_ps_per_byte": PS_PER_S / bw if bw else 0.0,
        "regimes": [
            {
                "classes": sum(1 << ("intra_socket", "intra_node", "inter_node").index(c) for c in r["classes"]),
                "step_ps": round(r["step_s"] * PS_PER_S),
                "transition": r["transition"],
                "multiplier": r["multiplier"],
                "add_mean_ps": [x * PS_PER_S for x in r["add_mean_s"]],
                "add_sd_ps": [x * PS_PER_S for x in r["add_sd_s"]],
                "initial": r["initial"],
            }
            for r in net["regimes"]
        ],
        "memory": None if mem is None else {
            "socket_bytes_per_ps": mem["socket_bandwidth_bytes_per_s"] / PS_PER_S,
            "core_bytes_per_ps": mem["core_bandwidth_bytes_per_s"] / PS_PER_S,
        },
    }
