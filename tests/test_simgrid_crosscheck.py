"""idlewave's shared-links flow model against SimGrid's on the same networks
(scripts/simgrid_crosscheck.py, docs/links.md "Cross-check with SimGrid"):
every flow ends at the same time in both, the one difference by design is
the one documented, and the comparison notices a route that is not
idlewave's. Skipped where SimGrid is not installed."""

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "simgrid_crosscheck.py"


def _script():
    spec = importlib.util.spec_from_file_location("simgrid_crosscheck", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


crosscheck = _script()
crosscheck.load_simgrid()  # pip's SimGrid, or Debian's module registered as `simgrid`
pytest.importorskip("simgrid")

CASES = crosscheck.cases()
MS = 1e-3


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_flow_ends_when_simgrid_says(case):
    (row,) = crosscheck.crosscheck([case])
    assert row.worst <= crosscheck.TOLERANCE, crosscheck.flow_table([row])


def test_a_ranks_two_messages_are_sent_one_after_the_other_where_simgrid_shares_the_nic():
    """The documented difference: idlewave's NIC gap sends them in turn (1 and 2 ms),
    SimGrid's sending link shares itself (both 2 ms); the last ends together."""
    (row,) = crosscheck.crosscheck(crosscheck.DIFFERENCES)
    assert row.idlewave_s == pytest.approx([1 * MS, 2 * MS], rel=1e-6)
    assert row.simgrid_s == pytest.approx([2 * MS, 2 * MS], rel=1e-6)


def test_a_route_other_than_idlewaves_is_noticed():
    """The parking lot in SimGrid without its torus links: the long flow alone at 1/G (2 ms, not 3.5)."""
    lot = next(c for c in CASES if c.name.startswith("parking lot"))
    (row,) = crosscheck.crosscheck([lot], lambda c: crosscheck.simgrid_times(dataclasses.replace(c, topology={"kind": "fully_connected"})))
    assert row.simgrid_s[0] == pytest.approx(2 * MS, rel=1e-6)
    assert row.worst > 0.5
