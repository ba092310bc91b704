"""Shared links ([network.links]) from a scenario: a shift across a tapered
fat tree takes taper times longer, incast ends as LogGOPSim's receiving NIC
has it, the summary's per-class link counters add up, explain names the link a
path waited on and measures the bandwidths' pull, the timeline carries each
class's flows, and bad keys are refused with their key path."""

import json

import pytest

import idlewave
from idlewave.scenario import ScenarioError

pytestmark = pytest.mark.unit

# 1 µs latency, no overheads, 1 GB/s NICs (1 ns per byte), eager at every size
NIC = {"L_s": 1e-6, "o_s": 0.0, "g_s": 0.0, "G_s_per_byte": 1e-9, "S_bytes": 1 << 40, "ranks_per_node": 1}
SIZE = 1_000_001  # the per-byte terms count size − 1 = 1 MB: 1 ms at 1 GB/s


def shift(links: dict, ranks: int = 64, topology: dict | None = None) -> dict:
    """Every rank of the lower half sends SIZE bytes to the one half the machine away and back (one BSP step)."""
    net = {**NIC, "topology": topology or {"kind": "fat_tree", "radix": 8}, "links": links}
    r = idlewave.simulate({"network": net, "workload": {"kind": "bsp", "ranks": ranks, "iterations": 1, "compute_s": 0.0,
                                                         "distances": [ranks // 2], "message_bytes": SIZE,
                                                         "periodic": False}})
    return r.summary


@pytest.mark.parametrize("taper", [1.0, 2.0, 4.0])
def test_a_shift_across_a_tapered_fat_tree_moves_at_the_uplinks_share(taper):
    """d-mod-k gives each message of the shift its own links: each moves at
    min(NIC, link / taper), both ways at once."""
    s = shift({"model": "flow", "bandwidth_bytes_per_s": 1e9, "taper": taper})
    assert s["makespan_s"] == pytest.approx(1e-6 + taper * 1e-3, rel=1e-9)
    assert s["flow_messages"] == 64
    # every message crossed the top of the tree: 64 MB up and 64 MB down per level
    for level in (1, 2):
        assert s[f"links_up_{level}_bytes"] == s[f"links_down_{level}_bytes"] == 64 * (SIZE - 1)
        assert s[f"links_up_{level}_peak_flows"] == 1
    assert s["links_up_1_busy_max_s"] == pytest.approx(taper * 1e-3, rel=1e-9)


def test_without_shared_links_the_taper_changes_nothing():
    """model = "none" is LogGOPSim's network: the same run at every taper."""
    times = [shift({"model": "none", "bandwidth_bytes_per_s": 1e9, "taper": t})["makespan_s"] for t in (1.0, 4.0)]
    assert times[0] == times[1] == pytest.approx(1e-6 + 1e-3, rel=1e-9)


def test_link_keys_that_model_none_ignores_are_warned_about_not_refused():
    """A sweep over model = ["none", "flow"] gives both the links' keys: with
    "none" each one that is not its default is named in a warning (it was
    silently ignored), and the run is LogGOPSim's as without it."""
    given = {"bandwidth_bytes_per_s": 1e9, "taper": 4.0, "routing": "random", "resolve_interval_s": 1e-6}
    s = shift({"model": "none", **given})
    assert s["makespan_s"] == shift({"model": "none"})["makespan_s"]
    for key, shown in (("bandwidth_bytes_per_s", "1e+09"), ("taper", "4"), ("routing", '"random"'),
                       ("resolve_interval_s", "1e-06")):
        assert any(w.startswith(f"network.links.{key} = {shown} has no effect with model = \"none\"")
                   for w in s["warnings"]), (key, s["warnings"])
    assert len(s["warnings"]) == 4
    dragonfly = {"kind": "dragonfly", "nodes_per_router": 1, "routers_per_group": 4}
    s = shift({"global_bandwidth_bytes_per_s": 1e8}, ranks=8, topology=dragonfly)  # (model "none" by default)
    assert [w.split(" = ")[0] for w in s["warnings"]] == ["network.links.global_bandwidth_bytes_per_s"]
    # with "flow" they count, and at their defaults they say nothing
    assert "warnings" not in shift({"model": "flow", **given})
    assert "warnings" not in shift({"model": "none", "taper": 1.0})


def test_random_up_paths_collide_where_d_mod_k_does_not():
    d_mod_k = shift({"model": "flow", "bandwidth_bytes_per_s": 1e9, "routing": "d_mod_k"})["makespan_s"]
    random = shift({"model": "flow", "bandwidth_bytes_per_s": 1e9, "routing": "random"})
    assert random["makespan_s"] > d_mod_k
    assert max(random[f"links_up_{k}_peak_flows"] for k in (1, 2)) >= 2
    assert random["flow_delay_s"] > 0


def test_a_dragonflys_minimal_routing_funnels_a_group_through_one_global_link():
    """32 nodes in 8 groups of 4: the lower half (groups 0–3) exchanges with
    the upper (4–7), so each group's 4 messages share one global link under
    minimal routing (4 ms); Valiant spreads them over the other groups."""
    dragonfly = {"kind": "dragonfly", "nodes_per_router": 1, "routers_per_group": 4}
    links = {"model": "flow", "bandwidth_bytes_per_s": 1e9}
    minimal = shift({**links, "routing": "minimal"}, ranks=32, topology=dragonfly)
    assert minimal["makespan_s"] == pytest.approx(1e-6 + 4e-3, rel=1e-9)
    assert minimal["links_global_peak_flows"] == 4
    valiant = shift({**links, "routing": "valiant"}, ranks=32, topology=dragonfly)
    assert valiant["makespan_s"] < minimal["makespan_s"]


@pytest.mark.parametrize("routing", ["valiant", "ugal"])
def test_detours_on_a_dragonfly_of_two_groups_are_said_to_be_minimal(routing):
    """With no third group to pass through, Valiant and UGAL route as minimal
    does: the run says so instead of leaving the user to think they detoured."""
    dragonfly = {"kind": "dragonfly", "nodes_per_router": 1, "routers_per_group": 4}
    links = {"model": "flow", "bandwidth_bytes_per_s": 1e9}
    two = shift({**links, "routing": routing}, ranks=8, topology=dragonfly)
    assert two["makespan_s"] == shift({**links, "routing": "minimal"}, ranks=8, topology=dragonfly)["makespan_s"]
    assert any("8 nodes fill 2 groups" in w and "minimal" in w for w in two["warnings"])
    assert "warnings" not in shift({**links, "routing": routing}, ranks=32, topology=dragonfly)


@pytest.mark.parametrize("links, key, words", [
    ({"model": "flow"}, "network.links.bandwidth_bytes_per_s", "bandwidth"),
    ({"model": "flow", "bandwidth_bytes_per_s": 1e9, "routing": "valiant"}, "network.links.routing", "d_mod_k"),
    ({"taper": 0.5}, "network.links.taper", ">= 1"),
    ({"model": "fifo"}, "network.links.model", "none"),
    ({"model": "flow", "bandwidth_bytes_per_s": 1e9, "resolve_interval_s": -1e-7}, "network.links.resolve_interval_s",
     "between 0 and 1"),
    ({"model": "flow", "bandwidth_bytes_per_s": 1e9, "resolve_interval_s": 5.0}, "network.links.resolve_interval_s",
     "between 0 and 1"),
])
def test_bad_link_keys_are_refused_with_their_path(links, key, words, topology=None):
    net = {**NIC, "topology": topology or {"kind": "fat_tree", "radix": 8}, "links": links}
    with pytest.raises(ScenarioError) as e:
        idlewave.simulate({"network": net, "workload": {"kind": "bsp", "ranks": 8, "iterations": 1}})
    assert e.value.key == key and words in str(e.value)


@pytest.mark.parametrize("topology, links, key, words", [
    # a taper where no up-link is would be read, and do nothing
    ({"kind": "torus", "dims": [2, 2, 2]}, {"taper": 2.0}, "network.links.taper", "a torus topology has none"),
    ({"kind": "dragonfly"}, {"model": "flow", "bandwidth_bytes_per_s": 1e9, "taper": 2.0}, "network.links.taper", "dragonfly"),
])
def test_keys_that_do_not_fit_the_topology_are_refused_with_their_path(topology, links, key, words):
    test_bad_link_keys_are_refused_with_their_path(links, key, words, topology)


def test_an_odd_radix_is_refused_with_its_path():
    """It would leave a port of every switch unused (the tree takes radix/2 down, radix/2 up)."""
    net = {**NIC, "topology": {"kind": "fat_tree", "radix": 5}}
    with pytest.raises(idlewave.SimulationError) as e:
        idlewave.simulate({"network": net, "workload": {"kind": "bsp", "ranks": 8, "iterations": 1}})
    assert e.value.key == "network.topology.radix" and "must be even" in str(e.value)


def test_a_resolve_interval_below_a_messages_wire_time_keeps_the_makespan_and_cuts_the_work():
    """A PCG's 27-point halo on `blue_waters` with flow links: every flow of
    the iteration is in one component, and each end re-solved all of them.
    Re-solved once per 100 ns instead (a face's 3,200 bytes take 0.33 µs at
    9.6 GB/s), the makespan moves by under 1% and the run takes a fraction
    of the CPU time."""
    import time

    def pcg(interval: float) -> tuple[float, float]:
        links = {"model": "flow", "bandwidth_bytes_per_s": 9.6e9, "resolve_interval_s": interval}
        t = time.process_time()
        r = idlewave.simulate({"network": {"platform": "blue_waters", "links": links},
                               "workload": {"kind": "krylov", "method": "pcg", "grid": [6, 6, 6], "local": [20, 20, 20],
                                            "stencil": 27, "iterations": 2}})
        return r.summary["makespan_s"], time.process_time() - t

    (exact, exact_cpu), (batched, batched_cpu) = pcg(0.0), pcg(1e-7)
    assert batched == pytest.approx(exact, rel=0.01) and batched != exact
    assert batched_cpu < exact_cpu / 3, (batched_cpu, exact_cpu)
    # a coarse interval shows the trade: later by far more
    assert pcg(1e-5)[0] > 1.1 * exact


def test_explain_names_the_uplink_a_shift_waits_on_and_its_bandwidths_pull():
    """A shift across a 4:1 tapered tree: each message alone at the uplink's
    quarter of a NIC, so of its 4 ms the NIC's (s − 1)·G is 1 ms and the
    links' 3 ms, named on the route; more or less link bandwidth moves the
    makespan almost in proportion (elasticity near −1), and not at all on
    untapered links twice as fast as a NIC, where the NICs set the pace."""
    from idlewave.explain import link_sensitivity

    def scenario(taper, bandwidth=1e9):
        net = {**NIC, "topology": {"kind": "fat_tree", "radix": 8},
               "links": {"model": "flow", "bandwidth_bytes_per_s": bandwidth, "taper": taper}}
        return {"network": net, "workload": {"kind": "bsp", "ranks": 64, "iterations": 1, "compute_s": 0.0,
                                             "distances": [32], "message_bytes": SIZE, "periodic": False}}
    r = idlewave.simulate(scenario(4.0), explain=True)
    x = r.explain
    causes = x.causes_s()
    assert causes["nic_gap"] == pytest.approx(1e-3, rel=1e-9)
    assert causes["penalty"] == pytest.approx(3e-3, rel=1e-9)
    links = x.links_on_path()
    assert links["wait_s"] == pytest.approx(3e-3, rel=1e-9)
    assert links["links"][0]["link"].startswith(("up_", "down_"))
    assert x.derivatives()["G"] == 0, "the links, not G, set the pace"
    [row] = link_sensitivity(scenario(4.0), x.makespan_s)
    assert row["key"] == "network.links.bandwidth_bytes_per_s"
    assert -1.02 < row["elasticity"] < -0.95
    # bandwidth × 1.1: the 3 + 1 ms become 4/1.1 ms (the NIC's share is a link's too)
    assert row["makespan_higher_s"] == pytest.approx(4e-3 / 1.1 + 1e-6, rel=1e-6)
    base = idlewave.simulate(scenario(1.0, 2e9), explain=True).explain
    assert base.links_on_path() == {}
    assert base.derivatives()["G"] > 0
    [flat] = link_sensitivity(scenario(1.0, 2e9), base.makespan_s)
    assert flat["makespan_lower_s"] == pytest.approx(base.makespan_s, rel=1e-12)
    assert flat["elasticity"] == 0.0


def test_the_timeline_carries_each_link_classs_flows():
    """With a timeline, each class of link's flows in flight and busy links
    become counter tracks: the most at once on the receiving NICs of a
    one-step shift is one flow per link (each rank receives one message),
    and every class ends with none."""
    from idlewave.timeline import chrome_json

    net = {**NIC, "topology": {"kind": "fat_tree", "radix": 8},
           "links": {"model": "flow", "bandwidth_bytes_per_s": 1e9, "taper": 4.0}}
    scn = {"network": net, "workload": {"kind": "bsp", "ranks": 64, "iterations": 1, "compute_s": 0.0,
                                        "distances": [32], "message_bytes": SIZE, "periodic": False}}
    tl = idlewave.simulate(scn, timeline=True).timeline
    links = tl["links"]
    assert "nic_in" in links["classes"] and "up_1" in links["classes"]
    nic = links["classes"].index("nic_in")
    sel = links["class"] == nic
    assert (links["flows"][sel] == links["busy"][sel]).all(), "one flow per receiving NIC"
    for k in range(len(links["classes"])):
        assert links["flows"][links["class"] == k][-1] == 0
    counters = [e for e in json.loads(chrome_json(tl, 64))["traceEvents"] if e["ph"] == "C"]
    assert len(counters) == links["t_ps"].size
    plain = idlewave.simulate({**scn, "network": {**net, "links": {"model": "none"}}}, timeline=True).timeline
    assert "links" not in plain
