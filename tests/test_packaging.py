"""Lean and quick (issue 49 item 6): the command line starts without the
numerical stack, the package's API is found at its top level and typed, and
the wheel installs and runs on its own (IDLEWAVE_SLOW=1, `make wheel-check`)."""

import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.integration

# Imported by the commands that use them, never at start-up: each costs from
# tens of milliseconds (numpy) to a second (scikit-learn, dask) of CPU.
HEAVY = {"numpy", "polars", "matplotlib", "scipy", "sklearn", "dask", "distributed", "pandas", "statsmodels", "hmmlearn",
         "mpi4py", "otf2", "jsonschema"}

# In a fresh interpreter: every command's and group's --help, rendered through
# Typer as the console script would, then the heavy packages it imported.
EVERY_HELP = r"""
import json, sys
from typer.main import get_command
from typer.testing import CliRunner
from idlewave.cli import app

def walk(cmd, path):
    yield path
    for name, sub in getattr(cmd, "commands", {}).items():  # a group's (Typer vendors its own click)
        yield from walk(sub, [*path, name])

runner = CliRunner()
paths = list(walk(get_command(app), []))
for path in paths:
    r = runner.invoke(app, [*path, "--help"])
    assert r.exit_code == 0, (path, r.output)
heavy = set(json.loads(sys.argv[1]))
print(json.dumps({"paths": paths, "heavy": sorted({m.split(".")[0] for m in sys.modules} & heavy)}))
"""


def _imported(*args: str) -> set[str]:
    """The top-level packages a fresh `python -X importtime ...` imported."""
    p = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return {m.group(1).split(".")[0] for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)", p.stderr, re.M)}


@pytest.mark.parametrize("args", [["-m", "idlewave", "--help"], ["-m", "idlewave", "--version"], ["-c", "import idlewave"],
                                  ["-c", "import idlewave.cli"]])
def test_start_up_imports_nothing_heavy(args):
    imported = _imported(*args)
    assert "idlewave" in imported and "typer" in imported or args[0] == "-c"
    assert not imported & HEAVY, f"{' '.join(args)} imported {sorted(imported & HEAVY)}"


def test_a_command_loads_its_own_module_and_no_other(tmp_path):
    """`idlewave loggopsim FILE` imports the loggopsim command's module and what it uses, not the
    other commands' (each of which costs start-up time on every run)."""
    goal = tmp_path / "two.goal"
    goal.write_text("num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\n}\nrank 1 {\nl1: recv 8b from 0 tag 0\n}\n")
    run = ("import json, sys\nsys.argv = ['idlewave', 'loggopsim', sys.argv[1]]\nfrom idlewave.cli import main\n"
           "try:\n    main()\nexcept SystemExit:\n    pass\n"
           "print(json.dumps(sorted(m for m in sys.modules if m.startswith('idlewave.cli.'))))")
    p = subprocess.run([sys.executable, "-c", run, str(goal)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "Host 1: 5542" in p.stdout, p.stdout + p.stderr[-2000:]  # LogGOPSim's defaults
    modules = set(json.loads(p.stdout.strip().splitlines()[-1]))
    assert "idlewave.cli.loggopsim" in modules
    others = {"simulate", "explain", "bench", "studies", "analyze", "regimes", "sweep", "report", "models", "fit", "measure", "trace",
              "goal", "validate"}
    assert not modules & {f"idlewave.cli.{m}" for m in others}, sorted(modules)


def test_no_commands_help_imports_anything_heavy():
    p = subprocess.run([sys.executable, "-c", EVERY_HELP, json.dumps(sorted(HEAVY))], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert ["simulate"] in r["paths"] and len(r["paths"]) > 20  # every group's commands were walked
    assert r["heavy"] == [], f"some command's --help imported {r['heavy']}"


def test_the_api_is_at_the_top_level_lazily():
    code = ("import sys, idlewave; heavy = sorted(m for m in ('numpy', 'polars') if m in sys.modules); "
            "names = [n for n in ('simulate', 'Result', 'spmv_partners', 'load_scenario', 'ScenarioError', 'SimulationError') "
            "if n in dir(idlewave) and n in idlewave.__all__]; "
            "from idlewave.simulation import Result, simulate; "
            "print(heavy, names, idlewave.simulate is simulate and idlewave.Result is Result)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["[]", "['simulate',", "'Result',", "'spmv_partners',", "'load_scenario',", "'ScenarioError',",
                                "'SimulationError']", "True"]


def test_every_name_in_all_exists():
    import idlewave

    assert sorted(idlewave.__all__) == sorted(set(idlewave.__all__))
    for name in idlewave.__all__:
        assert getattr(idlewave, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        idlewave.nonesuch  # noqa: B018


def test_the_package_is_typed():
    import idlewave

    assert (Path(idlewave.__file__).parent / "py.typed").is_file()


def test_bench_reports_the_help_cpu_time(cli):
    r = json.loads(cli("bench", "--case", "cli_help").stdout)
    assert r["case"] == "cli_help" and 0 < r["help_cpu_s"] < 10


# --- the wheel, installed alone (slow: a release build, a venv) ------------------------------------------------

slow = pytest.mark.skipif(os.environ.get("IDLEWAVE_SLOW") != "1", reason="builds and installs the wheel: IDLEWAVE_SLOW=1 "
                          "(make wheel-check, make test-full)")


def _elf_sections(elf: bytes) -> list[str]:
    """The section names of a 64-bit little-endian ELF file."""
    import struct

    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    header = lambda i: struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)  # name, type, flags, addr, offset, size
    strtab = header(shstrndx)[4]
    return [elf[strtab + h[0]:elf.index(b"\0", strtab + h[0])].decode() for h in map(header, range(shnum))]


def _core_closure() -> list:
    """The distributions `idlewave` needs without extras, as installed here:
    its core requirements and theirs, markers evaluated for this interpreter."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    seen: dict[str, md.Distribution] = {}
    todo = [Requirement(r) for r in md.requires("idlewave") or []]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = re.sub(r"[-_.]+", "-", req.name).lower()
        if key in seen:
            continue
        seen[key] = dist = md.distribution(req.name)
        todo += [Requirement(r) for r in dist.requires or []]
    return list(seen.values())


def _link_into(site: Path, dists: list) -> None:
    """Makes `dists` importable in another venv without an index: each file's
    top-level entry (package, .libs, .dist-info, module) linked into `site`."""
    for dist in dists:
        for top in {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}:
            src = Path(dist.locate_file(top))
            if src.exists() and not (site / top).exists() and not top.endswith(".pth") and top != "__pycache__":
                (site / top).symlink_to(src)


TINY = """
name = "tiny"
[network]
L_s = 2.5e-6
o_s = 1.5e-6
g_s = 1.0e-6
G_s_per_byte = 6e-9
[workload]
kind = "bsp"
ranks = 8
iterations = 10
compute_s = 1e-4
distances = [1]
message_bytes = 1024
"""


@pytest.mark.slow
@slow
def test_the_wheel_installs_and_runs_alone(tmp_path):
    wheel = os.environ.get("IDLEWAVE_WHEEL")
    if not wheel:
        subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path / "dist")], check=True,
                       timeout=3600)
        wheel = str(next((tmp_path / "dist").glob("idlewave-*.whl")))
    # what the wheel holds: the package, typed, and an engine without debug info
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        engine = [n for n in names if n.startswith("idlewave/_engine") and n.endswith(".so")]
        assert len(engine) == 1, engine
        assert "idlewave/py.typed" in names and "idlewave/_engine.pyi" in names
        # the tracer is compiled where it runs, from its core and the generated record codes
        assert "idlewave/trace/tracer_core.c" in names and "idlewave/trace/iw_ops.h" in names
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        so = z.read(engine[0])
    assert not [n for n in _elf_sections(so) if n.startswith(".debug")], "the engine has debug info (Cargo.toml [profile.release])"
    # a fresh venv with the wheel and, linked from this one, only the core dependencies
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, symlinks=True)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True,
                               text=True, check=True).stdout.strip())
    _link_into(site, _core_closure())
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", wheel], check=True, env=env, timeout=600)
    check = subprocess.run([str(py), "-m", "pip", "check"], capture_output=True, text=True, env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    exe = env_dir / "bin" / "idlewave"
    cwd = tmp_path / "elsewhere"  # not the source tree: the installed package, not python/idlewave
    cwd.mkdir()
    v = subprocess.run([str(exe), "--version"], capture_output=True, text=True, cwd=cwd, env=env)
    assert v.returncode == 0 and v.stdout.startswith("idlewave 0."), v.stdout + v.stderr
    tiny = tmp_path / "tiny.toml"
    tiny.write_text(TINY)
    out = tmp_path / "run"
    s = subprocess.run([str(exe), "simulate", str(tiny), "--out", str(out), "--quiet"], capture_output=True,
                       text=True, cwd=cwd, env=env, timeout=600)
    assert s.returncode == 0, s.stdout + s.stderr
    assert json.loads((out / "summary.json").read_text())["makespan_s"] > 0
    api = subprocess.run([str(py), "-c", "import idlewave, pathlib; r = idlewave.simulate(pathlib.Path(__import__('sys').argv[1])); "
                          "print(type(r).__name__, idlewave.__file__)", str(tiny)],
                         capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    assert api.returncode == 0, api.stderr
    kind, where = api.stdout.split()
    assert kind == "Result" and Path(where).is_relative_to(site), where
