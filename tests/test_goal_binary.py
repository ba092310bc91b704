"""LogGOPSim's binary GOAL schedules: `idlewave goal convert` writes what
LogGOPSim's txt2bin writes (the files under tests/data/loggopsim came from
it), reads them back to the same schedule, and every command that takes a
GOAL file takes the binary and runs it to the same end; a damaged file is
refused naming its byte."""

import json

import pytest

from conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.integration

DATA = ROOT / "tests" / "data" / "loggopsim"


@pytest.mark.parametrize("name", ["binary_tree_32", "mixed"])
def test_convert_writes_txt2bins_bytes_and_reads_them_back(cli, tmp_path, name):
    out = tmp_path / f"{name}.bin"
    doc = json.loads(cli("goal", "convert", DATA / f"{name}.goal", "-o", out, "--json").stdout)
    assert (doc["input_format"], doc["output_format"]) == ("text", "binary")
    assert out.read_bytes() == (DATA / f"{name}.bin").read_bytes()
    back = tmp_path / f"{name}.goal"
    doc = json.loads(cli("goal", "convert", out, "-o", back, "--json").stdout)
    assert (doc["input_format"], doc["output_format"]) == ("binary", "text")
    # the text read back converts to the same bytes again
    again = tmp_path / "again.bin"
    cli("goal", "convert", back, "-o", again, "--to", "binary")
    assert again.read_bytes() == out.read_bytes()


def test_loggopsim_mode_and_simulate_run_the_binary_as_the_text(cli, tmp_path):
    binary = DATA / "dissemination_16.bin"
    hosts = [line for line in cli("loggopsim", binary).stdout.splitlines() if line.startswith("Host ")]
    # LogGOPSim's README: 22000 ns for this schedule with default parameters
    assert hosts == [f"Host {i}: 22000" for i in range(16)]
    import idlewave

    text = idlewave.simulate({"workload": {"kind": "goal", "path": str(EXAMPLES / "dissemination_16.goal")}})
    binr = idlewave.simulate({"workload": {"kind": "goal", "path": str(binary)}})
    assert (binr.finish_times_ps == text.finish_times_ps).all() and binr.summary["ranks"] == 16


def test_a_damaged_binary_is_refused_naming_its_byte(cli, tmp_path):
    bad = tmp_path / "bad.bin"
    data = bytearray((DATA / "mixed.bin").read_bytes())
    data[78] = 9  # rank 0's first op's type
    bad.write_bytes(bytes(data))
    p = cli("loggopsim", bad, check=False)
    assert p.returncode != 0 and "byte 78: rank 0 op 0: type 9" in p.stderr and "Traceback" not in p.stderr
    p = cli("goal", "convert", bad, "-o", tmp_path / "out.goal", check=False)
    assert p.returncode == 1 and "byte 78" in p.stderr and not (tmp_path / "out.goal").exists()


@pytest.mark.parametrize("kept", [1, 5, 7])
def test_a_binary_cut_within_its_magic_number_is_said_to_be_one(cli, tmp_path, kept):
    """Not read as text (whose first byte it would call U+007F)."""
    cut = tmp_path / "cut.bin"
    cut.write_bytes((DATA / "mixed.bin").read_bytes()[:kept])
    p = cli("loggopsim", cut, check=False)
    assert p.returncode != 0 and f"a binary GOAL schedule cut short: {kept} bytes" in p.stderr, p.stderr


def test_export_writes_a_workload_that_runs_to_the_scenarios_own_times(cli, tmp_path):
    """`goal export`: a built-in workload as text and as binary; both run (LogGOPSim mode) to the
    finishing times the scenario itself simulates, and the binary is the text's txt2bin form."""
    import idlewave

    scn = tmp_path / "s.toml"
    scn.write_text('[workload]\nkind = "collective"\ncollective = "bcast"\nalgorithm = "binomial"\nranks = 12\n'
                   'iterations = 2\ncompute_s = 3e-6\nmessage_bytes = 100000\n')
    text, binary = tmp_path / "s.goal", tmp_path / "s.bin"
    doc = json.loads(cli("goal", "export", scn, "-o", text, "--json").stdout)
    assert (doc["ranks"], doc["output_format"]) == (12, "text")
    # 2 iterations: a calc per rank, 11 sends and 11 receives of the broadcast
    assert doc["ops"] == 2 * (12 + 2 * 11)
    cli("goal", "export", scn, "-o", binary, "--to", "binary")
    cli("goal", "convert", text, "-o", tmp_path / "c.bin")
    assert binary.read_bytes() == (tmp_path / "c.bin").read_bytes()
    direct = idlewave.simulate(str(scn)).finish_times_ps
    for path in (text, binary):
        hosts = json.loads(cli("loggopsim", path, "--json").stdout)["hosts_ps"]
        assert hosts == list(direct), path
    # --set reaches the workload: twice the ranks, twice the schedule
    doc = json.loads(cli("goal", "export", scn, "-o", text, "--set", "workload.ranks=24", "--json").stdout)
    assert (doc["ranks"], doc["ops"]) == (24, 2 * (24 + 2 * 23))


def test_export_refuses_a_workload_without_a_goal_form(cli, tmp_path):
    scn = tmp_path / "s.toml"
    scn.write_text('[workload]\nkind = "collective"\ncollective = "allreduce"\nmode = "nonblocking"\nranks = 8\n')
    out = tmp_path / "s.goal"
    p = cli("goal", "export", scn, "-o", out, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr and not out.exists()  # a refusal (docs/reliability.md)
    assert f"{scn}: workload: nonblocking" in p.stderr, p.stderr


def test_export_refuses_a_scenario_of_jobs(cli, tmp_path):
    """Several jobs have no one schedule: said, not the default workload written in their place."""
    scn = tmp_path / "jobs.toml"
    scn.write_text('[[jobs]]\n[jobs.workload]\nkind = "bsp"\nranks = 4\n[[jobs]]\n[jobs.workload]\nkind = "bsp"\nranks = 4\n')
    out = tmp_path / "j.goal"
    p = cli("goal", "export", scn, "-o", out, check=False)
    assert p.returncode == 2 and not out.exists() and "a scenario of [[jobs]] has no one workload" in p.stderr, p.stderr


def test_export_of_a_scenario_that_already_is_a_goal_schedule_names_both(cli, tmp_path):
    scn = tmp_path / "g.toml"
    scn.write_text(f'[workload]\nkind = "goal"\npath = "{EXAMPLES / "dissemination_16.goal"}"\n')
    p = cli("goal", "export", scn, "-o", tmp_path / "g.goal", check=False)
    assert p.returncode == 2 and not (tmp_path / "g.goal").exists(), p.stderr
    assert f"{scn}: workload: the scenario already is a GOAL schedule ({EXAMPLES / 'dissemination_16.goal'})" in p.stderr


def test_goal_outputs_never_replace_their_inputs(cli, tmp_path):
    """-o naming the scenario, the schedule converted or a file the scenario reads is refused, the input kept."""
    scn = tmp_path / "s.toml"
    scn.write_text('[workload]\nkind = "bsp"\nranks = 4\niterations = 2\n')
    goal = tmp_path / "m.goal"
    goal.write_bytes((EXAMPLES / "dissemination_16.goal").read_bytes())
    partners = tmp_path / "partners.txt"
    partners.write_bytes((EXAMPLES / "spmv_partners.txt").read_bytes())
    spmv = tmp_path / "spmv.toml"
    spmv.write_text((EXAMPLES / "spmv_partners.toml").read_text())
    assert "spmv_partners.txt" in spmv.read_text()
    spmv.write_text(spmv.read_text().replace("spmv_partners.txt", "partners.txt"))
    kept = {f: f.read_bytes() for f in (scn, goal, partners, spmv)}
    for args, given in ((["export", scn, "-o", scn], scn), (["convert", goal, "-o", goal], goal),
                        (["convert", goal, "-o", goal, "--to", "text"], goal), (["export", spmv, "-o", partners], partners),
                        (["export", spmv, "-o", spmv, "--to", "binary"], spmv)):
        p = cli("goal", *args, check=False)
        assert p.returncode == 2 and "it would replace the input" in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
        assert str(given.name) in p.stderr
    assert {f: f.read_bytes() for f in kept} == kept
