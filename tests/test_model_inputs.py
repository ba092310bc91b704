"""`idlewave model …` refuses bad numbers with an error naming the flag
(exit 2, never a traceback, never NaN or nonsense printed with exit 0),
keeps the engine's limits, and still takes the valid edge values."""

import json
import math

import pytest

from conftest import invoke_cli
from idlewave.models import hyperbolic, nbc, postal

pytestmark = pytest.mark.integration

BAD = [
    # (arguments after `model`, the flag the error must name)
    (["loggops", "--L-s", "-1e-6"], "--L-s"),
    (["loggops", "--L-s", "nan"], "--L-s"),
    (["loggops", "--L-s", "inf"], "--L-s"),
    (["loggops", "--o-s", "1e-13"], "--o-s"),  # the engine refuses a positive time that rounds to 0 ps
    (["loggops", "--G-s-per-byte", "1e-13"], "--G-s-per-byte"),
    (["loggops", "--g-s", "1e300"], "--g-s"),
    (["loggops", "--S-bytes", "-1"], "--S-bytes"),
    (["loggops", "--bytes", "70000"], "--bytes"),
    (["loggops", "--G-s-per-byte", "1e6", "--bytes", "60000"], "--bytes"),
    (["loggops", "--kind", "bcast", "--ranks", "100000000000"], "--ranks"),
    (["loggops", "--kind", "bcast", "--ranks", "2000000000"], "--ranks"),
    (["halo", "--grid", "100000,100000,100000"], "--grid"),
    (["halo", "--grid", "4,4,4", "--local", "4294967296,1,1"], "--local"),
    (["halo", "--grid", "4,4,4", "--nonblocking", "--overlap-s", "-1"], "--overlap-s"),
    (["halo", "--grid", "3,5,7", "--mapping", "cartesian"], "--mapping"),
    (["idle-wave", "--distance", "1", "--t-exec", "0", "--t-comm", "0"], "--t-exec"),
    (["idle-wave", "--t-exec", "nan"], "--t-exec"),
    (["idle-wave", "--t-exec", "-1e-3"], "--t-exec"),
    (["idle-wave", "--t-exec", "1e-3", "--t-comm", "inf"], "--t-comm"),
    (["idle-wave", "--t-exec", "1e-3", "--sigma", "0"], "--sigma"),
    (["idle-wave", "--t-exec", "1e-3", "--distance", "99999999999"], "--distance"),
    (["pcg", "--method", "pcg", "--spmv-s", "-1", "--allreduce-s", "-1"], "--spmv-s"),
    (["pcg", "--method", "pcg", "--spmv-s", "1e-3", "--allreduce-s", "nan"], "--allreduce-s"),
    (["pcg", "--spmv-s", "1e-3", "--allreduce-s", "1e-4", "--sync-s", "inf"], "--sync-s"),
    (["pcg", "--spmv-s", "1e-3", "--allreduce-s", "1e-4", "--halo-s", "-1"], "--halo-s"),
    (["pcg", "--spmv-s", "1e-3", "--allreduce-s", "1e-4", "--iterations", "99999999999"], "--iterations"),
    (["pcg", "--method", "cg", "--spmv-s", "1e-3", "--allreduce-s", "1e-4"], "--method"),
    (["pcg", "--spmv-s", "1e-3", "--nodes", "99999999999"], "--nodes"),
    (["nbc-bound", "--beta", "inf", "--json"], "--beta"),
    (["nbc-bound", "--beta", "nan"], "--beta"),
    (["nbc-bound", "--beta", "1e-320", "--json"], "--beta"),  # finite, but (1+β)/β overflows
    (["nbc-bound", "--beta", "1", "--inflation", "inf"], "--inflation"),
    (["allreduce", "--nodes", "8", "--flop-s", "nan"], "--flop-s"),
    (["allreduce", "--nodes", "8", "--nonblocking", "--overlap-s", "inf"], "--overlap-s"),
    (["allreduce", "--nodes", "100000000", "--penalties", "hops", "--platform", "anvil"], "--nodes"),
    (["postal", "--bytes", "99999999999999999999"], "--bytes"),
    (["allreduce", "--nodes", "8", "--hops", "-3"], "--hops"),  # negative, and no hop penalty to use it
    (["allreduce", "--nodes", "8", "--hops", "-3", "--penalties", "hops"], "--hops"),
    (["allreduce", "--nodes", "8", "--hops", "nan", "--penalties", "hops"], "--hops"),
    (["halo", "--grid", "4,4,4", "--hops", "-1", "--penalties", "hops"], "--hops"),
    (["pcg", "--spmv-s", "1e-3", "--nodes", "8", "--hops", "-3"], "--hops"),
    (["nbc-bound", "--table1", "--beta", "0.5"], "--beta"),
    (["nbc-bound", "--table1", "--inflation", "2"], "--inflation"),
]


@pytest.mark.parametrize(("args", "flag"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_model_refuses_bad_numbers_naming_the_flag(args, flag):
    p = invoke_cli("model", *args, check=False)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert "error:" in p.stderr and flag in p.stderr, p.stderr
    assert p.stdout == ""


def test_model_refuses_huge_per_rank_lists_saying_how_much_memory():
    p = invoke_cli("model", "loggops", "--kind", "bcast", "--ranks", "2000000000", check=False)
    assert p.returncode == 2 and "GiB" in p.stderr, p.stderr


GOOD = [
    (["idle-wave", "--t-exec", "0", "--t-comm", "1e-3"], {"speed_ranks_per_s": 1000.0}),
    (["idle-wave", "--t-exec", "1e-3"], {"speed_ranks_per_s": 1000.0}),
    (["loggops", "--L-s", "0", "--o-s", "0", "--g-s", "0", "--G-s-per-byte", "0"], {"time_ps": 0}),
    (["loggops", "--o-s", "1e-12"], {}),  # 1 ps: the engine's resolution
    (["loggops", "--kind", "bcast", "--ranks", "1"], {"time_ps": 0}),
    (["loggops", "--kind", "dissemination", "--ranks", "1", "--bytes", "0"], {"time_ps": 0}),
    (["pcg", "--method", "PCG", "--spmv-s", "0", "--allreduce-s", "0"], {"method": "pcg", "time_s": 0.0}),
    (["pcg", "--method", "SAPCG", "--spmv-s", "1e-3", "--allreduce-s", "1e-4"], {"method": "sapcg"}),
    (["pcg", "--method", "Pipe2CG", "--spmv-s", "1e-3", "--nodes", "8"], {"method": "pipe2cg"}),
    (["nbc-bound", "--beta", "1e-3"], {"beta": 1e-3}),
    (["allreduce", "--nodes", "1", "--flop-s", "0"], {"off_node_rounds": 0.0}),
    (["allreduce", "--nodes", "8", "--nonblocking", "--overlap-s", "0"], {}),
    (["halo", "--grid", "1,1,1"], {"ranks": 1, "max_s": 0.0}),
    (["halo", "--grid", "4,4,4", "--nonblocking", "--overlap-s", "0"], {"ranks": 64}),
    (["postal", "--bytes", "0"], {"protocol": "short"}),
    (["allreduce", "--nodes", "8", "--penalties", "hops", "--hops", "0"], {"hops": 0.0}),
    (["allreduce", "--nodes", "8", "--penalties", "maxrate,congestion"], {"hops": 0.0}),
    (["halo", "--grid", "4,4,4", "--penalties", "hops", "--hops", "each"], {"ranks": 64}),
    (["nbc-bound", "--beta", "1", "--inflation", "1"], {"inflation": 1.0}),
]


@pytest.mark.parametrize(("args", "expect"), GOOD, ids=[" ".join(a) for a, _ in GOOD])
def test_model_takes_valid_edge_values(args, expect):
    p = invoke_cli("model", *args, "--json", check=False)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout, parse_constant=lambda c: pytest.fail(f"JSON holds {c}"))
    for k, v in expect.items():
        assert doc[k] == v
    numbers = [v for v in doc.values() if isinstance(v, (int, float))]
    assert all(math.isfinite(v) and v >= 0 for v in numbers), doc


def test_model_nbc_table1_json_parses():
    rows = json.loads(invoke_cli("model", "nbc-bound", "--table1", "--json").stdout)
    assert len(rows) == 6


@pytest.mark.parametrize("given", [["--beta", "0.5"], ["--inflation", "2"], ["--beta", "0.5", "--inflation", "1"]])
def test_model_nbc_table1_refuses_the_options_it_would_ignore(given):
    """Table 1 has its own β per application and no noise: --beta and --inflation beside it are refused."""
    p = invoke_cli("model", "nbc-bound", "--table1", *given, "--json", check=False)
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    assert "--table1 prints the paper's Table 1" in p.stderr and all(f in p.stderr for f in given[::2]), p.stderr


@pytest.mark.parametrize("args", [
    ["allreduce", "--nodes", "8", "--hops", "5"],
    ["allreduce", "--nodes", "8", "--hops", "average", "--penalties", "maxrate"],
    ["allreduce", "--nodes", "8", "--hops", "5", "--penalties", "congestion"],  # congestion scales with hops only beside hops
    ["halo", "--grid", "4,4,4", "--hops", "2"],
    ["pcg", "--spmv-s", "1e-3", "--nodes", "8", "--hops", "max", "--penalties", "maxrate"],
])
def test_model_refuses_hops_without_the_hop_penalty(args):
    """--hops changes nothing without --penalties hops: refused, never printed as if it counted."""
    p = invoke_cli("model", *args, "--json", check=False)
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    assert "error: --hops" in p.stderr and "only the hop penalty uses it" in p.stderr and "--penalties hops" in p.stderr, p.stderr


def test_model_hops_given_count_and_are_checked_before_use():
    """With the hop penalty the count given is the one used; a negative one is refused whatever the penalties."""
    two = json.loads(invoke_cli("model", "allreduce", "--nodes", "8", "--penalties", "hops", "--hops", "2", "--json").stdout)
    four = json.loads(invoke_cli("model", "allreduce", "--nodes", "8", "--penalties", "hops", "--hops", "4", "--json").stdout)
    assert (two["hops"], four["hops"]) == (2.0, 4.0) and four["time_s"] > two["time_s"]
    for pens in ([], ["--penalties", "maxrate"], ["--penalties", "hops"]):
        p = invoke_cli("model", "allreduce", "--nodes", "8", "--hops", "-3", *pens, check=False)
        assert p.returncode == 2 and "error: --hops: must be a finite number ≥ 0, got -3" in p.stderr, p.stderr


@pytest.mark.parametrize("row", ["2,nan", "inf,2", "2,"])
def test_model_hyperbolic_refuses_non_finite_data(tmp_path, row):
    data = tmp_path / "perf.csv"
    data.write_text(f"eta,value\n1,1\n{row}\n4,3\n")
    p = invoke_cli("model", "hyperbolic", data, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "error:" in p.stderr and "finite" in p.stderr and "perf.csv" in p.stderr, p.stderr


def test_model_functions_refuse_what_has_no_finite_answer():
    with pytest.raises(ValueError, match="finite"):
        nbc.bound(math.inf)
    with pytest.raises(ValueError, match="not both 0"):
        postal.idle_wave_speed(1, 0.0, 0.0)
    with pytest.raises(ValueError, match="finite"):
        hyperbolic.fit([1.0, 2.0, 4.0], [1.0, math.nan, 3.0])


def test_model_hyperbolic_refuses_a_single_eta(tmp_path):
    data = tmp_path / "one_eta.csv"
    data.write_text("eta,value\n1,1\n1,1\n1,1\n")
    p = invoke_cli("model", "hyperbolic", data, check=False)
    assert p.returncode == 2 and "need at least two distinct eta values" in p.stderr, p.stderr


def test_model_names_the_platform_flag_for_an_unknown_platform():
    p = invoke_cli("model", "postal", "--platform", "nonexist", "--bytes", "8", check=False)
    assert p.returncode == 2 and "error: --platform: 'nonexist' is neither a preset" in p.stderr, p.stderr
