"""The Python API end to end: closed forms, determinism, results on disk, errors."""

import json
import math

import numpy as np
import polars as pl
import pytest

import idlewave
from conftest import EXAMPLES
from idlewave import DeadlockError, MemoryLimitError, ScenarioError, SimulationError, UnmatchedError

pytestmark = pytest.mark.unit

L, O, G_, GB = 2.5e-6, 1.5e-6, 1.0e-6, 6e-9  # LogGOPSim defaults


def bsp(ranks=16, iterations=10, compute_s=1e-4, **kw):
    return {"workload": {"kind": "bsp", "ranks": ranks, "iterations": iterations, "compute_s": compute_s, **kw}}


def test_noiseless_bsp_iteration_time_is_the_loggops_closed_form():
    size = 8
    r = idlewave.simulate(bsp(message_bytes=size))
    recv = O + (size - 1) * GB  # o + max((s-1)O, (s-1)G) with O = 0
    spacing = max(O, G_ + (size - 1) * GB)
    period = 1e-4 + O + L + max(recv, spacing) + recv
    it = r.timers["iteration"]
    assert it.shape == (16, 10)
    assert np.allclose(it, period, rtol=0, atol=1e-15)
    assert r.summary["makespan_s"] == pytest.approx(10 * period, rel=1e-12)
    assert np.allclose(r.timers["compute"], 1e-4)


def test_collective_loop_with_goal_equivalent_gives_identical_times(tmp_path):
    from idlewave import _engine
    from idlewave.scenario import checked

    scn = checked({"workload": {"kind": "collective", "collective": "allreduce", "ranks": 13, "iterations": 3, "compute_s": 2e-6}})
    goal = tmp_path / "a.goal"
    goal.write_text(_engine.export_goal_text(scn))
    direct = idlewave.simulate(scn.to_dict())
    via_goal = idlewave.simulate({"workload": {"kind": "goal", "path": str(goal)}})
    assert np.array_equal(direct.finish_times_ps, via_goal.finish_times_ps)
    # auto on 13 ranks, 8 B: Open MPI's rule runs recursive doubling, 8·3 messages among the
    # 8-rank core plus 2 for each of the 5 folded ranks; each sent and received
    assert direct.summary["events"] == via_goal.summary["events"] == 3 * (8 * 3 + 2 * 5) * 2 + 3 * 13


def test_same_seed_bit_identical_different_seed_differs(tmp_path):
    scn = bsp(ranks=32, iterations=40, barrier=True) | {"noise": [{"kind": "poisson", "rate_hz": 3000.0, "duration_s": 2e-5}]}
    a = idlewave.simulate(scn, seed=5)
    b = idlewave.simulate(scn, seed=5)
    c = idlewave.simulate(scn, seed=6)
    assert np.array_equal(a.finish_times_ps, b.finish_times_ps)
    for name in a.timers:
        assert np.array_equal(a.timers[name], b.timers[name], equal_nan=True)
    assert not np.array_equal(a.finish_times_ps, c.finish_times_ps)
    a.write(tmp_path / "a")
    b.write(tmp_path / "b")
    for f in ("ranks.parquet", "timers.parquet"):
        assert pl.read_parquet(tmp_path / "a" / f).equals(pl.read_parquet(tmp_path / "b" / f))


def test_results_are_written_completely_and_atomically(tmp_path):
    r = idlewave.simulate(bsp(ranks=8, iterations=5, barrier=True))
    out = r.write(tmp_path / "run")
    names = sorted(p.name for p in out.iterdir())
    # no temporaries left; the list of what the result holds (idlewave.results.MANIFEST) names them
    assert names == [".idlewave-result", "ranks.parquet", "scenario.json", "summary.json", "timers.parquet"]
    assert (out / ".idlewave-result").read_text().split() == names[1:]
    timers = pl.read_parquet(out / "timers.parquet")
    assert timers.columns == ["rank", "iteration", "iteration_s", "compute_s", "comm_s", "barrier_s"]
    assert timers.height == 8 * 5
    summary = json.loads((out / "summary.json").read_text())
    for key in ("makespan_s", "events", "events_per_s", "wall_s", "peak_memory_bytes", "ranks", "iterations", "seed"):
        assert key in summary
    assert summary["events"] == r.summary["events"]
    ranks = pl.read_parquet(out / "ranks.parquet")
    assert ranks["finish_s"].max() == pytest.approx(summary["makespan_s"])
    # rewriting over an existing result replaces it whole
    r2 = idlewave.simulate(bsp(ranks=8, iterations=7))
    r2.write(out)
    assert pl.read_parquet(out / "timers.parquet").height == 8 * 7


def test_a_single_delay_travels_as_an_idle_wave():
    # One 1 ms delay on rank 32 of an open chain: neighbours at distance k
    # feel it about k iterations later.
    r = idlewave.simulate(EXAMPLES / "idle-wave.toml")
    it = r.timers["iteration"]
    late = it > 5e-4
    first = {rank: int(np.argmax(late[rank])) for rank in (32, 36, 40, 48) if late[rank].any()}
    assert first[32] <= first[36] < first[40] < first[48]
    # the wave spreads one rank per iteration (next-neighbour exchange)
    assert first[48] - first[32] == pytest.approx(16, abs=2)


def test_noise_on_one_rank_slows_everyone():
    quiet = idlewave.simulate(bsp(iterations=100))
    noisy = idlewave.simulate(
        bsp(iterations=100) | {"noise": [{"kind": "periodic", "period_s": 1e-3, "duration_s": 2e-4, "ranks": [3]}]}
    )
    stretch = 100 * 1e-4 * (1 / 0.8 - 1)
    assert noisy.finish_times_s.min() > quiet.summary["makespan_s"] + 0.9 * stretch
    # the others wait in communication
    assert noisy.timers["comm"][8].sum() > quiet.timers["comm"][8].sum() + 0.8 * stretch


def test_bad_scenarios_give_clear_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[workload]\nkind = 'bsp'\nranks = 'many'\n")
    with pytest.raises(ScenarioError, match=r"workload\.ranks"):
        idlewave.simulate(bad)
    with pytest.raises(ScenarioError, match=r"network\.L_s"):
        idlewave.simulate({"network": {"L_s": -1.0}})


def test_failures_are_typed_and_all_simulation_errors():
    assert all(issubclass(e, SimulationError) for e in (DeadlockError, UnmatchedError, MemoryLimitError))
    assert issubclass(SimulationError, ValueError)


def test_deadlock_is_reported_with_ranks_and_peers(tmp_path):
    goal = tmp_path / "dead.goal"
    goal.write_text("num_ranks 2\nrank 0 {\nr: recv 8b from 1 tag 0\ns: send 8b to 1 tag 0\ns requires r\n}\n"
                    "rank 1 {\nr: recv 8b from 0 tag 0\ns: send 8b to 0 tag 0\ns requires r\n}\n")
    with pytest.raises(DeadlockError, match=r"deadlock: 2 of 2 ranks.*rank 0.*receive from rank 1 \(tag 0\)"):
        idlewave.simulate({"workload": {"kind": "goal", "path": str(goal)}})


def test_unmatched_message_is_reported(tmp_path):
    goal = tmp_path / "lost.goal"
    goal.write_text("num_ranks 2\nrank 0 {\ns: send 8b to 1 tag 4\n}\nrank 1 {\n}\n")
    with pytest.raises(UnmatchedError, match=r"message from rank 0 to rank 1 \(tag 4, 8 B\) was never received"):
        idlewave.simulate({"workload": {"kind": "goal", "path": str(goal)}})


def test_runs_too_large_for_memory_are_refused_before_allocating():
    scn = bsp(ranks=2**31, iterations=10**6)
    with pytest.raises(MemoryLimitError, match=r"needs about .* GiB"):
        idlewave.simulate(scn)
    with pytest.raises(MemoryLimitError, match=r"max_memory_bytes"):
        idlewave.simulate(bsp(ranks=4096, iterations=1000) | {"limits": {"max_memory_bytes": 10**6}})


def test_summary_reports_events_and_memory():
    r = idlewave.simulate(bsp(ranks=64, iterations=20))
    s = r.summary
    assert s["events"] == 64 * 20 * 5  # compute + 2 sends + 2 receives per iteration
    assert s["peak_memory_bytes"] > 0 and s["wall_s"] > 0
    assert math.isclose(s["iteration_s"]["mean"], float(r.timers["iteration"].mean()))


@pytest.mark.parametrize(
    "collective,algorithm",
    [("allreduce", "recursive_doubling"), ("allreduce", "ring"), ("allreduce", "reduce_bcast"), ("bcast", "binary_tree"),
     ("bcast", "pipelined_ring"), ("bcast", "two_ring_modified"), ("gather", "binomial"), ("scatter", "binomial"), ("allgather", "ring"), ("alltoall", "pairwise")],
)
def test_collective_algorithms_and_the_ideal_mode(collective, algorithm):
    base = {"kind": "collective", "ranks": 24, "iterations": 5, "collective": collective, "algorithm": algorithm,
            "message_bytes": 4096, "compute_s": 1e-5, "root": 7}
    if algorithm == "pipelined_ring":
        base["chunk_bytes"] = 1024
    blocking = idlewave.simulate({"workload": base})
    ideal = idlewave.simulate({"workload": base | {"mode": "ideal"}})
    # the ideal nonblocking collective costs nothing: only the computation remains
    assert ideal.summary["makespan_s"] == pytest.approx(5 * 1e-5, abs=1e-15)
    assert blocking.summary["makespan_s"] > ideal.summary["makespan_s"]
    assert blocking.summary["events"] > ideal.summary["events"] == 24 * 5


def test_nonblocking_allreduce_needs_progress_to_overlap():
    """krylov-postal-models §4: without a progress thread, a nonblocking
    collective only advances inside MPI calls; testing in chunks or a
    progress thread recovers the overlap."""
    base = {"kind": "collective", "collective": "allreduce", "ranks": 32, "iterations": 3, "compute_s": 2e-4}
    t = {}
    for name, extra, asyn in [("blocking", {}, False), ("nb", {"mode": "nonblocking"}, False),
                              ("nb_test", {"mode": "nonblocking", "test_chunks": 10}, False),
                              ("nb_async", {"mode": "nonblocking"}, True), ("ideal", {"mode": "ideal"}, False)]:
        r = idlewave.simulate({"network": {"async_progress": asyn}, "workload": base | extra})
        t[name] = r.summary["makespan_s"]
    assert t["ideal"] == pytest.approx(3 * 2e-4)
    # a progress thread on its own core hides the whole collective here
    assert t["ideal"] <= t["nb_async"] < t["nb_test"] < t["nb"] < t["blocking"]


def test_skeleton_needs_beta_or_app():
    with pytest.raises(ScenarioError, match="give either beta"):
        idlewave.simulate({"workload": {"kind": "skeleton"}})


def test_spmv_split_wait_overlaps_and_barriers_cost():
    base = {"kind": "spmv", "ranks": 32, "iterations": 20, "rows": 32 * 2000, "bandwidth": 3000,
            "time_per_nonzero_s": 1e-10}
    t = {}
    for mode in ("non_split", "split_wait"):
        for barrier in (True, False):
            r = idlewave.simulate({"workload": base | {"mode": mode, "barrier": barrier}})
            t[mode, barrier] = r.summary["makespan_s"]
            assert set(r.timers) == {"iteration", "exec", "comm"} | ({"barrier"} if barrier else set())
    # split-wait overlaps the exchange with the local product (Listing 2)
    assert t["split_wait", True] < t["non_split", True]
    # each barrier costs at least its log2(p) rounds of o + L + o
    assert t["non_split", True] - t["non_split", False] > 20 * 5 * 5.5e-6 * 0.5
    with pytest.raises(ScenarioError, match="workload.rows"):
        idlewave.simulate({"workload": base | {"rows": 10}})
    with pytest.raises(ScenarioError, match="workload.bandwidth.*partners"):
        idlewave.simulate({"workload": base | {"bandwidth": 2000 * 20}})


def _matvec(hiding, latency_s=2.5e-6, **kw):
    w = {"kind": "fem_matvec", "ranks": 16, "iterations": 60, "hiding": hiding, "elements": 1000,
         "mirror_elements": 100, "element_s": 1e-6, "epsilon_s": 1e-4, "theta": 0.5} | kw
    return idlewave.simulate({"network": {"L_s": latency_s}, "workload": w})


def test_dynamic_alpha_follows_the_exposed_latency():
    """HMM paper §2.4: input latency hidden and output exposed → α → 0; the reverse → α → 1."""
    small, big = 8, 400_000  # a 400 kB message costs ~2.4 ms of G on the receiver: exposed
    out_late = _matvec("dynamic_alpha", input_bytes=small, output_bytes=big)
    in_late = _matvec("dynamic_alpha", input_bytes=big, output_bytes=small)
    assert out_late.timers["alpha"][:, -1].max() < 0.1
    assert in_late.timers["alpha"][:, -1].min() > 0.9
    assert out_late.timers["alpha"][:, 0].tolist() == [0.5] * 16  # starts from alpha0
    fixed = _matvec("fixed_alpha", input_bytes=small, output_bytes=big)
    assert np.all(fixed.timers["alpha"] == 0.5)


def test_mpi_test_infers_alpha_from_when_the_input_arrives():
    fast_input = _matvec("mpi_test", input_bytes=8, output_bytes=8)
    slow_input = _matvec("mpi_test", latency_s=5e-4, input_bytes=8, output_bytes=8)  # 0.5 ms in flight
    a_fast, a_slow = fast_input.timers["alpha"], slow_input.timers["alpha"]
    assert a_fast.max() <= 0.1  # the input is there after the first chunk
    # E1 (50 µs chunks of a 1 ms budget) grows until the input has arrived, ~0.5 ms later
    assert 0.45 <= np.median(a_slow) <= 0.6
    t = fast_input.timers
    assert np.allclose(t["matvec"], t["t_in"] + t["t_out"])
    assert (t["wait_in"] <= t["t_in"]).all() and (t["wait_out"] <= t["t_out"]).all()


def test_stream_triad_is_a_bsp_sweep_with_longer_distance_partners():
    from idlewave.scenario import validate

    scn = validate({"workload": {"kind": "stream_triad", "ranks": 40, "elements_per_rank": 1_000_000,
                                 "core_bandwidth_bytes_per_s": 12e9, "max_distance": 2, "iterations": 3}})
    r = idlewave.simulate(scn)
    assert np.allclose(r.timers["compute"], 2e-3, rtol=0, atol=1e-15)  # 24 MB at 12 GB/s = 2 ms
    # the same BSP loop written out: sweeps, then exchanges with r±1 and r±2, open ends
    bsp = idlewave.simulate({"workload": {"kind": "bsp", "ranks": 40, "iterations": 3, "compute_s": 2e-3,
                                          "distances": [1, 2], "message_bytes": 8192, "periodic": False}})
    assert np.array_equal(r.finish_times_ps, bsp.finish_times_ps)


def test_krylov_family_on_a_3d_grid():
    base = {"kind": "krylov", "iterations": 10, "grid": [4, 2, 2], "local": [16, 16, 16], "stencil": 27,
            "spmv_s": 2e-5, "precond_s": 1.5e-5, "vector_s": 2e-6}
    t = {}
    for method in ("pcg", "sapcg", "nbpcg", "pipecg", "pipe2cg"):
        r = idlewave.simulate({"network": {"async_progress": True}, "workload": base | {"method": method}})
        t[method] = r.summary["makespan_s"]
        assert set(r.timers) == {"iteration", "spmv", "reduce"}
    # fewer and overlapped allreduces finish sooner
    assert t["sapcg"] < t["pcg"] and t["pipecg"] < t["sapcg"]
    with pytest.raises(ScenarioError, match="workload.grid"):
        idlewave.simulate({"workload": base | {"grid": [4, 4]}})


@pytest.mark.parametrize("preset", ["M1", "M3", "M7"])
def test_chebfd_presets_and_modes(preset):
    base = {"kind": "chebfd", "ranks": 640, "subspace": 8, "block": 2, "degree": 3, "preset": preset,
            "kernel_per_vector_s": 2e-4}
    t = {m: idlewave.simulate({"workload": base | {"mode": m}}) for m in ("non_split", "split_wait", "pipeline")}
    for r in t.values():
        assert r.timers["iteration"].shape == (640, 4 * 3)
        assert r.summary["makespan_s"] > 4 * 3 * 2 * 2e-4  # at least the kernels


def test_chebfd_custom_partners_and_errors():
    w = {"kind": "chebfd", "ranks": 16, "subspace": 4, "block": 2, "degree": 2, "preset": "", "offsets": [1, -1, -4],
         "offset_bytes": [1000, 1000, 100]}
    r = idlewave.simulate({"workload": w})
    assert r.summary["events"] > 0
    with pytest.raises(ScenarioError, match="offset_bytes"):
        idlewave.simulate({"workload": w | {"offset_bytes": [1]}})
    with pytest.raises(ScenarioError, match="subspace"):
        idlewave.simulate({"workload": w | {"subspace": 3}})


def test_chebfd_desynchronization_evades_the_memory_bottleneck():
    """Idle-waves paper §3.3: with the kernel memory-bound (the paper's code
    balance for TOPI-EHN, n_b = 2, on Meggie's sockets) removing the barrier
    per polynomial step lets ranks desynchronize and share the socket's
    bandwidth unevenly: the run is faster (P_D > 1). The same kernel made
    core-bound, at the time it takes on a saturated socket, gains nothing."""
    rows = 209_715
    per_vector = int(rows * (260 / 2 + 80))  # bytes: (260/n_b + 80) per row
    full_socket = 34.15e9 / 10  # each of 10 cores' share of a saturated socket
    base = {"kind": "chebfd", "ranks": 200, "subspace": 16, "block": 2, "degree": 10, "mode": "non_split", "preset": "M3"}
    p_d = {}
    for kind, kernel in (("memory", {"kernel_bytes_per_vector": per_vector}),
                         ("core", {"kernel_per_vector_s": per_vector / full_socket})):
        t = {b: idlewave.simulate({"network": {"platform": "meggie"}, "workload": base | kernel | {"barrier": b}})
             for b in (False, True)}
        p_d[kind] = t[True].summary["makespan_s"] / t[False].summary["makespan_s"]
    assert p_d["memory"] > 1.005 and p_d["core"] < 1.001, p_d
    # §3.3: split-wait is slowest (its remote part re-reads the result), and
    # with barriers the pipeline beats non-split
    memory = {"network": {"platform": "meggie"}}
    t = {(m, b): idlewave.simulate(memory | {"workload": base | {"kernel_bytes_per_vector": per_vector, "mode": m,
                                                                 "barrier": b}}).summary["makespan_s"]
         for m in ("non_split", "split_wait", "pipeline") for b in (False, True)}
    for b in (False, True):
        assert t["split_wait", b] > max(t["non_split", b], t["pipeline", b]), t
    assert t["pipeline", True] < t["non_split", True], t
    # a kernel given in bytes needs memory domains to run at
    with pytest.raises(ScenarioError, match="kernel_bytes_per_vector"):
        idlewave.simulate({"workload": base | {"kernel_bytes_per_vector": per_vector}})
    with pytest.raises(ScenarioError, match="kernel_bytes_per_vector: a block's kernel moves 2.47 bytes or more"):
        idlewave.simulate(memory | {"workload": base | {"kernel_bytes_per_vector": 2**64 - 1}})


def test_spmv_from_a_partner_file_matches_the_banded_matrix(tmp_path):
    banded = {"workload": {"kind": "spmv", "ranks": 8, "iterations": 5, "rows": 8000, "bandwidth": 1500,
                           "mode": "split_wait", "time_per_nonzero_s": 1e-9}}
    text = idlewave.spmv_partners(banded)
    assert text.splitlines()[1] == "ranks 8"
    f = tmp_path / "m.txt"
    f.write_text(text)
    from_file = {"workload": banded["workload"] | {"partners_file": str(f), "rows": 8, "bandwidth": 0}}
    a, b = idlewave.simulate(banded), idlewave.simulate(from_file)
    assert a.summary["makespan_ps"] == b.summary["makespan_ps"]
    assert np.array_equal(a.timers["comm"], b.timers["comm"])
    # a mistake in the file is reported with its line
    f.write_text(text.replace("partner 0 1 ", "partner 0 1 9", 1))
    with pytest.raises(idlewave.SimulationError, match=r"m\.txt:\d+: rank 0 sends"):
        idlewave.simulate(from_file)


@pytest.mark.parametrize("kernel", ["lu", "floyd_warshall"])
def test_dense2d_variants_run_and_lookahead_overlaps(kernel):
    base = {"network": {"G_s_per_byte": 1e-9},
            "workload": {"kind": "dense2d", "kernel": kernel, "grid": [3, 3], "blocks": 8, "block": 256,
                         "gemm_flops_per_s": 1e10, "panel_flops_per_s": 2e9}}
    runs = {}
    for name, extra in [("plain", {}), ("combined", {"combined": True, "chunk_bytes": 65536}),
                        ("lookahead", {"lookahead": True, "progress_chunks": 16})]:
        scn = base | {"workload": base["workload"] | extra}
        r = idlewave.simulate(scn)
        runs[name] = r.summary["makespan_s"]
        assert r.timers["iteration"].shape == (9, 8)
    assert runs["lookahead"] < runs["plain"]


def test_dense2d_bad_grid_is_reported():
    with pytest.raises(idlewave.ScenarioError, match="workload.grid"):
        idlewave.simulate({"workload": {"kind": "dense2d", "grid": [2, 2, 2]}})
    with pytest.raises(idlewave.ScenarioError, match="workload.barrier"):
        idlewave.simulate({"workload": {"kind": "dense2d", "lookahead": True, "barrier": True}})


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_every_example_is_a_valid_scenario(path):
    scn = idlewave.load_scenario(path)
    assert scn["workload"]["kind"]


@pytest.mark.parametrize("name", ["hpl_mxp", "floyd_warshall", "grid_bcast", "spmv_partners"])
def test_the_2d_and_partner_file_examples_run(name):
    r = idlewave.simulate(EXAMPLES / f"{name}.toml")
    assert r.summary["makespan_s"] > 0 and r.summary["events"] > 0


def test_krylov_kernels_overlap_when_nonblocking():
    t = {}
    for kernel in ("allreduce", "halo"):
        for mode in ("blocking", "nonblocking"):
            r = idlewave.simulate({"network": {"async_progress": True},
                                   "workload": {"kind": "krylov_kernel", "kernel": kernel, "mode": mode, "iterations": 5,
                                                "grid": [4, 4, 2], "overlap_s": 2e-4, "trailing_s": 1e-5}})
            t[kernel, mode] = r.summary["makespan_s"]
    for kernel in ("allreduce", "halo"):
        assert 5 * 2.1e-4 - 1e-12 <= t[kernel, "nonblocking"] < t[kernel, "blocking"]


def test_progress_reports_the_share_done_where_iterations_tell_it():
    # 4,096 ranks × 200 iterations: several chunks of ~1M events
    scn = {"workload": {"kind": "bsp", "ranks": 4096, "iterations": 200, "compute_s": 1e-5, "distances": [1],
                        "message_bytes": 64}}
    seen = []
    r = idlewave.simulate(scn, progress=lambda sim_s, events, done: seen.append((events, done)) or True)
    assert len(seen) >= 3 and all(d is not None and 0 <= d <= 1 for _, d in seen)
    # it grows with the events, in step with them (BSP: each iteration costs the same)
    for events, done in seen:
        assert done == pytest.approx(events / r.summary["events"], abs=0.05)
    assert [d for _, d in seen] == sorted(d for _, d in seen)
    # a two-argument callback is still called as before
    calls = []
    idlewave.simulate(scn, progress=lambda sim_s, events: calls.append(events) or True)
    assert calls == [e for e, _ in seen]
    # without timers there are no iterations to count
    quiet = []
    idlewave.simulate({**scn, "record": {"timers": False}}, progress=lambda s, e, done: quiet.append(done) or True)
    assert quiet and all(d is None for d in quiet)


def test_the_summary_names_the_algorithm_auto_chose():
    # Open MPI's rules: 8 bytes on 16,384 ranks is a reduce, then a broadcast;
    # 1 MiB on 64 ranks is Rabenseifner's reduce-scatter and allgather
    scn = idlewave.load_scenario(EXAMPLES / "allreduce.toml")
    scn["workload"] |= {"iterations": 1}
    assert idlewave.simulate(scn).summary["algorithm"] == "reduce_bcast"
    scn["workload"] |= {"ranks": 64, "message_bytes": 1 << 20}
    assert idlewave.simulate(scn).summary["algorithm"] == "rabenseifner"


def test_goal_files_take_any_mapping_once_their_rank_count_is_read(tmp_path):
    # rank 0 sends to rank 1: on one node under block mapping (2 per node), on two under round robin
    goal = tmp_path / "p.goal"
    goal.write_text("num_ranks 4\nrank 0 {\ns: send 8b to 1 tag 0\n}\nrank 1 {\nr: recv 8b from 0 tag 0\n}\n"
                    "rank 2 {\n}\nrank 3 {\n}\n")
    L_off, L_on = 5e-6, 1e-6
    (tmp_path / "nodes.txt").write_text("0\n1\n0\n1\n")

    def makespan_ps(mapping):
        return idlewave.simulate({"network": {"L_s": L_off, "ranks_per_node": 2, "intra_node": {"L_s": L_on},
                                              "mapping": mapping},
                                  "workload": {"kind": "goal", "path": str(goal)}}).finish_times_ps.max()

    block = makespan_ps({"kind": "block"})
    assert makespan_ps({"kind": "round_robin"}) - block == round((L_off - L_on) * 1e12)
    assert makespan_ps({"kind": "file", "path": str(tmp_path / "nodes.txt")}) - block == round((L_off - L_on) * 1e12)
    # a mapping file is checked against the rank count the GOAL file gives
    (tmp_path / "short.txt").write_text("0\n1\n")
    with pytest.raises(SimulationError, match="short.txt"):
        makespan_ps({"kind": "file", "path": str(tmp_path / "short.txt")})
    # a mapping laid on a process grid needs one, said before the file is read
    with pytest.raises(ScenarioError, match="the cartesian mapping needs the process grid .*give mapping.grid"):
        makespan_ps({"kind": "cartesian"})
    assert makespan_ps({"kind": "cartesian", "grid": [2, 2]}) >= block


@pytest.mark.parametrize("scenario", [None, [], (), 5])
def test_a_scenario_that_is_neither_a_path_nor_a_dict_is_refused(scenario):
    """(an empty list ran the default scenario; None was a TypeError from inside)"""
    with pytest.raises(ScenarioError, match="expected a scenario file's path or a dict, got"):
        idlewave.simulate(scenario)


@pytest.mark.parametrize("key, what", [("workload", "a table"), ("noise", "a list of tables")])
def test_a_table_given_as_none_is_refused_not_taken_for_its_defaults(key, what):
    """(`{'workload': None}` ran the default workload)"""
    with pytest.raises(ScenarioError, match=f"<scenario>: {key}: expected {what}, got None"):
        idlewave.simulate({key: None})
