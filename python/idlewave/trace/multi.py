"""Extrapolation from traces of one program taken at several sizes.

The largest trace is the template. Every other trace is matched to it rank
class by rank class (grid.rs's classes: per dimension the low edge, the
interior or the high edge) and call by call, and each quantity that changes
with the number of ranks p is fitted with a performance-model normal form,
as Extra-P does: c·p^i·log2(p)^j or c0 + c1·p^i·log2(p)^j, the form chosen
by leave-one-out cross-validation over the traces. The template's quantities
are then evaluated at the target size and written as a trace of the
template's size, which the grid extrapolation takes to the target: the
structure (peers, communicators, the grid) from the grid rules, the numbers
from the fits.

Fitted, per rank of the template:
- the bytes of every message and collective record (a constant where the
  traces agree; a rule must give every traced size's bytes exactly, in p or,
  for bytes the same on every rank of a class, in the grid's extents:
  GridRule; else the class medians, for bytes that depend on the data);
- its computation between calls, as one total: the gaps of a rank are scaled
  together (single gaps are too noisy to fit one by one).

A smaller trace with too few ranks along a dimension to be matched (1, or a
non-periodic 2: its edges and interior are not all there; or a periodic 2
where its calls differ from the template's, as LAMMPS's do) is left out, and
the model says so. If every smaller trace is left out, the largest one alone
is extrapolated as weak scaling, when the traces' computation per rank is
nearer constant (weak) than ∝ 1/p (strong); the model says how far off a
real trend in it would make the result.

Refused, with the rank, the call and what the traces showed: traces that are
not of one grid code, a largest trace with too few ranks along a dimension,
call sequences that differ between sizes for another reason, bytes that no
rule gives exactly, computation no rule gives within COMPUTE_TOLERANCE, and
a largest trace alone whose computation per rank is nearer strong scaling.
"""

from __future__ import annotations

import itertools
import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from idlewave.trace.format import CODES, OPS, TraceError, read, write_rank
from idlewave.trace.loops import align, apart, skipped_loop

EXPONENTS = (-1.0, -2 / 3, -0.5, -1 / 3, 0.0, 1 / 3, 0.5, 2 / 3, 1.0, 4 / 3, 1.5, 2.0)
LOG_POWERS = (0, 1, 2)
COMPUTE_TOLERANCE = 0.25  # leave-one-out relative error of a rank's computation
WEAK_EXPONENT = 0.2  # computation per rank ∝ p^e with |e| below this: weak scaling (below −1 + this: strong)
# The largest trace alone: weak if |e| is below this, nearer 0 than strong scaling's −1. Traces taken on a
# loaded or oversubscribed machine move e by ±0.2 (LAMMPS at 4, 8, 16 ranks on 2 cores: 0.05 one run, 0.21 the next).
ALONE_EXPONENT = 0.5
COMPUTE_SLACK = 0.05  # a simpler rule for the computation, if it predicts the traces within 5 points of the best
DATA_TOLERANCE = 0.25  # a data-dependent message size: its class medians' rule, at most this far off
DATA_SLACK = 0.05
LOOP_TOLERANCE = 0.10  # a loop count that follows no exact rule: fitted at most this far off
TEMPLATE_RECORD_BYTES = 280  # memory per record of a rank while its loops are expanded (write_template): 272 measured
SKIPPED = {CODES["comm_member"], CODES["poll"]}  # their number depends on the size or the timing
MESSAGES = {CODES[n] for n in ("send", "recv", "isend", "irecv", "sendrecv_send", "sendrecv_recv", "mrecv", "imrecv",
                               "send_init", "recv_init")} | set(range(32, 128))


class ModelError(TraceError):
    """Traces that no model of the kind built here fits; the message says where."""


def _fraction(x: float) -> str:
    for d in (1, 2, 3, 4):
        if abs(x * d - round(x * d)) < 1e-9:
            n = round(x * d)
            return str(n) if d == 1 else f"{n}/{d}"
    return f"{x:.3g}"


@dataclass(frozen=True)
class Rule:
    """q(p) = c0 + c1 · p^i · log2(p)^j (terms: 0 a constant c0, 1 without c0, 2 both)."""

    terms: int
    c0: float = 0.0
    c1: float = 0.0
    i: float = 0.0
    j: int = 0
    error: float = 0.0  # largest relative error predicting a traced size from the others

    def __call__(self, p: float) -> float:
        if self.terms == 0:
            return self.c0
        return self.c0 + self.c1 * _term(p, self.i, self.j)

    def describe(self) -> str:
        if self.terms == 0:
            return f"{self.c0:.6g}"
        if self.i == 0 and self.j == 0:
            return f"{self.c1:.4g}"
        f = "" if self.i == 0 else ("p" if self.i == 1 else f"p^({_fraction(self.i)})")
        if self.j:
            f += ("·" if f else "") + ("log2(p)" if self.j == 1 else f"log2(p)^{self.j}")
        body = f"{self.c1:.4g}·{f}"
        return body if self.terms == 1 else f"{self.c0:.4g} {'+' if self.c1 >= 0 else '−'} {abs(self.c1):.4g}·{f}"


def _term(p, i: float, j: int):
    p = np.asarray(p, dtype=float)
    return p ** i * np.log2(p) ** j


@dataclass(frozen=True)
class GridForm:
    """A quantity as a function of the grid's extents n0, n1, … (ranks along
    each dimension): c1·∏ n_d^e_d with every e_d in {−1, 0, 1} (a halo's face
    in strong scaling: the domain's cross-section over the extents across
    it), or c0 + c1·n_k (a count that grows along one dimension)."""

    c0: float
    c1: float
    exps: tuple[int, ...] = ()
    k: int = -1  # the dimension of c0 + c1·n_k; −1: the product

    def at(self, dims: list[int]) -> float:
        if self.k >= 0:
            return self.c0 + self.c1 * dims[self.k]
        return self.c1 * math.prod(float(n) ** e for n, e in zip(dims, self.exps))

    def describe(self) -> str:
        if self.k >= 0:
            return f"{self.c0:.6g} {'+' if self.c1 >= 0 else '−'} {abs(self.c1):.6g}·n{self.k}"
        up = "·".join(f"n{d}" for d, e in enumerate(self.exps) if e > 0)
        down = "·".join(f"n{d}" for d, e in enumerate(self.exps) if e < 0)
        return f"{self.c1:.6g}" + (f"·{up}" if up else "") + (f"/({down})" if "·" in down else f"/{down}" if down else "")


@dataclass(frozen=True)
class GridRule:
    """The grid forms that give a quantity exactly at every traced grid;
    they must agree at the target's (else the traces cannot tell how it grows
    along some dimension, and the extrapolation is refused)."""

    forms: tuple[GridForm, ...]
    what: str  # the rank, call and traced values, for a refusal
    error: float = 0.0

    def at(self, dims: list[int]) -> int | None:
        values = {round(f.at(dims)) for f in self.forms}
        return values.pop() if len(values) == 1 else None

    def describe(self) -> str:
        more = len(self.forms) - 1
        return self.forms[0].describe() + (f" (or {more} other rule{'s' if more > 1 else ''} of the grid that fit)" if more else "")


def grid_rule(dims: list[list[int]], values: list[int], what: str) -> GridRule | None:
    """The grid forms (GridForm) that give `values` exactly (after rounding)
    at the traced grids `dims`, or None if none does."""
    exact = lambda f: all(round(f.at(d)) == v for d, v in zip(dims, values))  # noqa: E731
    forms = []
    for exps in itertools.product((-1, 0, 1), repeat=len(dims[-1])):
        if any(exps):
            f = GridForm(0.0, values[-1] / math.prod(float(n) ** e for n, e in zip(dims[-1], exps)), exps)
            if exact(f):
                forms.append(f)
    for k in range(len(dims[-1])):
        pair = next(((a, b) for a in range(len(dims)) for b in range(a + 1, len(dims)) if dims[a][k] != dims[b][k]), None)
        if pair is not None:
            a, b = pair
            c1 = (values[b] - values[a]) / (dims[b][k] - dims[a][k])
            f = GridForm(values[a] - c1 * dims[a][k], c1, k=k)
            if c1 != 0 and exact(f):
                forms.append(f)
    return GridRule(tuple(forms), what) if forms else None


CANDIDATES = [(i, j) for j in LOG_POWERS for i in EXPONENTS]
_TERMS: dict[tuple[int, ...], np.ndarray] = {}


def _terms(ps: tuple[int, ...]) -> np.ndarray:
    """f(p) = p^i·log2(p)^j of every candidate (rows) at every size (columns)."""
    if ps not in _TERMS:
        with np.errstate(all="ignore"):
            _TERMS[ps] = np.array([_term(ps, i, j) for i, j in CANDIDATES])
    return _TERMS[ps]


def fit(ps: list[int], values: list[float], slack: float = 0.0, duration: bool = False) -> Rule:
    """The normal form that best predicts each traced size from the others;
    the simplest within `slack` (relative error) of the best, for a noisy
    quantity that a flatter form would only fit to its noise. Every
    candidate and every left-out size at once, by the normal equations.
    A `duration` cannot fall below zero at any size: its forms with a
    negative coefficient (c0 − c1·p^i, or −c1·p^i, which some larger size
    takes below zero) are left out while any other form remains (noise of
    ±7% on c/p over 8–27 ranks makes −1.0 + 3.9·p^(−1/3) fit best)."""
    p, v = np.asarray(ps, dtype=float), np.asarray(values, dtype=float)
    if np.all(v == v[0]):
        return Rule(0, c0=float(v[0]))
    if len(p) < 3:
        raise ValueError("varies over only two sizes: a third trace is needed to choose how it grows")
    f = _terms(tuple(int(x) for x in ps))  # (candidates, sizes)
    scale = np.maximum(np.abs(v), 1e-12)
    rows = []  # (loo error, terms, j, |i|, c0, c1, i)
    with np.errstate(all="ignore"):
        # one term, c·f: c = Σfv / Σf²; leaving size m out removes its share of both sums
        sfv, sff = (f * v).sum(1), (f * f).sum(1)
        c_out = (sfv[:, None] - f * v) / (sff[:, None] - f * f)
        loo = (np.abs(c_out * f - v) / scale).max(1)
        c = sfv / sff
        for n, (i, j) in enumerate(CANDIDATES):
            if np.isfinite(loo[n]) and np.isfinite(c[n]):
                rows.append((float(loo[n]), 1, j, abs(i), 0.0, float(c[n]), i))
        # two terms, c0 + c1·f (not f = 1), from four sizes on: a least-squares line in f
        if len(p) >= 4:
            def line(k, s1, s2, sy, sfy):
                slope = (k * sfy - s1 * sy) / (k * s2 - s1 * s1)
                return (sy - slope * s1) / k, slope

            k = len(p)
            s1, s2, sy, sfy = f.sum(1), (f * f).sum(1), v.sum(), (f * v).sum(1)
            a0, a1 = line(k - 1, s1[:, None] - f, s2[:, None] - f * f, sy - v, sfy[:, None] - f * v)
            loo2 = (np.abs(a0 + a1 * f - v) / scale).max(1)
            b0, b1 = line(k, s1, s2, sy, sfy)
            for n, (i, j) in enumerate(CANDIDATES):
                if (i, j) != (0.0, 0) and np.isfinite(loo2[n]) and np.isfinite(b0[n]) and np.isfinite(b1[n]):
                    rows.append((float(loo2[n]), 2, j, abs(i), float(b0[n]), float(b1[n]), i))
    if duration and any(r[4] >= 0 and r[5] >= 0 for r in rows):
        rows = [r for r in rows if r[4] >= 0 and r[5] >= 0]
    least = min(r[0] for r in rows)
    # the simplest form within a little of the best: fewer terms, no logarithm, a smaller exponent
    best = min((r for r in rows if r[0] <= least * 1.25 + 1e-3 + slack), key=lambda r: (r[1], r[2], r[3]))
    return Rule(best[1], best[4], best[5], best[6], best[2], best[0])


@dataclass(frozen=True)
class Loop:
    """A loop whose number of iterations changes with the size: its calls
    (rank 0's), the counts in the traces and the rule they follow (exact,
    or fitted within LOOP_TOLERANCE when `exact` is False)."""

    body: tuple[str, ...]
    counts: tuple[int, ...]
    rule: Rule | GridRule
    exact: bool
    first: int  # rank 0's call where its iterations start, in the template

    def what(self) -> str:
        shown = ", ".join(self.body[:4]) + (f", … ({len(self.body)} calls)" if len(self.body) > 4 else "")
        return f"the loop at rank 0's call {self.first} ({shown})"

    def describe(self, sizes: list[int]) -> str:
        how = "" if self.exact else f" (no exact rule: fitted, {self.rule.error:.0%} off)"
        counts = ", ".join(f"{c} at {p}" for c, p in zip(self.counts, sizes))
        return f"{self.what()} runs {counts} ranks: {self.rule.describe()} iterations{how}"


@dataclass
class RankModel:
    """One template rank: its class's ranks in every trace, and its rules."""

    rank: int
    ranks: list[int]  # per trace, smallest first: the rank of the same class
    compute: Rule
    computed_s: list[float]
    bytes: dict[int, Rule | GridRule] = field(default_factory=dict)  # record index in the template → rule (varying only)
    calls: dict[int, str] = field(default_factory=dict)  # record index → the call's name
    loops: list[tuple[int, int, int]] = field(default_factory=list)  # per Model.loops: (first call, calls per iteration, iterations) in the template


@dataclass
class Model:
    dirs: list[Path]
    sizes: list[int]
    dims: list[list[int]]
    periodic: list[bool]
    ranks: list[RankModel]
    constant_bytes: int  # message records whose bytes are the same at every size
    scaling: str  # "weak", "strong" or "neither weak nor strong"
    growth: str  # how computation and bytes per rank grow, as exponents of p
    data_dependent: int = 0  # message records whose bytes follow no exact rule: fitted to their class medians
    data_error: float = 0.0  # the largest error of those rules against the medians
    data_spread: float = 0.0  # how much one call's bytes varied over a class's ranks (max/min − 1)
    gridded: int = 0  # message records whose bytes follow the grid's extents (GridRule), not p
    left_out: list[str] = field(default_factory=list)  # smaller traces not matched call by call, and why
    alone: bool = False  # the largest trace alone, weak-scaled: no smaller trace could be matched with it
    loops: list[Loop] = field(default_factory=list)  # loops that run more or fewer times with the size

    def loop_counts(self, ranks: int, dims: list[int] | None) -> list[int]:
        """How many times each loop runs at `ranks` ranks (on grid `dims`, for
        counts that follow the grid); ModelError where a rule cannot say."""
        counts = []
        for loop in self.loops:
            if isinstance(loop.rule, GridRule):
                if dims is None or (n := loop.rule.at(dims)) is None:
                    raise _undecided(loop.rule, dims or [], self.dims)
            else:
                n = round(loop.rule(ranks))
            if n < 1:
                raise ModelError(f"{loop.what()}: its rule {loop.rule.describe()} gives {n} iterations at {ranks} ranks")
            counts.append(n)
        return counts

    def describe(self) -> str:
        data = (f"; {self.data_dependent:,} message sizes vary with the data (up to {self.data_spread:.0%} between ranks "
                f"of a class): each is its class's median, fitted within {self.data_error:.0%}") if self.data_dependent else ""
        left = "".join(f"; {w}" for w in self.left_out)
        if self.loops:
            data += "; " + "; ".join(loop.describe(self.sizes) for loop in self.loops[:3]) + (
                f"; and {len(self.loops) - 3} more such loops" if len(self.loops) > 3 else "")
        if self.gridded:
            data += (f"; {self.gridded:,} message sizes follow the grid's extents n0, n1, … (ranks along each "
                     "dimension), not p: each by a rule in them")
        if self.alone:
            return (f"the {self.sizes[-1]}-rank trace ({_grid(self.dims[-1])}) alone, weak-scaled: the traces at "
                    f"{', '.join(map(str, self.sizes))} ranks are nearer weak scaling than strong ({self.growth}){left}")
        return (f"fitted from traces at {', '.join(map(str, self.sizes))} ranks "
                f"({', '.join(_grid(d) for d in self.dims)}), {self.scaling} scaling inferred ({self.growth})"
                + data + left)

    def to_json(self) -> dict:
        def rule(r: Rule | GridRule) -> dict:
            if isinstance(r, GridRule):
                return {"rule": r.describe(), "grid_forms": [{"c0": f.c0, "c1": f.c1, "exponents": list(f.exps),
                                                              "dimension": f.k} for f in r.forms], "error": r.error}
            return {"rule": r.describe(), "terms": r.terms, "c0": r.c0, "c1": r.c1, "i": r.i, "j": r.j, "error": r.error}

        return {"traces": [str(d) for d in self.dirs], "sizes": self.sizes, "grids": self.dims, "periodic": self.periodic,
                "scaling": self.scaling, "growth": self.growth, "data_dependent_message_records": self.data_dependent,
                "data_dependent_error": self.data_error, "data_dependent_spread": self.data_spread,
                "grid_message_records": self.gridded,
                "constant_message_records": self.constant_bytes, "left_out": self.left_out, "largest_alone": self.alone,
                "loops": [{"first_call_of_rank_0": loop.first, "calls": list(loop.body), "counts": list(loop.counts),
                           "exact": loop.exact, **rule(loop.rule)} for loop in self.loops],
                "ranks": [{"rank": m.rank, "ranks_in_traces": m.ranks, "computation": rule(m.compute),
                           "computation_s": m.computed_s,
                           "loops": [{"first_call": a, "calls_per_iteration": n, "iterations": c} for a, n, c in m.loops],
                           "bytes": [{"record": k, "call": m.calls[k], **rule(r)} for k, r in sorted(m.bytes.items())]}
                          for m in self.ranks]}


def _same_class(rank: int, dims: list[int], to: list[int]) -> int:
    """The rank of grid `to` in the class of `rank` on grid `dims`: an edge
    stays on its edge, an interior coordinate stays inside."""
    coords, r = [], rank
    for n in reversed(dims):
        coords.append(r % n)
        r //= n
    coords.reverse()
    out = 0
    for c, n, m in zip(coords, dims, to):
        c2 = 0 if c == 0 else m - 1 if c == n - 1 else min(max(c, 1), m - 2)
        out = out * m + c2
    return out


def _class_key(rank: int, dims: list[int]) -> tuple[int, ...]:
    """Per dimension 0 (low edge), 1 (interior) or 2 (high edge)."""
    key = []
    for n in reversed(dims):
        c = rank % n
        rank //= n
        key.append(0 if c == 0 else 2 if c == n - 1 else 1)
    return tuple(reversed(key))


def class_name(rank: int, dims: list[int]) -> str:
    """The class of a rank of the grid, in words: 'low×interior', …"""
    return "×".join(("low", "interior", "high")[k] for k in _class_key(rank, dims))


def _calls(records: np.ndarray) -> np.ndarray:
    """Indices of the records that make the call sequence compared across sizes."""
    return np.flatnonzero(~np.isin(records["op"], list(SKIPPED)))


def _computation(records: np.ndarray) -> float:
    """The time between calls, and in failed polls: what the replay computes."""
    t0, t1 = records["t0"], records["t1"]
    gaps = np.maximum(t0[1:] - t1[:-1], 0.0).sum() if len(records) > 1 else 0.0
    polls = records["op"] == CODES["poll"]
    return float(gaps + (t1[polls] - t0[polls]).sum())


def build(dirs: list[Path]) -> Model:
    """Reads the traces and fits the model; raises ModelError where it cannot."""
    from idlewave._engine import SimulationError, trace_grid

    if len(dirs) < 2:
        raise ModelError("a model needs traces at two sizes or more")
    traces = []
    for d in dirs:
        ranks = read(d)
        try:
            dims, periodic = trace_grid(str(d))
        except SimulationError as e:
            raise ModelError(f"{d}: several traces extrapolate codes on a Cartesian process grid; {e}") from None
        traces.append((len(ranks), Path(d), list(dims), list(periodic), ranks))
    traces.sort(key=lambda t: t[0])
    sizes = [t[0] for t in traces]
    if len(set(sizes)) != len(sizes):
        # named: with only the sizes ([9, 9, 25]) a user could not tell which two (or that one was given twice)
        n = next(k for k in range(len(sizes) - 1) if sizes[k] == sizes[k + 1])  # (sorted by size)
        a, b = traces[n][1], traces[n + 1][1]
        raise ModelError(f"{a}: given twice: give traces at different sizes" if a.resolve() == b.resolve() else
                         f"{a} and {b} are both traces of {sizes[n]} ranks: give traces at different sizes")
    for _, d, dims, periodic, _ in traces:
        if len(dims) != len(traces[-1][2]) or periodic != traces[-1][3]:
            raise ModelError(f"{d}: its grid {'×'.join(map(str, dims))} (periodic {periodic}) is not of the same "
                             f"shape as the {sizes[-1]}-rank trace's {'×'.join(map(str, traces[-1][2]))} "
                             f"(periodic {traces[-1][3]})")
    if (why := _incomplete(traces[-1][2], traces[-1][3])) is not None:
        raise ModelError(f"{traces[-1][1]}: {why}")
    partial = {n: why for n, t in enumerate(traces[:-1]) if (why := _partial(t, traces[-1]))}
    if partial:
        if len(partial) == len(traces) - 1:
            return _from_largest(traces, partial)
        left_out = [_left_out(traces[n], why) for n, why in partial.items()]
        traces = [t for n, t in enumerate(traces) if n not in partial]
        sizes = [t[0] for t in traces]
        if len(traces) < 2:  # (cannot happen: the template is complete)
            raise ModelError("no two traces to fit")
    else:
        left_out = []
    try:
        return _fitted(traces, left_out)
    except ModelError as e:
        # said with the traces left out: a refusal that "a third trace is needed" read wrong to a user who gave
        # three, one of them left out
        if not left_out:
            raise
        raise ModelError(f"{e} ({'; '.join(left_out)})") from None


def _fitted(traces: list, left_out: list[str]) -> Model:
    """The model of `traces` (smallest first, none left out), matched call by call."""
    sizes = [t[0] for t in traces]
    template = traces[-1]
    aligned = _Alignments(traces)
    # a class's computation in each trace, with the template's loop counts: the median over its ranks (one
    # rank's is noisy)
    class_compute: list[dict[tuple[int, ...], float]] = []
    for n, (_, _, dims, _, ranks) in enumerate(traces):
        by_class: dict[tuple[int, ...], list[float]] = {}
        for r in range(len(ranks)):
            by_class.setdefault(_class_key(r, dims), []).append(aligned.computation(n, r))
        class_compute.append({k: float(np.median(v)) for k, v in by_class.items()})
    models, constant = [], 0
    varied: list[float] = []  # per data-dependent message record: its rule's error
    sent = [0.0] * len(traces)  # per trace: the point-to-point bytes the template ranks' classes send
    members = _Members(traces)
    loop_counts: list[tuple[int, list[tuple[int, int, tuple[int, ...]]]]] = []  # per rank: its loops' counts
    for t, tr in enumerate(template[4]):
        mapped = [_same_class(t, template[2], tr_dims) for _, _, tr_dims, _, _ in traces]
        calls_t = _calls(tr.records)
        ops_t = tr.records["op"][calls_t]
        seqs, maps, trace_ops = [], [], []
        sites: dict[tuple[int, int], dict[int, int]] = {}  # (first call, length) → trace → iterations
        counts_t: dict[tuple[int, int], int] = {}
        for n, ((p, _, _, _, ranks), r) in enumerate(zip(traces, mapped)):
            rec = ranks[r].records
            idx = _calls(rec)
            ops = rec["op"][idx]
            if (got := aligned.of(n, r)) is None:
                # where the walk that allows for loops stopped: the first call that differs as the sequences are is
                # most often only a loop's extra iteration (a call made at one size alone was named as that)
                k, k2 = apart(ops, ops_t)
                what = lambda o, k: OPS.get(int(o[k]), f"op {int(o[k])}") if k < len(o) else "the end"  # noqa: E731
                at = f"call {k}" if k == k2 else f"calls {k} and {k2} respectively"
                # a loop one of them never enters: said, as the docs say it is refused (no iteration to match)
                zero = next((f": the {q}-rank trace runs a loop of {n} calls there that the {q2}-rank trace never "
                             "enters, and a loop must run at least once at every traced size to be matched"
                             for q, q2, n in ((sizes[-1], p, skipped_loop(ops_t, k, ops, k2)),
                                              (p, sizes[-1], skipped_loop(ops, k2, ops_t, k))) if n), None)
                raise ModelError(f"rank {t} of the {sizes[-1]}-rank trace and rank {r} of the {p}-rank trace (the same "
                                 f"class) differ at {at}: {what(ops_t, k)} against {what(ops, k2)} ({len(ops_t)} and "
                                 f"{len(ops)} calls)" + (zero or ", and not by a loop that runs more or fewer times: "
                                 "the program's calls change with the size in a way no rule here fits"))
            mapping, found = got
            for site in found:
                sites.setdefault((site.start, site.length), {})[n] = site.other
                counts_t[(site.start, site.length)] = site.count
            seqs.append(rec[idx] if mapping is None else rec[idx][mapping])
            maps.append(mapping)
            trace_ops.append(ops)
        loop_counts.append((t, [(a, n, tuple(sites[(a, n)].get(k, counts_t[(a, n)]) for k in range(len(traces))))
                                for a, n in sorted(sites)]))
        key = _class_key(t, template[2])
        rules: dict[int, Rule | GridRule] = {}
        names: dict[int, str] = {}
        by_values: dict[tuple, Rule | GridRule] = {}
        for k in np.flatnonzero(np.isin(ops_t, list(MESSAGES))).tolist():
            values = tuple(int(s["bytes"][k]) for s in seqs)
            if len(set(values)) == 1:
                constant += 1
                continue
            if values not in by_values:
                try:
                    rule = fit(sizes, list(values))
                except ValueError as e:
                    raise ModelError(f"rank {t}, call {k} ({OPS.get(int(ops_t[k]))}): its bytes {list(values)} {e}") from None
                if not all(round(rule(p)) == v for p, v in zip(sizes, values)):
                    name = OPS.get(int(ops_t[k]), f"op {int(ops_t[k])}")
                    traced = ", ".join(f"{v} at {_grid(d)}" for v, d in zip(values, members.dims))
                    per_trace = [members.bytes_at(n, key, _played(maps[n], k), trace_ops[n]) for n in range(len(sizes))]
                    # the same on every rank of its class in each trace: not the data's; perhaps the grid's
                    told = [members.same_in_class(n, r, _played(maps[n], k), trace_ops[n]) for n, r in enumerate(mapped)]
                    same = any(x is not None for x in told) and all(x is not False for x in told)
                    by_grid = grid_rule(members.dims, list(values), f"rank {t}, call {k} ({name}): its bytes ({traced})") if same else None
                    if by_grid is not None:
                        by_values[values] = by_grid
                    else:
                        rule = _data_dependent(t, k, name, sizes, values, per_trace, same, members.dims)
                        varied.append(rule.error)
                        by_values[values] = rule
                else:
                    by_values[values] = rule
            rules[int(calls_t[k])] = by_values[values]
            names[int(calls_t[k])] = OPS.get(int(ops_t[k]), f"op {int(ops_t[k])}")
        # (after the bytes: a size no rule gives is the program's, a computation off its rule may be the machine's)
        # (a periodic dimension of 2 has no interior: there the class is the edge `_same_class` took)
        computed = [c[_class_key(r, tr_dims)] for c, r, (_, _, tr_dims, _, _) in zip(class_compute, mapped, traces)]
        try:
            compute = fit(sizes, computed, COMPUTE_SLACK, duration=True)
        except ValueError as e:
            raise ModelError(f"rank {t}: its computation {e}") from None
        if compute.error > COMPUTE_TOLERANCE:
            raise ModelError(f"rank {t}: no rule gives its computation within {COMPUTE_TOLERANCE:.0%} "
                             f"(traced {', '.join(f'{c:.4g} s at {p}' for c, p in zip(computed, sizes))}; best "
                             f"{compute.describe()}, {compute.error:.0%} off): trace on a quiet machine, or with "
                             "IDLEWAVE_TRACE_CLOCK=cpu when ranks share cores")
        models.append(RankModel(t, mapped, compute, computed, rules, names))
        sends = np.isin(ops_t, [CODES[n] for n in ("send", "isend", "sendrecv_send", "send_init")])
        for n, seq in enumerate(seqs):
            sent[n] += float(seq["bytes"][sends].sum())
    loops = _loops(loop_counts, models, template, sizes, [t[2] for t in traces])
    return Model([t[1] for t in traces], sizes, [t[2] for t in traces], template[3], models, constant,
                 *_scaling(sizes, models, sent), len(varied), max(varied, default=0.0), members.spread,
                 sum(isinstance(r, GridRule) for m in models for r in m.bytes.values()), left_out, loops=loops)


def _loops(found: list[tuple[int, list[tuple[int, int, tuple[int, ...]]]]], models: list[RankModel], template: tuple,
           sizes: list[int], dims: list[list[int]]) -> list[Loop]:
    """The loops whose counts change with the size, one rule each, and each
    rank's place of them (RankModel.loops). Every rank must run the same
    loops the same number of times at each size (the iterations of one loop
    meet in its communication); their counts follow a rule in p or in the
    grid's extents exactly, else one fitted within LOOP_TOLERANCE."""
    first = found[0][1]
    for t, own in found:
        if [c for _, _, c in own] != [c for _, _, c in first]:
            show = lambda own: "; ".join(f"{', '.join(map(str, c))} times from call {a}" for a, _, c in own) or "none"  # noqa: E731
            raise ModelError(f"ranks 0 and {t} of the {sizes[-1]}-rank trace do not run the same loops the same number of "
                             f"times at {', '.join(map(str, sizes))} ranks (rank 0: {show(first)}; rank {t}: {show(own)}): "
                             "the iterations of a loop whose count changes with the size must be every rank's")
    for m, (_, own) in zip(models, found):
        m.loops = [(a, n, c[-1]) for a, n, c in own]
    names = template[4][0].records["op"][_calls(template[4][0].records)]
    loops = []
    for a, n, counts in first:
        body = tuple(OPS.get(int(o), f"op {int(o)}") for o in names[a:a + n])
        where = Loop(body, counts, Rule(0), True, a).what()
        traced = ", ".join(f"{c} at {p}" for c, p in zip(counts, sizes))
        try:
            rule = fit(sizes, list(counts))
        except ValueError as e:
            raise ModelError(f"{where}: its iterations ({traced} ranks) {e}") from None
        # exact, not only after rounding: small counts round right under many rules that part at larger sizes
        if all(abs(rule(p) - c) <= 1e-6 * c for p, c in zip(sizes, counts)):
            loops.append(Loop(body, counts, rule, True, a))
        elif (grid := _exact(grid_rule(dims, list(counts), f"{where}: its iterations ({traced} ranks)"), dims, counts)):
            loops.append(Loop(body, counts, grid, True, a))
        elif (worst := max(rule.error, *(abs(rule(p) - c) / c for p, c in zip(sizes, counts)))) <= LOOP_TOLERANCE:
            loops.append(Loop(body, counts, Rule(rule.terms, rule.c0, rule.c1, rule.i, rule.j, worst), False, a))
        else:
            raise ModelError(f"{where} runs {traced} ranks: no rule in p or in the grid's extents gives that exactly, "
                             f"and the best normal form, {rule.describe()}, is {worst:.0%} off (at most "
                             f"{LOOP_TOLERANCE:.0%}): the traces cannot tell how many times it runs at another size")
    return loops


def _exact(rule: GridRule | None, dims: list[list[int]], counts: tuple[int, ...]) -> GridRule | None:
    """`rule`'s forms that give the loop counts exactly, not only after
    rounding, as for a rule in p: 1, 2, 3 iterations on 3×3, 4×4, 5×5 are
    n0 − 2, and 0.12·n0·n1 rounds to them too, but gives 8 on 8×8 where
    n0 − 2 gives 6, so that the extrapolation was refused as undecided (and
    a count that only a rounded form gave was called exact)."""
    if rule is None:
        return None
    forms = tuple(f for f in rule.forms if all(abs(f.at(d) - c) <= 1e-6 * c for d, c in zip(dims, counts)))
    return GridRule(forms, rule.what) if forms else None


def _grid(dims: list[int]) -> str:
    return "×".join(map(str, dims))


def _incomplete(dims: list[int], periodic: list[bool]) -> str | None:
    """Why a grid's classes (edges and interior) are not all there, or None."""
    if any(n < 3 and not (n == 2 and p) for n, p in zip(dims, periodic)):
        return (f"its grid {_grid(dims)} (periodic {periodic}) has a dimension of 1 rank or a non-periodic one of 2, so "
                "its classes (edges and interior) are not all there to match (along a periodic dimension 2 ranks are "
                "enough: every position is alike)")
    return None


def _first_difference(ops: np.ndarray, ops_t: np.ndarray) -> int | None:
    """The first call at which two call sequences differ, or None."""
    if len(ops) == len(ops_t) and np.array_equal(ops, ops_t):
        return None
    n = min(len(ops), len(ops_t))
    return next((k for k in range(n) if ops[k] != ops_t[k]), n)


def _partial(trace: tuple, template: tuple) -> str | None:
    """Why a smaller trace cannot be matched call by call with the template
    because of its few ranks along a dimension, or None: a dimension of 1
    rank or a non-periodic one of 2 (its classes are not all there), or a
    periodic one of 2 where the template has more and some rank's calls
    differ from its class's in the template (a code may call less where both
    neighbours are one rank: LAMMPS's atom exchanges do). Calls that differ
    for any other reason are refused by `build` at the rank and call."""
    p, _, dims, periodic, ranks = trace
    if (why := _incomplete(dims, periodic)) is not None:
        return why
    pairs = [d for d, (a, b) in enumerate(zip(dims, template[2])) if a == 2 < b]
    if not pairs:
        return None
    for t, tr in enumerate(template[4]):
        rec = ranks[_same_class(t, template[2], dims)].records
        if (k := _first_difference(rec["op"][_calls(rec)], tr.records["op"][_calls(tr.records)])) is not None:
            return (f"along dimension{'s' if len(pairs) > 1 else ''} {', '.join(map(str, pairs))} it has 2 ranks, and "
                    f"its calls differ from the {template[0]}-rank trace's (rank {t}'s class, at call {k}): a code may "
                    "call less where both neighbours are one rank, as LAMMPS's atom exchanges do")
    return None


def _left_out(trace: tuple, why: str) -> str:
    return f"the {trace[0]}-rank trace ({_grid(trace[2])}) is left out: {why}"


def _from_largest(traces: list, partial: dict[int, str]) -> Model:
    """Every smaller trace has too few ranks along a dimension to be matched
    with the largest one (`_partial`): the model is the largest trace alone,
    extrapolated as weak scaling, if the computation per rank (the median
    over a trace's ranks, ∝ p^e) is nearer constant than ∝ 1/p: |e| below
    ALONE_EXPONENT; else refused, saying why. The growth says what each
    doubling would add if e is a real trend, not the machine's noise."""
    sizes = [t[0] for t in traces]
    work = [float(np.median([_computation(r.records) for r in t[4]])) for t in traces]
    e = math.log(work[-1] / work[0]) / math.log(sizes[-1] / sizes[0]) if min(work) > 0 else math.inf
    why = "; ".join(f"the {traces[n][0]}-rank trace ({_grid(traces[n][2])}): {w}" for n, w in partial.items())
    shown = ", ".join(f"{c:.4g} s at {p}" for c, p in zip(work, sizes))
    if not abs(e) < ALONE_EXPONENT:
        raise ModelError(f"no trace but the {sizes[-1]}-rank one can be matched with it call by call ({why}); and the "
                         f"computation per rank (median over ranks: {shown}) grows ∝ p^{e:.2f}, nearer strong scaling "
                         "(∝ 1/p) than weak, so the largest trace alone cannot be extrapolated: trace at sizes with at "
                         "least 3 ranks along every dimension (2 along a periodic one, if the calls stay the same)")
    trend = (f"; taken as constant: if that growth is real, each doubling of the ranks adds {2 ** e - 1:+.0%} to it"
             if abs(e) >= WEAK_EXPONENT else "")
    template = traces[-1]
    ranks = [RankModel(t, [t], Rule(0, c), [c]) for t, c in enumerate(_computation(r.records) for r in template[4])]
    constant = sum(int(np.isin(r.records["op"], list(MESSAGES)).sum()) for r in template[4])
    return Model([t[1] for t in traces], sizes, [t[2] for t in traces], template[3], ranks, constant, "weak",
                 f"computation per rank ∝ p^{e:.2f}, the median over each trace's ranks ({shown}){trend}",
                 left_out=[_left_out(traces[n], w) for n, w in partial.items()], alone=True)


def _call_work(records: np.ndarray) -> np.ndarray:
    """`_computation` shared among the calls (`_calls`): each call's is the
    time before it since the last record, and that of the records skipped
    (failed polls) since the call before; what follows the last call is its."""
    idx = _calls(records)
    if not len(idx) or len(records) < 2:
        return np.zeros(len(idx))
    t0, t1 = records["t0"], records["t1"]
    work = np.concatenate([[0.0], np.maximum(t0[1:] - t1[:-1], 0.0)])
    polls = records["op"] == CODES["poll"]
    work[polls] += (t1 - t0)[polls]
    owner = np.minimum(np.searchsorted(idx, np.arange(len(records))), len(idx) - 1)
    return np.bincount(owner, weights=work, minlength=len(idx))


def _played(mapping: np.ndarray | None, k: int) -> int:
    """The call of another trace that plays template call k (the same
    index where the calls are the same: mapping None)."""
    return k if mapping is None else int(mapping[k])


class _Alignments:
    """Each rank's calls in each trace aligned with those of its class's rank
    in the template (loops.align), computed once: a trace's loops may run
    more or fewer times than the template's."""

    def __init__(self, traces: list) -> None:
        self.traces = traces
        self.done: dict[tuple[int, int], tuple | None] = {}

    def of(self, n: int, r: int) -> tuple | None:
        """(the template's calls → rank r's in trace n, or None where they are
        the same; the loops whose counts differ), or None if they differ otherwise."""
        if (n, r) not in self.done:
            _, _, dims, _, ranks = self.traces[n]
            template = self.traces[-1]
            t = _same_class(r, dims, template[2])
            rec, rec_t = ranks[r].records, template[4][t].records
            got = align(rec["op"][_calls(rec)], rec_t["op"][_calls(rec_t)])
            # the same calls: no mapping kept (8 bytes a call, for every rank of every trace)
            self.done[(n, r)] = (None, []) if got is not None and not got[1] else got
        return self.done[(n, r)]

    def computation(self, n: int, r: int) -> float:
        """Rank r's computation in trace n as it would be with the template's
        loop counts: its iterations' computation where it ran them, its last
        iteration's where the template runs more."""
        rec = self.traces[n][4][r].records
        got = self.of(n, r)
        if got is None or not got[1]:
            return _computation(rec)
        return float(_call_work(rec)[got[0]].sum())


class _Members:
    """The call records of every rank of a class, per trace, read when a
    message size is data-dependent (only then are all the members needed).
    Along a periodic dimension every position is alike, so the ranks that
    differ from a class only there are pooled with it: more ranks, a steadier
    median (the calls must still be the same)."""

    def __init__(self, traces: list) -> None:
        self.traces = traces
        self.dims: list[list[int]] = [t[2] for t in traces]
        self.periodic: list[bool] = traces[-1][3]
        self.calls: dict[tuple[int, tuple[int, ...]], list[np.ndarray]] = {}
        self.spread = 0.0  # the largest max/min − 1 of one call's bytes over a class's ranks in one trace

    def pooled(self, key: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(1 if p else c for c, p in zip(key, self.periodic))

    def bytes_at(self, n: int, key: tuple[int, ...], k: int, ops: np.ndarray) -> np.ndarray:
        key = self.pooled(key)
        if (n, key) not in self.calls:
            _, _, dims, _, ranks = self.traces[n]
            found = []
            for r, tr in enumerate(ranks):
                if self.pooled(_class_key(r, dims)) == key:
                    rec = tr.records[_calls(tr.records)]
                    if len(rec) == len(ops) and np.array_equal(rec["op"], ops):
                        found.append(rec)
            self.calls[(n, key)] = found
        values = np.array([rec["bytes"][k] for rec in self.calls[(n, key)]], dtype=float)
        if len(values) and values.min() > 0:
            self.spread = max(self.spread, float(values.max() / values.min() - 1))
        return values

    def same_in_class(self, n: int, rank: int, k: int, ops: np.ndarray) -> bool | None:
        """Whether the ranks of `rank`'s class in trace n send call k's bytes
        alike: its class as it is (edges and interior) if it has two ranks or
        more, else with the ranks that differ from it only along periodic
        dimensions; None if that is still one rank (nothing to tell by)."""
        _, _, dims, _, ranks = self.traces[n]
        key = _class_key(rank, dims)
        for group in (lambda r: _class_key(r, dims) == key, lambda r: self.pooled(_class_key(r, dims)) == self.pooled(key)):
            seen = []
            for r, tr in enumerate(ranks):
                if group(r):
                    rec = tr.records[_calls(tr.records)]
                    if len(rec) == len(ops) and np.array_equal(rec["op"], ops):
                        seen.append(int(rec["bytes"][k]))
            if len(seen) > 1:
                return len(set(seen)) == 1
        return None


def _data_dependent(t: int, k: int, name: str, sizes: list[int], values: tuple, per_trace: list[np.ndarray],
                    same: bool, dims: list[list[int]]) -> Rule:
    """A message size that follows no exact rule in p or in the grid's
    extents (it depends on the data, as molecular dynamics' do): the median
    over the class's ranks in each trace (`per_trace`), fitted within
    DATA_TOLERANCE, else refused. Refused too: a size that is the same on
    every rank of its class in each trace (`same`: not the data's) and
    changes by more than DATA_TOLERANCE between traces; it follows something
    no rule here has, and its fit in p could be far off at the target. A
    nearly constant one is kept, fitted."""
    medians = [float(np.median(v)) for v in per_trace]
    if same and min(medians) > 0 and max(medians) / min(medians) - 1 > DATA_TOLERANCE:
        raise ModelError(f"rank {t}, call {k} ({name}): its bytes ({', '.join(f'{v} at {p}' for v, p in zip(values, sizes))}"
                         " ranks) are the same on every rank of its class in each trace, so they do not depend on the "
                         "data, yet no rule in the number of ranks gives them: they follow something else, such as the "
                         f"grid's extents along each dimension ({', '.join(_grid(d) for d in dims)}), by no rule in them. Trace at "
                         "sizes where every dimension grows, or replay the largest trace alone with --strong (its "
                         "surface and volume rule)")
    try:
        rule = fit(sizes, medians, DATA_SLACK)
    except ValueError as e:
        raise ModelError(f"rank {t}, call {k} ({name}): its bytes {list(values)} {e}") from None
    worst = max(rule.error, *(abs(rule(p) - m) / max(m, 1.0) for p, m in zip(sizes, medians)))
    if worst > DATA_TOLERANCE:
        raise ModelError(f"rank {t}, call {k} ({name}): its bytes ({', '.join(f'{v} at {p}' for v, p in zip(values, sizes))}"
                         f" ranks; class medians {', '.join(f'{m:.0f}' for m in medians)}) follow no exact rule, and no "
                         f"rule gives their medians within {DATA_TOLERANCE:.0%} (best {rule.describe()}, "
                         f"{worst:.0%} off)")
    return Rule(rule.terms, rule.c0, rule.c1, rule.i, rule.j, worst)


def _scaling(sizes: list[int], models: list[RankModel], sent: list[float]) -> tuple[str, str]:
    """Weak (computation per rank constant), strong (∝ 1/p) or neither, with
    how the bytes a rank sends grow (`sent`: per trace, the template ranks'
    classes' bytes; constant in weak scaling, shrinking with the surface in
    strong)."""
    total = [sum(m.compute(p) for m in models) for p in (sizes[0], sizes[-1])]
    span = math.log(sizes[-1] / sizes[0])
    e = math.log(total[1] / total[0]) / span if min(total) > 0 else 0.0
    b = math.log(sent[-1] / sent[0]) / span if min(sent[0], sent[-1]) > 0 else 0.0
    growth = f"computation per rank ∝ p^{e:.2f}, bytes sent per rank ∝ p^{b:.2f}"
    if abs(e) < WEAK_EXPONENT and abs(b) < WEAK_EXPONENT:
        return "weak", growth
    if abs(e + 1) < WEAK_EXPONENT and b < 0.1:
        return "strong", growth
    return "neither weak nor strong", growth


def _undecided(rule: GridRule, dims: list[int], traced: list[list[int]]) -> ModelError:
    """The refusal of a grid rule whose forms disagree at `dims`."""
    still = [d for d in range(len(dims)) if len({g[d] for g in traced}) == 1]
    why = (f". Dimension{'s' if len(still) > 1 else ''} {', '.join(map(str, still))} {'have' if len(still) > 1 else 'has'} "
           f"the same extent in every trace ({', '.join(_grid(d) for d in traced)}), so how they grow along it is "
           "unknown: add a trace where it grows") if still else ""
    return ModelError(f"{rule.what} follow the grid's extents, and {len(rule.forms)} rules in them give every traced size, "
                      f"but not the same at {_grid(dims)}: "
                      + ", ".join(f"{f.describe()} gives {round(f.at(dims))}" for f in rule.forms) + why)


def _expanded(records: np.ndarray, loops: list[tuple[int, int, int]], counts: list[int]) -> int:
    """How many records `_iterations` gives, without making them."""
    idx = _calls(records)
    at = lambda c: int(idx[c]) if c < len(idx) else len(records)  # noqa: E731  (the record of call c)
    n = len(records)
    for (first, length, traced), want in zip(loops, counts):
        last = at(first + traced * length) - at(first + (traced - 1) * length)
        n += at(first + min(want, traced) * length) - at(first + traced * length) + max(want - traced, 0) * last
    return n


def _memory_limit() -> tuple[int, str] | None:
    """The engine's default limit (memory.rs): 80% of the available memory,
    None where that is not known."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 * 8 // 10, "80% of available memory"
    except (OSError, ValueError, IndexError):
        pass
    return None


def _check_template_memory(model: Model, template: list, ranks: int, counts: list[int]) -> None:
    """Refuses loop counts at the target that would make the template too
    large to write, before anything is allocated: 81, 256 and 625 iterations
    (p²) at 9, 16 and 25 ranks are 10⁸ at 10,000, and writing them took all
    the memory and ended in a MemoryError's traceback (the engine's own check
    comes only after). A record costs about TEMPLATE_RECORD_BYTES at the
    peak of write_template (measured: 272)."""
    if not model.loops or (limit := _memory_limit()) is None:
        return
    n, r = max((_expanded(tr.records, m.loops, counts), m.rank) for m, tr in zip(model.ranks, template))
    if n * TEMPLATE_RECORD_BYTES > limit[0]:
        gib = lambda b: f"{b / 2**30:.2f} GiB"  # noqa: E731
        shown = ", ".join(f"{c:,}" for c in counts[:3]) + (", …" if len(counts) > 3 else "")
        raise ModelError(f"{ranks} ranks: the loops' rules give {shown} iterations there, so rank {r} of the fitted "
                         f"template would hold {n:,} records, needing about {gib(n * TEMPLATE_RECORD_BYTES)} to write, more than "
                         f"{limit[1]} ({gib(limit[0])}): extrapolate to fewer ranks")


def _iterations(records: np.ndarray, loops: list[tuple[int, int, int]], counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The template's records in order with each loop run `counts` times:
    its first iterations as traced, then copies of its last (records between
    calls, failed polls, go with the call before them); and per record of
    that order, the iteration it is in (-1 outside loops)."""
    idx = _calls(records)
    at = lambda c: int(idx[c]) if c < len(idx) else len(records)  # noqa: E731  (the record of call c)
    pieces, iterations, done = [], [], 0
    for (first, length, traced), want in zip(loops, counts):
        pieces.append(np.arange(done, at(first)))
        runs = [np.arange(at(first + q * length), at(first + (q + 1) * length)) for q in range(traced)]
        runs = runs[:want] + [runs[-1]] * max(want - traced, 0)
        pieces.extend(runs)
        iterations += [np.full(len(pieces[-len(runs) - 1]), -1)] + [np.full(len(r), q) for q, r in enumerate(runs)]
        done = at(first + traced * length)
    pieces.append(np.arange(done, len(records)))
    iterations.append(np.full(len(pieces[-1]), -1))
    return np.concatenate(pieces), np.concatenate(iterations)


#: Records that post a request a wait completes once (persistent requests keep their id from one start to the next).
_POSTS = frozenset([CODES["isend"], CODES["irecv"], CODES["imrecv"], *range(64, 64 + 32)])
#: Records that name a request posted before: its completion, a failed poll of it, its cancel or free.
_USES = frozenset([CODES[n] for n in ("wait", "test", "poll", "request_free", "cancel")])


def _requests(records: np.ndarray, loops: list[tuple[int, int, int]], order: np.ndarray,
              iteration: np.ndarray) -> np.ndarray:
    """The request ids of the records in `order` (`_iterations`), each post
    under an id of its own. A loop may complete in one iteration what the
    one before posted (a receive posted ahead); repeated or cut short, its
    iterations must complete their own neighbour's requests, not the traced
    ones': a request is known by its loop, its place in the iteration and
    how many iterations before its completion it was posted."""
    ops, req = records["op"], records["req"]
    idx = _calls(records)
    call_of = np.searchsorted(idx, np.arange(len(records)), side="right") - 1  # the call a record goes with
    place: dict[int, tuple[int, int, int]] = {}  # a post's record: (loop, iteration, place in it), loop -1 outside
    for k, (first, length, traced) in enumerate(loops):
        for i in range(int(idx[first]) if first < len(idx) else len(records), len(records)):
            c = int(call_of[i]) - first
            if c >= traced * length:
                break
            if c >= 0 and ops[i] in _POSTS:
                place[i] = (k, c // length, c % length)
    posted: dict[int, int] = {}  # an open request id: the record that posted it
    post_of = np.full(len(records), -1)
    loop_of = np.full(len(records), -1)
    for i in range(len(records)):
        if ops[i] in _POSTS and req[i]:
            posted[int(req[i])] = i
        elif ops[i] in _USES and req[i] and int(req[i]) in posted:
            post_of[i] = posted[int(req[i])]
        if i in place:
            loop_of[i] = place[i][0]
    fresh = int(req.max(initial=0)) + 1
    given: dict[tuple, int] = {}  # (post's loop, place, iteration in `order`), or the record outside loops: its new id
    out = req[order].copy()
    current = [-1] * len(loops)  # the iteration of each loop that `order` is in, or has finished (its last)
    for n, i in enumerate(order.tolist()):
        if iteration[n] >= 0:
            loop = next(k for k, (first, length, traced) in enumerate(loops)
                        if first <= call_of[i] < first + traced * length)
            current[loop] = int(iteration[n])
        if i in place:
            k, q, c = place[i]
            given[(k, c, current[k])] = fresh
            out[n], fresh = fresh, fresh + 1
        elif ops[i] in _POSTS and req[i]:
            given[("at", i)] = fresh
            out[n], fresh = fresh, fresh + 1
        elif post_of[i] >= 0:
            j = int(post_of[i])
            if j not in place:
                key: tuple = ("at", j)
            else:
                k, q, c = place[j]
                first, length, traced = loops[k]
                in_loop = first <= call_of[i] < first + traced * length
                back = ((call_of[i] - first) // length if in_loop else traced - 1) - q  # iterations between them
                key = (k, c, current[k] - back if in_loop or current[k] >= 0 else -1)
            if key not in given:
                raise ModelError(f"record {i} ({OPS.get(int(ops[i]), ops[i])}) of a rank of the largest trace names "
                                 f"request {int(req[i])}, posted in an iteration of a loop that the fitted counts "
                                 "leave out")
            out[n] = given[key]
    return out


def write_template(model: Model, ranks: int, out: Path, dims: list[int] | None = None) -> Path:
    """The template trace with its quantities at `ranks` ranks, written to
    `out`. Rules in the grid's extents take the target grid `dims` (default:
    the one the extrapolation makes, MPI_Dims_create's where the traced grid
    is its)."""
    from idlewave._engine import SimulationError, grid_target

    template = read(model.dirs[-1])
    if dims is not None and len(dims) != len(model.dims[-1]):
        raise ModelError(f"the traced grid is {len(model.dims[-1])}-dimensional ({_grid(model.dims[-1])}), the target "
                         f"{_grid(dims)} is not")
    if dims is None and (model.gridded or any(isinstance(loop.rule, GridRule) for loop in model.loops)):
        try:
            dims = grid_target(model.dims[-1], model.periodic, ranks)
        except SimulationError as e:
            raise ModelError(f"{ranks} ranks: {e}") from None
    counts = model.loop_counts(ranks, dims)
    _check_template_memory(model, template, ranks, counts)
    tmp = out.with_name(out.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        for m, tr in zip(model.ranks, template):
            rec = tr.records.copy()
            for k, rule in m.bytes.items():
                if isinstance(rule, GridRule):
                    assert dims is not None
                    if (v := rule.at(dims)) is None:
                        raise _undecided(rule, dims, model.dims)
                    rec["bytes"][k] = max(v, 0)
                else:
                    rec["bytes"][k] = max(round(rule(ranks)), 0)
            was = m.compute(model.sizes[-1])
            factor = m.compute(ranks) / was if was > 0 else 1.0
            if factor < 0:
                raise ModelError(f"rank {m.rank}: its computation rule {m.compute.describe()} is negative at {ranks} ranks")
            payloads = tr.payloads
            if len(rec) > 1:
                poll = rec["op"] == CODES["poll"]
                gaps = np.concatenate([[0.0], rec["t0"][1:] - rec["t1"][:-1]])  # before each record
                gaps = np.where(gaps > 0, gaps * factor, gaps)
                spans = np.where(poll, (rec["t1"] - rec["t0"]) * factor, rec["t1"] - rec["t0"])
                order, iteration = _iterations(rec, m.loops, counts)
                as_traced = all(want == traced for (_, _, traced), want in zip(m.loops, counts))
                reqs = rec["req"][order] if as_traced else _requests(rec, m.loops, order, iteration)
                rec, gaps, spans = rec[order], gaps[order], spans[order]
                rec["req"] = reqs
                payloads = {n: tr.payloads[o] for n, o in enumerate(order.tolist()) if o in tr.payloads}
                gaps[0] = 0.0
                start = rec["t0"][0] + np.cumsum(np.concatenate([[0.0], spans[:-1]]) + gaps)
                rec["t0"], rec["t1"] = start, start + spans
            write_rank(tmp / f"rank-{tr.rank}.iwt", tr.rank, tr.size, rec, payloads, tr.functions, tr.library, tr.t_init,
                       tr.clock, tr.info)
    except BaseException:  # a refusal (or Ctrl-C) leaves no partial template behind
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out
