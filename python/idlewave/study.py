"""A sweep's study file (docs/sweeps.md): its base scenario and points, read
and checked. What would fail every point, or run something else than asked,
is refused here before anything runs: a key no scenario has ([grid],
[[points]], --set), a nan or inf, seeds past 2^64 - 1, a study with nothing
to run or more than MAX_POINTS points."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import overload

from idlewave import _engine
from idlewave.scenario import ScenarioError, _read_text, read_toml

STUDY_KEYS = ("name", "base", "grid", "points", "replications", "strategy")

#: The most points a study may have (its [grid]'s product and its [[points]],
#: times its replications): the client keeps about 300 bytes per point, and
#: plans about a thousand points a second.
MAX_POINTS = 2_000_000

#: The largest seed a scenario takes (2^64 - 1).
MAX_SEED = 2**64 - 1


class Points(Sequence[dict]):
    """A study's points as overrides, made on demand: point i of the
    cartesian product of the grid (its last key varying fastest), then the
    [[points]] list, each `replications` times (with `seed` and `replica`)."""

    def __init__(self, grid: dict[str, list], extra: list[dict], replications: int = 1, first_seed: int = 1):
        self.grid, self.extra = grid, extra
        self.replications, self.first_seed = replications, first_seed
        self._keys = list(grid)
        self._sizes = [len(v) for v in grid.values()]
        self._in_grid = math.prod(self._sizes) if grid else 0
        self._distinct = (self._in_grid + len(extra)) or 1

    def __len__(self) -> int:
        return self._distinct * self.replications

    @overload
    def __getitem__(self, i: int) -> dict: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        j, replica = divmod(i, self.replications)
        if j < self._in_grid:
            point = {}
            for key, size in zip(reversed(self._keys), reversed(self._sizes)):
                j, k = divmod(j, size)
                point[key] = self.grid[key][k]
            point = {k: point[k] for k in self._keys}
        elif self.extra:
            point = dict(self.extra[j - self._in_grid])
        else:
            point = {}
        if self.replications > 1:
            point |= {"seed": self.first_seed + replica, "replica": replica}
        return point

    def every_point_sets(self, key: str) -> bool:
        return (bool(self.grid) or bool(self.extra)) and (not self.grid or key in self.grid) and all(key in x for x in self.extra)

    def some_point_sets(self, key: str) -> bool:
        return (bool(self.grid) and key in self.grid) or any(key in x for x in self.extra)

    def keys(self) -> list[str]:
        """Every overridden key, in order of first appearance."""
        keys = dict.fromkeys(self._keys)
        for x in self.extra:
            keys |= dict.fromkeys(x)
        if self.replications > 1:
            keys |= dict.fromkeys(("seed", "replica"))
        return list(keys)


def load_study(path: str | Path) -> tuple[dict, Points, str, Path]:
    """(base scenario, its points (override dicts, made on demand), name,
    the directory the base's relative paths start from: the base file's, or
    the study's for an inline [base]); see `study_options`. The points are
    without replications: `study_options` says how many."""
    p = Path(path)
    text = _read_text(p, "study")
    raw = _engine.read_toml(text, str(p))
    unknown = set(raw) - set(STUDY_KEYS)
    if unknown:
        raise ScenarioError(f"{p}: unknown key(s) {', '.join(sorted(unknown))} (allowed: {', '.join(STUDY_KEYS)})")
    _refuse_non_finite(p, raw, text)
    if not raw.get("base") and not raw.get("grid") and not raw.get("points"):
        raise ScenarioError(f"{p}: nothing to run: a study needs a base scenario ([base] tables, or base = "
                            "\"scenario.toml\") and/or values to sweep ([grid] key paths with lists of values, or "
                            "[[points]]); see docs/how-to/sweeps.md", source=str(p), kind="empty")
    base = raw.get("base", {})
    base_dir = p.parent
    if isinstance(base, str):
        base_dir = (p.parent / base).parent
        base = BaseFile(p.parent / base)
    if not isinstance(base, dict):
        raise ScenarioError(f"{p}: base is a scenario table ([base]) or a scenario file name")
    grid = raw.get("grid", {})
    if not isinstance(grid, dict) or any(not isinstance(v, list) or not v for v in grid.values()):
        raise ScenarioError(f"{p}: [grid] maps key paths to non-empty lists of values")
    extra = raw.get("points", [])
    if not isinstance(extra, list) or not all(isinstance(x, dict) for x in extra):
        raise ScenarioError(f"{p}: points must be an array of tables ([[points]])")
    extra = [dict(_flatten(x)) for x in extra]
    # a key no scenario has would fail every point, one by one: refused before anything runs
    for where, keys in [("grid", list(grid)), *((f"points[{i}]", list(x)) for i, x in enumerate(extra))]:
        for key in keys:
            if (why := unknown_key(key)) is not None:
                raise ScenarioError(f"{p}: {where}.{key}: {why}", source=str(p), key=f"{where}.{key}", kind="unknown_key",
                                    message=why)
    points = Points(grid, extra)
    return base, points, raw.get("name", p.stem), base_dir


def study_options(path: str | Path, points: Points) -> tuple[int, str | None]:
    """The study's replications (≥ 1) and strategy key (a swept key), checked,
    and its size: at most MAX_POINTS points."""
    p = Path(path)
    raw = read_toml(p, "study")
    reps = raw.get("replications", 1)
    if not isinstance(reps, int) or isinstance(reps, bool) or not 1 <= reps <= 10_000:
        raise ScenarioError(f"{p}: replications must be a whole number from 1 to 10000, got {reps!r}")
    strategy = raw.get("strategy")
    if strategy is not None:
        if not isinstance(strategy, str) or not points.every_point_sets(strategy):
            raise ScenarioError(f"{p}: strategy must name a key that every point sets (a [grid] key), got {strategy!r}")
    if reps > 1 and points.some_point_sets("seed"):
        raise ScenarioError(f"{p}: replications set each point's seed; drop 'seed' from [grid] and [[points]]")
    if len(points) * reps > MAX_POINTS:
        sizes = " × ".join(str(len(v)) for v in points.grid.values()) or "1"
        raise ScenarioError(f"{p}: {len(points) * reps:,} points ([grid] {sizes}, {len(points.extra)} [[points]], "
                            f"{reps} replication(s)) is more than a sweep takes ({MAX_POINTS:,}); split the study "
                            "into several (each with its own --out), sweep fewer values per key, or list the points "
                            "worth running with [[points]]")
    return reps, strategy


def _leaves(x, where: str = ""):
    """(path, value) of every value in a TOML document that is not a table or a list."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, f"{where}.{k}" if where else str(k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _leaves(v, f"{where}[{i}]")
    else:
        yield where, x


def _refuse_non_finite(p: Path, raw: dict, text: str) -> None:
    """A nan or inf in the study, refused as the user wrote it: the engine's
    TOML reader gives them as None (JSON has no such numbers), and every
    point holding one failed with "expected a number, got None"."""
    import tomllib

    bad = next((where for where, v in _leaves(raw) if v is None), None)  # (TOML itself has no null)
    if bad is None:
        return
    try:
        value = dict(_leaves(tomllib.loads(text))).get(bad)
    except tomllib.TOMLDecodeError:  # (read by the engine's reader, not Python's)
        value = None
    written = repr(value) if isinstance(value, float) else "nan or inf"  # nan, inf or -inf
    raise ScenarioError(f"{p}: {bad}: must be a finite number, got {written}", source=str(p), key=bad, kind="range",
                        message=f"must be a finite number, got {written}")


def check_sets(overrides: dict) -> None:
    """Refuses, before anything runs, a `--set` that would fail every point:
    a key no scenario has (as [grid] keys are checked), a nan or inf, an
    integer beyond 64 bits (the engine would take it for a float)."""
    for key, value in overrides.items():
        if (why := unknown_key(key)) is not None:
            raise ScenarioError(f"--set {key}: {why}", key=key, kind="unknown_key", message=why)
        for where, v in _leaves(value, key):
            at = "" if where == key else f" ({where})"
            if isinstance(v, float) and not math.isfinite(v):
                raise ScenarioError(f"--set {key}: must be a finite number, got {v!r}{at}", key=where, kind="range",
                                    message=f"must be a finite number, got {v!r}")
            if isinstance(v, int) and not -(2**63) <= v <= MAX_SEED:
                raise ScenarioError(f"--set {key}: {v}{at} is beyond the 64-bit integers a scenario holds (from "
                                    f"{-(2**63)} to {MAX_SEED})", key=where, kind="range", message=f"{v} is beyond 64 bits")


def check_seeds(study: Path, base: dict, replications: int, overrides: dict) -> None:
    """The seeds replications use (seed, seed + 1, …) must all be seeds: each
    point past 2^64 - 1 failed with "expected an integer, got 1.8e+19"."""
    first = base.get("seed", 1)
    if replications < 2 or not isinstance(first, int) or isinstance(first, bool):
        return
    last = first + replications - 1
    if last > MAX_SEED:
        where = f"--set seed={first}" if "seed" in overrides else f"{study}: base seed = {first}"
        raise ScenarioError(f"{where}: with replications = {replications} the seeds run to {last}, past the largest "
                            f"seed, {MAX_SEED} (2^64 - 1); give a seed of at most {MAX_SEED - replications + 1}",
                            key="seed", kind="range", message=f"the seeds run to {last}")


def unknown_key(key: str) -> str | None:
    """Why no scenario can have the dotted key path `key` (what a [grid] or
    [[points]] key names), or None when some can: every part but the last
    names a table, and each part is a key of its table in the scenario's
    schema, for some kind of it (a [grid] may set the kind too)."""
    import difflib

    from idlewave.scenario import _deref, schema

    def tables(node: dict) -> list[dict]:
        """The tables a schema node may be: each variant of a kinded one; none for a number or a list."""
        node = _deref(node)
        variants = node.get("oneOf", []) + node.get("anyOf", [])
        if variants:
            return [t for v in variants for t in tables(v)]
        return [node] if node.get("type") == "object" or "properties" in node else []

    nodes = [schema()]
    parts = key.split(".")
    for i, part in enumerate(parts):
        if not part:
            return "a key path names tables and a key, separated by single dots"
        here = ".".join(parts[: i + 1])
        found: list[dict] = []
        allowed: dict[str, None] = {}
        below = [t for node in nodes for t in tables(node)]
        for t in below:
            props = t.get("properties", {})
            if part in props:
                found.append(props[part])
            elif t.get("additionalProperties") is not False:
                return None  # a table of any keys
            allowed |= dict.fromkeys(props)
        if found:
            nodes = found
            continue
        if not below:  # the part above is a number, a list, …
            return f"{'.'.join(parts[:i])} is not a table, so it has no key {part!r}"
        close = difflib.get_close_matches(part, list(allowed), n=1)
        hint = f"; did you mean {'.'.join([*parts[:i], close[0]])}?" if close else ""
        if len(allowed) <= 20:
            return f"unknown key {here} (allowed: {', '.join(allowed)}){hint}"
        return f"unknown key: no scenario has a key {here}{hint}"
    return None


def _flatten(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flatten(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


class BaseFile(dict):
    """A study's base scenario file: its tables, and its text, so that a
    point's errors point into the file as `idlewave simulate` would."""

    def __init__(self, path: Path):
        self.source = str(path)
        self.text = _read_text(path, "scenario")
        super().__init__(_engine.read_toml(self.text, self.source))
