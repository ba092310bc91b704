"""Calibration: postal α, β per protocol from ping-pong data (the protocol
limits found as breakpoints, or given), how far the fit can be trusted
(bootstrap confidence intervals, the error per size range, plausibility
bounds), the node bandwidth for the max-rate model from multi-pair data,
and a platform TOML the simulator reads. docs/fit.md says what is checked
and why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import nnls

from idlewave.models.postal import LinkModel, Protocol
from idlewave.units import fmt_time

PROTOCOLS = ("short", "eager", "rendezvous")

# Plausibility bounds (docs/fit.md gives the reasons). The lower ones are
# imposed on the fit; data that contradict them show as fit error.
ALPHA_MIN_S = 10e-9  # no MPI message costs less than 10 ns (between two cores of one node: ~100 ns)
ALPHA_MAX_S = 1e-3  # nor 1 ms per message on any protocol (TCP over Ethernet: tens of µs)
BETA_MIN_S_PER_BYTE = 1e-12  # 1 TB/s: faster than any link or memory copy an MPI makes
BETA_MAX_S_PER_BYTE = 1e-6  # 1 MB/s: slower than 10 Mbit/s Ethernet
# A node's aggregate off-node bandwidth (--multipair): at least one slowest
# link, at most 100 pairs at the fastest transfer (100 TB/s; a node of 2025
# has a few 50 GB/s ports)
NODE_BANDWIDTH_MIN = 1 / BETA_MAX_S_PER_BYTE
NODE_BANDWIDTH_MAX = 100 / BETA_MIN_S_PER_BYTE
RENDEZVOUS_ALPHA_FACTOR = 20.0  # a rendezvous adds a handshake (a round trip and a registration) ...
RENDEZVOUS_ALPHA_SLACK_S = 50e-6  # ... α_rendezvous ≤ 20·α_eager + 50 µs
# Measured one-way times outside these are not measurements of an MPI message.
TIME_MIN_S = ALPHA_MIN_S
TIME_MAX_S = 3600.0

MAX_ERROR = 0.10  # RMS relative error allowed in each protocol and each size range
RESAMPLES = 200
LEVEL = 0.95

# Size ranges the error is reported in (bytes, inclusive): where short or
# inline protocols end, the common eager limits (4–64 KiB), the
# bandwidth-bound sizes and the sizes past the caches. Fixed, so that a
# misplaced protocol limit cannot hide an error.
RANGES: tuple[tuple[str, float, float], ...] = (
    ("≤ 256 B", 0, 256),
    ("257 B–8 KiB", 257, 8192),
    ("> 8 KiB–256 KiB", 8193, 262144),
    ("> 256 KiB", 262145, math.inf),
)


@dataclass
class ProtocolFit:
    link: LinkModel
    rms_relative_error: float
    breakpoints_found: bool


# How the repetitions of one size are combined before fitting.
PER_SIZE = ("median", "mean", "min", "all")


def per_size(sizes, times, statistic: str = "median") -> tuple[np.ndarray, np.ndarray]:
    """One time per size: the repetitions' median (default: robust to the
    spikes a shared machine adds to a few of them), mean or minimum; or
    every sample as it is (`all`)."""
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if statistic not in PER_SIZE:
        raise ValueError(f"the per-size statistic must be one of {', '.join(PER_SIZE)}, got {statistic!r}")
    if statistic == "all" or n.shape != t.shape:
        return n, t
    uniq, group = np.unique(n, return_inverse=True)
    groups = [t[group == k] for k in range(uniq.size)]
    if statistic == "median":
        return uniq, np.array([np.median(g) for g in groups])
    return uniq, np.array([g.mean() if statistic == "mean" else g.min() for g in groups])


def bytes_text(n: float) -> str:
    """A size as people write it: 256 B, 8 KiB, 4 MiB (exact multiples only)."""
    n = int(n)
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def seconds_text(t: float) -> str:
    """A time with a unit it reads well in: 850 ns, 3.2 µs, 10 ms, 1.5 s
    (idlewave.units, four significant digits)."""
    return fmt_time(t, 4)


def degenerate(sizes, times) -> str | None:
    """Why these columns cannot be fitted at all (even with --force), or None:
    a time that is not a positive finite number within 10 ns–1 h, or a size
    that is not a whole number of bytes ≥ 0. Rows are counted from 1."""
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    checks = (
        (~np.isfinite(t), "time_s must be a finite number"),
        (t <= 0, "time_s must be positive"),
        (t < TIME_MIN_S, f"time_s below {TIME_MIN_S * 1e9:g} ns is faster than any MPI message (between two cores "
                         "of one node one takes about 100 ns): are the times one-way seconds?"),
        (t > TIME_MAX_S, f"time_s above {TIME_MAX_S:g} s is not the time of one message: are the times one-way seconds?"),
        (~np.isfinite(n) | (n < 0) | (n != np.round(n)), "size_bytes must be a whole number of bytes ≥ 0"),
    )
    for bad, rule in checks:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return f"{rule}, got size {n[i]:g} B, time {float(t[i])!r} s in data row {i + 1} ({int(bad.sum())} such row(s))"
    return None


def _segment(sizes: np.ndarray, times: np.ndarray) -> tuple[Protocol, float]:
    """Least squares of t = α + β·n weighted by 1/t (relative errors), with
    α ≥ ALPHA_MIN_S and β ≥ BETA_MIN_S_PER_BYTE (the plausibility floors:
    never below what any MPI costs); returns the SSE."""
    w = 1.0 / times
    design = np.column_stack([np.ones_like(sizes), sizes]) * w[:, None]
    (da, db), _ = nnls(design, (times - ALPHA_MIN_S - BETA_MIN_S_PER_BYTE * sizes) * w)
    alpha, beta = ALPHA_MIN_S + float(da), BETA_MIN_S_PER_BYTE + float(db)
    resid = (alpha + beta * sizes - times) * w
    return Protocol(alpha, beta), float(resid @ resid)


def _segments(x: np.ndarray, times: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """_segment's fit of every run of consecutive groups at once, for B sets
    of times: x (N,) sorted sizes, times (B, N), starts (k+1,) the first
    point of each group of equal sizes and N. Returns α, β and the SSE as
    (B, k+1, k+1) arrays indexed [b, first group, one past the last group]
    (invalid runs: an SSE of inf). The 2×2 normal equations, and where
    their solution crosses a floor the better of the two boundary fits:
    the exact bounded least squares of two parameters."""
    w = 1.0 / times
    y = (times - ALPHA_MIN_S - BETA_MIN_S_PER_BYTE * x) * w
    b = w * x
    zero = np.zeros((times.shape[0], 1))
    seg = []
    for q in (w * w, w * b, b * b, w * y, b * y, y * y):  # sums of positive terms, told apart at group boundaries
        p = np.concatenate([zero, np.cumsum(q, axis=1)], axis=1)[:, starts]
        seg.append(p[:, None, :] - p[:, :, None])
    saa, sab, sbb, say, sby, syy = seg
    with np.errstate(divide="ignore", invalid="ignore"):
        det = saa * sbb - sab * sab
        da = (sbb * say - sab * sby) / det
        db = (saa * sby - sab * say) / det
        inside = (det > 1e-12 * saa * sbb) & (da >= 0) & (db >= 0)
        sse_in = syy - da * say - db * sby
        say0, sby0 = np.maximum(say, 0.0), np.maximum(sby, 0.0)
        a_only, b_only = say0 / saa, sby0 / sbb  # β at its floor; α at its floor
        sse_a, sse_b = syy - a_only * say0, syy - b_only * sby0
    use_b = sse_b <= sse_a
    da = np.where(inside, da, np.where(use_b, 0.0, a_only))
    db = np.where(inside, db, np.where(use_b, b_only, 0.0))
    sse = np.where(inside, sse_in, np.minimum(sse_a, sse_b))
    g = np.arange(starts.size)
    sse = np.where((g[None, :, None] < g[None, None, :]) & np.isfinite(sse), np.maximum(sse, 0.0), np.inf)
    return ALPHA_MIN_S + da, BETA_MIN_S_PER_BYTE + db, sse


def _splits(k: int, first: int | None, second: int | None, min_points: int) -> np.ndarray:
    """(k+1, k+1): which group indices (i, j) may split k groups into three
    pieces [0, i), [i, j), [j, k); a given limit fixes its index."""
    i = np.arange(k + 1)[:, None]
    j = np.arange(k + 1)[None, :]
    if first is not None and second is not None:
        return (i == first) & (j == second)
    ok = (i >= min_points) & (j - i >= min_points) & (k - j >= min_points)
    if first is not None:
        ok &= i == first
    if second is not None:
        ok &= j == second
    return ok


@dataclass
class _Search:
    """The best three-piece split of each of B sets of times."""

    first: np.ndarray  # (B,) group index where the eager piece starts
    second: np.ndarray  # (B,) where the rendezvous piece starts
    params: np.ndarray  # (B, 3, 2): α, β per protocol
    sse: np.ndarray  # (B,)


def _search(x: np.ndarray, times: np.ndarray, first: int | None, second: int | None, min_points: int) -> _Search:
    """Every allowed pair of breakpoints, for B sets of times at once (x
    sorted; the sets in chunks of about a million segment fits)."""
    uniq, starts = np.unique(x, return_index=True)
    k = uniq.size
    starts = np.append(starts, x.size)
    if first is not None and second is not None:
        # both limits fixed: the three pieces only (as groups of their own)
        alpha, beta, sse = _segments(x, times, starts[[0, first, second, k]])
        params = np.stack([np.stack([alpha[:, a, a + 1], beta[:, a, a + 1]], axis=1) for a in range(3)], axis=1)
        rows = times.shape[0]
        return _Search(np.full(rows, first), np.full(rows, second), params, sse[:, 0, 1] + sse[:, 1, 2] + sse[:, 2, 3])
    allowed = _splits(k, first, second, min_points)[None]
    chunk = max(1, (1 << 20) // (k + 1) ** 2)
    found = []
    for lo in range(0, times.shape[0], chunk):
        alpha, beta, sse = _segments(x, times[lo:lo + chunk], starts)
        total = np.where(allowed, sse[:, 0, :, None] + sse + sse[:, :, k][:, None, :], np.inf)
        best = np.argmin(total.reshape(total.shape[0], -1), axis=1)
        i, j = np.divmod(best, k + 1)
        rows = np.arange(total.shape[0])
        pieces = [(np.zeros_like(i), i), (i, j), (j, np.full_like(j, k))]
        params = np.stack([np.stack([alpha[rows, a, b], beta[rows, a, b]], axis=1) for a, b in pieces], axis=1)
        found.append(_Search(i, j, params, total[rows, i, j]))
    return _Search(*(np.concatenate([getattr(f, a) for f in found]) for a in ("first", "second", "params", "sse")))


def _too_few(uniq: np.ndarray, short_max: int | None, eager_max: int | None, need: int) -> str | None:
    """Why the limits given (the others to be found) leave a protocol fewer
    than `need` of the distinct sizes `uniq`, naming the option, or None."""
    k = uniq.size
    data = f"the data's {k} distinct sizes run {bytes_text(uniq[0])}–{bytes_text(uniq[-1])}"
    first = None if short_max is None else int(np.searchsorted(uniq, short_max, side="right"))
    second = None if eager_max is None else int(np.searchsorted(uniq, eager_max, side="right"))
    each = f"each protocol needs at least {need} sizes to fit ({data})"
    if short_max is not None and first is not None and first < need:
        return f"--short-max {short_max}: the short protocol (≤ {bytes_text(short_max)}) would hold {first} size(s); {each}"
    if eager_max is not None and second is not None and k - second < need:
        return (f"--eager-max {eager_max}: the rendezvous protocol (> {bytes_text(eager_max)}) would hold {k - second} "
                f"size(s); {each}")
    if first is not None and second is not None and second - first < need:
        return (f"--short-max {short_max}, --eager-max {eager_max}: the eager protocol between them would hold "
                f"{second - first} size(s); {each}")
    if first is not None and second is None and k - first < 2 * need:
        return (f"--short-max {short_max}: leaves {k - first} size(s) above it for the eager and rendezvous protocols; "
                f"{each}")
    if second is not None and first is None and second < 2 * need:
        return f"--eager-max {eager_max}: leaves {second} size(s) up to it for the short and eager protocols; {each}"
    return None


def fit_protocols(sizes, times, short_max: int | None = None, eager_max: int | None = None, min_points: int = 3) -> ProtocolFit:
    """Three affine pieces (short, eager, rendezvous). Without limits, every
    pair of breakpoints between distinct sizes is tried (each piece with at
    least `min_points` sizes) and the least relative error wins."""
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if n.shape != t.shape:
        raise ValueError("need matching size and time columns")
    if n.size < 2:
        raise ValueError(f"{n.size} row(s) of size and time: fitting needs at least two")
    if (t <= 0).any() or (n < 0).any():
        raise ValueError("times must be positive and sizes non-negative")
    for name, limit in (("short-max", short_max), ("eager-max", eager_max)):
        if limit is not None and limit < 0:
            raise ValueError(f"--{name} must be at least 0, got {limit}")
    if short_max is not None and eager_max is not None and short_max >= eager_max:
        raise ValueError(f"--short-max ({short_max}) must be below --eager-max ({eager_max})")
    order = np.argsort(n, kind="stable")
    n, t = n[order], t[order]
    uniq = np.unique(n)
    found = short_max is None or eager_max is None
    if found and len(uniq) < 3 * min_points:
        raise ValueError(f"{len(uniq)} distinct size(s): finding the protocol limits needs at least {3 * min_points} "
                         f"({min_points} per protocol); give --short-max and --eager-max to fit fewer")
    if short_max is not None or eager_max is not None:
        # a given limit that leaves a protocol too few sizes: said of the limit, not of the data
        why = _too_few(uniq, short_max, eager_max, min_points if found else 2)
        if why:
            raise ValueError(why)
    if found:
        # search the limits not given (a given one is kept as it is)
        first = None if short_max is None else int(np.searchsorted(uniq, short_max, side="right"))
        second = None if eager_max is None else int(np.searchsorted(uniq, eager_max, side="right"))
        s = _search(n, t[None], first, second, min_points)
        if not np.isfinite(s.sse[0]):
            given = "" if short_max is None and eager_max is None else " with the limit given"
            raise ValueError(f"need at least {min_points} distinct sizes in each protocol to find the limits{given}")
        short_max = int(uniq[s.first[0] - 1]) if short_max is None else short_max
        eager_max = int(uniq[s.second[0] - 1]) if eager_max is None else eager_max
    assert short_max is not None and eager_max is not None  # found above when not given
    parts = [(n <= short_max), (n > short_max) & (n <= eager_max), (n > eager_max)]
    if not found and any(m.sum() < 2 for m in parts):
        raise ValueError("each protocol needs at least two sizes in the data")
    fits = [_segment(n[m], t[m]) for m in parts]  # the chosen pieces refitted one by one
    sse, protos = sum(f[1] for f in fits), [f[0] for f in fits]
    link = LinkModel(protos[0], protos[1], protos[2], int(short_max), int(eager_max))
    return ProtocolFit(link, float(np.sqrt(sse / n.size)), found)


@dataclass
class Piece:
    """The fit's error over some sizes: a protocol's or a size range's."""

    label: str
    lo: int  # smallest and largest size of the data in it
    hi: int
    sizes: int
    rms_relative_error: float


@dataclass
class Limit:
    """A protocol limit: given or found, and where the data put it."""

    name: str  # short_max or eager_max
    value: int
    given: bool
    found: int | None  # the limit the data give (a search over all of them)
    interval: tuple[int, int] | None  # its bootstrap interval
    support: float | None  # the share of resamples that find `found`
    agrees: bool | None  # a given limit: within the data's interval (same split of the sizes)
    disputed: list[int] = field(default_factory=list)  # a given limit: sizes the data put in the other protocol


@dataclass
class Problem:
    """Why a fit is refused, and the sizes that show it."""

    reason: str
    sizes: list[int]


@dataclass
class Assessment:
    """A fit with what it takes to trust it (or not)."""

    fit: ProtocolFit
    statistic: str
    sizes: np.ndarray  # distinct sizes
    measured: np.ndarray  # per size: the statistic fitted (the median of the samples with `all`)
    fitted: np.ndarray
    error: np.ndarray  # per size: (fitted − measured)/measured; with `all`, the RMS over its samples
    reps: tuple[int, int]  # fewest and most repetitions of a size
    pieces: list[Piece]
    ranges: list[Piece]
    ci: dict[str, tuple[float, float]]  # "eager.alpha_s" → (low, high); empty without a bootstrap
    limits: list[Limit]
    problems: list[Problem]
    warnings: list[str]
    resamples: int
    seed: int
    level: float = LEVEL

    def rows(self, sizes: Sequence[int]) -> list[tuple[int, float, float, float]]:
        """(size, measured, fitted, error) of these sizes."""
        at = {int(s): i for i, s in enumerate(self.sizes)}
        return [(int(s), float(self.measured[at[s]]), float(self.fitted[at[s]]), float(self.error[at[s]])) for s in sizes if s in at]

    def summary(self) -> dict:
        """The JSON form (the parameters, their intervals, the errors, the limits)."""
        link = self.fit.link
        out: dict = {"short_max": link.short_max, "eager_max": link.eager_max}
        for p in PROTOCOLS:
            pr = getattr(link, p)
            piece = next(x for x in self.pieces if x.label == p)
            out[p] = {"alpha_s": pr.alpha, "beta_s_per_byte": pr.beta,
                      "alpha_ci_s": list(self.ci[f"{p}.alpha_s"]) if self.ci else None,
                      "beta_ci_s_per_byte": list(self.ci[f"{p}.beta_s_per_byte"]) if self.ci else None,
                      "sizes_bytes": [piece.lo, piece.hi], "rms_relative_error": piece.rms_relative_error}
        out["rms_relative_error"] = self.fit.rms_relative_error
        out["limits"] = {x.name: {"value": x.value, "given": x.given, "found_bytes": x.found,
                                  "ci_bytes": list(x.interval) if x.interval else None, "support": x.support,
                                  **({"agrees": x.agrees, "disputed_sizes": x.disputed} if x.given else {})}
                         for x in self.limits}
        out["error_by_range"] = [{"range": r.label, "sizes_bytes": [r.lo, r.hi], "sizes": r.sizes,
                                  "rms_relative_error": r.rms_relative_error} for r in self.ranges]
        out["bootstrap"] = {"resamples": self.resamples if self.ci else 0, "seed": self.seed, "level": self.level,
                            "repetitions_per_size": list(self.reps)}
        out["problems"] = [{"reason": p.reason, "sizes": [{"size_bytes": s, "measured_s": m, "fitted_s": f, "error": e}
                                                          for s, m, f, e in self.rows(p.sizes)]} for p in self.problems]
        out["warnings"] = self.warnings
        return out


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x * x))) if x.size else 0.0


def _resample(n: np.ndarray, t: np.ndarray, starts: np.ndarray, statistic: str, rng: np.random.Generator,
              resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """`resamples` sets of times, each the repetitions of every size drawn
    with replacement from its own (n sorted; starts: each size's first row
    and the row count), combined by the statistic: sizes (M,), times (B, M)."""
    idx = np.empty((resamples, n.size), dtype=np.intp)
    for a, b in zip(starts[:-1], starts[1:]):
        idx[:, a:b] = a + rng.integers(0, b - a, size=(resamples, b - a))
    drawn = t[idx]
    if statistic == "all":
        return n, drawn
    stat = np.median if statistic == "median" else np.mean if statistic == "mean" else np.min
    return n[starts[:-1]], np.column_stack([stat(drawn[:, a:b], axis=1) for a, b in zip(starts[:-1], starts[1:])])


def assess(sizes, times, *, statistic: str = "median", short_max: int | None = None, eager_max: int | None = None,
           max_error: float = MAX_ERROR, resamples: int = RESAMPLES, seed: int = 0, min_points: int = 3,
           level: float = LEVEL) -> Assessment:
    """fit_protocols on the per-size statistic, and what it takes to trust it:

    * confidence intervals of α, β per protocol and of the limits found: a
      bootstrap that draws the repetitions of every size with replacement
      (`resamples` times, from `seed`), refitting each draw, limits included;
    * the RMS relative error per protocol and per size range (RANGES);
    * a given limit checked against where a search over the data puts it;
    * problems (reasons to refuse the fit): a parameter past a plausibility
      bound, or a protocol or size range whose error exceeds `max_error`.
    """
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    order = np.argsort(n, kind="stable")
    n, t = n[order], t[order]
    x, y = per_size(n, t, statistic)
    f = fit_protocols(x, y, short_max, eager_max, min_points)
    link = f.link
    uniq, starts, counts = np.unique(n, return_index=True, return_counts=True)
    starts = np.append(starts, n.size)
    k = uniq.size

    # the error of every fitted point, and per size
    model = np.array([link.time(v) for v in uniq])
    group = np.searchsorted(uniq, x)
    rel = (model[group] - y) / y
    if statistic == "all":
        measured = np.array([np.median(t[a:b]) for a, b in zip(starts[:-1], starts[1:])])
        error = np.array([_rms(rel[group == g]) for g in range(k)])
    else:
        measured, error = y, rel

    def piece(label: str, lo: float, hi: float) -> Piece | None:
        inside = (uniq[group] >= lo) & (uniq[group] <= hi)
        at = uniq[(uniq >= lo) & (uniq <= hi)]
        if not at.size:
            return None
        return Piece(label, int(at[0]), int(at[-1]), int(at.size), _rms(rel[inside]))

    bounds = {"short": (-math.inf, link.short_max), "eager": (link.short_max + 1, link.eager_max),
              "rendezvous": (link.eager_max + 1, math.inf)}
    pieces = [p for p in (piece(name, *bounds[name]) for name in PROTOCOLS) if p is not None]
    ranges = [p for p in (piece(*r) for r in RANGES) if p is not None]

    # the bootstrap: the fit again on every draw of the repetitions. α and β
    # keep the limits of the fit (their intervals are those of the protocols
    # as split); where the limits fall is searched again on every draw.
    warnings: list[str] = []
    ci: dict[str, tuple[float, float]] = {}
    reps = (int(counts.min()), int(counts.max()))
    rng = np.random.default_rng(seed)
    split = (int(np.searchsorted(uniq, link.short_max, side="right")), int(np.searchsorted(uniq, link.eager_max, side="right")))
    free_boot = None
    if resamples > 0 and reps[1] > 1:
        draws = _resample(n, t, starts, statistic, rng, resamples)
        boot = _search(*draws, *split, min_points)
        tails = [100 * (1 - level) / 2, 100 * (1 + level) / 2]
        for p_i, p in enumerate(PROTOCOLS):
            for q_i, q in enumerate(("alpha_s", "beta_s_per_byte")):
                lo, hi = np.percentile(boot.params[:, p_i, q_i], tails)
                ci[f"{p}.{q}"] = (float(lo), float(hi))
        if k >= 3 * min_points:
            free_boot = _search(*draws, None, None, min_points)
        if reps[0] == 1:
            warnings.append(f"{int((counts == 1).sum())} size(s) with one repetition: the intervals leave out their noise")
    elif resamples > 0:
        warnings.append("one repetition per size: no confidence intervals (the bootstrap draws the repetitions of each size)")

    # the limits: where the data put them (a search over all of them, also
    # when a limit is given), and how sure: the share of the draws that put
    # them there, and their interval over the draws
    limits: list[Limit] = []
    free = _search(x, y[None], None, None, min_points) if k >= 3 * min_points else None
    spans: list[tuple[int, int]] = []
    for idx, name in enumerate(("short_max", "eager_max")):
        if free is None:
            continue
        at = int((free.first if idx == 0 else free.second)[0])
        lo_i = hi_i = at
        support = None
        if free_boot is not None:
            picks = free_boot.first if idx == 0 else free_boot.second
            lo_i, hi_i = (int(v) for v in np.quantile(picks, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf"))
            support = float(np.mean(picks == at))
        spans.append((lo_i, hi_i))
        limits.append(Limit(name, 0, False, int(uniq[at - 1]), (int(uniq[lo_i - 1]), int(uniq[hi_i - 1])) if free_boot is not None else None,
                            support, None))
    for idx, (name, given) in enumerate((("short_max", short_max), ("eager_max", eager_max))):
        value = link.short_max if idx == 0 else link.eager_max
        if free is None:
            limits.append(Limit(name, value, given is not None, None, None, None, None))
            continue
        lim = limits[idx]
        lim.value, lim.given = value, given is not None
        if given is None:
            if lim.support is not None and lim.support < 0.5 and lim.interval:
                warnings.append(f"the data do not pin {name}: {bytes_text(value)} in only {lim.support:.0%} of the "
                                f"resamples ({level:.0%} interval {bytes_text(lim.interval[0])}–{bytes_text(lim.interval[1])})")
            continue
        g = int(np.searchsorted(uniq, given, side="right"))  # the split the given limit makes
        # a switch in the data at the split given (found as either limit: with two protocols the labels can swap)
        lim.agrees = any(lo <= g <= hi for lo, hi in spans)
        if not lim.agrees:
            at = int(np.searchsorted(uniq, lim.found or 0, side="right"))
            lim.disputed = [int(v) for v in uniq[min(g, at):max(g, at)]]
            where = f" ({level:.0%} interval {bytes_text(lim.interval[0])}–{bytes_text(lim.interval[1])})" if lim.interval else ""
            warnings.append(f"--{name.replace('_', '-')} {given}: the data put {name} at {bytes_text(lim.found or 0)}{where}; "
                            f"sizes {', '.join(bytes_text(v) for v in lim.disputed)} fall in the other protocol under the "
                            "limit given")
    limits = limits[-2:] if free is not None else limits

    # a limit between two pieces that are one line (an MPI with two protocols here, not three)
    if ci:
        def one_line(p: str, q: str) -> bool:
            return all(max(ci[f"{p}.{v}"][0], ci[f"{q}.{v}"][0]) <= min(ci[f"{p}.{v}"][1], ci[f"{q}.{v}"][1])
                       for v in ("alpha_s", "beta_s_per_byte"))

        first_same, second_same = one_line("short", "eager"), one_line("eager", "rendezvous")
        if first_same:
            warnings.append(f"no protocol switch shows at short_max = {bytes_text(link.short_max)}: short and eager are "
                            f"one line within their {level:.0%} intervals (no short protocol of its own: harmless)")
        if second_same:
            hint = "" if first_same or eager_max is not None else (
                f"; the one switch the data show is short_max = {bytes_text(link.short_max)}: if rendezvous starts "
                f"there, give --eager-max {link.short_max}")
            warnings.append(f"no protocol switch shows at eager_max = {bytes_text(link.eager_max)}: eager and "
                            f"rendezvous are one line within their {level:.0%} intervals{hint}")

    # plausibility and error: the reasons to refuse
    problems: list[Problem] = []

    def sizes_of(p: str) -> list[int]:
        lo, hi = bounds[p]
        return [int(v) for v in uniq if lo <= v <= hi]

    for p in PROTOCOLS:
        pr = getattr(link, p)
        if pr.alpha > ALPHA_MAX_S:
            problems.append(Problem(f"{p} α = {pr.alpha * 1e6:.4g} µs is above {ALPHA_MAX_S * 1e6:g} µs: no MPI takes "
                                    "a millisecond per message", sizes_of(p)))
        if pr.beta > BETA_MAX_S_PER_BYTE:
            problems.append(Problem(f"{p} β = {pr.beta * 1e9:.4g} ns/B is above {BETA_MAX_S_PER_BYTE * 1e9:g} ns/B "
                                    "(below 1 MB/s): slower than any network", sizes_of(p)))
    cap = RENDEZVOUS_ALPHA_FACTOR * link.eager.alpha + RENDEZVOUS_ALPHA_SLACK_S
    if link.rendezvous.alpha > cap:
        problems.append(Problem(f"rendezvous α = {link.rendezvous.alpha * 1e6:.4g} µs is above "
                                f"{RENDEZVOUS_ALPHA_FACTOR:g} × eager α + {RENDEZVOUS_ALPHA_SLACK_S * 1e6:g} µs = "
                                f"{cap * 1e6:.4g} µs: a rendezvous handshake costs a round trip, not that",
                                sizes_of("rendezvous")))
    if link.short_max >= link.eager_max:
        problems.append(Problem(f"short_max ({link.short_max}) is not below eager_max ({link.eager_max})", []))
    for kind, rows in (("protocol", pieces), ("sizes", ranges)):
        for r in rows:
            if r.rms_relative_error > max_error:
                bad = [int(v) for v, e in zip(uniq, error) if r.lo <= v <= r.hi and abs(e) > max_error]
                where = f"the {r.label} protocol ({bytes_text(r.lo)}–{bytes_text(r.hi)})" if kind == "protocol" else f"sizes {r.label}"
                problems.append(Problem(f"fit is poor: RMS relative error {r.rms_relative_error:.1%} in {where} "
                                        f"(above --max-error {max_error:.0%})", bad))
    for p in PROTOCOLS:
        if getattr(link, p).alpha <= ALPHA_MIN_S * (1 + 1e-9) and p != "short":
            warnings.append(f"{p} α is at its floor of {ALPHA_MIN_S * 1e9:g} ns: the data show no per-message cost "
                            "in its sizes (their times grow faster than linearly?)")
    return Assessment(f, statistic, uniq, measured, model, error, reps, pieces, ranges, ci, limits, problems, warnings,
                      resamples, seed, level)


@dataclass
class CpuPerByte:
    """One protocol's CPU cost per byte O, from simultaneous exchanges."""

    protocol: str
    sizes: int  # exchange sizes in the protocol's range
    O_s_per_byte: float
    rms_relative_error: float | None  # of the exchange model over those sizes
    capped: bool  # the exchanges cost more than O ≤ β can give


def exchange_time(n, alpha: float, beta: float, o_per_byte: float):
    """One message each way when both ranks send at once, as the engine
    charges it with o = g = 0 and O ≤ G: each rank's CPU copies its message
    out ((n−1)·O) while the partner's travels (L = α), then handles the
    arrival ((n−1)·G = (n−1)·β). A ping-pong's one-way time α + (n−1)·β
    does not depend on O, so O comes from exchanges alone."""
    m = np.maximum(np.asarray(n, dtype=float) - 1.0, 0.0)
    return np.maximum(alpha, m * o_per_byte) + m * beta


def cpu_per_byte(link: LinkModel, sizes, times, statistic: str = "median") -> list[CpuPerByte]:
    """Per protocol, the O in [0, β] whose exchange times (`exchange_time`)
    fit the measured ones best in relative error (per-size `statistic`).
    A protocol without exchange sizes keeps O = 0."""
    from scipy.optimize import minimize_scalar

    n, t = per_size(sizes, times, statistic)
    out = []
    bounds = {"short": (0, link.short_max), "eager": (link.short_max, link.eager_max), "rendezvous": (link.eager_max, np.inf)}
    for p in PROTOCOLS:
        pr = getattr(link, p)
        lo, hi = bounds[p]
        m = (n > lo) & (n <= hi)
        if not m.any() or pr.beta <= 0:
            out.append(CpuPerByte(p, int(m.sum()), 0.0, None, False))
            continue
        x, y = n[m], t[m]

        def sse(o: float, x=x, y=y, pr=pr) -> float:
            r = (exchange_time(x, pr.alpha, pr.beta, o) - y) / y
            return float(r @ r)

        # the objective is piecewise smooth in O: a grid, then a bounded search around its best point
        grid = np.linspace(0.0, pr.beta, 201)
        k = int(np.argmin([sse(g) for g in grid]))
        lo_o, hi_o = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
        best = minimize_scalar(sse, bounds=(lo_o, hi_o), method="bounded", options={"xatol": pr.beta * 1e-6}) if hi_o > lo_o else None
        o = float(best.x) if best is not None and best.fun <= sse(grid[k]) else float(grid[k])
        if o < 1e-12 or sse(0.0) <= 1.001 * sse(o):
            o = 0.0  # what the data do not ask for is not charged (nor anything below the engine's 1 ps)
        capped = o >= pr.beta * (1 - 1e-3) and bool((y > exchange_time(x, pr.alpha, pr.beta, pr.beta)).any())
        out.append(CpuPerByte(p, int(m.sum()), o, float(np.sqrt(sse(o) / x.size)), capped))
    return out


def node_bandwidth(pairs, sizes, times) -> float:
    """Largest aggregate off-node bandwidth of a multi-pair ping-pong:
    pairs × bytes / one-way time (bytes/s)."""
    p, n, t = (np.asarray(x, dtype=float) for x in (pairs, sizes, times))
    return float(np.max(p * n / t))


def implausible_node_bandwidth(bw: float) -> str | None:
    """Why a multi-pair bandwidth cannot be a node's (refused even with
    --force), or None."""
    if not NODE_BANDWIDTH_MIN <= bw <= NODE_BANDWIDTH_MAX:  # also NaN and inf
        return (f"the multi-pair bandwidth is {bw:.4g} B/s, outside {NODE_BANDWIDTH_MIN:g}–{NODE_BANDWIDTH_MAX:g} B/s "
                "(1 MB/s to 100 pairs at 1 TB/s): are the times one-way seconds and the sizes bytes?")
    return None


def comments(name: str, a: Assessment) -> list[str]:
    """The fit of one link class as comment lines for the platform file: the
    limits and where the data put them, α and β with their intervals, the
    error per protocol and per size range."""
    link = a.fit.link
    level = f"{a.level:.0%}"
    head = f"{name}: {a.sizes.size} sizes × {a.reps[0]}" + (f"–{a.reps[1]}" if a.reps[1] != a.reps[0] else "")
    head += f" repetitions, per-size {a.statistic}; RMS relative error {a.fit.rms_relative_error:.2%}"
    lines = [head]
    for lim in a.limits:
        text = f"  {lim.name} = {lim.value} B: " + ("given" if lim.given else "found in the data")
        if lim.interval:
            text += f"; {level} interval {lim.interval[0]}–{lim.interval[1]} B"
        if lim.support is not None:
            text += f" (the data's {lim.found} B in {lim.support:.0%} of the resamples)"
        if lim.given and lim.agrees is False:
            text += f"; the data disagree: sizes {', '.join(str(v) for v in lim.disputed)} B"
        lines.append(text)
    for p in PROTOCOLS:
        pr = getattr(link, p)
        pc = next(x for x in a.pieces if x.label == p)
        ci_a = f" [{a.ci[p + '.alpha_s'][0]:.4e}, {a.ci[p + '.alpha_s'][1]:.4e}]" if a.ci else ""
        ci_b = f" [{a.ci[p + '.beta_s_per_byte'][0]:.4e}, {a.ci[p + '.beta_s_per_byte'][1]:.4e}]" if a.ci else ""
        lines.append(f"  {p:<10} alpha {pr.alpha:.6e} s{ci_a}  beta {pr.beta:.6e} s/B{ci_b}  "
                     f"sizes {pc.lo}–{pc.hi} B: RMS error {pc.rms_relative_error:.2%}")
    lines.append("  error by size range: " + "; ".join(f"{r.label} {r.rms_relative_error:.2%} ({r.sizes} sizes)" for r in a.ranges))
    if a.ci:
        lines.append(f"  [intervals: {level}, bootstrap of {a.resamples} resamples of the repetitions, seed {a.seed}]")
    return lines


def platform_toml(off: LinkModel | None, on: LinkModel | None = None, *, ranks_per_node: int = 1,
                  node_bw: float = 0.0, source: str = "", note: str = "", top: Sequence[str] = (),
                  notes: Sequence[str] = (), mpi_library: str | None = None, off_node_comment: Sequence[str] = (),
                  cpu: dict[str, dict[str, float]] | None = None, calibration_span_bytes: int = 0) -> str:
    """A platform file: postal α, β as L, G with o = g = 0. `off` None: no
    values between nodes are written (the engine's defaults then apply to
    messages between nodes; `off_node_comment` says so in [network]).
    `top`: comment lines above everything (a warning), `notes`: comment
    lines below the header (provenance, the fit's intervals and errors);
    `calibration_span_bytes`: the ping-pong's buffer regions (0: one buffer)."""

    def link(lk: LinkModel, prefix: str) -> list[str]:
        e, s, r = lk.eager, lk.short, lk.rendezvous
        o = (cpu or {}).get("on_node" if prefix.endswith("intra_node") else "off_node", {})
        lines = [f"[{prefix}]" if prefix != "network" else "[network]", "o_s = 0.0", "g_s = 0.0",
                 f"O_s_per_byte = {o.get('eager', 0.0):.6e}",
                 f"L_s = {e.alpha:.6e}", f"G_s_per_byte = {max(e.beta, 0.0):.6e}", f"S_bytes = {lk.eager_max}"]
        lines += ["", f"[{prefix}.short]", f"max_bytes = {lk.short_max}", f"L_s = {s.alpha:.6e}", f"G_s_per_byte = {max(s.beta, 0.0):.6e}",
                  f"O_s_per_byte = {o.get('short', 0.0):.6e}"]
        lines += ["", f"[{prefix}.rendezvous]", f"L_s = {r.alpha:.6e}", f"G_s_per_byte = {max(r.beta, 0.0):.6e}",
                  f"O_s_per_byte = {o.get('rendezvous', 0.0):.6e}"]
        return lines

    def comment(line: str) -> str:
        return f"# {line}".rstrip()

    head = [comment(x) for x in top]
    head += ["# Postal parameters fitted by idlewave fit" + (f" from {source}" if source else ""),
             "# T = alpha + beta*n per protocol: L = alpha, G = beta, o = g = 0."] + ([f"# {note}"] if note else [])
    head += [comment(x) for x in notes]
    if off is not None:
        body = link(off, "network")
        extra = [f"ranks_per_node = {ranks_per_node}"]
    else:
        body = ["[network]"] + [comment(x) for x in off_node_comment]
        extra = [f"ranks_per_node = {ranks_per_node}", "off_node_measured = false"]
    if node_bw > 0:
        extra.append(f"node_bandwidth_bytes_per_s = {node_bw:.6e}")
    if mpi_library:  # the measured library's collective rules for algorithm = "auto"
        extra.append(f'mpi_library = "{mpi_library}"')
    if calibration_span_bytes:  # how the calibration held its buffers: validate checks the platform the same way
        extra.append(f"calibration_span_bytes = {calibration_span_bytes}")
    at = 7 if off is not None else len(body)
    body[at:at] = extra
    if on is not None:
        body += [""] + link(on, "network.intra_node")
    return "\n".join(head + body) + "\n"
