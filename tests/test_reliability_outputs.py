"""What the commands write and print (issue 48): a read-only or full disk is
a one-line error and leaves nothing behind; the report escapes everything it
reads; user text in figures is literal; paths are never globs or markup;
JSON output is always valid JSON."""

import html
import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import invoke_cli

pytestmark = pytest.mark.integration

EXE = Path(sys.executable).parent / "idlewave"
SCENARIO = """seed = 1
[workload]
kind = "bsp"
ranks = 8
iterations = 20
compute_s = 1e-5
distances = [1]
message_bytes = 64
[[noise]]
kind = "single"
rank = 3
start_s = 3e-5
duration_s = 1e-4
"""
STUDY = """name = "tiny"
[base.workload]
kind = "bsp"
ranks = 4
iterations = 3
compute_s = 1e-6
[grid]
"workload.ranks" = [4, 8]
"""


def pingpong(path: Path, scale: float = 1.0) -> Path:
    """One-way times of 23 sizes × 5 repetitions (α = 0.5 µs, β = 0.1 ns/B) times `scale`."""
    rng = np.random.default_rng(1)
    rows = ["size_bytes,rep,time_s"]
    for k in range(23):
        for r in range(5):
            n = 1 << k
            rows.append(f"{n},{r},{(0.5e-6 + 0.1e-9 * n) * (1 + 0.02 * rng.standard_normal()) * scale!r}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A scenario, its result, ping-pong times and a study, made once."""
    d = tmp_path_factory.mktemp("inputs")
    (d / "s.toml").write_text(SCENARIO)
    invoke_cli("simulate", d / "s.toml", "--out", d / "res", "--quiet")
    pingpong(d / "pp.csv")
    (d / "study.toml").write_text(STUDY)
    return d


def writers(i: Path, target: Path) -> dict[str, list]:
    """Every command that writes, with its output at `target`/NAME."""
    return {
        "init": ["init", "bsp", "-o", target / "s.toml"],
        "simulate": ["simulate", i / "s.toml", "--out", target / "res", "--quiet"],
        "fit postal": ["fit", "postal", i / "pp.csv", "-o", target / "p.toml"],
        "report": ["report", i / "res", "-o", target / "r.html"],
        "regimes": ["regimes", i / "res", "--out", target / "reg", "--regimes", "1", "--restarts", "1"],
        "explain": ["explain", i / "res", "--out", target / "ex", "--no-tolerance"],
        "sweep": ["sweep", i / "study.toml", "--out", target / "sw", "--workers", "1", "--quiet"],
        "reproduce": ["reproduce", "krylov-kernels", "--out", target / "rep"],
        "demo": ["demo", "--out", target / "demo", "--quiet"],
    }


def _writable(d: Path) -> bool:
    try:
        (d / ".idlewave-probe").touch()
    except OSError:
        return False
    (d / ".idlewave-probe").unlink()
    return True


@pytest.fixture
def read_only(tmp_path):
    """A directory in which nothing can be created: mode 0555, or (as root,
    whom modes do not stop) a directory of sysfs."""
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        if not _writable(d):
            yield d
            return
    finally:
        d.chmod(0o755)
    if Path("/sys/kernel").is_dir() and not _writable(Path("/sys/kernel")):
        yield Path("/sys/kernel")
        return
    pytest.skip("no directory here refuses writes")


def full_disk(*args):
    """Runs the command with RLIMIT_FSIZE = 0: every byte written to a file
    fails (EFBIG, "File too large"), as on a full disk, also as root."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, preexec_fn=limit, timeout=300)


def listing(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


@pytest.mark.parametrize("command", ["init", "simulate", "fit postal", "report", "regimes", "explain", "sweep"])
def test_a_full_disk_is_a_one_line_error_and_leaves_nothing(inputs, tmp_path, command):
    target = tmp_path / "out"
    target.mkdir()
    before = listing(inputs)
    p = full_disk(*writers(inputs, target / "deep")[command])
    assert p.returncode == 1, (p.returncode, p.stderr)  # a write that failed (a refusal is 2)
    assert "Traceback" not in p.stderr, p.stderr
    assert "error:" in p.stderr and "File too large" in p.stderr and str(target / "deep") in p.stderr, p.stderr
    assert listing(target) == [], listing(target)  # no temporary file, no half-written result, no created directory
    assert listing(inputs) == before


@pytest.mark.parametrize("command", ["init", "simulate", "fit postal", "report", "regimes", "explain", "sweep",
                                     "reproduce", "demo"])
def test_a_read_only_directory_is_a_one_line_error(inputs, read_only, command):
    name = "idlewave-test-not-written"
    p = invoke_cli(*writers(inputs, read_only / name)[command], check=False)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    line = [x for x in p.stderr.splitlines() if "error:" in x]
    assert line and str(read_only / name) in p.stderr, p.stderr
    assert not (read_only / name).exists()


def test_a_file_in_place_of_a_directory_is_a_one_line_error(inputs, tmp_path):
    (tmp_path / "file").write_text("x")
    for command in ("report", "fit postal", "init"):
        p = invoke_cli(*writers(inputs, tmp_path / "file")[command], check=False)
        assert p.returncode == 1 and "Traceback" not in p.stderr and "error:" in p.stderr, p.stderr
        assert "Not a directory" in p.stderr or "File exists" in p.stderr, p.stderr
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.parametrize("command", ["report", "fit postal", "init", "simulate", "explain", "sweep"])
def test_an_output_refused_is_exit_2_where_a_failed_write_is_1(inputs, tmp_path, command):
    """What idlewave will not replace where its output goes (a directory where a file goes, a directory
    holding a user's files) is a refusal: exit 2, as the reliability page says, and it stays as it was."""
    mine = tmp_path / "mine"
    (mine / "notes").mkdir(parents=True)
    args = writers(inputs, tmp_path)[command]
    where = next(k for k, a in enumerate(args) if isinstance(a, Path) and a.parent == tmp_path)
    args[where] = mine / "notes" if command in ("report", "fit postal", "init") else mine  # file outputs: a directory there
    p = invoke_cli(*args, check=False)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and sorted(mine.rglob("*")) == [mine / "notes"]


# --- the report escapes everything it reads (item 3) ---

def evil(field: str) -> str:
    """A value that would run a script if it reached the page unescaped; `field` tells which field it came from."""
    return f'<script>alert("{field}")</script>"><img src=x onerror=alert("{field}")>'


def _poison(data, path: str = ""):
    """`data` with every string value and every key replaced by an evil one (numbers kept: the report must
    still read the structure) — and each list or object gains an evil key or item where it can."""
    if isinstance(data, dict):
        return {(evil(f"{path}.{k}.key") if k not in KEEP_KEYS else k): _poison(v, f"{path}.{k}") for k, v in data.items()}
    if isinstance(data, list):
        return [_poison(v, f"{path}[{i}]") for i, v in enumerate(data)]
    if isinstance(data, str):
        return evil(path)
    return data


#: Keys the report looks up by name: kept, so that their values (poisoned) reach the page.
KEEP_KEYS = {"datasets", "regimes", "n_regimes", "regime", "share", "mean", "sd", "mu", "sigma", "comparisons", "note",
             "ks", "percent_difference_total_tmax", "strategy", "level", "replications", "conditions", "condition",
             "ranking", "rank", "makespan_mean_s", "makespan_ci_s", "slowest_iteration_mean_s", "slower_than_best",
             "verdict", "headline", "title", "columns", "rows", "notes", "workload", "ranks", "iterations",
             "makespan_s", "iteration_s", "p95", "events", "route", "segments", "longest_on", "from_s",
             "waits_total_s", "tolerance", "non_monotonic_by", "noisy", "causes_ps", "causes_s", "derivatives",
             "makespan_ps", "bound_by", "counts", "noise", "kind"}


def test_the_report_escapes_every_value_it_reads(inputs, tmp_path):
    import shutil

    import polars as pl

    root = tmp_path / "evil"
    run = root / evil("run-directory").replace("/", "|")  # a run directory's name is data too
    run.parent.mkdir()
    subprocess.run([str(EXE), "simulate", inputs / "s.toml", "--out", run, "--quiet", "--explain"], check=True)
    # every field of every file the report reads, poisoned where the structure allows
    summary = json.loads((run / "summary.json").read_text())
    summary.update(workload=evil("summary.workload"), ranks=evil("summary.ranks"), iterations=evil("summary.iterations"),
                   events=evil("summary.events"), iteration_s={"mean": evil("iteration.mean"), "p95": evil("iteration.p95")})
    (run / "summary.json").write_text(json.dumps(summary))
    ex = json.loads((run / "explain.json").read_text())
    ex["route"] = {"segments": evil("route.segments"), "ranks": evil("route.ranks"), "from_s": evil("route.from_s"),
                   "longest_on": [{"rank": evil("route.rank"), "share": evil("route.share")}]}
    ex["waits_total_s"] = {"late_sender": evil("waits.late_sender"), "other": 1.0}
    ex["tolerance"] = {evil("tolerance.param"): {evil("tolerance.fraction"): evil("tolerance.value")}, "L": {"0.01": 1e-6}}
    ex["non_monotonic_by"] = {evil("non_monotonic.param"): 0.5}
    ex["noisy"] = True
    (run / "explain.json").write_text(json.dumps(ex))
    (root / "summary.json").write_text(json.dumps({"headline": [{
        "title": evil("headline.title"), "columns": [evil("headline.column")], "rows": [[evil("headline.cell")]],
        "notes": [evil("headline.note")]}]}))
    sweep = root / "sweep"
    sweep.mkdir()
    pl.DataFrame({"id": [evil("sweep.id"), "b"], "status": ["done", "done"], evil("sweep.key"): [evil("sweep.value"), "x"],
                  "makespan_s": [1.0, 2.0]}).write_parquet(sweep / "sweep.parquet")
    (sweep / "ranking.json").write_text(json.dumps({
        "strategy": evil("ranking.strategy"), "level": evil("ranking.level"), "replications": evil("ranking.replications"),
        "conditions": [{"condition": {evil("ranking.condition.key"): evil("ranking.condition.value")},
                        "ranking": [{"rank": evil("ranking.rank"), "strategy": evil("ranking.row.strategy"),
                                     "makespan_mean_s": evil("ranking.mean"), "makespan_ci_s": evil("ranking.ci"),
                                     "slowest_iteration_mean_s": evil("ranking.slowest"),
                                     "slower_than_best": evil("ranking.slower"), "verdict": evil("ranking.verdict")}]}]}))
    reg = root / "regimes"
    reg.mkdir()
    pl.DataFrame({"rank": [0], "iteration": [0], "time": [1.0], "regime": [0]}).write_parquet(reg / "regimes.parquet")
    row = {"regime": evil("regimes.regime"), "share": evil("regimes.share"), "mean": evil("regimes.mean"),
           "sd": evil("regimes.sd"), "mu": evil("regimes.mu"), "sigma": evil("regimes.sigma")}
    (reg / "summary.json").write_text(json.dumps({"n_regimes": evil("regimes.n_regimes"), "regimes": [row]}))
    many = root / "regimes-many"
    (many / "a").mkdir(parents=True)
    shutil.copy(reg / "regimes.parquet", many / "a" / "regimes.parquet")
    (many / "summary.json").write_text(json.dumps({
        "datasets": {evil("datasets.name"): {"n_regimes": evil("datasets.n_regimes"), "regimes": [row]}},
        "comparisons": {"note": evil("comparisons.note"), "ks": [{evil("ks.key"): evil("ks.value")}],
                        "percent_difference_total_tmax": {evil("pct.pair"): evil("pct.value")}}}))
    compare = root / "compare"
    compare.mkdir()
    pl.DataFrame({evil("compare.column"): [evil("compare.value")]}).write_parquet(compare / "compare.parquet")
    broken = root / "broken"  # a left-out result: its message quotes a key it lacked
    broken.mkdir()
    (broken / "sweep.parquet").write_bytes(b"not parquet " + evil("broken.file").encode())

    p = invoke_cli("report", root, "-o", tmp_path / "page.html", check=False)
    assert "Traceback" not in p.stderr, p.stderr
    page = (tmp_path / "page.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page, page
    for field in ("ranking.replications", "regimes.n_regimes", "datasets.n_regimes", "ranking.strategy", "ranking.level",
                  "ranking.condition.key", "ranking.verdict", "headline.title", "headline.cell", "sweep.key", "sweep.value",
                  "summary.workload", "iteration.mean", "route.segments", "route.rank", "waits.late_sender",
                  "tolerance.param", "tolerance.value", "compare.column", "compare.value", "comparisons.note", "ks.value",
                  "pct.pair", "regimes.sd", "run-directory"):
        assert html.escape(evil(field).replace("/", "|") if field == "run-directory" else evil(field), quote=True) in page, field


def test_report_json_fields_of_the_wrong_type_are_shown_as_text():
    from idlewave.report import Html, h, join

    assert h("<p>{:.0%} of {:,}</p>", "<b>", "x&y") == "<p>&lt;b&gt; of x&amp;y</p>"
    assert h("{}", Html("<i>kept</i>")) == "<i>kept</i>"
    assert join(["<a>", Html("<br>")]) == "&lt;a&gt;<br>"


# --- user text in figures is drawn as written, never as mathtext (item 6) ---

MATH = "$x^$"  # invalid mathtext: matplotlib would fail to draw it


def test_names_with_dollars_are_drawn_literally_in_every_figure(inputs, tmp_path):
    import shutil

    from idlewave import ranking

    # regimes --name: the per-input figures and the cumulative comparison's legend
    p = invoke_cli("regimes", inputs / "res", inputs / "res", "--name", MATH, "--name", "b$c$", "--out", tmp_path / "reg",
                "--regimes", "1", "--restarts", "1", check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert (tmp_path / "reg" / "cumulative.png").stat().st_size > 1000
    # a run directory's name: the report's plot legend and idle-wave heat map title
    shutil.copytree(inputs / "res", tmp_path / "runs" / MATH)
    p = invoke_cli("report", tmp_path / "runs", check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    # strategy names, conditions and the strategy key: the ranking figure's ticks, legend and title
    result = [{"condition": {"noise$": MATH}, "ranking": [
        {"strategy": MATH, "makespan_mean_s": 1e-3, "makespan_ci_s": 1e-4, "replications": 3},
        {"strategy": "a$b$", "makespan_mean_s": 2e-3, "makespan_ci_s": None, "replications": 3}]}]
    assert ranking.figure(result, "workload.$alg^$", tmp_path).stat().st_size > 1000


def test_literal_text_keeps_math_in_formatted_ticks():
    from idlewave.results import figure_png, literal_text, pyplot

    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [1e-3, 1e-1, 10], label=MATH)
    ax.set_yscale("log")
    ax.set_title(MATH)
    ax.set_xticks([1, 2, 3], [MATH, "$y$", "z"])
    ax.legend()
    literal_text(fig)
    assert not ax.title.get_parse_math()
    assert not any(t.get_parse_math() for t in ax.get_xticklabels())
    assert ax.yaxis.get_major_ticks()[0].label1.get_parse_math()  # 10^-3 stays math
    assert figure_png(fig)[:4] == b"\x89PNG"


# --- paths are data: never a glob pattern, never rich markup (item 13) ---

def test_paths_with_brackets_are_neither_globs_nor_markup(inputs, tmp_path):
    import shutil

    def flat(text: str) -> str:  # a path longer than the line (80 columns) is broken across lines
        return text.replace("\n", "")

    run = tmp_path / "res[1]"  # polars would take it for a pattern matching res1
    shutil.copytree(inputs / "res", run)
    p = invoke_cli("report", run)
    assert f"report: {run}/report.html" in flat(p.stdout) and (run / "report.html").exists()
    for out in ("res[/x]", "res[red]x", "res[bold]"):  # a closing tag, a style, an unclosed one
        p = invoke_cli("simulate", inputs / "s.toml", "--out", tmp_path / out, "--quiet", check=False)
        assert p.returncode == 0 and "Traceback" not in p.stderr and "MarkupError" not in p.stderr, p.stderr
        assert out in flat(p.stdout), p.stdout
        assert (tmp_path / out / "summary.json").exists()
    p = invoke_cli("regimes", run, "--name", "[red]x", "--out", tmp_path / "reg[/x]", "--regimes", "1", "--restarts", "1",
                "--no-figures")
    assert "[red]x: 1 regimes" in p.stdout and f"results: {tmp_path / 'reg[/x]'}" in flat(p.stdout)
    p = invoke_cli("explain", run, "--no-tolerance", "--out", tmp_path / "ex[/b]")
    assert f"{tmp_path / 'ex[/b]'}/explain.json" in flat(p.stdout)
    p = invoke_cli("init", "bsp", "-o", tmp_path / "s[red].toml")
    assert "s[red].toml" in flat(p.stdout)
    (tmp_path / "d[1]").mkdir()
    pingpong(tmp_path / "d[1]" / "pp.csv")
    p = invoke_cli("fit", "postal", tmp_path / "d[1]" / "pp.csv", "-o", tmp_path / "p[/x].toml", check=False)
    assert p.returncode == 0 and "p[/x].toml" in flat(p.stdout), p.stdout + p.stderr
    p = invoke_cli("sweep", inputs / "study.toml", "--out", tmp_path / "sw[red]", "--workers", "1", "--quiet")
    assert "sw[red]" in flat(p.stdout)


# --- degenerate numbers: refused with the reason, or null with a warning; JSON always valid (item 11) ---

def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, as RFC 8259 and most parsers do."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_regimes_of_extreme_magnitudes_give_valid_json_and_true_moments(tmp_path, scale):
    rng = np.random.default_rng(0)
    x = np.exp(0.1 * rng.standard_normal((4, 200)))
    np.save(tmp_path / "t.npy", scale * x)
    p = invoke_cli("regimes", tmp_path / "t.npy", "--out", tmp_path / "o", "--regimes", "1", "--restarts", "1",
                "--no-figures", "--json")
    assert "Warning" not in p.stderr, p.stderr  # no raw numpy overflow warning
    r = strict_json(p.stdout)["datasets"]["t"]["regimes"][0]
    assert r["sd"] == pytest.approx(scale * x.std(), rel=1e-9) and r["mean"] == pytest.approx(scale * x.mean(), rel=1e-9)
    assert strict_json((tmp_path / "o" / "summary.json").read_text())["regimes"][0]["sd"] == r["sd"]


def test_json_text_gives_null_for_non_finite_numbers_and_says_where():
    from idlewave.results import json_text

    said = []
    text = json_text({"a": [1.0, float("nan")], "b": {"c": float("inf")}, "d": "x"}, warn=said.append)
    assert strict_json(text) == {"a": [1.0, None], "b": {"c": None}, "d": "x"}
    assert said and "a[1]" in said[0] and "b.c" in said[0]


def test_a_result_file_with_non_finite_numbers_says_so_with_its_path_and_keys(tmp_path, capsys):
    from idlewave.cli import _show_warning
    from idlewave.results import NonFiniteWarning, write_json

    with pytest.warns(NonFiniteWarning) as said:
        write_json(tmp_path / "s.json", {"a": {"b": float("-inf")}, "c": [0.5, float("nan")]})
    assert strict_json((tmp_path / "s.json").read_text()) == {"a": {"b": None}, "c": [0.5, None]}
    text = str(said[0].message)
    assert str(tmp_path / "s.json") in text and "a.b" in text and "c[1]" in text
    # the command line prints it as its own warning, not Python's "file:line: NonFiniteWarning"
    _show_warning(said[0].message, NonFiniteWarning, "x.py", 1)
    shown = capsys.readouterr().err
    assert shown.startswith("warning:") and "c[1]" in shown and "x.py" not in shown


def test_fit_refuses_degenerate_times_and_bandwidths(inputs, tmp_path):
    pingpong(tmp_path / "tiny.csv", scale=1e-300)
    p = invoke_cli("fit", "postal", tmp_path / "tiny.csv", "-o", tmp_path / "a.toml", check=False)
    assert p.returncode == 2 and "time_s below 10 ns" in p.stderr and "np.float64" not in p.stderr
    assert not (tmp_path / "a.toml").exists()
    for row, why in (("1,1048576,1e-300", "time_s below 10 ns"), ("1,1048576,5e-9", "time_s below 10 ns"),
                     ("1000,1048576,1e-6", "the multi-pair bandwidth is 1.049e+15 B/s")):  # 1 PB/s
        (tmp_path / "mp.csv").write_text(f"pairs,size_bytes,time_s\n{row}\n")
        p = invoke_cli("fit", "postal", inputs / "pp.csv", "--multipair", tmp_path / "mp.csv", "-o", tmp_path / "b.toml",
                    "--force", check=False)
        assert p.returncode == 2 and why in p.stderr, p.stderr
        assert not (tmp_path / "b.toml").exists()
    (tmp_path / "mp.csv").write_text("pairs,size_bytes,time_s\n1,1048576,1e-4\n4,1048576,2e-4\n")
    p = invoke_cli("fit", "postal", inputs / "pp.csv", "--multipair", tmp_path / "mp.csv", "-o", tmp_path / "c.toml",
                "--json")
    assert strict_json(p.stdout)["node_bandwidth_bytes_per_s"] == pytest.approx(4 * 1048576 / 2e-4)


@pytest.mark.parametrize("args", [["simulate", "S", "--out", ""], ["simulate", "S", "--out=-"], ["init", "bsp", "-o", "-"],
                                  ["report", "R", "--output", " "], ["sweep", "S", "--out", "-"]])
def test_an_output_that_names_nothing_is_refused(inputs, tmp_path, args):
    """`--out ""` filled the current directory (Path("") is "."), and `--out -` made a directory named "-"."""
    args = [str(inputs / "s.toml") if a == "S" else str(inputs / "res") if a == "R" else a for a in args]
    p = subprocess.run([str(EXE), *args], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode == 2 and ("an empty path" in p.stderr or "not standard output" in p.stderr), p.stderr
    assert list(tmp_path.iterdir()) == []
