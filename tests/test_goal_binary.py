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
