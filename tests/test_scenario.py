"""Tests for idlewave.scenario: TOML scenario -> validated dict -> engine config."""

import importlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

import idlewave

pytestmark = pytest.mark.unit


def _load_scenario_module():
    """Imports idlewave.scenario; falls back to loading the file directly when the
    package's __init__ cannot be imported (e.g. the compiled engine isn't built)."""
    try:
        return importlib.import_module("idlewave.scenario")
    except Exception:
        path = Path(__file__).resolve().parents[1] / "python" / "idlewave" / "scenario.py"
        spec = importlib.util.spec_from_file_location("_idlewave_scenario_standalone", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses need the module registered
        spec.loader.exec_module(mod)
        return mod


sc = _load_scenario_module()
ScenarioError = sc.ScenarioError


def err(text, source="scn.toml", **kw):
    with pytest.raises(ScenarioError) as ei:
        sc.parse_scenario(text, source, **kw)
    return str(ei.value)


# ---------------------------------------------------------------- defaults


def test_empty_scenario_is_fully_defaulted():
    s = sc.parse_scenario("")
    assert s["seed"] == 1 and s["name"] == ""
    assert s["network"] == {
        "L_s": 2.5e-6,
        "o_s": 1.5e-6,
        "g_s": 1.0e-6,
        "G_s_per_byte": 6.0e-9,
        "O_s_per_byte": 0.0,
        "S_bytes": 65535,
        "ranks_per_node": 1,
        "async_progress": False,
        "rendezvous_model": "loggopsim",
        "nic_model": "loggopsim",
        "nic_ports": 1,
        "platform": "",
        "ranks_per_socket": 0,
        "node_bandwidth_bytes_per_s": 0.0,
        "hop_latency_s": 0.0,
        "stalls_per_byte": 0.0,
        "stall_s": 0.0,
        "short": None,
        "rendezvous": None,
        "intra_node": None,
        "intra_socket": None,
        "topology": {"kind": "fully_connected"},
        "mapping": {"kind": "block"},
        "memory": None,
        "links": {"model": "none", "bandwidth_bytes_per_s": 0.0, "global_bandwidth_bytes_per_s": 0.0, "taper": 1.0,
                  "routing": None, "resolve_interval_s": 0.0},
        "regimes": [],
        "mpi_library": None,
        "off_node_measured": True,
        "calibration_span_bytes": 0,
    }
    assert s["noise"] == []
    assert s["workload"] == {
        "kind": "bsp",
        "ranks": 64,
        "iterations": 100,
        "compute_s": 1e-4,
        "distances": [1],
        "message_bytes": 8,
        "periodic": True,
        "barrier": False,
        "compute_bytes": 0,
    }
    assert s["record"] == {"timers": True, "explain": False}
    assert s["limits"] == {"max_memory_bytes": 0}
    json.dumps(s)  # JSON-serialisable


def test_collective_defaults_and_ints_become_floats():
    s = sc.parse_scenario('[workload]\nkind = "collective"\ncompute_s = 1\n')
    assert s["workload"] == {
        "kind": "collective",
        "ranks": 64,
        "iterations": 10,
        "collective": "allreduce",
        "algorithm": "auto",
        "mode": "blocking",
        "test_chunks": 1,
        "message_bytes": 8,
        "chunk_bytes": 0,
        "compute_s": 1.0,
        "root": 0,
        "communicator": "world",
        "grid_columns": 0,
        "counts": [],
    }
    assert isinstance(s["workload"]["compute_s"], float)


def test_noise_entries_are_fully_defaulted():
    s = sc.parse_scenario(
        """
[workload]
ranks = 8
[[noise]]
kind = "periodic"
[[noise]]
kind = "poisson"
ranks = [0, 5]
[[noise]]
kind = "checkpoint"
[[noise]]
kind = "single"
rank = 3
"""
    )
    kinds = [n["kind"] for n in s["noise"]]
    assert kinds == ["periodic", "poisson", "checkpoint", "single"]
    assert set(s["noise"][0]) == {"kind", "period_s", "duration_s", "cosched", "ranks"}
    assert s["noise"][0]["cosched"] is False and s["noise"][0]["ranks"] is None
    assert s["noise"][1]["ranks"] == [0, 5]
    assert set(s["noise"][2]) == {"kind", "interval_s", "duration_s", "ranks"}
    assert s["noise"][3] == {"kind": "single", "rank": 3, "start_s": 0.0, "duration_s": s["noise"][3]["duration_s"]}
    assert s["noise"][3]["duration_s"] > 0


def test_intra_node_defaults_to_network_values():
    s = sc.parse_scenario("[network]\nL_s = 5e-6\nranks_per_node = 4\n[network.intra_node]\nL_s = 1e-7\n")
    intra = s["network"]["intra_node"]
    assert intra["L_s"] == 1e-7
    assert intra["o_s"] == 1.5e-6 and intra["S_bytes"] == 65535
    assert set(intra) == {"L_s", "o_s", "g_s", "G_s_per_byte", "O_s_per_byte", "S_bytes", "short", "rendezvous"}
    # An intra_node table inherits a changed [network] value, not the built-in default.
    s = sc.parse_scenario("[network]\ng_s = 3e-6\n[network.intra_node]\nL_s = 0\n")
    assert s["network"]["intra_node"]["g_s"] == 3e-6


def test_validate_accepts_dict_and_is_idempotent():
    s = sc.validate({"seed": 3, "workload": {"kind": "collective", "collective": "bcast", "root": 2}})
    assert s["seed"] == 3 and s["workload"]["root"] == 2
    assert sc.validate(s) == s
    assert sc.validate(json.loads(json.dumps(s))) == s


# ---------------------------------------------------------------- engine config


def test_the_document_is_what_the_engine_runs_with_picosecond_rounding():
    """No conversion layer: the checked document goes to the engine, which
    turns seconds into picoseconds (half to even) itself."""
    s = sc.validate({"network": {"L_s": 1e-9, "o_s": 3.3e-7, "g_s": 0.1},
                     "workload": {"kind": "bsp", "ranks": 2, "iterations": 1, "compute_s": 0.0, "periodic": False, "message_bytes": 1}})
    # each rank: send overhead o, the message's latency L, receive overhead o (1 byte: no per-byte terms)
    assert idlewave.simulate(s).summary["makespan_ps"] == 2 * 330_000 + 1_000


# ---------------------------------------------------------------- errors


def test_unknown_keys_name_full_path_and_allowed_keys():
    msg = err("[workload]\ncompute = 1\n")
    assert msg == (
        "scn.toml:2:11: workload.compute: unknown key (allowed: kind, ranks, iterations, compute_s, "
        "distances, message_bytes, periodic, barrier, compute_bytes)"
    )
    assert "scn.toml:1:9: bogus: unknown key" in err("bogus = 1\n")
    assert "network.latency: unknown key" in err("[network]\nlatency = 1\n")
    assert "network.intra_node.ranks_per_node: unknown key" in err("[network.intra_node]\nranks_per_node = 2\n")
    assert "record.timer: unknown key (allowed: timers, explain)" in err("[record]\ntimer = true\n")
    assert "noise[1].period: unknown key" in err('[[noise]]\nkind = "single"\nrank = 0\n[[noise]]\nkind = "periodic"\nperiod = 1\n')


def test_keys_of_another_kind_are_unknown():
    assert "workload.root: unknown key" in err('[workload]\nkind = "bsp"\nroot = 0\n')
    assert "workload.distances: unknown key" in err('[workload]\nkind = "collective"\ndistances = [1]\n')
    msg = err('[[noise]]\nkind = "single"\nrank = 1\nranks = [1]\n')
    assert "noise[0].ranks: unknown key (allowed: kind, rank, start_s, duration_s)" in msg
    assert "noise[0].cosched: unknown key" in err('[[noise]]\nkind = "poisson"\ncosched = true\n')


def test_kind_errors():
    assert "noise[0].kind: required key is missing" in err("[[noise]]\nperiod_s = 1\n")
    assert "noise[0].kind: must be one of periodic, poisson, trace, checkpoint, single" in err('[[noise]]\nkind = "jitter"\n')
    kinds = "bsp, collective, skeleton, app, spmv, fem_matvec, stream_triad, krylov, krylov_kernel, chebfd, dense2d, traffic, goal"
    assert f"workload.kind: must be one of {kinds}" in err('[workload]\nkind = "stencil"\n')
    assert "workload.path: required key is missing" in err('[workload]\nkind = "goal"\n')
    assert "noise[0].rank: required key is missing" in err('[[noise]]\nkind = "single"\n')
    assert "noise[0].path: required key is missing" in err('[[noise]]\nkind = "trace"\n')
    assert "noise: expected an array of tables" in err('[noise]\nkind = "periodic"\n')
    assert "network: expected a table" in err("network = 3\n")


def test_wrong_types():
    assert err('[network]\nS_bytes = "abc"\n') == "scn.toml:2:11: network.S_bytes: expected an integer, got 'abc' (str)"
    assert "seed: expected an integer, got true (bool)" in err("seed = true\n")
    assert "workload.ranks: expected an integer, got 3.0 (float)" in err("[workload]\nranks = 3.0\n")
    assert "network.L_s: expected a number, got '1' (str)" in err('[network]\nL_s = "1"\n')
    assert "network.L_s: expected a number, got false (bool)" in err("[network]\nL_s = false\n")
    assert "record.timers: expected a boolean" in err("[record]\ntimers = 1\n")
    assert "name: expected a string, got 5 (int)" in err("name = 5\n")
    assert "workload.distances: expected a list of integers" in err("[workload]\ndistances = 1\n")
    assert "workload.distances[1]: expected an integer, got 2.5 (float)" in err("[workload]\ndistances = [1, 2.5]\n")
    assert "network.L_s: must be finite" in err("[network]\nL_s = inf\n")
    assert "network.L_s: must be finite" in err("[network]\nL_s = nan\n")


def test_toml_syntax_error_reports_file_and_line():
    msg = err("seed = 1\n[network]\nL_s = = 3\n", source="scn.toml")
    assert msg.startswith("scn.toml:3:7: TOML syntax error: ")
    with pytest.raises(ScenarioError) as ei:
        sc.parse_scenario("a = 1\nb = [1,\n", "other.toml")
    assert str(ei.value).startswith("other.toml:")
    assert ei.value.line is not None and ei.value.column is not None


def test_toml_syntax_error_from_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\nseed = 1\nseed = 2\n')
    with pytest.raises(ScenarioError) as ei:
        sc.load_scenario(p)
    assert str(ei.value).startswith(f"{p}:3:1: ")


def test_missing_file():
    with pytest.raises(ScenarioError, match="cannot read scenario"):
        sc.load_scenario("/nonexistent/dir/scn.toml")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[network]\nL_s = -1\n", "scn.toml:2:7: network.L_s: must be >= 0, got -1"),
        ("[network]\nG_s_per_byte = -1e-9\n", "network.G_s_per_byte: must be >= 0"),
        ("[network]\nranks_per_node = 0\n", "network.ranks_per_node: must be between 1"),
        ("[network]\nnic_ports = 0\n", "network.nic_ports: must be between 1 and 16"),
        ('[[network.regimes]]\ntransition = [[1.0]]\nmultiplier = [2.0]\nscope = "link"\n',
         'network.regimes[0].scope: "link" needs a topology'),
        ("[network]\nnic_ports = 17\n", "network.nic_ports: must be between 1 and 16"),
        ("seed = -1\n", "seed: must be between 0"),
        ("[workload]\nranks = 0\n", "workload.ranks: must be between 1 and 2147483648"),
        (f"[workload]\nranks = {2**31 + 1}\n", "workload.ranks: must be between 1"),
        ("[workload]\niterations = -1\n", "workload.iterations: must be between 0"),
        ("[workload]\nmessage_bytes = -8\n", "workload.message_bytes: must be between 0"),
        ("[workload]\ncompute_s = -1e-6\n", "workload.compute_s: must be >= 0"),
        ("[workload]\ncompute_s = 1e9\n", "workload.compute_s: too large"),
        ("[workload]\nranks = 8\ndistances = [1, 8]\n", "workload.distances[1]: must be < ranks (8), got 8"),
        ("[workload]\ndistances = [0]\n", "workload.distances[0]: must be >= 1, got 0"),
        ("[workload]\ndistances = [1, 1]\n", "workload.distances[1]: duplicate value 1"),
        (f"[workload]\nranks = 100\ndistances = {list(range(1, 14))}\n", "workload.distances: at most 12"),
        ('[workload]\nkind = "collective"\nranks = 4\nroot = 4\n', "workload.root: must be < ranks (4), got 4"),
        ('[workload]\nkind = "collective"\ncollective = "allscatter"\n', "workload.collective: must be one of allreduce, bcast"),
        ('[workload]\nkind = "collective"\ncollective = "barrier"\nalgorithm = "ring"\n', "workload.algorithm: 'ring' is not an algorithm for barrier"),
        ('[workload]\nkind = "collective"\ncollective = "allgather"\nalgorithm = "recursive_doubling"\nranks = 12\n', "workload.algorithm: recursive_doubling allgather needs a power-of-two"),
        ('[workload]\nkind = "collective"\nmode = "lazy"\n', "workload.mode: must be one of blocking, nonblocking, ideal"),
        ("[limits]\nmax_memory_bytes = -1\n", "limits.max_memory_bytes: must be between 0"),
        ('[[noise]]\nkind = "periodic"\nperiod_s = 1e-3\nduration_s = 1e-3\n', "noise[0].duration_s: must be < period_s"),
        ('[[noise]]\nkind = "periodic"\nperiod_s = 1e-3\nduration_s = 2e-3\n', "noise[0].duration_s: must be < period_s"),
        ('[[noise]]\nkind = "periodic"\nperiod_s = 0\n', "noise[0].period_s: must be > 0"),
        ('[[noise]]\nkind = "periodic"\nduration_s = -1\n', "noise[0].duration_s: must be >= 0, got -1"),
        ('[[noise]]\nkind = "poisson"\nrate_hz = 1000\nduration_s = 1e-3\n', "noise[0].duration_s: rate_hz * duration_s must be < 1"),
        ('[[noise]]\nkind = "poisson"\nrate_hz = 2000\nduration_s = 1e-3\n', "rate_hz * duration_s must be < 1"),
        ('[[noise]]\nkind = "poisson"\nrate_hz = 0\n', "noise[0].rate_hz: must be > 0"),
        ('[[noise]]\nkind = "poisson"\nduration_s = 0\n', "noise[0].duration_s: must be > 0"),
        ('[[noise]]\nkind = "checkpoint"\ninterval_s = 5\nduration_s = 5\n', "noise[0].duration_s: must be < interval_s"),
        ('[[noise]]\nkind = "single"\nrank = 64\n', "noise[0].rank: must be below the run's 64 ranks, got 64"),
        ('[[noise]]\nkind = "single"\nrank = -1\n', "noise[0].rank: must be between 0"),
        ('[[noise]]\nkind = "single"\nrank = 0\nduration_s = 0\n', "noise[0].duration_s: must be > 0"),
        ('[[noise]]\nkind = "single"\nrank = 0\nduration_s = 1e-14\n', "noise[0].duration_s: too small"),
        ('[workload]\nranks = 8\n[[noise]]\nkind = "periodic"\nranks = [0, 8]\n', "noise[0].ranks[1]: must be below the run's 8 ranks, got 8"),
        ('[[noise]]\nkind = "periodic"\nranks = [-1]\n', "noise[0].ranks[0]: must be between 0"),
        ('[[noise]]\nkind = "trace"\npath = ""\n', "noise[0].path: expected a file path"),
    ],
)
def test_out_of_range(text, expected):
    msg = err(text)
    assert expected in msg
    assert re.match(r"scn\.toml:\d+:\d+: ", msg), msg  # where in the file, too


def test_goal_workload_skips_noise_rank_check():
    s = sc.parse_scenario('[workload]\nkind = "goal"\npath = "/a.goal"\n[[noise]]\nkind = "single"\nrank = 1000\n[[noise]]\nkind = "periodic"\nranks = [5000]\n')
    assert s["noise"][0]["rank"] == 1000 and s["noise"][1]["ranks"] == [5000]


def test_error_is_value_error_with_key():
    with pytest.raises(ValueError) as ei:
        sc.validate({"network": {"L_s": -1}}, "api")
    assert isinstance(ei.value, ScenarioError)
    assert ei.value.key == "network.L_s" and ei.value.source == "api"
    assert str(ei.value) == "api: network.L_s: must be >= 0, got -1"


# ---------------------------------------------------------------- paths and overrides


def test_relative_paths_resolve_against_scenario_dir(tmp_path, monkeypatch):
    sub = tmp_path / "scenarios"
    sub.mkdir()
    p = sub / "scn.toml"
    p.write_text(
        '[workload]\nkind = "goal"\npath = "prog/app.goal"\n'
        '[[noise]]\nkind = "trace"\npath = "../traces/noise.txt"\n'
        '[[noise]]\nkind = "trace"\npath = "/abs/t.txt"\n'
    )
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)  # the current directory must not matter
    s = sc.load_scenario(p)
    assert s["workload"]["path"] == str(sub.resolve() / "prog" / "app.goal")
    assert s["noise"][0]["path"] == str(tmp_path.resolve() / "traces" / "noise.txt")
    assert s["noise"][1]["path"] == "/abs/t.txt"
    # Also with a relative scenario path.
    monkeypatch.chdir(tmp_path)
    s2 = sc.load_scenario("scenarios/scn.toml")
    assert s2["workload"]["path"] == s["workload"]["path"]


def test_parse_scenario_relative_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = sc.parse_scenario('[workload]\nkind = "goal"\npath = "a.goal"\n')
    assert s["workload"]["path"] == str(tmp_path.resolve() / "a.goal")
    s = sc.parse_scenario('[workload]\nkind = "goal"\npath = "a.goal"\n', base_dir="/base")
    assert s["workload"]["path"] == "/base/a.goal"


def test_overrides(tmp_path):
    p = tmp_path / "scn.toml"
    p.write_text('seed = 3\nname = "run"\n[workload]\nranks = 32\niterations = 5\n')
    s = sc.load_scenario(p, overrides={"seed": 7})
    assert s["seed"] == 7 and s["name"] == "run" and s["workload"]["ranks"] == 32
    # A table override merges into the file's table...
    s = sc.load_scenario(p, overrides={"workload": {"iterations": 9}})
    assert s["workload"]["ranks"] == 32 and s["workload"]["iterations"] == 9
    # ...dotted keys address one key...
    s = sc.load_scenario(p, overrides={"workload.ranks": 128, "network.L_s": 1e-6})
    assert s["workload"]["ranks"] == 128 and s["network"]["L_s"] == 1e-6
    # ...and a table with a new kind replaces it.
    s = sc.load_scenario(p, overrides={"workload": {"kind": "collective"}})
    assert s["workload"]["kind"] == "collective" and s["workload"]["ranks"] == 64
    # Overrides are validated like the file.
    # (said to come from the override, not pointed at a line of the file, where it never was)
    with pytest.raises(ScenarioError, match=r"scn.toml: seed \(from --set\): expected an integer"):
        sc.load_scenario(p, overrides={"seed": "x"})
    with pytest.raises(ScenarioError, match=r"scn.toml: workload.bogus \(from --set\): unknown key") as e:
        sc.load_scenario(p, overrides={"workload.bogus": 1})
    assert (e.value.key, e.value.line) == ("workload.bogus", None)
    # The file itself is untouched.
    assert sc.load_scenario(p)["seed"] == 3


def test_overrides_in_parse_scenario():
    s = sc.parse_scenario("seed = 2\n", overrides={"seed": 11, "record": {"timers": False}})
    assert s["seed"] == 11 and s["record"]["timers"] is False


# ---------------------------------------------------------------- listing


def test_describe_workloads():
    d = sc.describe_workloads()
    assert [w["kind"] for w in d] == ["bsp", "collective", "skeleton", "app", "spmv", "fem_matvec", "stream_triad", "krylov", "krylov_kernel", "chebfd", "dense2d", "traffic", "goal", "trace"]
    assert set(sc.WORKLOADS) == {"bsp", "collective", "skeleton", "app", "spmv", "fem_matvec", "stream_triad", "krylov", "krylov_kernel", "chebfd", "dense2d", "traffic", "goal", "trace"}
    assert all(isinstance(sc.WORKLOADS[k], str) and sc.WORKLOADS[k] for k in sc.WORKLOADS)
    bsp = d[0]
    assert bsp["description"] == sc.WORKLOADS["bsp"]
    assert bsp["params"]["distances"] == [1] and bsp["params"]["compute_s"] == 1e-4
    assert "kind" not in bsp["params"]
    assert d[1]["params"]["collective"] == "allreduce"
    assert d[2]["params"]["app"] == "" and d[2]["params"]["beta"] == 0.0
    assert d[-2]["params"] == {"path": None}
    assert d[-1]["params"] == {"dir": None, "algorithms": [], "compute_scale": 1.0, "scale_to": 0, "grid": None, "strong": False, "by_call": False}
    # The listing's defaults are the validator's defaults.
    assert sc.parse_scenario("")["workload"] == {"kind": "bsp", **bsp["params"]}
    bsp["params"]["distances"].append(2)  # callers can't corrupt the schema
    assert sc.describe_workloads()[0]["params"]["distances"] == [1]
    json.dumps(d)


def test_collective_sub_communicators_and_chunking_are_checked():
    # every group runs the collective at once, as a world of its size would (uniform network)
    def makespan(text):
        return idlewave.simulate(sc.parse_scenario(text)).summary["makespan_ps"]

    bcast = '[workload]\nkind = "collective"\ncollective = "bcast"\nalgorithm = "two_ring"\nroot = 2\nchunk_bytes = 1000\n'
    assert makespan(bcast + 'ranks = 12\ncommunicator = "columns"\ngrid_columns = 4\n') == makespan(bcast + "ranks = 3\n")
    nodes = '[network]\nranks_per_node = 6\n[workload]\nkind = "collective"\n'
    assert makespan(nodes + 'ranks = 12\ncommunicator = "nodes"\n') == makespan(nodes + "ranks = 6\n")
    bad = [
        ('communicator = "rows"\ngrid_columns = 5', "workload.grid_columns"),
        ('communicator = "rows"\ngrid_columns = 4\nroot = 4', "workload.root"),
        ('grid_columns = 4', "workload.grid_columns"),
        ('collective = "bcast"\nalgorithm = "linear"\nchunk_bytes = 10', "workload.chunk_bytes"),
        ('collective = "reduce"\nalgorithm = "ring"\nchunk_bytes = 10', "workload.chunk_bytes"),
        ('collective = "bcast"\nalgorithm = "pipelined_ring"', "workload.chunk_bytes"),
    ]
    for extra, where in bad:
        with pytest.raises(sc.ScenarioError, match=where):
            sc.parse_scenario(f'[workload]\nkind = "collective"\nranks = 12\n{extra}\n')


@pytest.mark.integration  # `idlewave schema`
def test_the_printed_schema_validates_every_example_with_a_standard_validator():
    """`idlewave schema` is for editors: a stock JSON Schema validator accepts
    every shipped scenario and rejects what the front end rejects."""
    import tomllib

    import jsonschema

    from conftest import EXAMPLES, invoke_cli

    printed = invoke_cli("schema").stdout
    validator = jsonschema.Draft202012Validator(json.loads(printed))
    assert json.loads(printed) == sc.schema()
    toml_files = sorted(EXAMPLES.glob("*.toml"))
    assert len(toml_files) >= 15
    for f in toml_files:
        doc = tomllib.loads(f.read_text())
        assert not list(validator.iter_errors(doc)), f.name
        assert not list(validator.iter_errors(sc.load_scenario(f))), f.name  # and the filled-in document
    for bad in ({"workload": {"ranks": 0}}, {"network": {"L_s": -1.0}}, {"workload": {"kind": "bsp", "bogus": 1}},
                {"noise": [{"kind": "periodic", "period_s": 0.0}]}, {"workload": {"kind": "collective", "mode": "eager"}}):
        assert list(validator.iter_errors(bad)), bad
        with pytest.raises(ScenarioError):
            sc.validate(bad)
