"""The mutation script (`make mutants`) still applies: each deliberate model break it lists finds its
code exactly once, and names the tests that must catch it."""

import importlib.util
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit


def test_every_mutant_still_applies():
    spec = importlib.util.spec_from_file_location("mutants", ROOT / "scripts" / "mutants.py")
    mutants = importlib.util.module_from_spec(spec)
    sys.modules["mutants"] = mutants  # (its dataclasses look their module up there)
    spec.loader.exec_module(mutants)
    assert mutants.check() == []
    assert len(mutants.MUTANTS) >= 8 and len({m.name for m in mutants.MUTANTS}) == len(mutants.MUTANTS)
