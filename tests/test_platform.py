"""Platforms: presets, link classes and protocols, mappings, topology,
injection sharing, memory contention and latency regimes, end to end."""


import numpy as np
import pytest

import idlewave
from idlewave import mapping, platform
from idlewave.scenario import ScenarioError, parse_scenario, rank_nodes

pytestmark = pytest.mark.unit


def pingpong(net: dict, size: int, iterations: int = 1) -> float:
    """One-way time of a message of `size` bytes from rank 0 to rank 1 (open BSP of 2 ranks)."""
    r = idlewave.simulate({"network": net, "workload": {"kind": "bsp", "ranks": 2, "iterations": iterations,
                                                         "compute_s": 0.0, "distances": [1], "message_bytes": size,
                                                         "periodic": False}})
    return r.summary["makespan_s"]


@pytest.mark.parametrize("name", sorted(platform.presets()))
def test_every_preset_loads_and_runs(name):
    scn = parse_scenario(f'[network]\nplatform = "{name}"\n[workload]\nkind = "bsp"\nranks = 64\niterations = 2\n')
    assert idlewave.simulate(scn).summary["makespan_s"] > 0


def test_blue_waters_postal_table_per_protocol_and_class():
    """Table 1 of the Krylov paper: T = alpha + beta*n (the engine charges
    (n-1)*beta) per protocol, plus one torus hop between neighbouring nodes."""
    off = {"platform": "blue_waters", "ranks_per_node": 1}
    for size, alpha, beta in [(100, 2.2467e-6, 0.3451e-9), (4000, 7.1826e-6, 0.5092e-9), (100000, 8.9720e-6, 0.1498e-9)]:
        assert pingpong(off, size) == pytest.approx(alpha + beta * (size - 1) + 1.08e-7, rel=1e-9)
    on = {"platform": "blue_waters"}  # 16 per node: ranks 0 and 1 share a node
    for size, alpha, beta in [(100, 1.1284e-6, 0.8154e-9), (4000, 2.3950e-6, 0.0489e-9), (100000, 2.1162e-6, 0.0954e-9)]:
        assert pingpong(on, size) == pytest.approx(alpha + beta * (size - 1), rel=1e-9)


def test_the_engines_congestion_penalty_is_the_postal_models():
    """Krylov paper §5.7: (stalls/byte)·n·n_cores·T_stall·hops, n_cores = 16
    on Blue Waters: 64 KiB between neighbouring nodes at 1 stall per byte."""
    from idlewave.models.postal import PostalPlatform

    def one_way(stalls: float) -> float:
        r = idlewave.simulate({"network": {"platform": "blue_waters", "stalls_per_byte": stalls},
                               "workload": {"kind": "bsp", "ranks": 32, "iterations": 1, "compute_s": 0.0,
                                            "distances": [16], "message_bytes": 65536, "periodic": False}})
        return r.summary["makespan_s"]

    added = one_way(1.0) - one_way(0.0)
    pl = PostalPlatform.from_network(parse_scenario('[network]\nplatform = "blue_waters"\nstalls_per_byte = 1.0\n')["network"])
    assert added == pytest.approx(pl.message(65536, hops=1, congestion=True)["congestion"], rel=1e-6)
    assert added == pytest.approx(65536 * 16 * 1.2e-10, rel=1e-6)  # 125.8 µs

def test_scenario_keys_override_the_platform_file(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('[network]\nL_s = 3e-6\nranks_per_node = 4\n[network.intra_node]\nL_s = 1e-7\n')
    scn = parse_scenario(f'[network]\nplatform = "{f}"\nranks_per_node = 2\n')
    assert scn["network"]["L_s"] == 3e-6 and scn["network"]["ranks_per_node"] == 2
    assert scn["network"]["intra_node"]["L_s"] == 1e-7
    with pytest.raises(ScenarioError, match="network.platform.*neither a preset"):
        parse_scenario('[network]\nplatform = "no_such_machine"\n')


def test_a_platform_file_naming_a_platform_inherits_it_and_never_drops_keys(tmp_path):
    """A file's own `platform` (above or inside [network]) is its base: the
    Blue Waters ping-pong then holds with the file's changes on top."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "bw8.toml").write_text('platform = "blue_waters"\n[network]\nranks_per_node = 8\n')
    (tmp_path / "mine.toml").write_text('[network]\nplatform = "sub/bw8.toml"\nhop_latency_s = 2e-7\n')
    net = parse_scenario(f'[network]\nplatform = "{tmp_path / "mine.toml"}"\n')["network"]
    assert (net["ranks_per_node"], net["L_s"], net["hop_latency_s"]) == (8, 7.1826e-6, 2e-7)
    assert pingpong({"platform": str(tmp_path / "mine.toml"), "ranks_per_node": 1}, 100) == pytest.approx(
        2.2467e-6 + 0.3451e-9 * 99 + 2e-7, rel=1e-9)
    (tmp_path / "loop.toml").write_text('[network]\nplatform = "loop.toml"\n')
    with pytest.raises(ScenarioError, match="network.platform: .*loop.toml: platform files name each other in a cycle"):
        parse_scenario(f'[network]\nplatform = "{tmp_path / "loop.toml"}"\n')
    (tmp_path / "stray.toml").write_text('L_s = 3e-6\n[network]\nranks_per_node = 8\n')
    with pytest.raises(ScenarioError, match="stray.toml: L_s: a platform file's keys belong in \\[network\\]"):
        parse_scenario(f'[network]\nplatform = "{tmp_path / "stray.toml"}"\n')

def test_node_aware_mapping_cuts_off_node_neighbours_and_halo_time():
    grid = [8, 8, 4]
    blocks = mapping.node_blocks(grid, 16)
    assert blocks == [4, 2, 2]
    block = np.arange(256, dtype=np.uint32) // 16
    cart = mapping.cartesian(grid, blocks)
    assert np.bincount(cart).tolist() == [16] * 16
    # 4x2x2 blocks instead of 8x2x1 slabs: a third fewer off-node neighbour pairs
    assert (mapping.off_node_pairs(cart, grid), mapping.off_node_pairs(block, grid)) == (192, 288)
    base = {"kind": "krylov_kernel", "kernel": "halo", "mode": "blocking", "iterations": 3, "grid": grid,
            "local": [32, 32, 32], "overlap_s": 0.0, "trailing_s": 1e-5}
    net = {"ranks_per_node": 16, "G_s_per_byte": 1e-10, "node_bandwidth_bytes_per_s": 5e9,
           "intra_node": {"L_s": 3e-7, "G_s_per_byte": 2e-11}}
    t_block = idlewave.simulate({"network": net, "workload": base}).summary["makespan_s"]
    t_cart = idlewave.simulate({"network": net | {"mapping": {"kind": "cartesian"}}, "workload": base}).summary["makespan_s"]
    assert t_cart < 0.8 * t_block


def test_grid2d_and_file_mappings(tmp_path):
    # a 4x4 dense grid with 2x2 processes per node
    nodes = rank_nodes(parse_scenario(
        '[network]\nranks_per_node = 4\n[network.mapping]\nkind = "grid2d"\nnode_grid = [2, 2]\n'
        '[workload]\nkind = "dense2d"\ngrid = [4, 4]\n'))
    assert nodes[:8] == [0, 0, 1, 1, 0, 0, 1, 1]
    f = tmp_path / "map.txt"
    f.write_text("# node per rank\n" + "\n".join(str(r % 2) for r in range(8)) + "\n")
    scn = parse_scenario(f'[network]\nranks_per_node = 4\n[network.mapping]\nkind = "file"\npath = "{f}"\n'
                         '[workload]\nranks = 8\n')
    assert rank_nodes(scn) == [0, 1] * 4
    f.write_text("0\nx\n")
    with pytest.raises(ScenarioError, match=r"map\.txt:2: expected a node number"):
        rank_nodes(scn)


def test_memory_contention_slows_a_saturated_socket_and_reports_saturation():
    net = {"ranks_per_node": 20, "ranks_per_socket": 10,
           "memory": {"socket_bandwidth_bytes_per_s": 40e9, "core_bandwidth_bytes_per_s": 10e9}}
    triad = {"kind": "stream_triad", "iterations": 5, "elements_per_rank": 1_000_000, "bytes_per_element": 24,
             "message_bytes": 8, "barrier": True}
    few = idlewave.simulate({"network": net, "workload": triad | {"ranks": 4}})
    many = idlewave.simulate({"network": net, "workload": triad | {"ranks": 20}})
    assert few.summary["memory_saturation_ranks"] == 4.0
    sweep = 24e6 / 10e9
    assert few.summary["compute_s"]["max"] == pytest.approx(sweep, rel=1e-6)
    # 10 ranks per socket share 40 GB/s: 2.5x slower sweeps
    assert many.summary["compute_s"]["p50"] == pytest.approx(2.5 * sweep, rel=0.05)


def test_latency_regimes_switch_message_times():
    net = {"L_s": 1e-6, "o_s": 0.0, "g_s": 0.0, "G_s_per_byte": 0.0,
           "regimes": [{"classes": ["inter_node"], "step_s": 1e-5, "transition": [[0.9, 0.1], [0.1, 0.9]],
                        "multiplier": [1.0, 5.0]}]}
    r = idlewave.simulate({"network": net, "workload": {"kind": "bsp", "ranks": 2, "iterations": 2000, "compute_s": 1e-5,
                                                        "distances": [1], "periodic": False}})
    comm = r.timers["comm"][0]
    fast, slow = np.isclose(comm, 1e-6, rtol=1e-6), np.isclose(comm, 5e-6, rtol=1e-6)
    assert fast.sum() > 300 and slow.sum() > 300 and (fast | slow).mean() > 0.9
    again = idlewave.simulate({"network": net, "workload": {"kind": "bsp", "ranks": 2, "iterations": 2000,
                                                            "compute_s": 1e-5, "distances": [1], "periodic": False}})
    assert np.array_equal(again.timers["comm"], r.timers["comm"])  # same seed, same trajectory
    with pytest.raises(ScenarioError, match=r"network.regimes\[0\].transition\[1\]: probabilities must sum to 1"):
        parse_scenario('[[network.regimes]]\ntransition = [[1.0, 0.0], [0.5, 0.6]]\nmultiplier = [1.0, 2.0]\n')


def test_a_scenario_table_of_another_kind_replaces_the_platform_files(tmp_path):
    f = tmp_path / "ft.toml"
    f.write_text('[network]\nranks_per_node = 2\n[network.topology]\nkind = "fat_tree"\nradix = 48\n')
    same = parse_scenario(f'[network]\nplatform = "{f}"\n[network.topology]\nkind = "fat_tree"\n')
    assert same["network"]["topology"] == {"kind": "fat_tree", "radix": 48}  # same kind: merged key by key
    other = parse_scenario(f'[network]\nplatform = "{f}"\n[network.topology]\nkind = "torus"\ndims = [2, 2, 2]\n')
    assert other["network"]["topology"] == {"kind": "torus", "dims": [2, 2, 2]}  # no stray radix


def test_auto_allreduce_follows_the_platforms_mpi_library():
    """8 B on 1,024 ranks: Open MPI's rule runs reduce + bcast, MPICH's recursive doubling."""
    def makespan(algorithm: str, library: str | None = None) -> float:
        net = {"mpi_library": library} if library else {}
        return idlewave.simulate({"network": net, "workload": {"kind": "collective", "collective": "allreduce",
                                                               "algorithm": algorithm, "ranks": 1024, "iterations": 2}}
                                 ).summary["makespan_s"]

    assert makespan("auto") == makespan("reduce_bcast") == makespan("auto", "openmpi")
    assert makespan("auto", "mpich") == makespan("recursive_doubling") != makespan("reduce_bcast")
    with pytest.raises(ScenarioError, match="network.mpi_library"):
        parse_scenario('[network]\nmpi_library = "intel"\n')


def test_node_traffic_counters_count_what_leaves_and_enters_each_node():
    """The summary's per-node off-node bytes: a periodic ring of 8 ranks, 2
    per node, sends 2 messages off each node per iteration."""
    r = idlewave.simulate({"network": {"ranks_per_node": 2}, "workload": {"kind": "bsp", "ranks": 8, "iterations": 5,
                                                                          "message_bytes": 1000, "periodic": True}})
    s = r.summary
    assert (s["off_node_bytes"], s["node_bytes_out_max"], s["node_bytes_in_mean"]) == (4 * 10_000, 10_000, 10_000)
    # on one node nothing leaves it; with no nodes there is nothing to count
    one = idlewave.simulate({"network": {"ranks_per_node": 8}, "workload": {"kind": "bsp", "ranks": 8, "iterations": 5}})
    assert one.summary["off_node_bytes"] == 0
    assert "off_node_bytes" not in idlewave.simulate({"workload": {"kind": "bsp", "ranks": 8, "iterations": 2}}).summary


def test_link_counters_follow_the_routes_of_each_topology():
    """A periodic ring of 8 ranks, one per node, 10 iterations of 1,000 B
    each way: on an 8-node torus ring every directed x link carries
    10,000 B (a third of the torus's 6 links per node are used); on a fat
    tree of 2-node leaves a leaf's 2 links up carry the 2 messages that
    leave it, 10,000 B each; on a dragonfly of 4-node groups the one global
    link out of a group carries both messages that leave it."""
    def links(topology: dict) -> tuple[float, float]:
        s = idlewave.simulate({"network": {"topology": topology}, "workload": {
            "kind": "bsp", "ranks": 8, "iterations": 10, "message_bytes": 1000, "periodic": True}}).summary
        return s["link_bytes_max"], s["link_bytes_mean"]

    assert links({"kind": "torus", "dims": [8, 1, 1]}) == (10_000, pytest.approx(10_000 / 3))
    assert links({"kind": "fat_tree", "radix": 4})[0] == 10_000
    assert links({"kind": "dragonfly", "nodes_per_router": 2, "routers_per_group": 2}) == (20_000, 20_000)
    # a torus far larger than memory is refused before its counters are allocated
    with pytest.raises(idlewave.MemoryLimitError, match="memory"):
        idlewave.simulate({"network": {"topology": {"kind": "torus", "dims": [4000, 4000, 4000]}},
                           "workload": {"kind": "bsp", "ranks": 8, "iterations": 1}})


def test_latency_chains_per_link_are_seeded_and_their_own():
    """scope = "link": each torus link has a chain; the run is reproducible,
    changes with the seed, and differs from one chain for the network."""
    def makespan(scope: str, seed: int = 1) -> float:
        regime = {"transition": [[0.95, 0.05], [0.05, 0.95]], "multiplier": [1.0, 20.0], "step_s": 1e-6, "scope": scope}
        return idlewave.simulate({"seed": seed, "network": {"topology": {"kind": "torus", "dims": [16, 1, 1]},
                                                            "regimes": [regime]},
                                  "workload": {"kind": "bsp", "ranks": 16, "iterations": 50, "compute_s": 1e-6,
                                               "periodic": True}}).summary["makespan_s"]

    link = makespan("link")
    assert link == makespan("link") != makespan("link", seed=2)
    assert link != makespan("network")
    # a fat tree whose 16 nodes all hang off one leaf switch has no link to follow: refused, not ignored
    with pytest.raises(idlewave.SimulationError, match="no link to follow"):
        idlewave.simulate({"network": {"topology": {"kind": "fat_tree", "radix": 36},
                                       "regimes": [{"transition": [[1.0]], "multiplier": [2.0], "scope": "link"}]},
                           "workload": {"kind": "bsp", "ranks": 16, "iterations": 1}})


def test_a_2d_node_grid_cuts_what_each_nic_carries_in_lu():
    """2-D grid paper §3.2.1: 6×6 ranks on 6 nodes; a node holding a 2×3
    block of the grid instead of a grid row sends less off the node (the
    paper's example: 5n²/3 instead of 2n² per NIC, 17% less)."""
    run = lambda mapping: idlewave.simulate({"network": {"ranks_per_node": 6, "mapping": mapping},
                                             "workload": {"kind": "dense2d", "kernel": "lu", "grid": [6, 6], "blocks": 12}}).summary
    block, grid = run({"kind": "block"}), run({"kind": "grid2d", "node_grid": [2, 3]})
    assert 0.78 < grid["node_bytes_out_mean"] / block["node_bytes_out_mean"] < 0.85


@pytest.mark.parametrize("text, line, says", [
    ("L_s = 3e-6\nfoo = 1\n", 2, "network.foo: unknown key"),
    ("[network]\nL_s = -1\n", 2, "network.L_s: must be >= 0"),
    ('[network]\nL_s = "3e-6"\n', 2, "network.L_s: expected a number"),
    ("[network]\n[network.topology]\nkind = \"torus\"\ndims = [2, -2]\n", 4, "network.topology.dims"),
])
def test_a_mistake_in_a_platform_file_is_reported_at_its_own_line(tmp_path, text, line, says):
    """It was blamed on the scenario's first line (or no line), where the key is not."""
    (tmp_path / "mine.toml").write_text(text)
    scn = tmp_path / "s.toml"
    scn.write_text('[network]\nplatform = "mine.toml"\n[workload]\nkind = "bsp"\nranks = 4\n')
    with pytest.raises(ScenarioError) as e:
        idlewave.simulate(scn)
    assert f"{tmp_path / 'mine.toml'}:{line}:" in str(e.value) and says in str(e.value), str(e.value)
    assert e.value.key == "network.platform" and f"{scn}:2:" in str(e.value)
