"""Call sequences of one program at two sizes whose loops run a different
number of times (a solver's iterations that grow with the ranks): the
alignment of one with the other, and where each such loop is.

Two sequences are walked together. Where they part, one of them must go on
repeating the block of calls it has just made, some whole number of times,
after which the two agree again: those are iterations that the other trace
does not have. Anything else is a change of structure that no loop explains,
and `align` returns None."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOOKAHEAD = 64  # calls that should agree after the extra iterations (fewer at the end)
MAX_CANDIDATES = 4096  # body lengths tried where two sequences part


@dataclass(frozen=True)
class Site:
    """A loop in the template's calls: its run of iterations starts at call
    `start`, each `length` calls long; the template runs it `count` times,
    the other trace `other` times."""

    start: int
    length: int
    count: int
    other: int


def _mismatch(a: np.ndarray, b: np.ndarray) -> int:
    """The first index where a and b differ (or the shorter's length)."""
    n = min(len(a), len(b))
    d = np.flatnonzero(a[:n] != b[:n])
    return int(d[0]) if len(d) else n


def _repeats(x: np.ndarray, at: int, length: int) -> int:
    """How many copies of x[at − length : at] follow at `at`."""
    body, m = x[at - length:at], 0
    while at + (m + 1) * length <= len(x) and np.array_equal(x[at + m * length:at + (m + 1) * length], body):
        m += 1
    return m


def _extra(x: np.ndarray, at: int, y: np.ndarray, y_at: int) -> tuple[int, int] | None:
    """(length, copies): x repeats its last `length` calls `copies` times from
    `at`, after which it agrees with y from `y_at`, for LOOKAHEAD calls or
    up to both ends, or failing that for as many calls as any body gives
    (the next loop whose counts differ may come sooner); the shortest body,
    the most copies. None if none agrees for a call."""
    if at == 0 or at >= len(x):
        return None
    # a body of length L needs x[at − L] == x[at]: the candidates at once
    candidates = (np.flatnonzero(x[:at][::-1] == x[at]) + 1)[:MAX_CANDIDATES]
    best, agreed = None, 0
    for length in candidates.tolist():
        for copies in range(_repeats(x, at, length), 0, -1):
            rest = at + copies * length
            w = min(LOOKAHEAD, len(x) - rest, len(y) - y_at)
            a = _mismatch(x[rest:rest + w], y[y_at:y_at + w])
            if a == w and (w == LOOKAHEAD or (rest + w == len(x) and y_at + w == len(y))):
                return length, copies
            if a > agreed:
                best, agreed = (length, copies), a
    return best


def _run_start(x: np.ndarray, end: int, length: int) -> int:
    """Where the run of copies of x[end − length : end] that ends at `end` starts."""
    body, s = x[end - length:end], end - length
    while s - length >= 0 and np.array_equal(x[s - length:s], body):
        s -= length
    return s


def align(ops: np.ndarray, ops_t: np.ndarray) -> tuple[np.ndarray, list[Site]] | None:
    """For each call of the template (`ops_t`), the index of the call of the
    other trace (`ops`) that plays its part, and the loops whose counts
    differ; None if the sequences differ otherwise. An iteration the other
    trace lacks maps to its last one; iterations only the other trace has
    map to nothing."""
    mapping, sites, _, _ = _walk(ops, ops_t)
    return None if mapping is None else (mapping, sites)


def apart(ops: np.ndarray, ops_t: np.ndarray) -> tuple[int, int]:
    """Where `align` found the sequences to differ, loops that run more or
    fewer times taken into account: (the template's call, the other's call).
    The first call at which they differ as they are is most often only where
    a loop runs more or fewer times, not the difference (a refusal named an
    iteration of a loop instead of a call made at one size alone)."""
    mapping, _, i, j = _walk(ops, ops_t)
    return (i, j) if mapping is None else (len(ops_t), len(ops))


def _walk(ops: np.ndarray, ops_t: np.ndarray) -> tuple[np.ndarray | None, list[Site], int, int]:
    """`align`'s walk: the mapping (None if it stopped), the loops, and
    where it stopped (the template's call i, the other's j)."""
    if len(ops) == len(ops_t) and np.array_equal(ops, ops_t):
        return np.arange(len(ops_t)), [], len(ops_t), len(ops)
    mapping = np.empty(len(ops_t), dtype=np.int64)
    sites: list[Site] = []
    i = j = 0
    while True:
        k = _mismatch(ops_t[i:], ops[j:])
        mapping[i:i + k] = np.arange(j, j + k)
        i, j = i + k, j + k
        if i == len(ops_t) and j == len(ops):
            return mapping, sites, i, j
        if (more := _extra(ops_t, i, ops, j)) is not None:  # the template runs the loop more times
            length, copies = more
            start = _run_start(ops_t, i, length)
            for q in range(copies * length):
                mapping[i + q] = mapping[i - length + q % length]
            count = (i + copies * length - start) // length
            sites.append(Site(start, length, count, count - copies))
            i += copies * length
        elif (more := _extra(ops, j, ops_t, i)) is not None:  # the other trace runs it more times
            length, copies = more
            start = _run_start(ops_t, i, length)
            count = (i - start) // length
            if count < 1 or not np.array_equal(ops_t[i - length:i], ops[j - length:j]):
                return None, sites, i, j
            sites.append(Site(start, length, count, count + copies))
            j += copies * length
        else:
            return None, sites, i, j


def skipped_loop(x: np.ndarray, at: int, y: np.ndarray, y_at: int) -> int | None:
    """The length of a loop's body if x runs one from `at` (two copies or
    more of a block) that y does not run at all, agreeing with it after (for
    LOOKAHEAD calls or up to both ends); None otherwise. A loop with no
    iteration at one size has nothing to match: only said, to explain a
    refusal."""
    for length in range(1, (len(x) - at) // 2 + 1):
        copies = 1
        while at + (copies + 1) * length <= len(x) and np.array_equal(
                x[at + copies * length:at + (copies + 1) * length], x[at:at + length]):
            copies += 1
        rest = at + copies * length
        w = min(LOOKAHEAD, len(x) - rest, len(y) - y_at)
        if copies > 1 and _mismatch(x[rest:rest + w], y[y_at:y_at + w]) == w and (
                w == LOOKAHEAD or (rest + w == len(x) and y_at + w == len(y))):
            return length
        if length >= MAX_CANDIDATES:
            break
    return None


def first_difference(ops: np.ndarray, ops_t: np.ndarray) -> int:
    """The first call at which two sequences differ (for a refusal)."""
    return _mismatch(ops_t, ops)
