"""Timelines: every computation and message captured once, Perfetto JSON and
PNG written, and a clear refusal beyond the size limit."""

import json

import numpy as np
import pytest

import idlewave

pytestmark = pytest.mark.integration


def test_timeline_captures_every_computation_and_message(tmp_path, cli):
    scn = {"workload": {"kind": "bsp", "ranks": 8, "iterations": 5, "compute_s": 1e-5, "periodic": True}}
    r = idlewave.simulate(scn, timeline=True)
    tl = r.timeline
    assert not tl["truncated"]
    # per iteration each rank computes once and sends to both neighbours
    assert np.bincount(tl["rank"][tl["activity"] == 0], minlength=8).tolist() == [5] * 8
    msgs = tl["activity"] == 3
    assert msgs.sum() == 8 * 5 * 2 and (tl["end_ps"][msgs] >= tl["start_ps"][msgs]).all()
    assert (tl["activity"] == 2).sum() == msgs.sum()  # each message received once
    assert tl["end_ps"].max() == r.summary["makespan_ps"]
    scenario = tmp_path / "s.toml"
    scenario.write_text('[workload]\nkind = "bsp"\nranks = 8\niterations = 5\n')
    cli("simulate", scenario, "--out", tmp_path / "o", "--timeline", "--quiet")
    d = json.loads((tmp_path / "o" / "timeline.json").read_text())
    names = {e["name"] for e in d["traceEvents"]}
    assert {"compute", "message", "MPI wait", "thread_name"} <= names
    assert (tmp_path / "o" / "timeline.png").stat().st_size > 5000
    p = cli("simulate", scenario, "--timeline", check=False)
    assert p.returncode == 2 and "--out" in p.stderr


def test_timelines_are_refused_beyond_the_size_limit():
    with pytest.raises(idlewave.SimulationError, match="limited to 4096 ranks"):
        idlewave.simulate({"workload": {"kind": "bsp", "ranks": 5000, "iterations": 1}}, timeline=True)


def test_detours_are_drawn_as_noise_and_spans_carry_their_message():
    # one 50 µs detour on rank 3 inside its first computation (10 µs of work)
    scn = {"workload": {"kind": "bsp", "ranks": 8, "iterations": 3, "compute_s": 1e-5, "message_bytes": 4096},
           "noise": [{"kind": "single", "rank": 3, "start_s": 2e-6, "duration_s": 5e-5}]}
    tl = idlewave.simulate(scn, timeline=True).timeline
    noise = tl["activity"] == 4
    assert noise.sum() == 1 and tl["rank"][noise][0] == 3
    assert (tl["start_ps"][noise][0], tl["end_ps"][noise][0]) == (2_000_000, 52_000_000)
    sends = tl["activity"] == 1
    assert (tl["bytes"][sends] == 4096).all() and (tl["peer"][sends] != tl["rank"][sends]).all()
    from idlewave.timeline import chrome_json

    events = json.loads(chrome_json(tl, 8))["traceEvents"]
    assert any(e["name"] == "noise detour" and e["cat"] == "noise" for e in events)
    send = next(e for e in events if e["name"] == "MPI send overhead")
    assert set(send["args"]) == {"peer", "tag", "bytes"} and send["args"]["bytes"] == 4096
