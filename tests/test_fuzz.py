"""Property tests of the Python front end: any input gives a result or a
ScenarioError / DataError with a message, never another exception.
`make fuzz` runs many more examples (FUZZ_EXAMPLES)."""

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idlewave import scenario as sc
from idlewave.stats.data import DataError, load

pytestmark = pytest.mark.unit

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
# `make test` draws the same examples every run (a red CI names a code change,
# not a lucky draw); `make fuzz` explores new ones each time.
DERANDOMIZE = "FUZZ_EXAMPLES" not in os.environ
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=DERANDOMIZE,
                    suppress_health_check=[HealthCheck.too_slow])

KEYS = ["seed", "name", "network", "workload", "noise", "record", "limits", "kind", "ranks", "iterations", "compute_s",
        "L_s", "S_bytes", "platform", "topology", "mapping", "radix", "dims", "grid", "node_grid", "path", "regimes",
        "transition", "multiplier", "intra_node", "short", "max_bytes", "collective", "algorithm", "bsp", "torus",
        "distances", "period_s", "duration_s", "rate_hz", "app", "beta", "timers"]
edge = st.sampled_from([0, 1, -1, 2**31, 2**32, 2**64, 2**70, 2**127, -(2**200), 1e-13, 0.5, 1e300, float("nan"), float("inf"), True, "", "x",
                        "bsp", "torus", "fat_tree", "collective", "auto", "ring", None])
values = st.recursive(edge | st.integers() | st.floats() | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
                      max_leaves=20)


@SETTINGS
@given(st.dictionaries(st.sampled_from(KEYS), values, max_size=5))
def test_any_scenario_dict_is_checked_or_refused_with_a_message(raw):
    try:
        doc = sc.validate(raw)
    except sc.ScenarioError as e:
        assert str(e)
    else:
        assert sc.validate(json.loads(json.dumps(doc))) == doc  # idempotent, and JSON-clean


def test_an_integer_beyond_128_bits_is_refused_at_its_key():
    with pytest.raises(sc.ScenarioError) as e:
        sc.validate({"workload": {"ranks": [8, 2**127]}})
    assert e.value.key == "workload.ranks[1]" and "128 bits" in str(e.value)
    with pytest.raises(sc.ScenarioError, match="seed"):
        sc.parse_scenario("[workload]\nranks = 8\n", "fuzz.toml", {"seed": 2**200})


@SETTINGS
@given(st.text(max_size=300))
def test_any_toml_text_is_parsed_or_refused_with_a_message(text):
    try:
        sc.parse_scenario(text, "fuzz.toml")
    except sc.ScenarioError as e:
        assert str(e).startswith("fuzz.toml")


@SETTINGS
@given(st.dictionaries(st.text(max_size=12), values, max_size=4))
def test_any_override_is_applied_or_refused(overrides):
    try:
        sc.parse_scenario("[workload]\nranks = 8\n", "fuzz.toml", overrides)
    except sc.ScenarioError:
        pass


@settings(max_examples=max(10, EXAMPLES // 4), deadline=None, derandomize=DERANDOMIZE, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400), st.sampled_from([".npy", ".csv", ".parquet", ".txt"]))
def test_any_timing_file_is_loaded_or_refused(tmp_path, data, suffix):
    f = tmp_path / f"t{suffix}"
    f.write_bytes(data)
    try:
        load(f)
    except DataError as e:
        assert str(e)
