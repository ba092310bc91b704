"""The command-line conventions (docs/cli-conventions.md), checked on every
command and subcommand in-process (typer's CliRunner: ~35 `--help`s in
about a second), and the progress line, the explain default and the number
formatter they rest on."""

from __future__ import annotations

import io
import json
import re
import time

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from idlewave.cli import app
from idlewave.cli.common import Steps, progress_bar, scenario_sets
from idlewave.units import fmt_bytes, fmt_count, fmt_rate, fmt_si, fmt_time

pytestmark = pytest.mark.integration


def commands() -> dict[str, object]:
    """Every leaf command, by its words ("trace replay")."""
    found: dict[str, object] = {}

    def walk(cmd, path: list[str]) -> None:
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
        else:
            found[" ".join(path)] = cmd

    walk(typer.main.get_command(app), [])
    return found


COMMANDS = commands()


def flags(cmd) -> set[str]:
    """Every option name of a command, hidden ones included."""
    return {o for p in cmd.params for o in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]}


#: Commands that write a directory (--out) or one file (-o/--output).
WRITES_DIR = {"simulate", "explain", "sweep", "regimes", "reproduce", "demo", "validate", "trace build", "trace import",
              "trace replay", "measure compare"} | {c for c in COMMANDS if c.startswith("measure ")}
WRITES_FILE = {"init", "report", "fit postal", "trace export", "goal convert", "goal export"}
#: Commands that take a scenario (a file, a study's base, or a replay's network and noise).
TAKES_SCENARIO = {"simulate", "explain", "sweep", "trace replay", "goal export"}
MARKUP = re.compile(r"\[/?(?:bold|dim|italic|red|green|yellow|blue|cyan|magenta|white|link)\b[^\]]*\]|\[/\]")


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_the_inventory_is_complete():
    # a new command is a decision about the conventions: add it to the sets above
    assert len(COMMANDS) >= 35
    assert {"simulate", "explain", "sweep", "regimes", "trace replay", "validate", "model postal"} <= set(COMMANDS)
    assert (WRITES_DIR | WRITES_FILE | TAKES_SCENARIO) <= set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_follows_the_conventions(name):
    cmd = COMMANDS[name]
    names = flags(cmd)
    assert "--quiet" in names and "-q" in names, f"{name}: no --quiet/-q"
    assert "--json" in names, f"{name}: no --json"
    if name in WRITES_DIR:
        assert "--out" in names, f"{name}: writes a directory without --out"
    if name in WRITES_FILE:
        assert {"-o", "--output"} <= names, f"{name}: writes a file without -o/--output"
    if name in TAKES_SCENARIO:
        assert "--set" in names, f"{name}: takes a scenario without --set"
        assert next(p for p in cmd.params if "--set" in getattr(p, "opts", [])).multiple, f"{name}: --set not repeatable"
    # -o names a file: a directory is --out (trace build's -o DIR is a hidden, deprecated alias)
    visible_o = [p for p in cmd.params if "-o" in getattr(p, "opts", []) and not getattr(p, "hidden", False)]
    if name != "loggopsim":  # LogGOPSim's -o is its overhead o, a contract with its users
        assert all("--output" in p.opts for p in visible_o), f"{name}: -o that is not --output"
    result = run(*name.split(), "--help")
    assert result.exit_code == 0, result.output
    assert not MARKUP.search(result.output), f"{name}: rich markup left in the help: {MARKUP.search(result.output)}"
    assert "--quiet" in result.output


@pytest.mark.parametrize("args", [
    ["model", "postal", "--bytes", "8", "--json", "--quiet"],
    ["simulate", "--list", "--json"],
    ["init", "--list", "--json", "-q"],
    ["schema", "--json"],
])
def test_json_outputs_parse(args):
    result = run(*args)
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)


def test_repeatable_lists_mean_the_same_as_comma_lists():
    comma = run("model", "allreduce", "--nodes", "4", "--penalties", "maxrate,hops,congestion", "--json")
    repeated = run("model", "allreduce", "--nodes", "4", "--penalties", "maxrate", "--penalties", "hops",
                   "--penalties", "congestion", "--json")
    assert comma.exit_code == 0 and comma.stdout == repeated.stdout
    assert json.loads(comma.stdout)["penalty_s"] > 0


def test_set_values_are_read_as_toml():
    assert scenario_sets(["network.L_s=5e-6", "workload.barrier=true", "name=plain text", "workload.distances=[1, 2]"]) == {
        "network.L_s": 5e-6, "workload.barrier": True, "name": "plain text", "workload.distances": [1, 2]}


BSP = '[workload]\nkind = "bsp"\nranks = 8\niterations = 10\ncompute_s = 1e-5\ndistances = [1]\nbarrier = false\n'


def test_positions_and_paths_are_printed_as_given_never_as_emoji_codes(tmp_path):
    """Rich reads ":100:" as an emoji code: an error on line 100, or a path
    with colons, must still print as written."""
    (tmp_path / ":smile:.toml").write_text("#\n" * 98 + "[network]\nbogus = 1\n")
    result = run("simulate", str(tmp_path / ":smile:.toml"))
    assert result.exit_code == 2
    assert ":smile:.toml:100:9: network.bogus: unknown key" in result.output, result.output


def test_an_output_that_would_replace_an_input_is_refused(tmp_path):
    """fit's -o over its own data, report's -o over a result's file: refused,
    the input unchanged; a report beside the result's files is fine."""
    data = tmp_path / "pp.csv"
    data.write_text("size_bytes,time_s\n" + "".join(f"{n},{1e-6 + n * 1e-10}\n" for n in (1, 8, 64, 512, 4096) for _ in range(3)))
    before = data.read_text()
    result = run("fit", "postal", str(data), "-o", str(data))
    assert result.exit_code == 2 and "it would replace the input" in result.output and data.read_text() == before
    (tmp_path / "bsp.toml").write_text(BSP)
    assert run("simulate", str(tmp_path / "bsp.toml"), "--out", str(tmp_path / "r"), "--quiet").exit_code == 0
    summary = (tmp_path / "r" / "summary.json").read_text()
    result = run("report", str(tmp_path / "r"), "-o", str(tmp_path / "r" / "summary.json"))
    assert result.exit_code == 2 and "a file of the input" in result.output
    assert (tmp_path / "r" / "summary.json").read_text() == summary
    assert run("report", str(tmp_path / "r"), "-o", str(tmp_path / "r" / "page.html"), "--quiet").exit_code == 0


def test_simulate_set_overrides_the_scenario(tmp_path):
    (tmp_path / "bsp.toml").write_text(BSP)
    result = run("simulate", str(tmp_path / "bsp.toml"), "--set", "workload.ranks=4", "--set", "workload.iterations=3",
                 "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["ranks"], doc["iterations"]) == (4, 3)
    bad = run("simulate", str(tmp_path / "bsp.toml"), "--set", "workload.ranks")
    assert bad.exit_code == 2 and "key.path=value" in bad.stderr


@pytest.fixture
def counted(monkeypatch):
    """Counts the simulations (the first run, and each of the tolerance search's)."""
    import idlewave.explain as ex
    import idlewave.simulation as sim

    runs = {"first": 0, "search": 0}
    first, again = sim.simulate, ex._makespan

    def simulate(*a, **kw):
        runs["first"] += 1
        return first(*a, **kw)

    def makespan(*a, **kw):
        runs["search"] += 1
        return again(*a, **kw)

    monkeypatch.setattr(sim, "simulate", simulate)
    monkeypatch.setattr(ex, "_makespan", makespan)
    return runs


def test_explain_runs_one_simulation_by_default(tmp_path, counted):
    (tmp_path / "bsp.toml").write_text(BSP)
    result = run("explain", str(tmp_path / "bsp.toml"), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert counted == {"first": 1, "search": 0}
    assert doc["tolerance"] == {} and "resimulations" not in doc and doc["derivatives"]["L"] == 10
    # said how to ask for the search, and what it costs
    assert "--tolerance runs it, about 76 runs" in run("explain", str(tmp_path / "bsp.toml")).stderr
    assert "tolerance" not in run("explain", str(tmp_path / "bsp.toml"), "-q").stderr


def test_explain_tolerance_says_its_runs_first(tmp_path, counted):
    (tmp_path / "bsp.toml").write_text(BSP)
    result = run("explain", str(tmp_path / "bsp.toml"), "--tolerance", "--param", "L", "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("tolerance search: about 38 runs of the scenario (L;")
    doc = json.loads(result.stdout)
    assert counted["search"] == doc["resimulations"]["L"] > 8 and set(doc["tolerance"]) == {"L"}
    # --params (repeatable or comma-separated) asks for the search, as when it was the default
    counted.update(first=0, search=0)
    again = run("explain", str(tmp_path / "bsp.toml"), "--params", "L", "--json", "--quiet")
    assert json.loads(again.stdout)["tolerance"] == doc["tolerance"] and again.stderr == ""
    assert run("explain", str(tmp_path / "bsp.toml"), "--params", "L,G", "--no-tolerance", "--json").exit_code == 0


def test_explain_set_needs_a_scenario_file(tmp_path):
    (tmp_path / "bsp.toml").write_text(BSP)
    assert run("simulate", str(tmp_path / "bsp.toml"), "--explain", "--out", str(tmp_path / "run"), "-q").exit_code == 0
    refused = run("explain", str(tmp_path / "run"), "--set", "workload.ranks=4")
    assert refused.exit_code == 2 and "give the scenario file" in refused.stderr
    doc = json.loads(run("explain", str(tmp_path / "bsp.toml"), "--set", "workload.ranks=4", "--json").stdout)
    assert doc["derivatives"]["L"] == 10  # 4 ranks, the same 10 latencies on the path


def rendered(bar) -> list[str]:
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    console.print(bar.make_tasks_table(bar.tasks))
    return console.file.getvalue().splitlines()


@pytest.mark.parametrize("percent", [False, True], ids=["k/N", "percent"])
def test_progress_fits_80_columns_with_count_and_eta(percent):
    bar = progress_bar(Console(file=io.StringIO(), width=80, force_terminal=True), percent=percent)
    task = bar.add_task("tolerance of L: run 12, +1.234 µs gives 1.5 s (+0.8%) and a long tail", total=1076)
    for k in (1, 2, 12):
        bar.update(task, completed=k)
        time.sleep(0.02)
    lines = [line for line in rendered(bar) if line.strip()]
    assert len(lines) == 1 and len(lines[0]) <= 80, lines
    line = lines[0]
    assert ("1%" if percent else "12/1076") in line, line
    # the count and the times come first, whole; what runs gives way ("…")
    assert re.search(r" \d:\d\d:\d\d ETA (\d:\d\d:\d\d|-:--:--) tolerance of L: run 12", line), line
    assert line.rstrip().endswith("…")


def test_progress_prints_brackets_literally():
    bar = progress_bar(Console(file=io.StringIO(), width=80, force_terminal=True))
    bar.add_task("[bold]run/[a] b", total=3)
    assert rendered(bar)[0].rstrip().endswith("ETA -:--:-- [bold]run/[a] b")


def test_steps_are_silent_off_a_terminal_and_when_quiet():
    for console, quiet in ((Console(file=io.StringIO(), force_terminal=False), False),
                           (Console(file=io.StringIO(), force_terminal=True), True)):
        with Steps(3, quiet, console) as steps:
            steps("one")
            steps("two")
            assert steps.k == 2 and steps.bar is None
        assert console.file.getvalue() == ""
    with Steps(2, False, Console(file=io.StringIO(), force_terminal=True, width=80)) as steps:
        steps("a", k=1)
        steps("b", k=5)  # an estimate that fell short grows
        assert steps.total == 5 and steps.bar is not None


def test_bracketed_paths_print_literally(tmp_path):
    target = tmp_path / "[bold]x" / "[b]scenario.toml"
    target.parent.mkdir()
    result = run("init", "bsp", "-o", str(target))
    assert result.exit_code == 0, result.output
    assert f"wrote {target}" in result.stdout
    assert target.exists()


@pytest.mark.parametrize("value, text", [
    (0.000845, "845 µs"), (1.5e-3, "1.5 ms"), (0.99996, "1 s"), (12.5, "12.5 s"), (4200, "70 min"), (0, "0 s"),
    (-2.1e-6, "−2.1 µs"), (2e-12, "2 ps"),
])
def test_fmt_time(value, text):
    assert fmt_time(value) == text


def test_fmt_bytes_rate_count():
    assert fmt_bytes(3_500_000) == "3.5 MB" and fmt_bytes(512) == "512 B" and fmt_bytes(3 * 2**20, binary=True) == "3 MiB"
    assert fmt_rate(2.5e7, "events/s") == "25 M events/s" and fmt_rate(1.2e9, "B/s") == "1.2 GB/s"
    assert fmt_count(1234) == "1,234" and fmt_count(1_234_567) == "1.23 M" and fmt_si(5e-9, "F") == "5 nF"


def test_trace_replay_set_takes_what_a_replay_takes_from_a_scenario(tmp_path):
    refused = run("trace", "replay", str(tmp_path / "trace"), "--set", "workload.ranks=4", "--out", str(tmp_path / "r"))
    assert refused.exit_code == 2 and "the workload is the trace" in refused.stderr


def test_regimes_progress_counts_every_step(tmp_path):
    import numpy as np

    from idlewave.stats import analyze

    rng = np.random.default_rng(0)
    T = np.where(rng.random((4, 200)) < 0.5, 1e-3, 2e-3) * rng.lognormal(0, 0.02, (4, 200))
    seen: list[tuple[str, int, int]] = []
    analyze({"a": T, "[b]": T * 1.1}, tmp_path / "out", n_regimes=2, restarts=1, figures_on=False,
            progress=lambda what, k, n: seen.append((what, k, n)))
    assert [k for _, k, _ in seen] == list(range(1, len(seen) + 1)) and {n for *_, n in seen} == {len(seen)}
    assert seen[0][0] == "a: fitting 2 regimes" and seen[-1][0] == "comparing the inputs"
    assert any(what.startswith("[b]: ") for what, *_ in seen)


# --- the number formatter in the commands' human output (idlewave.units), not raw floats

RAW = re.compile(r"\d\.\d+e[-+]\d")  # 1.87893e-05: a number printed raw


def test_model_tables_print_units():
    postal = run("model", "postal", "--bytes", "65536")
    assert postal.exit_code == 0, postal.output
    assert re.search(r"total +[\d.]+ µs", postal.stdout) and not RAW.search(postal.stdout), postal.stdout
    loggops = run("model", "loggops", "--bytes", "8")
    assert re.search(r"bytes +8 B", loggops.stdout) and re.search(r"time_s +[\d.]+ µs", loggops.stdout), loggops.stdout
    speed = run("model", "idle-wave", "--t-exec", "1e-6")
    assert "1 M ranks/s" in speed.stdout, speed.stdout
    # --json keeps plain numbers in SI base units
    assert json.loads(run("model", "postal", "--bytes", "65536", "--json").stdout)["total"] < 1e-3


def test_analyze_prints_units(monkeypatch):
    import idlewave.analyze as an

    monkeypatch.setattr(an, "idle_wave", lambda *a: {
        "source_rank": 3, "delay_s": 2.5e-3, "speed_ranks_per_s": 12345.6, "speed_ranks_per_iteration": 1.0,
        "period_s": 8.1e-5, "ranks_reached": 7, "ranks": 8, "decay_per_rank": 0.01})
    monkeypatch.setattr(an, "pd", lambda *a: {
        "pd": 0.12, "runtime_barrier_s": 1.2345678e-2, "barrier_cost_s": 3.2e-6, "runtime_free_s": 1.1e-2, "iterations": 1000})
    wave = run("analyze", "idle-wave", "anywhere")
    assert wave.exit_code == 0, wave.output
    assert "delay 2.5 ms" in wave.stdout and "12.3 k ranks/s" in wave.stdout and "of 81 µs" in wave.stdout, wave.stdout
    desync = run("analyze", "pd", "a", "b")
    assert desync.exit_code == 0, desync.output
    assert "12.35 ms, minus 1,000 × 3.2 µs barrier cost" in desync.stdout and "11 ms" in desync.stdout, desync.stdout
    monkeypatch.setattr(an, "wavefront", lambda *a: {
        "domain": "socket", "ranks_per_domain": 10, "iterations": [500, 1000], "period_s": 1.78e-2,
        "saturation_ranks": 4.88, "active": [9.94, 5.03], "spread_s": [2.8e-4, 8.0e-2], "lock_step": [True, False],
        "lagging_rank": 4, "lagging_domain": 0})
    front = run("analyze", "wavefront", "anywhere")
    assert front.exit_code == 0, front.output
    assert "iterations 500–999, 17.8 ms each" in front.stdout and "saturated by 4.88 ranks" in front.stdout, front.stdout
    assert re.search(r"0 +│ 0–9 +│ 9.94 +│ 280 µs +│ lock step \(lagging\)", front.stdout), front.stdout
    assert re.search(r"1 +│ 10–19 +│ 5.03 +│ 80 ms +│ wavefront", front.stdout), front.stdout


def test_sweep_ranking_prints_units(capsys):
    from idlewave.cli.sweep import show_ranking

    rows = [{"rank": 1, "strategy": "a", "makespan_mean_s": 1.2345e-3, "makespan_ci_s": 1.2e-5,
             "slowest_iteration_mean_s": 4.5e-6, "slowest_iteration_ci_s": None},
            {"rank": 2, "strategy": "b", "makespan_mean_s": 2.5e-3, "makespan_ci_s": 2e-5, "slowest_iteration_mean_s": None,
             "slowest_iteration_ci_s": None, "slower_than_best": 2.03, "slower_than_best_ci": 0.04, "verdict": "a wins"}]
    show_ranking({"strategy": "s", "level": 0.95, "conditions": [{"condition": {}, "ranking": rows}]})
    text = capsys.readouterr().out
    assert "1.234 ms ± 12 µs" in text and "4.5 µs" in text and "2.03 ± 0.04×" in text and "[ms]" not in text, text


# --- progress on validate and reproduce: the one progress line (cli.common.Steps), on a terminal

class Recorded(Steps):
    """Steps on a fake terminal, remembering each step."""
    made: list[Recorded] = []

    def __init__(self, total: int, quiet: bool = False, console=None, first: str = "starting"):
        super().__init__(total, quiet, Console(file=io.StringIO(), force_terminal=True, width=80), first)
        self.calls: list[str] = []
        Recorded.made.append(self)

    def __call__(self, what: str, k: int | None = None, total: int | None = None) -> None:
        self.calls.append(what)
        super().__call__(what, k, total)


@pytest.fixture
def recorded(monkeypatch):
    import idlewave.cli.studies
    import idlewave.cli.validate

    Recorded.made = []
    monkeypatch.setattr(idlewave.cli.studies, "Steps", Recorded)
    monkeypatch.setattr(idlewave.cli.validate, "Steps", Recorded)
    return Recorded.made


def test_reproduce_shows_progress_over_its_rows(tmp_path, recorded):
    result = run("reproduce", "krylov-kernels", "--iterations", "1", "--out", str(tmp_path / "r"))
    assert result.exit_code == 0, result.output
    (steps,) = recorded
    # 50 rows: row 1 begins, then each finished row starts the next; no per-row lines beside the bar
    assert steps.bar is not None and steps.total == 50 and steps.k == 50 and len(steps.calls) == 50
    assert steps.calls[0] == "krylov-kernels: first row" and steps.calls[-1].startswith("krylov-kernels: Fig. 2 ")
    assert "krylov-kernels: " not in result.stderr
    # the table's times through the formatter
    assert "time per iteration (1 ms overlapped" in result.stdout and re.search(r"\d ms", result.stdout), result.stdout
    recorded.clear()
    quiet = run("reproduce", "krylov-kernels", "--iterations", "1", "--out", str(tmp_path / "q"), "-q")
    assert recorded[0].bar is None and quiet.stderr == ""


def test_reproduce_off_a_terminal_prints_a_line_per_row(tmp_path):
    result = run("reproduce", "krylov-kernels", "--iterations", "1", "--out", str(tmp_path / "r"))
    lines = [line for line in result.stderr.splitlines() if line.startswith("  krylov-kernels: ")]
    assert len(lines) == 50 and re.search(r"\d (ns|µs|ms)$", lines[0]) and not RAW.search(result.stderr), result.stderr


def test_validate_takes_a_platform_or_measures_one(tmp_path):
    neither = run("validate", "-n", "2", "--out", str(tmp_path / "v"), "--", "./app")
    assert neither.exit_code == 2 and "give --platform P (a preset or a platform file), or --calibrate" in neither.stderr
    both = run("validate", "--platform", "generic_ib", "--calibrate", "-n", "2", "--out", str(tmp_path / "v"), "--", "./app")
    assert both.exit_code == 2 and "give --platform or --calibrate, not both" in both.stderr
    loose = run("validate", "--platform", "generic_ib", "--max-error", "0.3", "-n", "2", "--out", str(tmp_path / "v"), "--", "./app")
    assert loose.exit_code == 2 and "--max-error bounds --calibrate's fit" in loose.stderr
    forced = run("validate", "--platform", "generic_ib", "--force-fit", "-n", "2", "--out", str(tmp_path / "v"), "--", "./app")
    assert forced.exit_code == 2 and "--force-fit forces --calibrate's fit" in forced.stderr
    assert not (tmp_path / "v").exists() and not (tmp_path / "v.partial").exists()


def test_validate_shows_progress_over_runs_and_replays(tmp_path, recorded, monkeypatch):
    import idlewave.validate as va

    class Mpi:
        version, mpiexec, mpicc, chosen = "fake MPI", "mpiexec", "mpicc", "given"

    def run_program(mpi, ranks, command, out, repeat, timeout, say, traced_runs):
        for k in range(repeat):
            say(f"untraced run {k + 1} of {repeat}")
        for k in range(traced_runs):
            say(f"traced run {k + 1} of {traced_runs}")
        raise va.ValidateError("the program failed (exit 3; output: run.log)")

    checks = []
    monkeypatch.setattr(va, "find_mpi", lambda *a: Mpi())
    monkeypatch.setattr(va, "run_program", run_program)
    monkeypatch.setattr(va, "check_platform", lambda mpi, platform, out, when, timeout: checks.append(when))
    result = run("validate", "--platform", "blue_waters", "-n", "1", "-k", "2", "-t", "3", "--out", str(tmp_path / "v"),
                 "--", "./app")
    assert result.exit_code == 2 and "the program failed (exit 3" in result.stderr, result.output  # failures still say why
    (steps,) = recorded
    # K untraced, T traced, T replays, the platform checks before and after
    assert steps.bar is not None and steps.total == 2 + 2 * 3 + 2
    assert steps.calls == ["checking the platform (a ping-pong)", "untraced run 1 of 2", "untraced run 2 of 2",
                           "traced run 1 of 3", "traced run 2 of 3", "traced run 3 of 3"]
    assert checks == ["before"]  # the runs failed: no check after them
    assert "untraced run" not in result.stderr  # the progress line instead of a line per run


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_console_that_cannot_show_a_character_gets_a_stand_in_not_a_traceback(tmp_path, encoding):
    """Help and summaries carry ×, – and µ: a console in ASCII or Latin-1 crashed on them (UnicodeEncodeError)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    exe = str(Path(sys.executable).parent / "idlewave")
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    scn = tmp_path / "s.toml"
    scn.write_text('[workload]\nkind = "bsp"\nranks = 4\niterations = 2\n')
    for args in (["model", "--help"], ["trace", "export", "--help"], ["simulate", str(scn)]):
        p = subprocess.run([exe, *args], capture_output=True, env=env)
        assert p.returncode == 0 and b"Traceback" not in p.stderr, (args, p.stderr[-400:])


def test_simulate_options_that_would_be_ignored_or_misnamed_say_so(tmp_path):
    """--seed beyond 64 bits was blamed on --set; --seed with --set seed=…
    kept one silently; --list ignored a scenario; a list entry in --set was
    an unknown key; --dry-run --out wrote nothing without saying so."""
    scn = tmp_path / "s.toml"
    scn.write_text('[workload]\nkind = "bsp"\nranks = 4\niterations = 2\n')
    cases = [
        (["simulate", str(scn), "--seed", str(2**64)], "--seed: must be between 0 and 2^64 - 1"),
        (["simulate", str(scn), "--seed", "5", "--set", "seed=7"], "--seed and --set seed=… both set the seed"),
        (["simulate", "--list", str(scn)], "--list lists the workloads"),
        (["simulate", str(scn), "--set", "noise[0].rate_hz=5"], "not entries of a list such as noise"),
    ]
    for args, says in cases:
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2 and says in r.output, (args, r.output)
    r = CliRunner().invoke(app, ["simulate", str(scn), "--dry-run", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0 and "nothing was written to" in r.output and not (tmp_path / "o").exists()


def test_two_algorithms_for_one_collective_are_refused(tmp_path):
    from idlewave import _engine

    _engine.write_synthetic_trace(str(tmp_path / "tr"), 2, 5)
    r = CliRunner().invoke(app, ["trace", "export", str(tmp_path / "tr"), "-o", str(tmp_path / "x.goal"),
                                 "--algorithm", "allreduce=ring", "--algorithm", "allreduce=recursive_doubling"])
    assert r.exit_code == 2 and "both choose allreduce's algorithm" in r.output and not (tmp_path / "x.goal").exists()
