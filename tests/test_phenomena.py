"""The phenomena of the idle-waves paper, at small scale: idle-wave speed and
decay, bottleneck evasion (P_D > 0 only with a memory bottleneck), and
desynchronization of SpMVM favoured by a narrow coupling."""

import json

import numpy as np
import pytest

import idlewave
from conftest import EXAMPLES
from idlewave import analyze

pytestmark = pytest.mark.integration

NET = {"L_s": 1e-6, "o_s": 1e-7, "g_s": 1e-7, "G_s_per_byte": 1e-10}


def wave(distances, compute, extra_noise=()):
    scn = {"network": NET,
           "noise": [{"kind": "single", "rank": 20, "start_s": 5 * compute, "duration_s": 20 * compute}, *extra_noise],
           "workload": {"kind": "bsp", "ranks": 64, "iterations": 80, "compute_s": compute, "distances": distances,
                        "message_bytes": 1024, "periodic": False}}
    return analyze.idle_wave(idlewave.simulate(scn))


def test_idle_wave_speed_grows_with_distance_and_falls_with_the_period():
    one, two, slow = wave([1], 1e-4), wave([1, 2], 1e-4), wave([1], 2e-4)
    # d ranks per iteration: the speed in ranks/s is d / period
    assert one["speed_ranks_per_iteration"] == pytest.approx(1.0, rel=0.02)
    assert two["speed_ranks_per_s"] == pytest.approx(2 * one["speed_ranks_per_s"], rel=0.03)
    assert slow["speed_ranks_per_s"] == pytest.approx(one["speed_ranks_per_s"] / 2, rel=0.03)
    assert one["ranks_reached"] == 63 and abs(one["decay_per_rank"]) < 1e-4  # docs/phenomena.md: 6.5e-5


def test_no_wave_is_reported_without_a_one_off_delay():
    """Noise alone launches no idle wave: refused with the reason, never a speed."""
    scn = {"seed": 1, "network": NET, "noise": [{"kind": "poisson", "rate_hz": 2000.0, "duration_s": 2e-5}],
           "workload": {"kind": "bsp", "ranks": 32, "iterations": 50, "compute_s": 1e-4, "periodic": False}}
    with pytest.raises(analyze.AnalysisError, match="no one-off delay"):
        analyze.idle_wave(idlewave.simulate(scn))


def test_noise_damps_the_idle_wave():
    noisy = wave([1], 1e-4, [{"kind": "poisson", "rate_hz": 2000.0, "duration_s": 2e-5}])
    assert 5e-3 < noisy["decay_per_rank"] < 1e-2  # docs/phenomena.md: 0.007–0.009 over seeds 1–5


def triad(barrier: bool, memory: bool, timers: bool = True) -> idlewave.Result:
    net = {"ranks_per_node": 20, "ranks_per_socket": 10, "L_s": 2e-6, "o_s": 5e-7, "g_s": 1e-7,
           "G_s_per_byte": 8e-11, "S_bytes": 1 << 22, "async_progress": True}
    if memory:
        net["memory"] = {"socket_bandwidth_bytes_per_s": 34e9, "core_bandwidth_bytes_per_s": 7e9}
    return idlewave.simulate({"network": net, "record": {"timers": timers}, "workload": {
        "kind": "stream_triad", "ranks": 40, "iterations": 150, "elements_per_rank": 250_000, "bytes_per_element": 24,
        "core_bandwidth_bytes_per_s": 7e9 if memory else 3.4e9, "message_bytes": 1 << 20, "barrier": barrier}})


def test_bottleneck_evasion_pays_only_with_a_memory_bottleneck():
    bottleneck = analyze.pd(triad(True, True), triad(False, True))
    scalable = analyze.pd(triad(True, False), triad(False, False))
    assert bottleneck["pd"] > 0.03
    assert abs(scalable["pd"]) < 0.01
    # a run without timers still has its iterations, whose barriers P_D subtracts
    untimed = analyze.pd(triad(True, True, timers=False), triad(False, True, timers=False))
    assert untimed["pd"] == bottleneck["pd"]


def spmv(tmp_path, mode: str, barrier: bool, reach: int) -> idlewave.Result:
    """96 ranks on SuperMUC-NG sockets (24 cores, memory saturating at 8);
    a memory-bound kernel; 20,000 elements to and from each partner."""
    lines = ["ranks 96"]
    for r in range(96):
        lines.append(f"nonzeros {r} 150000 20000")
        lines += [f"partner {r} {q} 20000 20000" for d in range(1, reach + 1) for q in (r - d, r + d) if 0 <= q < 96]
    f = tmp_path / f"m{reach}.txt"
    f.write_text("\n".join(lines) + "\n")
    return idlewave.simulate({"network": {"platform": "supermuc_ng"},
                              "noise": [{"kind": "poisson", "rate_hz": 200.0, "duration_s": 2e-5}],
                              "workload": {"kind": "spmv", "ranks": 96, "iterations": 300, "partners_file": str(f),
                                           "mode": mode, "barrier": barrier, "bytes_per_nonzero": 12}})


def test_spmv_non_split_gains_most_from_dropping_barriers_and_a_narrow_coupling_helps(tmp_path):
    gain = {(mode, reach): analyze.pd(spmv(tmp_path, mode, True, reach), spmv(tmp_path, mode, False, reach))["pd"]
            for mode in ("non_split", "split_wait") for reach in (1, 4)}
    # NON-SPLIT cannot overlap in lock step, so it gains more (idle-waves paper Fig. 3e)
    assert gain["non_split", 1] > 2 * gain["split_wait", 1] > 0
    # partners up to 4 ranks away: faster idle waves, less desynchronization
    assert gain["non_split", 1] > 1.3 * gain["non_split", 4]


def test_analyze_commands_on_result_directories(cli, tmp_path):
    cli("simulate", EXAMPLES / "idle-wave-d2.toml", "--out", tmp_path / "iw", "--quiet")
    r = json.loads(cli("analyze", "idle-wave", tmp_path / "iw", "--json").stdout)
    assert r["speed_ranks_per_iteration"] == pytest.approx(2.0, rel=0.03) and r["source_rank"] == 20
    for name in ("desync-barrier", "desync-free"):
        cli("simulate", EXAMPLES / f"{name}.toml", "--out", tmp_path / name, "--quiet")
    r = json.loads(cli("analyze", "pd", tmp_path / "desync-barrier", tmp_path / "desync-free", "--json").stdout)
    assert r["pd"] > 0.1 and r["barrier_cost_s"] > 0
    p = cli("analyze", "pd", tmp_path / "nope", tmp_path / "desync-free", check=False)
    assert p.returncode == 2 and "not a complete result directory" in p.stderr


class _Run:
    """A result with hand-made timers: what `analyze.wavefront` reads."""

    def __init__(self, iteration, compute, per_socket, mapping="block"):
        self.timers = {"iteration": np.asarray(iteration, float), "compute": np.asarray(compute, float)}
        ranks, iters = self.timers["iteration"].shape
        self.scenario = {"network": {"ranks_per_socket": per_socket, "mapping": {"kind": mapping}}}
        self.summary = {"ranks": ranks, "iterations": iters, "makespan_s": 1.0}


def test_wavefront_counts_the_ranks_computing_at_once_and_their_spread():
    """Two ranks of 10 s iterations computing 4 s each, the second 5 s behind from its first iteration on:
    in iterations 2–3 (t = 25…40 s, when both are inside) rank 0 computes 4 s and rank 1 8 s."""
    w = analyze.wavefront(_Run([[10] * 5, [15] + [10] * 4], [[4] * 5] * 2, 2), 2, 4)
    assert w["active"] == [pytest.approx(12 / 15)] and w["spread_s"] == [pytest.approx(5)]
    assert w["lagging_rank"] == 1 and w["lagging_domain"] == 0 and w["lock_step"] == [False]
    assert w["period_s"] == 10 and w["iterations"] == [2, 4]
    in_step = analyze.wavefront(_Run([[10] * 4] * 4, [[4] * 4] * 4, 2))
    assert in_step["active"] == [pytest.approx(0.8)] * 2 and in_step["spread_s"] == [0, 0]
    assert in_step["lock_step"] == [True, True] and in_step["iterations"] == [2, 4]


def test_wavefront_refuses_what_it_cannot_measure():
    run = _Run([[10] * 4] * 4, [[4] * 4] * 4, 2)
    for first, last in ((3, 3), (0, 5), (-1, 2)):
        with pytest.raises(analyze.AnalysisError, match="not a window"):
            analyze.wavefront(run, first, last)
    with pytest.raises(analyze.AnalysisError, match="mapping"):
        analyze.wavefront(_Run([[10] * 4] * 4, [[4] * 4] * 4, 2, "round_robin"))
    with pytest.raises(analyze.AnalysisError, match="do not fill sockets of 3"):
        analyze.wavefront(_Run([[10] * 4] * 4, [[4] * 4] * 4, 3))
    with pytest.raises(analyze.AnalysisError, match="too few"):
        analyze.wavefront(_Run([[10] * 4, [25] * 4], [[4] * 4] * 2, 2), 1, 2)


def test_stream_triad_desynchronizes_to_the_saturation_point():
    """The idle-waves paper's STREAM triad (Fig. 1(a)) on `meggie`: sockets in a wavefront run about as many
    ranks at once as saturate the memory (4.9, not the 10 of lock step); ±(1…8) keeps every socket in lock step."""
    def run(distance):
        return idlewave.simulate({
            "seed": 1, "network": {"platform": "meggie"}, "noise": [{"kind": "poisson", "rate_hz": 1e3, "duration_s": 2e-5}],
            "workload": {"kind": "stream_triad", "ranks": 40, "iterations": 1500, "elements_per_rank": 2_500_000,
                         "bytes_per_element": 24, "core_bandwidth_bytes_per_s": 7e9, "max_distance": distance,
                         "message_bytes": 16384, "periodic": False}})

    near, far = analyze.wavefront(run(1)), analyze.wavefront(run(8))
    sat = near["saturation_ranks"]
    wave = [a for a, lock in zip(near["active"], near["lock_step"], strict=True) if not lock]
    assert wave and all(abs(a - sat) < 0.5 for a in wave), near
    assert all(far["lock_step"]) and all(a > 9.5 for a in far["active"]), far
