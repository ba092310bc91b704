"""Scenario files: TOML in, a checked and fully defaulted dict out.

The schema is owned by the engine (``src/scenario/``): its serde types give
every key its name and unit (``_s``, ``_bytes``, ``_hz``), type, default,
range, choices and description, and their ``validate`` methods the rules that
tie keys together. This module walks the JSON Schema generated from them
(:func:`schema`, also ``idlewave schema``), checking a scenario key by key,
filling in defaults and resolving file paths, then asks the engine to check
its rules. :func:`load_scenario` / :func:`parse_scenario` / :func:`validate`
return that document, which is also what the engine runs.

Errors are :class:`ScenarioError` with a user-ready message naming the source
and the full key path, e.g. ``scn.toml: noise[1].duration_s: must be >= 0, got -1``;
TOML syntax errors read ``scn.toml:3: <message>``.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from idlewave import _engine, platform
from idlewave import overrides as overrides_mod
from idlewave.inputs import read_bytes

__all__ = [
    "ScenarioError",
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
    (``""`` when the problem is not tied to a key), ``line`` the TOML line of a
    syntax error (else ``None``).
    """

    def __init__(self, message: str, *, source: str = "", key: str = "", line: int | None = None):
        super().__init__(message)
        self.source = source
        self.key = key
        self.line = line


PS_PER_S = 1e12
_UINT_MAX = {"uint8": 2**8 - 1, "uint16": 2**16 - 1, "uint32": 2**32 - 1, "uint64": 2**64 - 1}


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


def load_scenario(path: str | Path, overrides: dict | None = None) -> dict:
    """Reads a TOML scenario file and returns the validated user-level dict.

    Relative paths inside it resolve against the file's directory.
    """
    p = Path(path)
    raw = read_toml(p)
    return _checked(raw, str(path), overrides, base_dir=p.resolve().parent)


def read_toml(path: str | Path, what: str = "scenario") -> dict:
    """A TOML file's tables, or a ScenarioError saying why not (file:line for syntax)."""
    source = str(path)
    try:
        data = read_bytes(path, what)
    except OSError as e:
        message = f"{source}: cannot read {what}: {e.strerror}" if e.strerror else str(e)
        raise ScenarioError(message, source=source) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{source}: not valid UTF-8 ({e.reason} at byte {e.start})", source=source) from None
    return _toml(text, source)


def _toml(text: str, source: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _syntax_error(e, text, source) from None
    except RecursionError:
        raise ScenarioError(f"{source}: TOML nested too deeply to read", source=source) from None


def parse_scenario(
    text: str, source: str = "<string>", overrides: dict | None = None, *, base_dir: str | Path | None = None
) -> dict:
    """Parses TOML text and validates it. ``source`` names it in messages; when it
    is a file name, relative paths resolve against its directory (else
    ``base_dir``, else the current directory)."""
    return _checked(_toml(text, source), source, overrides, base_dir=base_dir)


def _checked(raw: dict, source: str, overrides: dict | None, *, base_dir: str | Path | None) -> dict:
    if overrides:
        raw = overrides_mod.apply(raw, overrides, lambda key, msg: _fail(source, key, msg))
    return validate(raw, source, base_dir=base_dir)


def validate(raw: dict, source: str = "<dict>", *, base_dir: str | Path | None = None) -> dict:
    """Checks an already-parsed scenario and fills in every default.

    Idempotent: validating the result again returns an equal dict.
    """
    if base_dir is None:
        base_dir = Path(source).parent if source and not source.startswith("<") else Path.cwd()
    w = _Walker(source, Path(base_dir))
    if isinstance(raw, dict) and isinstance(raw.get("network"), dict) and isinstance(raw["network"].get("platform"), str) \
            and raw["network"]["platform"]:
        raw = {**raw, "network": platform.merged(raw["network"], w.resolve, w.fail)}
    doc = w.value(raw, schema(), "")
    with engine_errors(source):
        _engine.check_scenario(json.dumps(doc))
    return doc


# A run's refusal that names a scenario key (checks only the run can make: a
# torus too small for the ranks, a mapping file that is a device).
_NAMES_A_KEY = re.compile(r"(network|workload|noise|record)[.\[:]")


@contextlib.contextmanager
def engine_errors(source: str = "<scenario>"):
    """The engine's refusals of a scenario (key path, message) as ScenarioError;
    a run's refusal naming a key is prefixed with the scenario's file."""
    try:
        yield
    except _engine.ScenarioRuleError as e:
        _fail(source, *e.args)
    except _engine.SimulationError as e:
        if source.startswith("<") or not _NAMES_A_KEY.match(str(e)):
            raise
        raise type(e)(f"{source}: {e}") from None


def rank_nodes(scn: dict) -> list[int]:
    """The node each rank runs on under the scenario's mapping (as the engine computes it)."""
    with engine_errors():
        return _engine.rank_nodes(json.dumps(scn))


def node_hops(scn: dict, pairs: list[tuple[int, int]]) -> list[int]:
    """Links between the nodes of each pair in the scenario's topology (0: the same node)."""
    with engine_errors():
        return _engine.node_hops(json.dumps(scn), [(int(a), int(b)) for a, b in pairs])


_LINE_RE = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _syntax_error(e: tomllib.TOMLDecodeError, text: str, source: str) -> ScenarioError:
    msg = str(e)
    m = _LINE_RE.search(msg)
    if m:
        line = int(m.group(1))
        msg = f"{msg[: m.start()]} (column {m.group(2)})"
    elif msg.endswith("(at end of document)"):
        line = text.count("\n") + 1
        msg = msg[: -len("(at end of document)")].rstrip() + " (at end of file)"
    else:
        line = None
    where = f"{source}:{line}" if line is not None else source
    return ScenarioError(f"{where}: TOML syntax error: {msg}", source=source, line=line)


def _type_name(v) -> str:
    return type(v).__name__


def _show(v) -> str:
    """A value as the user wrote it (TOML spelling for booleans)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _fail(source: str, key: str, msg: str):
    where = f"{source}: {key}: " if key else f"{source}: "
    raise ScenarioError(where + msg, source=source, key=key)


class _Walker:
    """Checks a value against a schema node; returns it normalised (defaults filled in, paths resolved)."""

    def __init__(self, source: str, base_dir: Path):
        self.source = source
        self.base_dir = base_dir

    def fail(self, path: str, msg: str):
        _fail(self.source, path, msg)

    def resolve(self, p: str) -> str:
        path = Path(os.path.expanduser(p))
        if not path.is_absolute():
            path = self.base_dir / path
        return os.path.normpath(os.path.abspath(path))

    def value(self, v: Any, node: dict, path: str, inherit: dict | None = None) -> Any:
        node = _deref(node)
        types = node.get("type")
        nullable = types == "null" or (isinstance(types, list) and "null" in types)
        for key in ("anyOf", "oneOf"):
            for n in node.get(key, ()):
                nullable |= _deref(n).get("type") == "null"
        if v is None and nullable:
            return None
        choices = _choices(node)
        if choices is not None:
            if v not in choices or isinstance(v, bool):
                self.fail(path, f"must be one of {', '.join(map(str, choices))}; got {_show(v)}")
            return v
        if "oneOf" in node:
            return self.kinded(v, node, path)
        if "anyOf" in node:  # an optional table
            (inner,) = [n for n in node["anyOf"] if _deref(n).get("type") != "null"]
            return self.value(v, inner, path, inherit)
        typ = types if isinstance(types, str) else next(t for t in types or () if t != "null")
        if typ == "object":
            return self.table(v, node, path, inherit)
        if typ == "array":
            return self.array(v, node, path)
        return self.scalar(v, typ, node, path)

    def table(self, v: Any, node: dict, path: str, inherit: dict | None = None, kind: str | None = None) -> dict:
        if v is None:
            v = {}
        if not isinstance(v, dict):
            self.fail(path, f"expected a table, got {_show(v)} ({_type_name(v)})")
        props = node.get("properties", {})
        if node.get("additionalProperties") is False:
            for key in v:
                if key not in props:
                    self.fail(_join(path, str(key)), f"unknown key (allowed: {', '.join(props)})")
        out: dict = {"kind": kind} if kind is not None else {}
        for key, sub in props.items():
            if key == "kind":
                continue
            here = _join(path, key)
            if key in v:
                source = sub.get("x-inherit")
                parent = out.get(source) if isinstance(source, str) else None
                out[key] = self.value(v[key], sub, here, inherit=(parent or out) if source else None)
            elif inherit is not None and key in inherit and not _deref(sub).get("x-inherit") and "x-inherit" not in sub:
                out[key] = copy.deepcopy(inherit[key])
            elif "default" in sub:
                out[key] = copy.deepcopy(sub["default"])
            elif key in node.get("required", ()):
                self.fail(here, "required key is missing")
            else:
                out[key] = None
        return out

    def kinded(self, v: Any, node: dict, path: str) -> dict:
        """A table whose allowed keys depend on its ``kind``."""
        variants = _variants(node)
        if v is None:
            v = {}
        if not isinstance(v, dict):
            self.fail(path, f"expected a table, got {_show(v)} ({_type_name(v)})")
        kinds = ", ".join(variants)
        kind = v.get("kind", node.get("default", {}).get("kind") if isinstance(node.get("default"), dict) else None)
        if kind is None:
            self.fail(_join(path, "kind"), f"required key is missing (one of: {kinds})")
        if not isinstance(kind, str):
            self.fail(_join(path, "kind"), f"expected a string, got {_show(kind)} ({_type_name(kind)})")
        if kind not in variants:
            self.fail(_join(path, "kind"), f"must be one of {kinds}; got {kind!r}")
        return self.table(v, variants[kind], path, kind=kind)

    def array(self, v: Any, node: dict, path: str) -> list:
        items = _deref(node.get("items", {}))
        if _deref(items).get("type") == "object" or "oneOf" in items:
            if isinstance(v, dict):
                name = path.rsplit(".", 1)[-1]
                self.fail(path, f"expected an array of tables (write [[{name}]], not [{name}])")
            if not isinstance(v, (list, tuple)):
                self.fail(path, f"expected an array of tables ([[{path}]]), got {_show(v)} ({_type_name(v)})")
        elif not isinstance(v, (list, tuple)):
            what = {"integer": "integers", "number": "numbers", "string": "strings"}.get(items.get("type", ""), "values")
            self.fail(path, f"expected a list of {what}, got {_show(v)} ({_type_name(v)})")
        n, lo, hi = len(v), node.get("minItems"), node.get("maxItems")
        if lo is not None and lo == hi and n != lo:
            self.fail(path, f"must have {lo} entries, got {n}")
        if lo is not None and n < lo:
            self.fail(path, f"needs at least {lo} entries, got {n}")
        if hi is not None and n > hi:
            self.fail(path, f"takes at most {hi} entries, got {n}")
        out = [self.value(x, items, f"{path}[{i}]") for i, x in enumerate(v)]
        if node.get("uniqueItems"):
            seen = set()
            for i, x in enumerate(out):
                if x in seen:
                    self.fail(f"{path}[{i}]", f"duplicate value {x!r}")
                seen.add(x)
        return out

    def scalar(self, v: Any, typ: str, node: dict, path: str) -> Any:
        if typ == "integer":
            if isinstance(v, bool) or not isinstance(v, int):
                self.fail(path, f"expected an integer, got {_show(v)} ({_type_name(v)})")
        elif typ == "number":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                self.fail(path, f"expected a number, got {_show(v)} ({_type_name(v)})")
            if not math.isfinite(v):
                self.fail(path, f"must be finite, got {v!r}")
            self.bounds(v, node, path)
            return float(v)
        elif typ == "boolean":
            if not isinstance(v, bool):
                self.fail(path, f"expected a boolean (true or false), got {_show(v)} ({_type_name(v)})")
            return v
        elif typ == "string":
            if not isinstance(v, str):
                self.fail(path, f"expected a string, got {_show(v)} ({_type_name(v)})")
            if "pattern" in node and not re.search(node["pattern"], v):
                self.fail(path, f"must match {node['pattern']!r}, got {v!r}")
            if node.get("format") == "path":
                if v == "" and node.get("x-optional"):
                    return ""
                if not v.strip():
                    self.fail(path, "expected a file path, got an empty string")
                return self.resolve(v)
            return v
        self.bounds(v, node, path)
        return v

    def bounds(self, v: float, node: dict, path: str):
        lo, hi, above = node.get("minimum"), node.get("maximum"), node.get("exclusiveMinimum")
        if node.get("format") == "seconds":  # a time: its own words for its range
            if above is not None and not v > above:
                self.fail(path, f"must be > {above}, got {v!r}")
            if lo is not None and not v >= lo:
                self.fail(path, f"must be >= {lo}, got {v!r}")
            if hi is not None and v > hi:
                self.fail(path, f"too large: {v!r} s exceeds the engine's limit of about {hi:.3g} s (2^60 ps)")
            if v > 0 and round(v * PS_PER_S) < 1:  # (a positive time must not become 0)
                self.fail(path, f"too small: {v!r} s is below the engine's 1 ps resolution")
            return
        if node.get("format") in _UINT_MAX and hi is None:  # the integer type's own range
            if lo in (None, 0):
                lo, hi = 0, _UINT_MAX[node["format"]]
            elif v > _UINT_MAX[node["format"]]:
                self.fail(path, f"must be <= {_UINT_MAX[node['format']]}, got {v!r}")
        if above is not None and not v > above:
            self.fail(path, f"must be > {above}, got {v!r}")
        if lo is not None and hi is not None and not lo <= v <= hi:
            self.fail(path, f"must be between {lo} and {hi}, got {v!r}")
        if lo is not None and not v >= lo:
            self.fail(path, f"must be >= {lo}, got {v!r}")
        if hi is not None and not v <= hi:
            self.fail(path, f"must be <= {hi}, got {v!r}")
