"""Scenario files: TOML in, a checked and fully defaulted dict out.

The engine owns the scenario (``src/scenario/``): its serde types give every
key its name and unit (``_s``, ``_bytes``, ``_hz``), type, default, range,
choices and description, and ``scenario::load`` reads TOML (or a dict), layers
the platform and overrides, checks every key against the schema generated
from those types and the rules that tie keys together, and fills in the
defaults. This module is the thin Python face of it: :func:`load_scenario` /
:func:`parse_scenario` / :func:`validate` return that document, which is also
what the engine runs; :func:`load` returns the engine's ``Scenario`` itself.

Errors are :class:`ScenarioError` with a user-ready message naming the source,
where in it (line:column, for text) and the full key path, e.g.
``scn.toml:7:14: noise[1].duration_s: must be >= 0, got -1``; TOML syntax
errors read ``scn.toml:3:7: TOML syntax error: <message>``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
from pathlib import Path
from typing import Any

from idlewave import _engine
from idlewave.inputs import read_bytes

__all__ = [
    "ScenarioError",
    "load",
    "load_scenario",
    "read_toml",
    "parse_scenario",
    "validate",
    "schema",
    "default",
    "rank_nodes",
    "node_hops",
    "engine_errors",
    "describe_workloads",
    "describe_noise",
]


class ScenarioError(ValueError):
    """A scenario that cannot be accepted; the message is ready to show to a user.

    ``source`` is the file (or ``<string>``/``<dict>``), ``key`` the key path
    (``""`` when the problem is not tied to a key), ``line`` and ``column``
    where in the TOML text the offending value (or, for a missing key, its
    table) is, else ``None``; ``kind`` what went wrong (``syntax``,
    ``unknown_key``, ``missing_key``, ``type``, ``value``, ``platform``,
    ``override``, ``rule``, ``read``; ``""`` when raised outside the engine),
    ``message`` what is wrong without the where. The engine raises this class
    (src/python.rs).
    """

    def __init__(self, text: str, *, source: str = "", key: str = "", line: int | None = None,
                 column: int | None = None, kind: str = "", message: str = ""):
        super().__init__(text)
        self.message = message or text
        self.source = source
        self.key = key
        self.line = line
        self.column = column
        self.kind = kind


PS_PER_S = 1e12


@functools.cache
def schema() -> dict:
    """The scenario's JSON Schema, from the engine's types."""
    return json.loads(_engine.scenario_schema())


def _defs() -> dict:
    return schema()["$defs"]


def _deref(node: dict) -> dict:
    """A schema node with its ``$ref`` followed (sibling keys kept)."""
    while "$ref" in node:
        target = _defs()[node["$ref"].rsplit("/", 1)[1]]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _variants(node: dict) -> dict[str, dict]:
    """kind -> schema of each table of a tagged union (``oneOf`` of objects with a ``kind`` const)."""
    return {_deref(v)["properties"]["kind"]["const"]: _deref(v) for v in _deref(node)["oneOf"]}


def _choices(node: dict) -> list | None:
    """The allowed values of a node that is a choice of constants, else None."""
    node = _deref(node)
    if "enum" in node:
        return list(node["enum"])
    if "const" in node:
        return [node["const"]]
    for key in ("oneOf", "anyOf"):
        if key in node:
            parts = [_choices(n) for n in node[key] if _deref(n).get("type") != "null"]
            if parts and all(p is not None for p in parts):
                return [c for p in parts for c in p]  # type: ignore[union-attr]
    return None


def _kinds(union: dict) -> dict[str, str]:
    return {kind: v.get("description", "") for kind, v in _variants(union).items()}


def _describe(union: dict) -> list[dict]:
    out = []
    for kind, v in _variants(union).items():
        params = {k: copy.deepcopy(p.get("default")) for k, p in v["properties"].items() if k != "kind"}
        out.append({"kind": kind, "description": v.get("description", ""), "params": params})
    return out


def default(key: str) -> Any:
    """The default of a dotted scenario key, e.g. ``default("network.L_s")``."""
    first, *rest = key.split(".")
    value = schema()["properties"][first]["default"]
    for part in rest:
        value = value[part]
    return copy.deepcopy(value)


def describe_workloads() -> list[dict]:
    """Workload kinds with their parameters and defaults (``None`` = required)."""
    return _describe(schema()["properties"]["workload"])


def describe_noise() -> list[dict]:
    """Noise kinds with their parameters and defaults (``None`` = required or all ranks)."""
    return _describe(schema()["properties"]["noise"]["items"])


def __getattr__(name: str) -> Any:
    # WORKLOADS / NOISE_KINDS: kind -> description, read from the schema on first use
    if name == "WORKLOADS":
        return _kinds(schema()["properties"]["workload"])
    if name == "NOISE_KINDS":
        return _kinds(schema()["properties"]["noise"]["items"])
    raise AttributeError(f"module 'idlewave.scenario' has no attribute {name!r}")


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def load(path: str | Path, overrides: dict | None = None) -> _engine.Scenario:
    """The engine's checked Scenario of a TOML file (``.to_dict()``: the document).

    Relative paths inside it resolve against the file's directory.
    """
    source = str(path)
    try:
        return _engine.Scenario(_read_text(path, "scenario"), source, str(Path(path).resolve().parent), overrides)
    except ScenarioError as e:
        raise _from_override(e, overrides) from None


def _from_override(e: ScenarioError, overrides: dict | None) -> ScenarioError:
    """An error in a value given as an override (`--set`) says so, rather than
    pointing into the file, where that value never was."""
    for key in overrides or {}:
        if e.key == key or e.key.startswith((f"{key}.", f"{key}[")):
            return ScenarioError(f"{e.source}: {e.key} (from --set): {e.message}", source=e.source, key=e.key,
                                 kind=e.kind, message=e.message)
    return e


def load_scenario(path: str | Path, overrides: dict | None = None) -> dict:
    """Reads a TOML scenario file and returns the validated user-level dict.

    Relative paths inside it resolve against the file's directory.
    """
    return load(path, overrides).to_dict()


def _read_text(path: str | Path, what: str) -> str:
    source = str(path)
    try:
        data = read_bytes(path, what)
    except OSError as e:
        message = f"{source}: cannot read {what}: {e.strerror}" if e.strerror else str(e)
        raise ScenarioError(message, source=source, kind="read") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{source}: not valid UTF-8 ({e.reason} at byte {e.start})", source=source, kind="read") from None


def read_toml(path: str | Path, what: str = "scenario") -> dict:
    """A TOML file's tables, or a ScenarioError saying why not (file:line:column for syntax)."""
    return _engine.read_toml(_read_text(path, what), str(path))


def _base_dir(source: str, base_dir: str | Path | None) -> str:
    if base_dir is None:
        base_dir = Path(source).parent if source and not source.startswith("<") else Path.cwd()
    return str(base_dir)


def parse_scenario(
    text: str, source: str = "<string>", overrides: dict | None = None, *, base_dir: str | Path | None = None
) -> dict:
    """Parses TOML text and validates it. ``source`` names it in messages; when it
    is a file name, relative paths resolve against its directory (else
    ``base_dir``, else the current directory)."""
    return _engine.Scenario(text, source, _base_dir(source, base_dir), overrides).to_dict()


def validate(raw: dict, source: str = "<dict>", *, base_dir: str | Path | None = None) -> dict:
    """Checks an already-parsed scenario and fills in every default.

    Idempotent: validating the result again returns an equal dict.
    """
    return checked(raw, source, base_dir=base_dir).to_dict()


def checked(raw: dict, source: str = "<dict>", *, base_dir: str | Path | None = None,
            overrides: dict | None = None) -> _engine.Scenario:
    """The engine's checked Scenario of a dict in the scenario file's layout."""
    if not isinstance(raw, dict):
        raise ScenarioError(f"{source}: expected a table, got {raw!r} ({type(raw).__name__})", source=source, kind="type")
    for key, what in TABLES.items():  # (TOML has no null: the engine takes one for an absent table: its defaults)
        if key in raw and raw[key] is None:
            raise ScenarioError(f"{source}: {key}: expected {what}, got None; leave the key out for its defaults",
                                source=source, key=key, kind="type", message=f"expected {what}, got None")
    return _engine.Scenario.from_dict(raw, source, _base_dir(source, base_dir), overrides)


#: The scenario's top-level tables and lists of tables.
TABLES = {"workload": "a table", "network": "a table", "record": "a table", "limits": "a table",
          "noise": "a list of tables", "jobs": "a list of tables"}


@contextlib.contextmanager
def engine_errors(source: str = "<scenario>"):
    """A run's refusal of a scenario key (checks only the run can make: a torus
    too small for the ranks, a mapping file that is a device; the engine sets
    the error's ``key``) prefixed with the scenario's file."""
    try:
        yield
    except _engine.SimulationError as e:
        if source.startswith("<") or e.key is None or str(e).startswith(f"{source}:"):  # (located already: file:line)
            raise
        refused = type(e)(f"{source}: {e}")
        refused.key = e.key
        raise refused from None


def _engine_scenario(scn: dict | _engine.Scenario) -> _engine.Scenario:
    return scn if isinstance(scn, _engine.Scenario) else checked(scn)


def rank_nodes(scn: dict | _engine.Scenario) -> list[int]:
    """The node each rank runs on under the scenario's mapping (as the engine computes it)."""
    return _engine.rank_nodes(_engine_scenario(scn))


def node_hops(scn: dict | _engine.Scenario, pairs: list[tuple[int, int]]) -> list[int]:
    """Links between the nodes of each pair in the scenario's topology (0: the same node)."""
    return _engine.node_hops(_engine_scenario(scn), [(int(a), int(b)) for a, b in pairs])
