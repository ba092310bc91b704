"""The alignment of call sequences whose loops run a different number of
times (trace/loops.py): where each loop is, how many times each side runs
it, which call of the other side plays each template call's part, and
sequences no loop explains refused."""

from __future__ import annotations

import numpy as np
import pytest

from idlewave.trace.loops import Site, align

pytestmark = pytest.mark.unit


def ops(text: str) -> np.ndarray:
    return np.array([ord(c) for c in text], dtype=np.uint16)


@pytest.mark.parametrize("template,other,played,sites", [
    # the template runs XYZ three times, the other once: its extra iterations play the other's last
    ("abcXYZXYZXYZdef", "abcXYZdef", "abcXYZXYZXYZdef", [Site(3, 3, 3, 1)]),
    ("abcXYZdef", "abcXYZXYZXYZdef", "abcXYZdef", [Site(3, 3, 1, 3)]),
    # what follows the loop begins as its body does: the body is found rotated
    ("abXYXYXYXYXd", "abXYXd", "abXYXYXYXYXd", [Site(3, 2, 4, 1)]),
    # two loops, one longer on each side
    ("aXYZbXYZXYZc", "aXYZXYZbXYZc", "aXYZbXYZXYZc", [Site(1, 3, 1, 2), Site(5, 3, 2, 1)]),
    ("abcXYZXYZ", "abcXYZ", "abcXYZXYZ", [Site(3, 3, 2, 1)]),
    ("aBBBBc", "aBBc", "aBBBBc", [Site(1, 1, 4, 2)]),
    ("abc", "abc", "abc", []),
])
def test_loops_that_run_more_or_fewer_times_are_aligned(template, other, played, sites):
    mapping, found = align(ops(other), ops(template))
    assert "".join(other[k] for k in mapping) == played
    assert found == sites
    # a call of the template is played by a call of the same kind
    assert np.array_equal(ops(other)[mapping], ops(template))


@pytest.mark.parametrize("template,other", [
    ("abcXYZd", "abcXYZQd"),  # a call only one side makes
    ("abcd", "abed"),  # a call changed
    ("aXYZb", "ab"),  # a loop the other side never runs: nothing to play its part
    ("aXYZXYZb", "aXYZXYZc"),
])
def test_differences_no_loop_explains_are_refused(template, other):
    assert align(ops(other), ops(template)) is None


def test_a_long_sequence_with_a_loop_per_step_aligns_in_one_pass():
    """A solver's iterations per time step differ at every step (10 + s on
    one side, 12 + s on the other): one site per step, each found."""
    step = lambda n: "h" + "rsWA" * n + "b"  # noqa: E731
    template = "i" + "".join(step(12 + s) for s in range(200)) + "f"
    other = "i" + "".join(step(10 + s) for s in range(200)) + "f"
    mapping, found = align(ops(other), ops(template))
    assert [(s.count, s.other, s.length) for s in found] == [(12 + s, 10 + s, 4) for s in range(200)]
    assert np.array_equal(ops(other)[mapping], ops(template))
