"""Reproduces the validation table: idlewave's predictions against measured runs
of real MPI applications on this machine, with Debian's Open MPI.

    .venv/bin/python scripts/validation.py [--repeat K] [--traced-runs T] [--apps lammps,gromacs,hpcc,qe,fortran]
                                           [--out DIR] [--quick]

1. Calibrates: `idlewave measure pingpong` with Debian's MPI (C kernels built
   with /usr/bin/mpicc, launched by /usr/bin/mpiexec, 2 ranks; its messages
   from memory, as `idlewave validate --calibrate` measures, unless
   --buffers cache), then
   `idlewave fit postal` into DIR/platform.toml. A refused fit stops here
   (--force-fit writes it anyway, and the table says it was forced).
2. For each application that is installed, writes a small realistic input in
   DIR/<app>/ and runs `idlewave validate` on 2 ranks: K untraced runs, T
   traced, the traces replayed on the platform. An application that is not
   installed is skipped with the reason.
3. Writes DIR/validation.json (everything, with each validate result whole)
   and DIR/validation.md (the table, ready for docs/validation.md), and prints
   the table.

The inputs are sized for 5-20 s per run on a quiet 2-core machine, so that
launch and start-up are a small part of the time; --quick shrinks them to
check that everything works end to end. docs/validation.md describes it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IDLEWAVE = str(Path(sys.executable).parent / "idlewave")
MPICC, MPIEXEC, MPIFORT = "/usr/bin/mpicc", "/usr/bin/mpiexec", "/usr/bin/mpifort"
RANKS = 2
APPS = ("lammps", "gromacs", "hpcc", "qe", "fortran")
TITLES = {"lammps": "LAMMPS", "gromacs": "GROMACS", "hpcc": "HPCC", "qe": "Quantum ESPRESSO", "fortran": "Fortran heat (mpi_f08)"}
# Open MPI as root, in containers (no single-copy CMA); one thread per rank in
# every application (OpenMP, BLAS); GROMACS overwrites its files instead of
# keeping numbered backups (the runs repeat in one directory).
ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
       "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "GMX_MAXBACKUP": "-1"}
MARKER = ".idlewave-validation"  # in DIR: a directory this script made, whose entries it may replace
BY_CALL_SHOWN = 3


class Skip(Exception):
    """The application cannot run here; the message says why."""


class Failed(Exception):
    """A step failed; the message has the command and its output."""


@dataclass
class Prepared:
    command: list[str]  # the program and its arguments, run from the app's directory
    input: dict  # what the input is, in a few figures
    after: Callable[[Path], list[str]] = lambda _: []  # notes read from the run's files afterwards
    notes: list[str] = field(default_factory=list)


def env() -> dict[str, str]:
    return {**os.environ, **ENV}


def run(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """A helper command (input preparation, compilation); a failure raises Failed."""
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Failed(f"{' '.join(cmd)}: {e}") from None
    if p.returncode != 0:
        raise Failed(f"{' '.join(cmd)} (in {cwd}) failed with exit {p.returncode}:\n{tail(p.stdout + p.stderr)}")
    return p


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def need(*paths: str) -> None:
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise Skip(f"not installed: {', '.join(missing)}")


def first_line(path: Path, start: str) -> str | None:
    """The first line of a file that contains `start`, stripped."""
    try:
        for line in path.read_text(errors="replace").splitlines():
            if start in line:
                return line.strip()
    except OSError:
        pass
    return None


# ---------------------------------------------------------------- applications


def lammps(d: Path, quick: bool) -> Prepared:
    """LAMMPS' lj/melt example (fcc lattice, LJ cut-off 2.5σ, NVE), in a larger
    box and for more steps than the example's 4,000 atoms and 250 steps."""
    lmp, example = "/usr/bin/lmp", "/usr/share/lammps/examples/melt/in.melt"
    need(lmp, example)
    cells, steps = (10, 250) if quick else (20, 500)
    text = Path(example).read_text()
    box = "block 0 10 0 10 0 10"
    if box not in text or not any(line.split()[:1] == ["run"] for line in text.splitlines()):
        raise Failed(f"{example}: not the lj/melt input expected (no 'region box {box}' or no 'run' line)")
    new = text.replace(box, f"block 0 {cells} 0 {cells} 0 {cells}")
    lines = [f"run\t\t{steps}" if line.split()[:1] == ["run"] else line for line in new.splitlines()]
    (d / "in.melt").write_text("\n".join(lines) + "\n")

    def after(d: Path) -> list[str]:
        version = first_line(d / "log.lammps", "LAMMPS (")
        loop = first_line(d / "log.lammps", "Loop time")
        return [n for n in (version, loop) if n]

    return Prepared([lmp, "-in", "in.melt", "-log", "log.lammps", "-screen", "none"],
                    {"atoms": 4 * cells**3, "steps": steps, "input": f"{example}, box {cells}³ fcc cells"}, after)


MDP = """integrator         = md
dt                 = 0.002
nsteps             = {steps}
nstlog             = {log}
nstenergy          = 0
nstxout-compressed = 0
cutoff-scheme      = Verlet
nstlist            = 10
coulombtype        = PME
rcoulomb           = 1.0
rvdw               = 1.0
fourierspacing     = 0.12
tcoupl             = V-rescale
tc-grps            = System
tau-t              = 0.1
ref-t              = 300
constraints        = h-bonds
gen-vel            = yes
gen-temp           = 300
"""


def gromacs(d: Path, quick: bool) -> Prepared:
    """SPC water in a cubic box, OPLS-AA, PME electrostatics, Verlet lists."""
    mdrun = "/usr/bin/gmx_mpi"
    need(mdrun)
    tool = "/usr/bin/gmx" if Path("/usr/bin/gmx").exists() else mdrun  # solvate and grompp need no MPI
    box, steps = (3.0, 200) if quick else (4.0, 1000)
    run([tool, "solvate", "-cs", "spc216", "-box", str(box), str(box), str(box), "-o", "water.gro"], cwd=d)
    waters = sum(1 for line in (d / "water.gro").read_text().splitlines()[2:-1] if line[5:10].strip() == "SOL" and line[10:15].strip() == "OW")
    if waters == 0:
        raise Failed(f"gmx solvate wrote no water into {d / 'water.gro'}")
    (d / "topol.top").write_text('#include "oplsaa.ff/forcefield.itp"\n#include "oplsaa.ff/spc.itp"\n\n'
                                 f"[ system ]\nSPC water\n\n[ molecules ]\nSOL {waters}\n")
    (d / "md.mdp").write_text(MDP.format(steps=steps, log=steps // 2))
    run([tool, "grompp", "-f", "md.mdp", "-c", "water.gro", "-p", "topol.top", "-o", "md.tpr"], cwd=d)

    def after(d: Path) -> list[str]:
        log = d / "md.log"
        notes = [n for n in (first_line(log, "GROMACS version:"), first_line(log, "separate PME ranks"),
                             first_line(log, "Domain decomposition grid")) if n]
        return notes or [f"no md.log in {d}: the PME rank layout is unknown"]

    return Prepared([mdrun, "mdrun", "-s", "md.tpr", "-deffnm", "md", "-nsteps", str(steps), "-ntomp", "1", "-nb", "cpu", "-notunepme"],
                    {"atoms": 3 * waters, "waters": waters, "steps": steps, "input": f"SPC water, {box:g} nm box, PME"}, after)


HPCC_TEMPLATE = """HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
1000         Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
2            Ps
2            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""


def hpcc(d: Path, quick: bool) -> Prepared:
    """HPC Challenge (HPL, DGEMM, STREAM, PTRANS, RandomAccess, FFT, latency
    and bandwidth); every test's size follows from HPL's N."""
    exe = "/usr/bin/hpcc"
    need(exe)
    example = next((p for p in (Path("/usr/share/doc/hpcc/examples/_hpccinf.txt"),) if p.exists()), None)
    lines = (example.read_text() if example else HPCC_TEMPLATE).splitlines()
    n, nb = (1000, 100) if quick else (2500, 100)
    # the lines of hpccinf.txt are positional: 6 Ns, 8 NBs, 11 Ps, 12 Qs
    for i, value in ((5, n), (7, nb), (10, 1), (11, RANKS)):
        parts = lines[i].split(None, 1)
        lines[i] = f"{value:<12} {parts[1] if len(parts) > 1 else ''}".rstrip()
    (d / "hpccinf.txt").write_text("\n".join(lines) + "\n")

    def after(d: Path) -> list[str]:
        out = d / "hpccoutf.txt"
        notes = [n for n in (first_line(out, "HPC Challenge Benchmark version"),) if n]
        try:
            text = out.read_text(errors="replace").splitlines()
        except OSError:
            return notes
        # the last run's times of the main tests (hpccoutf.txt collects every run)
        keys = ("HPL_time", "PTRANS_time", "MPIRandomAccess_time", "MPIFFT_time4")
        found = {}
        for line in text:
            k, _, v = line.partition("=")
            if k in keys:
                found[k] = v.strip()
        if found:
            notes.append("last run: " + ", ".join(f"{k} {v} s" for k, v in found.items()))
        return notes

    return Prepared([exe], {"N": n, "NB": nb, "grid": f"1×{RANKS}", "input": f"hpccinf.txt from {example or 'the HPCC 1.5 example'}, N {n}, P×Q 1×{RANKS}"},
                    after)


PSEUDO_DIRS = ("/usr/share/espresso/pseudo", "/usr/share/quantum-espresso/pseudo", "/usr/share/doc/quantum-espresso/examples/pseudo")
SI_PSEUDO = "Si.pz-vbc.UPF"
PW_INPUT = """ &control
    calculation = 'scf'
    prefix = 'si8'
    pseudo_dir = '{pseudo_dir}/'
    outdir = './tmp/'
    disk_io = 'none'
 /
 &system
    ibrav = 1, celldm(1) = 10.20, nat = 8, ntyp = 1,
    ecutwfc = {ecut},
 /
 &electrons
    mixing_beta = 0.7
    conv_thr = 1.0d-8
 /
ATOMIC_SPECIES
 Si  28.086  {pseudo}
ATOMIC_POSITIONS crystal
 Si 0.00 0.00 0.00
 Si 0.00 0.50 0.50
 Si 0.50 0.00 0.50
 Si 0.50 0.50 0.00
 Si 0.25 0.25 0.25
 Si 0.25 0.75 0.75
 Si 0.75 0.25 0.75
 Si 0.75 0.75 0.25
K_POINTS automatic
 {k} {k} {k} 0 0 0
"""


def qe(d: Path, quick: bool) -> Prepared:
    """An SCF of bulk silicon, the 8-atom cubic cell (LDA, norm-conserving
    pseudopotential from Debian's quantum-espresso-data)."""
    exe = "/usr/bin/pw.x"
    need(exe)
    pseudo_dir = next((p for p in PSEUDO_DIRS if (Path(p) / SI_PSEUDO).exists()), None)
    if pseudo_dir is None:
        raise Skip(f"no {SI_PSEUDO} pseudopotential in {', '.join(PSEUDO_DIRS)} (Debian's quantum-espresso-data has it); "
                   "nothing is downloaded")
    ecut, k = (20.0, 2) if quick else (30.0, 6)
    (d / "si.scf.in").write_text(PW_INPUT.format(pseudo_dir=pseudo_dir, pseudo=SI_PSEUDO, ecut=ecut, k=k))

    def after(d: Path) -> list[str]:
        log = d / "v" / "run-1.log"
        return [n for n in (first_line(log, "Program PWSCF"), first_line(log, "R & G space division"),
                            first_line(log, "number of k points"), first_line(log, "convergence has been achieved")) if n]

    return Prepared([exe, "-in", "si.scf.in"], {"atoms": 8, "ecutwfc_Ry": ecut, "k_grid": f"{k}×{k}×{k}",
                                                  "input": f"Si 8-atom cell, {SI_PSEUDO}, ecutwfc {ecut:g} Ry, {k}³ k-points"}, after)


def fortran(d: Path, quick: bool) -> Prepared:
    """tests/programs/heat_f08.f90: 2-D heat equation, halo exchange by
    Isend/Irecv/Waitall, Allreduce of the residual every 10 steps."""
    need(MPIFORT)
    source = ROOT / "tests" / "programs" / "heat_f08.f90"
    run([MPIFORT, "-O2", "-o", "heat_f08", str(source)], cwd=d)
    n, steps = (512, 300) if quick else (2048, 1500)
    version = run([MPIFORT, "--version"]).stdout.strip().splitlines()[:1]
    return Prepared([str(d / "heat_f08"), str(n), str(steps), "10"],
                    {"grid": f"{n}×{n}", "steps": steps, "input": f"{source.relative_to(ROOT)}, {n}² grid, {steps} steps"},
                    notes=[f"compiled with {MPIFORT} -O2 ({version[0] if version else '?'})"])


PREPARE: dict[str, Callable[[Path, bool], Prepared]] = {"lammps": lammps, "gromacs": gromacs, "hpcc": hpcc, "qe": qe, "fortran": fortran}


# ---------------------------------------------------------------- steps


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def calibrate(out: Path, max_error: float | None, force: bool, buffers: str) -> dict:
    """measure pingpong (its messages from `buffers`: memory or cache) + fit
    postal; returns what was done. A refused fit raises Failed unless `force`."""
    from idlewave.validate import CALIBRATION_SPAN_BYTES

    measure = out / "measure"
    platform_file = out / "platform.toml"
    m_cmd = [IDLEWAVE, "measure", "pingpong", "--mpicc", MPICC, "--mpiexec", MPIEXEC, "-n", str(RANKS), "--out", str(measure)]
    if buffers == "memory":
        m_cmd += ["--set", f"span_bytes={CALIBRATION_SPAN_BYTES}"]
    say(f"calibrating: {' '.join(m_cmd)}")
    run(m_cmd, timeout=1800)
    f_cmd = [IDLEWAVE, "fit", "postal", str(measure / "pingpong.parquet"), "-o", str(platform_file), "--json"]
    if max_error is not None:
        f_cmd += ["--max-error", str(max_error)]
    if force:
        f_cmd.append("--force")
    say(f"fitting: {' '.join(f_cmd)}")
    p = subprocess.run(f_cmd, env=env(), capture_output=True, text=True, timeout=1800)
    info = {"measure_command": m_cmd, "fit_command": f_cmd, "forced": force, "platform": str(platform_file), "buffers": buffers}
    try:
        info["fit"] = json.loads(p.stdout)
    except json.JSONDecodeError:
        info["fit_output"] = p.stdout
    if p.returncode != 0 or not platform_file.is_file():
        info["refused"] = tail(p.stderr, 40)
        raise Failed(f"the fit was refused or failed (exit {p.returncode}): {' '.join(f_cmd)}\n{tail(p.stderr, 40)}\n"
                     "Nothing was validated. Measure again on a quiet machine, or, knowingly, rerun with --force-fit "
                     "(the table then says the platform was forced) or --max-error.")
    fit = info.get("fit", {})
    info["forced"] = bool(fit.get("forced"))  # --force-fit writes a refused fit only; an accepted one is not forced
    info["refused_reasons"] = [r.get("reason", "") for r in fit.get("refused") or []]
    info["postal"] = postal(fit)
    try:
        machine = json.loads((measure / "machine.json").read_text())
        info["machine"] = {k: machine.get(k) for k in ("mpi_library", "hosts", "ranks_per_host", "measured_at", "cpu_count")}
    except (OSError, json.JSONDecodeError):
        pass
    return info


def postal(fit: dict) -> str:
    """The fitted α, β per protocol, in a line."""
    from idlewave.results import seconds

    parts = []
    for link in ("on_node", "off_node"):
        f = fit.get(link)
        if not isinstance(f, dict):
            continue
        protos = [f"{p} α {seconds(f[p]['alpha_s'])}, β {f[p]['beta_s_per_byte'] * 1e9:.3g} ns/B" for p in ("short", "eager", "rendezvous")
                  if isinstance(f.get(p), dict) and "alpha_s" in f[p]]
        limits = ", ".join(f"{k} {f[k]:,} B" for k in ("short_max", "eager_max") if isinstance(f.get(k), int))
        if protos:
            parts.append(f"{link.replace('_', '-')}: " + "; ".join(protos) + (f" ({limits})" if limits else ""))
    return " | ".join(parts)


def validate(name: str, d: Path, prepared: Prepared, platform_file: Path | None, repeat: int, traced: int, timeout: float,
             max_error: float | None = None, buffers: str = "memory") -> dict:
    """idlewave validate on one application (platform None: --calibrate, a
    platform measured right before its runs); returns its JSON result."""
    platform = ["--platform", str(platform_file)] if platform_file is not None else ["--calibrate", "--buffers", buffers]
    if platform_file is None and max_error is not None:
        platform += ["--max-error", str(max_error)]
    cmd = [IDLEWAVE, "validate", *platform, "--mpiexec", MPIEXEC, "--mpicc", MPICC, "-n", str(RANKS),
           "--repeat", str(repeat), "--traced-runs", str(traced), "--timeout", str(timeout), "--json", "--out", str(d / "v"),
           "--", *prepared.command]
    say(f"{name}: (cd {d} && {' '.join(cmd)})")
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=d, env=env(), capture_output=True, text=True, timeout=timeout * (repeat + traced + 1))
    except subprocess.TimeoutExpired:
        raise Failed(f"(cd {d} && {' '.join(cmd)}) did not finish") from None
    took = time.perf_counter() - t0
    if p.returncode != 0:
        raise Failed(f"(cd {d} && {' '.join(cmd)}) failed with exit {p.returncode}:\n{tail(p.stderr, 30)}")
    try:
        result = json.loads(p.stdout)
    except json.JSONDecodeError:
        raise Failed(f"(cd {d} && {' '.join(cmd)}) printed no JSON:\n{tail(p.stdout + p.stderr, 30)}") from None
    result["_seconds"] = took
    result["_command"] = cmd
    return result


def machine() -> dict:
    try:
        nproc = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip())
    except (OSError, ValueError):
        nproc = None
    cpu = None
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), None)
    except OSError:
        pass
    return {"nproc": nproc, "cpu_count": os.cpu_count(), "cpu": cpu, "hostname": platform.node(), "system": platform.platform()}


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------- the table


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1%}".replace("-", "−")


def sec(x: float | None) -> str:
    from idlewave.results import seconds

    return "—" if x is None else seconds(x)


def by_call_rows(result: dict, n: int = BY_CALL_SHOWN) -> list[dict]:
    """The calls with the largest errors (validate sorts them by absolute error)."""
    rows = []
    for r in result.get("by_call", [])[:n]:
        error = (r["predicted_s"] - r["measured_s"]) / r["measured_s"] if r["measured_s"] > 0 else None
        rows.append({**r, "error": error})
    return rows


def row(app: dict) -> dict:
    """One line of the table, as figures and as text."""
    v = app["result"]
    m, p, e = v["measured"], v["predicted"], v["error"]
    calls = "; ".join(f"{r['call']} {sec(r['measured_s'])} → {sec(r['predicted_s'])} ({pct(r['error'])})" for r in by_call_rows(v))
    return {
        "application": TITLES[app["name"]],
        "mpi": v.get("mpi", {}).get("library") or v.get("mpi", {}).get("launcher", ""),
        "ranks": v.get("ranks", RANKS),
        "measured_total": f"{sec(m['total_s'])} ({sec(m['total_min_s'])}–{sec(m['total_max_s'])})",
        "predicted_total": sec(p["total_s"]),
        "error_total": pct(e["total_s"]),
        "measured_mpi": f"{sec(m['mpi_s'])} ({sec(m['mpi_min_s'])}–{sec(m['mpi_max_s'])})" if "mpi_min_s" in m else sec(m["mpi_s"]),
        "predicted_mpi": f"{sec(p['mpi_s'])} ({sec(p['mpi_min_s'])}–{sec(p['mpi_max_s'])})" if "mpi_min_s" in p else sec(p["mpi_s"]),
        "error_mpi": pct(e["mpi_s"]),
        "check": " → ".join(" / ".join(f"{b['ratio']:.2f}" for b in v["platform_check"][when]["bands"])
                            for when in ("before", "after") if when in v.get("platform_check", {})) or "—",
        "by_call": calls or "—",
    }


HEADERS = ("Application", "MPI library", "Ranks", "Measured total (min–max)", "Predicted total", "Error",
           "Measured in MPI (min–max)", "Predicted in MPI (min–max)", "Error",
           "Ping-pong ÷ platform, before → after (≤ 1 KiB / 1–64 KiB / > 64 KiB)", "Largest errors by call (measured → predicted)")
KEYS = ("application", "mpi", "ranks", "measured_total", "predicted_total", "error_total", "measured_mpi", "predicted_mpi", "error_mpi",
        "check", "by_call")


def markdown(report: dict) -> str:
    def cell(x) -> str:
        return str(x).replace("|", "\\|")

    mc, cal = report["machine"], report.get("calibration", {})
    lines = [
        f"Measured on {report['date']}: {mc['hostname']}, {mc['nproc']} cores (nproc){', ' + mc['cpu'] if mc.get('cpu') else ''}; "
        f"load average {' / '.join(map(str, report['load_before']))} before and {' / '.join(map(str, report['load_after']))} after (1/5/15 min); "
        f"K = {report['repeat']} untraced and T = {report.get('traced', 1)} traced runs per application"
        f"{' (--quick inputs)' if report['quick'] else ''}.",
        "",
    ]
    if "refused" in cal:
        return "\n".join([*lines, "**No table: the calibration failed, so nothing was validated.**", "", "```", cal["refused"], "```", ""])
    if cal.get("each"):
        lines += ["Platform: `DIR/<app>/v/platform.toml`, fitted from `idlewave measure pingpong` (messages from "
                  f"{'the cache' if cal.get('buffers') == 'cache' else 'memory'}) right before each application's runs "
                  "(--calibrate-each):", ""]
        lines += [f"- {TITLES[a['name']]}: {a['calibration'].get('postal', '')}" for a in report["apps"] if "calibration" in a]
        lines.append("")
    lines += [] if cal.get("each") else [
        f"Platform: `{cal.get('platform', '?')}`"
        + (f", fitted from `idlewave measure pingpong` ({cal['machine']['mpi_library'].split(', package')[0]}"
           + {"memory": "; messages from memory", "cache": "; messages from the cache"}.get(cal.get("buffers", ""), "") + ")"
           if cal.get("machine") else "")
        + (" — **forced: the fit was refused and written with --force**" if cal.get("forced") else "")
        + (" — given with --platform, not calibrated here" if cal.get("given") else "") + "."
        + (f" Fitted: {cal['postal']}." if cal.get("postal") else ""),
        "",
    ]
    lines += [
        "Total times are medians of the K untraced runs with their min–max, predicted as the median of the T traced runs' "
        "predicted totals; time in MPI, mean per rank, is the median of the T traced runs with their min–max, predicted "
        "from the median run's trace (min–max over the T traces). Error = (predicted − measured) / measured.",
        "",
    ]
    rows = [row(a) for a in report["apps"] if a["status"] == "ok"]
    if rows:
        lines.append("| " + " | ".join(HEADERS) + " |")
        lines.append("|" + "|".join("---" if i in (0, 1, len(HEADERS) - 1) else "--:" for i in range(len(HEADERS))) + "|")
        for r in rows:
            lines.append("| " + " | ".join(cell(r[k]) for k in KEYS) + " |")
        lines.append("")
    for a in report["apps"]:
        title = TITLES[a["name"]]
        if a["status"] == "ok":
            command = " ".join(a["command"]).replace(f"{report['out']}/{a['name']}/", "")
            notes = [f"input: {a['input'].get('input', '')}", f"command: `{command}`", *a.get("notes", []),
                     *[f"warning: {w}" for w in a["result"].get("warnings", [])]]
            lines.append(f"- **{title}**: " + "; ".join(n for n in notes if n))
        elif a["status"] == "skipped":
            lines.append(f"- **{title}**: skipped: {a['reason']}")
        else:
            lines += [f"- **{title}**: failed:", "", "  ```", *(f"  {x}" for x in a["reason"].splitlines()), "  ```"]
    return "\n".join(lines) + "\n"


def show(report: dict) -> None:
    """The table on the terminal (rich, as idlewave prints)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(shutil.get_terminal_size().columns, 150))
    t = Table(title="Validation: measured against predicted (docs/validation.md)", title_justify="left")
    for i, h in enumerate(HEADERS[:-1]):
        t.add_column(h, justify="left" if i in (0, 1) else "right")
    calls = []
    for a in report["apps"]:
        if a["status"] == "ok":
            r = row(a)
            t.add_row(*(str(r[k]) for k in KEYS[:-1]))
            calls.append(f"{r['application']}: {r['by_call']}")
        else:
            t.add_row(TITLES[a["name"]], f"{a['status']}: {a['reason'].splitlines()[0]}")
    console.print(t)
    if calls:
        console.print(HEADERS[-1] + ":", highlight=False)
        for c in calls:
            console.print(f"  {c}", highlight=False)


# ---------------------------------------------------------------- main


def claim(out: Path) -> None:
    """`out` must be new, empty, or one this script wrote before (whose
    entries it replaces); anything else is left alone."""
    if out.exists() and not out.is_dir():
        raise SystemExit(f"--out {out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise SystemExit(f"--out {out}: not empty and not written by scripts/validation.py; choose a new or empty directory")
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by scripts/validation.py; its entries are replaced by the next run\n")


def fresh(path: Path) -> Path:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="docs/validation.md describes the table and how it is made.")
    ap.add_argument("--repeat", "-k", type=int, default=5, help="untraced runs per application (default 5)")
    ap.add_argument("--traced-runs", "-t", type=int, default=3, help="traced runs per application (default 3)")
    ap.add_argument("--apps", default=",".join(APPS), help=f"comma-separated, of {','.join(APPS)} (default: all)")
    ap.add_argument("--out", type=Path, default=Path("validation-out"), help="where everything goes (default validation-out)")
    ap.add_argument("--quick", action="store_true", help="small inputs (seconds per run): checks that everything works, "
                    "the numbers mean little")
    ap.add_argument("--platform", type=Path, help="a platform file to predict with, instead of calibrating here")
    ap.add_argument("--calibrate-each", action="store_true", help="calibrate right before each application (idlewave "
                    "validate --calibrate: DIR/<app>/v/platform.toml) rather than once at the start: on a machine "
                    "whose speed changes, each application is predicted with the machine as it was just before its "
                    "runs (--force-fit does not apply)")
    ap.add_argument("--max-error", type=float, help="passed to idlewave fit postal (its default otherwise)")
    ap.add_argument("--buffers", choices=("memory", "cache"), default="memory", help="where the calibration's "
                    "ping-pong messages come from: memory (fresh slots of 256 MiB regions, as idlewave validate "
                    "--calibrate measures; the default) or cache (one buffer, measure pingpong's default)")
    ap.add_argument("--force-fit", action="store_true", help="write the platform even when the fit is refused "
                    "(idlewave fit postal --force); the table says so")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds one run may take (default 900)")
    args = ap.parse_args(argv)
    apps = [a.strip() for a in args.apps.split(",") if a.strip()]
    unknown = [a for a in apps if a not in APPS]
    if unknown or not apps:
        ap.error(f"--apps: unknown {', '.join(unknown) or '(none given)'}; choose among {','.join(APPS)}")
    if args.repeat < 1 or args.traced_runs < 1:
        ap.error("--repeat and --traced-runs must be at least 1")
    for tool in (MPICC, MPIEXEC):
        if not Path(tool).exists():
            raise SystemExit(f"{tool} not found: the table is made with Debian's Open MPI (apt-get install openmpi-bin libopenmpi-dev)")

    out = args.out.resolve()
    claim(out)
    report: dict = {"command": [sys.executable, *sys.argv], "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                    "machine": machine(), "load_before": load(), "out": str(out), "repeat": args.repeat, "traced": args.traced_runs, "quick": args.quick, "ranks": RANKS,
                    "mpi": {"mpicc": MPICC, "mpiexec": MPIEXEC, "mpifort": MPIFORT, "env": ENV}, "apps": []}
    for name in ("validation.json", "validation.md"):
        fresh(out / name)

    def finish(code: int) -> int:
        from idlewave.results import write_json

        report["load_after"] = load()
        write_json(out / "validation.json", report)
        (out / "validation.md").write_text(markdown(report))
        say(f"written: {out / 'validation.json'}, {out / 'validation.md'}")
        return code

    say(f"{report['machine']['nproc']} cores, load average {report['load_before']}; K = {args.repeat}; out {out}")
    if args.platform is not None and args.calibrate_each:
        raise SystemExit("--platform and --calibrate-each: give one (a platform to use, or one measured per application)")
    if args.calibrate_each:
        report["calibration"] = {"each": True, "buffers": args.buffers}
        platform_file = None
    elif args.platform is not None:
        if not args.platform.is_file():
            raise SystemExit(f"--platform {args.platform}: no such file")
        platform_file = args.platform.resolve()
        report["calibration"] = {"platform": str(platform_file), "given": True, "forced": False}
    else:
        fresh(out / "measure")
        fresh(out / "platform.toml")
        try:
            report["calibration"] = calibrate(out, args.max_error, args.force_fit, args.buffers)
        except Failed as e:
            report["calibration"] = {"refused": str(e)}
            say(f"calibration failed; stopping.\n{e}")
            return finish(2)
        platform_file = out / "platform.toml"
        if report["calibration"]["forced"]:
            say("warning: the fit was refused and --force-fit wrote it anyway; the table says so. Why it was refused:\n  "
                + "\n  ".join(report["calibration"]["refused_reasons"]))

    from idlewave.cli.validate import show as show_validate

    failed = False
    for name in apps:
        d = fresh(out / name)
        d.mkdir(parents=True)
        entry: dict = {"name": name}
        report["apps"].append(entry)
        try:
            prepared = PREPARE[name](d, args.quick)
        except Skip as e:
            entry.update(status="skipped", reason=str(e))
            say(f"{name}: skipped: {e}")
            shutil.rmtree(d)
            continue
        except Failed as e:
            entry.update(status="failed", reason=f"preparing the input: {e}")
            say(f"{name}: FAILED preparing the input:\n{e}")
            failed = True
            continue
        entry.update(input=prepared.input, command=prepared.command)
        try:
            result = validate(name, d, prepared, platform_file, args.repeat, args.traced_runs, args.timeout, args.max_error,
                              args.buffers)
            if args.calibrate_each:
                entry["calibration"] = {"postal": postal(json.loads((d / "v" / "fit.json").read_text()))}
        except Failed as e:
            entry.update(status="failed", reason=str(e), notes=prepared.notes + prepared.after(d))
            say(f"{name}: FAILED:\n{e}")
            failed = True
            continue
        notes = prepared.notes + prepared.after(d)
        median = result["measured"]["total_s"]
        if not args.quick and not 5 <= median <= 20:
            notes.append(f"the median run took {median:.1f} s, outside the 5–20 s the inputs aim at")
        entry.update(status="ok", validate_command=result.pop("_command"), validate_seconds=result.pop("_seconds"), result=result, notes=notes)
        say(f"{name}: done in {entry['validate_seconds']:.0f} s")
        print(f"\n{TITLES[name]}: {prepared.input.get('input', '')}")
        show_validate(result)
        for n in notes:
            print(f"  {n}")
    print()
    show(report)
    return finish(1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
