"""A scenario error reads the same whichever way the scenario is read: the
command line, the API and a sweep over it all print the engine's one message,
with the file, line and column of the offending value and its key."""

import json
from pathlib import Path

import pytest

import idlewave
from conftest import invoke_cli, run_cli
from idlewave.scenario import ScenarioError

pytestmark = pytest.mark.integration

CASES = [
    # a value out of its declared range (a schema check)
    ('[workload]\nkind = "bsp"\nranks = 8\niterations = 2\n\n[[noise]]\nkind = "periodic"\nduration_s = -1\n',
     "bad.toml:8:14: noise[0].duration_s: must be >= 0, got -1", ("noise[0].duration_s", 8, 14)),
    # a rule tying keys together (the workload's own check)
    ('[workload]\nranks = 8\niterations = 2\ndistances = [1, 8]\n',
     "bad.toml:4:17: workload.distances[1]: must be < ranks (8), got 8", ("workload.distances[1]", 4, 17)),
]


@pytest.mark.parametrize("text, expected, where", CASES)
def test_the_same_error_reads_the_same_through_cli_api_and_sweep(tmp_path, monkeypatch, text, expected, where):
    monkeypatch.chdir(tmp_path)
    Path("bad.toml").write_text(text)

    with pytest.raises(ScenarioError) as ei:
        idlewave.simulate("bad.toml")
    assert str(ei.value) == expected
    assert (ei.value.source, (ei.value.key, ei.value.line, ei.value.column)) == ("bad.toml", where)

    p = run_cli("simulate", "bad.toml", check=False)
    assert p.returncode != 0 and expected in p.stderr and "Traceback" not in p.stderr, p.stderr

    Path("study.toml").write_text('base = "bad.toml"\n[grid]\nseed = [1, 2]\n')
    p = run_cli("sweep", "study.toml", "--out", "out", "--quiet", check=False)
    assert p.returncode != 0 and "2 of 2 points failed" in p.stderr and "Traceback" not in p.stderr, p.stderr
    errors = [json.loads(f.read_text())["error"] for f in sorted(Path("out").rglob("error.json"))]
    assert len(errors) == 2 and all(e.startswith(expected + " [point ") for e in errors), errors


def test_an_override_is_checked_where_it_lands(tmp_path):
    """A Scenario's .set applies one key as --set does and checks again; a
    bad value names its key (it has no line: it is not in the file)."""
    from idlewave import _engine

    p = tmp_path / "scn.toml"
    p.write_text('[workload]\nranks = 8\n')
    scn = _engine.Scenario.from_file(str(p))
    scn.set("workload.ranks", 16)
    assert scn.to_dict()["workload"]["ranks"] == 16 and scn.source == str(p)
    with pytest.raises(ScenarioError) as ei:
        scn.set("workload.ranks", 0)
    assert (ei.value.key, ei.value.line) == ("workload.ranks", None)
    assert str(ei.value) == f"{p}: workload.ranks: must be between 1 and 2147483648, got 0"
    assert scn.to_dict()["workload"]["ranks"] == 16  # a refused override is not kept


TWO_RANKS_GOAL = "num_ranks 2\nrank 0 {\nl1: calc 100\n}\nrank 1 {\nl1: calc 100\n}\n"

RUN_REFUSALS = [
    # a torus too small for the ranks: the engine checks it when it builds the run
    ('[network.topology]\nkind = "torus"\ndims = [1, 1, 1]\n[workload]\nkind = "bsp"\nranks = 8\n',
     "network.topology.dims", "a 1×1×1 torus has 1 node, the run needs 8"),
    # a detour on a rank the GOAL file does not have: known once the file is read
    ('[[noise]]\nkind = "single"\nrank = 5\nstart_s = 0\nduration_s = 1e-6\n[workload]\nkind = "goal"\n'
     'path = "two.goal"\n', "noise[0].rank", "must be below the run's 2 ranks, got 5"),
]


@pytest.mark.parametrize("text, key, message", RUN_REFUSALS)
def test_a_run_refusing_a_key_names_the_key_and_the_file_through_cli_and_api(tmp_path, monkeypatch, text, key, message):
    """Checks only the run can make carry the key they refuse (SimulationError.key,
    set by the engine, not read from the message) and are prefixed with the file."""
    monkeypatch.chdir(tmp_path)
    Path("two.goal").write_text(TWO_RANKS_GOAL)
    Path("run.toml").write_text(text)

    with pytest.raises(idlewave.SimulationError) as ei:
        idlewave.simulate("run.toml")
    assert (ei.value.key, str(ei.value)) == (key, f"run.toml: {key}: {message}")

    p = run_cli("simulate", "run.toml", "--out", "out", check=False)
    assert p.returncode == 2 and f"run.toml: {key}: {message}" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_torus_far_too_large_is_refused_at_its_key_before_anything_is_allocated(tmp_path):
    """As a run too large for memory is (MemoryLimitError), but at its key and
    line, not by the run's estimate, which names neither (a typo'd dimension)."""
    p = tmp_path / "run.toml"
    p.write_text('[limits]\nmax_memory_bytes = 1000000000\n[network.topology]\nkind = "torus"\ndims = [2000, 2000, 2000]\n'
                 '[workload]\nkind = "bsp"\nranks = 8\n')
    with pytest.raises(idlewave.MemoryLimitError) as ei:
        idlewave.simulate(p)
    assert ei.value.key == "network.topology.dims" and str(ei.value) == (
        f"{p}:5:8: network.topology.dims: these dimensions make a machine of 8000000000 nodes, about 476.84 GiB of "
        "state, more than the configured max_memory_bytes (953.67 MiB): give the torus the run's size")
    cli = run_cli("simulate", p, "--out", tmp_path / "out", check=False)
    assert cli.returncode != 0 and "network.topology.dims: these dimensions make" in cli.stderr and "Traceback" not in cli.stderr


def test_a_run_error_tied_to_no_key_carries_none_and_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("dead.goal").write_text("num_ranks 2\nrank 0 {\nr: recv 8b from 1 tag 0\n}\nrank 1 {\nr: recv 8b from 0 tag 0\n}\n")
    Path("run.toml").write_text('[workload]\nkind = "goal"\npath = "dead.goal"\n')
    with pytest.raises(idlewave.SimulationError) as ei:
        idlewave.simulate("run.toml")
    assert ei.value.key is None and str(ei.value).startswith("deadlock: ")


@pytest.mark.parametrize("text, key, words", [
    # a source that hits no rank did nothing, silently
    ('[[noise]]\nkind = "poisson"\nrate_hz = 100.0\nduration_s = 1e-6\nranks = []\n', "noise[0].ranks", "lists no rank"),
    # a latency chain that covers no link class did nothing
    ('[[network.regimes]]\nclasses = []\ntransition = [[1.0]]\nmultiplier = [2.0]\n', "network.regimes[0].classes",
     "at least 1 entry"),
    # a [workload] beside [[jobs]] was dropped when its values were the defaults
    ('[workload]\nkind = "bsp"\n[[jobs]]\n[jobs.workload]\nkind = "bsp"\nranks = 4\n', "workload", "not both"),
])
def test_settings_that_would_do_nothing_are_refused_at_their_key(tmp_path, text, key, words):
    scn = tmp_path / "s.toml"
    scn.write_text('[workload]\nkind = "bsp"\nranks = 4\niterations = 1\n' + text if "jobs" not in text else text)
    with pytest.raises(ScenarioError) as e:
        idlewave.simulate(scn)
    assert e.value.key == key and words in str(e.value) and f"{scn}:" in str(e.value), str(e.value)


@pytest.mark.parametrize("table, key", [('[workload]\nkind = "goal"\npath = "gone.goal"\n', "workload.path"),
                                        ('[[noise]]\nkind = "trace"\npath = "gone.txt"\n', "noise[0].path")])
def test_a_file_the_scenario_names_that_is_missing_is_blamed_on_its_key(tmp_path, table, key):
    """(the error named the file only, not the key that names it)"""
    scn = tmp_path / "s.toml"
    scn.write_text(table)
    p = invoke_cli("simulate", scn, check=False)
    assert p.returncode == 2 and f"{scn}: {key}: {tmp_path}/gone." in p.stderr and "No such file" in p.stderr, p.stderr
