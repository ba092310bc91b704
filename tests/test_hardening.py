"""Inputs at the edges: every one gives the right answer or a clear error
naming the limit, never a hang, a wrapped time or a traceback (issue 15)."""

import os
import shutil
import stat

import pytest

import idlewave
from conftest import EXAMPLES, as_at_a_terminal, invoke_cli
from idlewave import ScenarioError, SimulationError
from idlewave.results import write_json

pytestmark = pytest.mark.integration


def bsp(**kw):
    return {"kind": "bsp", "ranks": 4, "iterations": 3, "compute_s": 1e-6} | kw


def test_simulated_time_past_the_limit_is_an_error_not_a_wrapped_time():
    # 5 × 1e6 s = 5e18 ps: past 2^62 ps; each value alone is allowed
    with pytest.raises(idlewave.TimeLimitError, match=r"past the engine's limit of 2\^62 ps \(about 53.4 days\)"):
        idlewave.simulate({"workload": bsp(compute_s=1e6, iterations=5)})
    # just below: right to the picosecond
    r = idlewave.simulate({"workload": bsp(compute_s=1e6, iterations=4, distances=[1], message_bytes=1)})
    assert r.summary["makespan_ps"] >= 4 * 10**18


def test_a_single_value_beyond_the_input_limit_names_the_key():
    with pytest.raises(ScenarioError, match=r"network.L_s: too large: 9000000.0 s exceeds the engine's limit of about 1.15e\+06 s"):
        idlewave.simulate({"network": {"L_s": 9.0e6}, "workload": bsp()})
    with pytest.raises(ScenarioError, match=r"workload.compute_s: too large"):
        idlewave.simulate({"workload": bsp(compute_s=9.0e6)})


def test_huge_messages_stop_at_the_limit_instead_of_wrapping():
    # (s-1)·G = 2^40 · 1e15 ps would wrap a u64 sum
    with pytest.raises(SimulationError, match="past the engine's limit"):
        idlewave.simulate({"network": {"G_s_per_byte": 1e3, "S_bytes": 2**41}, "workload": bsp(message_bytes=2**40)})


def test_a_node_link_too_slow_for_the_run_stops_at_the_limit_instead_of_wrapping():
    # 1e-13 B/s: one 8 KiB message holds the node's link for 8e28 ps (found by the Rust fuzz test)
    net = {"ranks_per_node": 2, "topology": {"kind": "fully_connected"}, "node_bandwidth_bytes_per_s": 1e-13}
    with pytest.raises(SimulationError, match="past the engine's limit"):
        idlewave.simulate({"network": net, "workload": bsp(ranks=6, compute_s=0)})
    # the same stalls per byte on the path: cut, not wrapped
    net = {"ranks_per_node": 2, "topology": {"kind": "fully_connected"}, "stalls_per_byte": 1e6, "stall_s": 1e3}
    with pytest.raises(SimulationError, match="past the engine's limit"):
        idlewave.simulate({"network": net, "workload": bsp(ranks=6, compute_s=0)})


def test_goal_calcs_past_the_limit_are_an_error(tmp_path):
    g = tmp_path / "big.goal"
    g.write_text("num_ranks 1\nrank 0 {\nl1: calc 10000000000000000\nl2: calc 10000000000000000\nl2 requires l1\n}\n")
    with pytest.raises(idlewave.TimeLimitError, match="past the engine's limit"):
        idlewave.simulate({"workload": {"kind": "goal", "path": str(g)}})
    p = invoke_cli("loggopsim", str(g), check=False)
    assert p.returncode == 1 and "past the engine's limit" in p.stderr


def test_loggopsim_parameters_out_of_range_are_refused(tmp_path):
    g = tmp_path / "one.goal"
    g.write_text("num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\nrank 1 {\nl1: recv 8b from 0\n}\n")
    p = invoke_cli("loggopsim", str(g), "-L", str(2**64), check=False)
    assert p.returncode != 0 and "-L must be between 0 and 2^64 - 1" in p.stderr and "Traceback" not in p.stderr
    for flag, value in (("-L", 2**63 - 1), ("-o", 2 * 10**15), ("-g", 2**60 // 1000 + 1)):
        p = invoke_cli("loggopsim", str(g), flag, str(value), check=False)
        # the flag and the value as given, in its unit (ns), not a saturated ps value
        assert p.returncode == 2 and f"{flag} must be at most 1152921504606846 ns (about 13 days), got {value}" in p.stderr
    assert invoke_cli("loggopsim", str(g), "-L", str(2**60 // 1000), check=False).returncode == 0  # the limit itself runs
    # two schedules: refused, not one of them silently ignored
    p = invoke_cli("loggopsim", str(g), "-f", str(tmp_path / "other.goal"), check=False)
    assert p.returncode == 2 and "two GOAL files given" in p.stderr


def test_fat_trees_need_four_ports_and_hops_always_end():
    net = {"ranks_per_node": 2, "topology": {"kind": "fat_tree", "radix": 2}}
    with pytest.raises(ScenarioError, match=r"network.topology.radix: must be >= 4, got 2"):
        idlewave.simulate({"network": net, "workload": {"kind": "collective", "ranks": 8}})
    net["topology"]["radix"] = 4
    assert idlewave.simulate({"network": net, "workload": {"kind": "collective", "ranks": 8}}).summary["makespan_s"] > 0


def test_a_poisson_rate_so_low_no_detour_falls_in_the_run_is_no_noise():
    quiet = idlewave.simulate({"workload": bsp()})
    rare = idlewave.simulate({"noise": [{"kind": "poisson", "rate_hz": 1e-12, "duration_s": 1e-4}], "workload": bsp()})
    assert rare.summary["makespan_ps"] == quiet.summary["makespan_ps"]


def test_devices_and_sparse_node_numbers_are_refused_before_allocating(tmp_path):
    with pytest.raises(SimulationError, match="must be a regular file"):
        idlewave.simulate({"workload": {"kind": "spmv", "ranks": 4, "partners_file": "/dev/zero"}})
    with pytest.raises(SimulationError, match="must be a regular file"):
        idlewave.simulate({"workload": {"kind": "goal", "path": "/dev/zero"}})
    f = tmp_path / "map.txt"
    f.write_text("0\n0\n1\n4294967295\n")
    # (refused as the file is read, as its other faults are)
    with pytest.raises(ScenarioError, match="rank 3 is on node 4294967295; node numbers must be below 4"):
        idlewave.simulate({"network": {"ranks_per_node": 2, "mapping": {"kind": "file", "path": str(f)}},
                           "workload": bsp()})


def test_errors_from_files_a_scenario_names_say_which_scenario_and_which_file(tmp_path):
    (tmp_path / "quiet.txt").write_text("# no detours\n")
    (tmp_path / "s.toml").write_text(
        'name = "x"\n[network]\nranks_per_node = 2\n[network.mapping]\nkind = "file"\npath = "/dev/zero"\n'
        '[workload]\nkind = "bsp"\nranks = 8\n')
    p = invoke_cli("simulate", tmp_path / "s.toml", "--out", tmp_path / "o", check=False)
    assert p.returncode == 2 and f"{tmp_path / 's.toml'}:6:8: network.mapping.path: /dev/zero" in p.stderr, p.stderr
    (tmp_path / "t.toml").write_text('name = "x"\n[network.topology]\nkind = "torus"\ndims = [1, 1, 1]\n'
                                     '[workload]\nkind = "bsp"\nranks = 8\n')
    p = invoke_cli("simulate", tmp_path / "t.toml", "--out", tmp_path / "o", check=False)
    assert p.returncode == 2 and f"{tmp_path / 't.toml'}: network.topology.dims: a 1×1×1 torus has 1 node, the run " \
        "needs 8" in p.stderr, p.stderr
    with pytest.raises(SimulationError, match=r"noise\[0\]\.path: \S*quiet.txt: the noise trace holds no detours"):
        idlewave.simulate({"noise": [{"kind": "trace", "path": str(tmp_path / "quiet.txt")}], "workload": bsp()})


def test_errors_name_files_but_never_quote_them(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t:$6$salt$hash:19000:0:99999:7:::\n")
    for workload, network in (({"kind": "spmv", "ranks": 4, "partners_file": str(secret)}, {}),
                              (bsp(), {"mapping": {"kind": "file", "path": str(secret)}})):
        with pytest.raises((SimulationError, ScenarioError)) as e:
            idlewave.simulate({"network": network, "workload": workload})
        assert str(secret) in str(e.value) and "s3cr3t" not in str(e.value), str(e.value)
    with pytest.raises(SimulationError) as e:
        idlewave.simulate({"noise": [{"kind": "trace", "path": str(secret)}], "workload": bsp()})
    assert "s3cr3t" not in str(e.value)


def test_a_result_directory_is_one_run_complete(tmp_path):
    out = tmp_path / "r"
    r = idlewave.simulate({"workload": bsp()})
    r.write(out)
    write_json(out / "stale.json", {})  # written beside it by some earlier command
    idlewave.simulate({"workload": bsp(iterations=5)}).write(out)
    assert sorted(p.name for p in out.iterdir()) == [".idlewave-result", "ranks.parquet", "scenario.json",
                                                     "summary.json", "timers.parquet"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary names left
    f = tmp_path / "file"
    f.write_text("x")
    p = invoke_cli("simulate", EXAMPLES / "idle-wave.toml", "--out", f, check=False)
    assert p.returncode == 2 and "exists and is not a directory" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("text, says", [
    ("network = 3\n", "network: expected a table"),
    ("[network]\nplatform = 2\n", "network.platform: expected a string"),
    ("a = " + "[" * 1000 + "]" * 1000 + "\n", "nested too deeply"),
])
def test_malformed_scenarios_are_errors_not_tracebacks(tmp_path, text, says):
    f = tmp_path / "s.toml"
    f.write_text(text)
    p = invoke_cli("simulate", f, check=False)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("study, says", [
    ('base = "."\n', "cannot read scenario"),
    ("points = [1, 2]\n", "points must be an array of tables"),
    ("[base]\nseed = \n", "TOML syntax error"),
])
def test_malformed_studies_are_errors_not_tracebacks(tmp_path, study, says):
    f = tmp_path / "study.toml"
    f.write_text(study)
    p = invoke_cli("sweep", f, "--out", tmp_path / "o", check=False)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_regimes_inputs_that_are_not_timings_are_errors(tmp_path):
    import numpy as np
    import polars as pl

    cases = {}
    np.save(tmp_path / "pickled.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    cases["pickled.npy"] = "not a readable NumPy array"
    np.save(tmp_path / "strings.npy", np.array(["a", "b"]))
    cases["strings.npy"] = "expected numbers"
    np.save(tmp_path / "truncated.npy", np.ones((4, 8)))
    (tmp_path / "truncated.npy").write_bytes((tmp_path / "truncated.npy").read_bytes()[:100])
    cases["truncated.npy"] = "not a readable NumPy array"
    with open(tmp_path / "short.npy", "wb") as f:  # a header of 100 × 100, then 100 bytes
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (100, 100)})
        f.write(b"x" * 100)
    cases["short.npy"] = "cut short: its header says 100 × 100 values (80000 bytes) and the file holds 100"
    with open(tmp_path / "sparse.npy", "wb") as f:  # 3 GB on paper, a few kB on disk: read whole, it took 6.5 GB
        np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (200_000, 2_000)})
        f.truncate(f.tell() + 3_200_000_000)
    cases["sparse.npy"] = "200000 × 2000 values of 8 bytes, 2.98 GiB; at most 1 GiB of timings are read"
    (tmp_path / "words.csv").write_text("a,b\nx,y\n")
    cases["words.csv"] = "expected numbers in every column"
    pl.DataFrame({"a": [[1.0, 2.0]], "b": [[3.0]]}).write_parquet(tmp_path / "lists.parquet")
    cases["lists.parquet"] = "expected numbers in every column"
    (tmp_path / "corrupt.parquet").write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    cases["corrupt.parquet"] = "cannot read it"
    for name, says in cases.items():
        p = invoke_cli("regimes", tmp_path / name, "--out", tmp_path / "o", check=False)
        assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, (name, p.stderr)


def test_regimes_never_writes_over_its_input(tmp_path):
    invoke_cli("simulate", EXAMPLES / "idle-wave.toml", "--out", tmp_path / "iw", "--quiet")
    before = sorted(p.name for p in (tmp_path / "iw").iterdir())
    for source in (tmp_path / "iw", tmp_path / "iw" / "timers.parquet"):  # the input, or the directory holding it
        p = invoke_cli("regimes", source, "--out", tmp_path / "iw", "--no-figures", check=False)
        assert p.returncode == 2 and "it would replace" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert sorted(p.name for p in (tmp_path / "iw").iterdir()) == before


def test_a_regimes_name_cannot_leave_the_output_directory(tmp_path):
    import numpy as np

    np.save(tmp_path / "t.npy", np.ones((2, 50)))
    p = invoke_cli("regimes", tmp_path / "t.npy", "--name", "../../x", "--out", tmp_path / "o", check=False)
    assert p.returncode == 2 and "no '/'" in p.stderr
    assert not (tmp_path.parent / "x.png").exists()


def test_a_mapping_table_too_large_for_memory_is_refused_before_it_is_built():
    net = {"ranks_per_node": 4, "mapping": {"kind": "cartesian"}}
    with pytest.raises(ScenarioError, match=r"network.mapping: this run needs about .* GiB, more than the configured max_memory_bytes"):
        idlewave.simulate({"network": net, "limits": {"max_memory_bytes": 1 << 20},
                           "workload": {"kind": "krylov", "grid": [1024, 1024, 1024], "iterations": 1}})


@pytest.mark.serial  # Ctrl-C once the run has used 0.4 s of CPU, an answer within 20 s
def test_ctrl_c_stops_a_long_goal_parse(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    g = tmp_path / "long.goal"
    with open(g, "w") as f:
        f.write("num_ranks 1\nrank 0 {\n")
        f.writelines(f"c{i}: calc 1\n" for i in range(3_000_000))
        f.write("}\n")
    exe = Path(sys.executable).parent / "idlewave"
    p = subprocess.Popen([str(exe), "loggopsim", str(g)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=as_at_a_terminal)

    def cpu_s() -> float:  # utime + stime (fields 14 and 15 of /proc/PID/stat)
        fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    # not a fixed sleep: on a quiet host the whole run takes 1.6 s. Python
    # starts in 0.2 s of CPU; past 0.4 s it is parsing or running (1.4 s here)
    while p.poll() is None and cpu_s() < 0.4:
        time.sleep(0.01)
    assert p.poll() is None, "the run ended before it could be interrupted"
    p.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, err = p.communicate(timeout=60)
    assert time.monotonic() - start < 20
    assert p.returncode != 0 and "Traceback" not in err, err


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB file system (tmpfs; needs root, as in CI), else skip."""
    import subprocess

    d = tmp_path / "tiny"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (not root)")
    yield d
    subprocess.run(["umount", str(d)], check=True)


def test_a_full_disk_is_an_error_and_keeps_the_previous_result(tiny_disk, tmp_path):
    small = invoke_cli("simulate", EXAMPLES / "idle-wave.toml", "--quiet", "--out", tiny_disk / "r", check=False)
    assert small.returncode == 0, small.stderr
    before = {p.name: p.read_bytes() for p in (tiny_disk / "r").iterdir()}
    big = tmp_path / "big.toml"
    # 4,096 ranks × 50 iterations of noisy timers: megabytes, far past the 64 KiB (500 iterations took minutes to simulate)
    big.write_text((EXAMPLES / "bsp_noise.toml").read_text().replace("ranks = 1024", "ranks = 4096")
                   .replace("iterations = 500", "iterations = 50"))
    p = invoke_cli("simulate", big, "--quiet", "--out", tiny_disk / "r", check=False)
    assert p.returncode == 1 and "cannot write results: No space left on device" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert sorted(x.name for x in tiny_disk.iterdir()) == ["r"]  # no temporary left
    assert {x.name: x.read_bytes() for x in (tiny_disk / "r").iterdir()} == before


def test_a_partner_file_declaring_billions_of_ranks_is_refused_before_allocating(tmp_path):
    f = tmp_path / "partners.txt"
    f.write_text("ranks 4294967295\n")
    with pytest.raises(SimulationError, match=r"partners.txt:1: `ranks 4294967295`: this run needs about 96.00 GiB"):
        idlewave.simulate({"workload": {"kind": "spmv", "ranks": 4, "partners_file": str(f)}})


def test_a_directory_that_is_not_a_result_is_never_replaced(tmp_path):
    mine = tmp_path / "mydata"
    (mine / "sub").mkdir(parents=True)
    (mine / "thesis.tex").write_text("precious")
    p = invoke_cli("simulate", EXAMPLES / "idle-wave.toml", "--out", mine, check=False)
    assert p.returncode == 2 and "not an idlewave result directory" in p.stderr and "Traceback" not in p.stderr
    p = invoke_cli("trace", "replay", tmp_path / "no-trace", "--out", mine, check=False)
    assert p.returncode == 2 and "not an idlewave result directory" in p.stderr
    with pytest.raises(OSError, match="not an idlewave result directory"):
        idlewave.simulate({"workload": bsp()}).write(mine)
    assert (mine / "thesis.tex").read_text() == "precious" and (mine / "sub").is_dir()
    empty = tmp_path / "empty"
    empty.mkdir()
    idlewave.simulate({"workload": bsp()}).write(empty)  # an empty directory takes the result
    assert (empty / "summary.json").is_file()


def test_outputs_never_replace_fifos_or_devices(tmp_path):
    out = tmp_path / "r"
    invoke_cli("simulate", EXAMPLES / "idle-wave.toml", "--out", out, "--quiet")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    p = invoke_cli("report", out, "-o", fifo, check=False)
    assert p.returncode == 2 and "is not a regular file" in p.stderr and "Traceback" not in p.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_inputs_that_are_fifos_are_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer
    with pytest.raises(ScenarioError, match="must be a regular file"):
        idlewave.load_scenario(fifo)
    with pytest.raises(ScenarioError, match="network.platform.*must be a regular file"):
        idlewave.simulate({"network": {"platform": str(fifo)}, "workload": bsp()})
    with pytest.raises(SimulationError, match="must be a regular file"):
        idlewave.simulate({"workload": {"kind": "spmv", "ranks": 4, "partners_file": str(fifo)}})


def test_a_poisson_rate_too_small_to_represent_is_refused():
    with pytest.raises((ScenarioError, SimulationError), match=r"noise\[0\].rate_hz: 1e-300 Hz is too small") as e:
        idlewave.simulate({"noise": [{"kind": "poisson", "rate_hz": 1e-300, "duration_s": 1e-6}], "workload": bsp()})
    assert len(str(e.value)) < 150, "the rate is not printed in 300 digits"


@pytest.mark.parametrize("flag, value", [("--scale-to", "0"), ("--scale-to", "-1"), ("--compute-scale", "nan"),
                                         ("--compute-scale", "-1")])
def test_trace_replay_flags_out_of_range_name_the_flag(tmp_path, flag, value):
    p = invoke_cli("trace", "replay", tmp_path, flag, value, "--out", tmp_path / "o", check=False)
    assert p.returncode == 2 and flag in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_positive_time_below_a_picosecond_is_refused_not_rounded_to_zero():
    with pytest.raises(ScenarioError, match=r"network.o_s: too small: 1e-13 s is below the engine's 1 ps"):
        idlewave.simulate({"network": {"o_s": 1e-13}, "workload": bsp()})
    idlewave.simulate({"network": {"o_s": 0.0}, "workload": bsp()})  # zero stays a valid choice


def test_a_tiny_memory_limit_is_printed_in_bytes_not_as_zero_gib():
    with pytest.raises((ScenarioError, SimulationError), match=r"more than the configured max_memory_bytes \(1 bytes\)"):
        idlewave.simulate({"limits": {"max_memory_bytes": 1}, "workload": bsp()})


def test_a_skeleton_without_beta_or_app_says_neither_was_given():
    with pytest.raises((ScenarioError, SimulationError), match="workload.beta: give either .*; neither was given"):
        idlewave.simulate({"workload": {"kind": "skeleton", "ranks": 8}})


def test_a_message_size_past_the_engines_limit_names_the_key():
    for workload in (bsp(message_bytes=2**47), {"kind": "collective", "ranks": 4, "message_bytes": 2**47}):
        with pytest.raises(ScenarioError, match=r"workload.message_bytes: must be between 0 and 140737488355327"):
            idlewave.simulate({"workload": workload})
    idlewave.simulate({"workload": bsp(message_bytes=2**40)})  # large but below the limit: runs


def test_measurements_refuse_bad_parameters_and_outputs_before_starting(tmp_path):
    for setting, says in (("max_bytes=4294967296", "below 2^31 bytes"), ("iterations=0", "must be ≥ 1"),
                          ("delay_s=-1", "must be ≥ 0"), ("reps=1.5", "a whole number is expected"),
                          ("bogus=1", "pingpong takes max_bytes, reps, iterations, delay_s")):
        p = invoke_cli("measure", "pingpong", "--out", tmp_path / "m", "--set", setting, check=False)
        assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert not (tmp_path / "m").exists()
    (tmp_path / "afile").write_text("x")
    p = invoke_cli("measure", "pingpong", "--out", tmp_path / "afile", check=False)
    assert p.returncode == 2 and "cannot create the directory" in p.stderr and "Traceback" not in p.stderr, p.stderr
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "notes.txt").write_text("mine")
    p = invoke_cli("measure", "pingpong", "--out", tmp_path / "keep", check=False)
    assert p.returncode == 2 and "holds files of something else" in p.stderr


def test_regimes_read_fwq_samples_and_refuse_fifos_and_bad_seeds(tmp_path):
    import numpy as np
    import polars as pl

    from idlewave.stats import load

    # `measure noise`'s fwq.parquet: (rank, sample, ns), read in seconds
    rows = [(r, k, 20_000 + 7 * k) for r in range(2) for k in range(3)]
    pl.DataFrame(rows, schema=["rank", "sample", "ns"], orient="row").write_parquet(tmp_path / "fwq.parquet")
    assert np.allclose(load(tmp_path / "fwq.parquet"), [[2.0e-5, 2.0007e-5, 2.0014e-5]] * 2)
    os.mkfifo(tmp_path / "t.csv")
    p = invoke_cli("regimes", tmp_path / "t.csv", "--out", tmp_path / "o", check=False)
    assert p.returncode == 2 and "must be a regular file" in p.stderr
    p = invoke_cli("regimes", tmp_path / "fwq.parquet", "--seed", "-1", "--out", tmp_path / "o", check=False)
    assert p.returncode == 2 and "--seed must be from 0 to 2^32 - 1" in p.stderr and "Traceback" not in p.stderr


def test_trace_export_never_writes_over_the_trace_it_exports(tmp_path):
    from idlewave import _engine

    _engine.write_synthetic_trace(str(tmp_path / "tr"), 2, 5)
    before = {f.name: f.read_bytes() for f in (tmp_path / "tr").iterdir()}
    p = invoke_cli("trace", "export", tmp_path / "tr", "-o", tmp_path / "tr" / "rank-0.iwt", check=False)
    assert p.returncode == 2 and f"-o {tmp_path / 'tr' / 'rank-0.iwt'}: it would replace a file of the input" in p.stderr, p.stderr
    assert {f.name: f.read_bytes() for f in (tmp_path / "tr").iterdir()} == before
    invoke_cli("trace", "export", tmp_path / "tr", "-o", tmp_path / "tr" / "new.goal")  # a new file beside: nothing replaced


@pytest.mark.parametrize("command", ["export", "replay"])
def test_scale_to_beyond_the_engines_rank_count_names_the_flag_and_its_range(tmp_path, command):
    from idlewave import _engine

    _engine.write_synthetic_trace(str(tmp_path / "tr"), 2, 5)
    out = ["-o", tmp_path / "x.goal"] if command == "export" else ["--out", tmp_path / "o"]
    p = invoke_cli("trace", command, tmp_path / "tr", *out, "--scale-to", "5000000000", check=False)
    assert p.returncode == 2 and "--scale-to" in p.stderr and "4294967295" in p.stderr, p.stderr
    assert "workload.scale_to" not in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "x.goal").exists() and not (tmp_path / "o").exists()


def test_a_write_that_fails_is_exit_1_and_an_output_refused_is_exit_2(tmp_path):
    """docs/reliability.md: a failed write is an error while working (1), an output that is a
    directory or a file in place of one a refusal (2), for every command that writes."""
    from idlewave import _engine

    _engine.write_synthetic_trace(str(tmp_path / "tr"), 2, 5)
    (tmp_path / "s.toml").write_text('[workload]\nkind = "bsp"\nranks = 4\niterations = 2\n')
    (tmp_path / "lap").mkdir()
    for r in range(2):  # a liballprof trace of MPI_Init and MPI_Finalize
        (tmp_path / "lap" / f"pmpi-trace-rank-{r}.txt").write_text(
            "# collprof 0.9 output file\nMPI_Init:-:1:2:1000.000000\nMPI_Finalize:1010.000000:-\n")
    (tmp_path / "afile").write_text("kept")
    blocked = tmp_path / "afile" / "sub"  # a file where a directory is needed: every write there fails
    goal = EXAMPLES / "dissemination_16.goal"
    failed_writes = [
        ["goal", "convert", goal, "-o", blocked / "x.bin"],
        ["goal", "export", tmp_path / "s.toml", "-o", blocked / "x.goal"],
        ["trace", "export", tmp_path / "tr", "-o", blocked / "x.goal"],
        ["trace", "import", tmp_path / "lap", "--out", blocked / "imported"],
        ["reproduce", "krylov-kernels", "--out", blocked / "rep"],
    ]
    for args in failed_writes:
        p = invoke_cli(*args, check=False)
        assert p.returncode == 1 and "Not a directory" in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
    (tmp_path / "dir").mkdir()
    refused = [
        ["goal", "convert", goal, "-o", tmp_path / "dir"],
        ["goal", "export", tmp_path / "s.toml", "-o", tmp_path / "dir"],
        ["trace", "export", tmp_path / "tr", "-o", tmp_path / "dir"],
        ["trace", "import", tmp_path / "lap", "--out", tmp_path / "afile"],
        ["trace", "build", "--out", tmp_path / "afile"],
        ["reproduce", "krylov-kernels", "--out", tmp_path / "afile"],
    ]
    for args in refused:
        p = invoke_cli(*args, check=False)
        assert p.returncode == 2 and "exists and is" in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert (tmp_path / "afile").read_text() == "kept" and list((tmp_path / "dir").iterdir()) == []


def test_goal_writes_on_a_full_disk_name_the_output_not_a_temporary_file(tmp_path):
    import resource
    import subprocess
    import sys
    from pathlib import Path

    def full_disk():  # every byte written to a file fails (EFBIG), as on a full disk, also as root
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    (tmp_path / "s.toml").write_text('[workload]\nkind = "bsp"\nranks = 4\niterations = 2\n')
    exe = Path(sys.executable).parent / "idlewave"
    (tmp_path / "out").mkdir()
    for args in (["goal", "export", tmp_path / "s.toml"], ["goal", "convert", EXAMPLES / "dissemination_16.goal"]):
        p = subprocess.run([str(exe), *map(str, args), "-o", str(tmp_path / "out" / "x.goal")], capture_output=True,
                           text=True, timeout=60, preexec_fn=full_disk)
        assert p.returncode == 1 and f"error: {tmp_path / 'out' / 'x.goal'}: cannot write: File too large" in p.stderr, p.stderr
        assert ".tmp" not in p.stderr and list((tmp_path / "out").iterdir()) == []


def test_trace_export_on_a_full_disk_names_the_goal_file_and_is_a_failed_write(tiny_disk, tmp_path):
    from idlewave import _engine

    for ranks, iterations in ((8, 50), (64, 200)):  # the disk fills at the first write, or at the last flush
        trace = tmp_path / f"tr{ranks}"
        _engine.write_synthetic_trace(str(trace), ranks, iterations)
        p = invoke_cli("trace", "export", trace, "-o", tiny_disk / "x.goal", check=False)
        assert p.returncode == 1 and p.stderr.strip() == f"error: {tiny_disk / 'x.goal'}: cannot write: No space left on device", p.stderr
        assert list(tiny_disk.iterdir()) == []


def test_exports_too_large_for_memory_are_refused_not_aborted(tmp_path):
    """A GOAL export of 2^31 ranks and a trace export to 4 billion ranks asked
    for 154 GB and 2.3 TB and ended in an allocation abort (exit 134, a Rust
    backtrace, a temporary file left): refused, naming what it would take."""
    from idlewave import _engine

    _engine.write_synthetic_trace(str(tmp_path / "tr"), 2, 5)
    (tmp_path / "s.toml").write_text('[workload]\nkind = "bsp"\nranks = 16\niterations = 5\n')
    p = invoke_cli("goal", "export", tmp_path / "s.toml", "-o", tmp_path / "x.goal", "--set", "workload.ranks=2147483648",
                   check=False)
    assert p.returncode == 2 and "GOAL schedule of 2147483648 ranks would take about" in p.stderr, p.stderr
    p = invoke_cli("trace", "export", tmp_path / "tr", "-o", tmp_path / "x.goal", "--scale-to", "4294967292", check=False)
    assert p.returncode == 2 and "4294967292 ranks: this run needs about" in p.stderr, p.stderr
    assert "panicked" not in p.stderr and "Traceback" not in p.stderr and "memory allocation" not in p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["s.toml", "tr"]


def test_a_result_is_not_replaced_over_what_a_user_kept_in_it(tmp_path):
    """A file a user put into a result directory, or a result written inside
    it, was deleted with it when the next run wrote there; what idlewave
    itself wrote beside the result (explain's files, the report) still goes."""
    out = tmp_path / "r"
    idlewave.simulate({"workload": bsp()}).write(out)
    (out / "notes.txt").write_text("important")
    with pytest.raises(idlewave.results.ResultsError, match="also holds 'notes.txt'"):
        idlewave.simulate({"workload": bsp()}).write(out)
    assert (out / "notes.txt").read_text() == "important"
    (out / "notes.txt").unlink()
    idlewave.simulate({"workload": bsp()}).write(out / "inner")
    with pytest.raises(idlewave.results.ResultsError, match="also holds 'inner'"):
        idlewave.simulate({"workload": bsp()}).write(out)
    shutil.rmtree(out / "inner")
    write_json(out / "explain.json", {})  # as explain writes beside a result
    idlewave.simulate({"workload": bsp(iterations=3)}).write(out)
    assert not (out / "explain.json").exists()
