#!/usr/bin/env python3
"""idlewave and LogGOPSim side by side on the same GOAL schedules.

    python scripts/bench_loggopsim.py PATH/TO/LogGOPSim [--ranks 131072 1048576] [--cases ...]
    make bench-loggopsim LOGGOPSIM=PATH/TO/LogGOPSim

PATH is a checkout of LogGOPSim's public source (https://github.com/spcl/LogGOPSim; its
`src/LogGOPSim` directory, or the repository root). It is copied into the work directory and built
there with -O3 -DNDEBUG (its Makefile's -O0 -g would be slower); building needs g++, re2c,
gengetopt and graphviz's cgraph (Debian: `apt-get install re2c gengetopt libgraphviz-dev`).

Each case is a built-in workload written as a GOAL schedule by `idlewave goal export` (text and
binary). LogGOPSim runs it as its users do, `txt2bin` then `LogGOPSim -f`; idlewave runs the text
and the binary with `idlewave loggopsim`, whose output is LogGOPSim's. Every run is a separate
process, timed by its CPU time (user + system) and peak resident memory from the kernel's
accounting; idlewave's include its Python start-up. The end times must be equal, else the row says
so. Prints a Markdown table (and `--json` writes the rows)."""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    # LogGOPSim's own example kind: every rank sends to rank + 2^k, k = 0, 1, ...
    "dissemination": {"kind": "collective", "collective": "allreduce", "algorithm": "dissemination",
                      "iterations": 1},
    "binomial_bcast": {"kind": "collective", "collective": "bcast", "algorithm": "binomial", "iterations": 1},
    # a 1-D periodic halo of 8 KiB after 100 µs of computation, 5 steps (make bench's BSP case)
    "bsp_halo": {"kind": "bsp", "iterations": 5, "compute_s": 1e-4, "distances": [1], "message_bytes": 8192,
                 "periodic": True, "barrier": False},
}
END = re.compile(r"Maximum finishing time at host (\d+): (\d+)")


def run(cmd: list[str], log: Path) -> dict:
    """Runs `cmd` as its own process: its CPU seconds, peak RSS (bytes), wall seconds and output."""
    start = time.perf_counter()
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    text = log.read_text(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {os.waitstatus_to_exitcode(status)}); its output: {log}\n{text[-2000:]}")
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "peak_bytes": usage.ru_maxrss * 1024, "wall_s": wall, "out": text}


def end_time(text: str) -> int | None:
    m = END.search(text)
    return int(m.group(2)) if m else None


def build(source: Path, work: Path) -> Path:
    """Copies LogGOPSim's source into `work` and builds it; returns its directory."""
    src = source / "src" / "LogGOPSim" if (source / "src" / "LogGOPSim").is_dir() else source
    if not (src / "LogGOPSim.cpp").is_file():
        sys.exit(f"{source}: not LogGOPSim's source (no LogGOPSim.cpp in it or in its src/LogGOPSim)")
    for tool in ("g++", "re2c", "gengetopt", "make"):
        if shutil.which(tool) is None:
            sys.exit(f"building LogGOPSim needs {tool} (Debian: apt-get install re2c gengetopt libgraphviz-dev g++ make)")
    dst = work / "LogGOPSim"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.o", "LogGOPSim", "txt2bin"))
    flags = ["CXXFLAGS=-std=c++11 -O3 -DNDEBUG -w", "LDFLAGS=-lcgraph"]
    r = subprocess.run(["make", "-C", str(dst), *flags], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"building LogGOPSim failed (graphviz's cgraph: apt-get install libgraphviz-dev):\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
    return dst


def mib(b: float) -> str:
    return f"{b / 2**20:,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("loggopsim", type=Path, help="LogGOPSim's source (repository root or src/LogGOPSim)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[131072, 1048576])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--work", type=Path, help="work directory (default: a temporary one, removed after)")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = ap.parse_args()
    idlewave = [sys.executable, "-m", "idlewave"]
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-loggopsim-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        lgs = build(args.loggopsim.resolve(), work)
        rows = []
        for case in args.cases:
            for p in args.ranks:
                rows.append(compare(case, p, work, lgs, idlewave))
                print(json.dumps({k: v for k, v in rows[-1].items()}), file=sys.stderr, flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{time.strftime('%Y-%m-%d')}, {platform.node()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores; CPU s (user + sys) and peak MiB per whole run\n")
    print("| schedule | ranks | text MB | LogGOPSim txt2bin + run: CPU s, MiB | idlewave text: CPU s, MiB | "
          "ratio | idlewave binary: CPU s, MiB | ratio | end times |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['case']} | {r['ranks']:,} | {r['text_bytes'] / 1e6:,.0f} | "
              f"{r['loggopsim_cpu_s']:.2f}, {mib(r['loggopsim_peak_bytes'])} | "
              f"{r['text_cpu_s']:.2f}, {mib(r['text_peak_bytes'])} | {r['loggopsim_cpu_s'] / r['text_cpu_s']:.1f}× | "
              f"{r['binary_cpu_s']:.2f}, {mib(r['binary_peak_bytes'])} | {r['loggopsim_cpu_s'] / r['binary_cpu_s']:.1f}× | "
              f"{'equal' if r['equal'] else 'DIFFER'} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    if not all(r["equal"] for r in rows):
        sys.exit("end times differ")


def compare(case: str, p: int, work: Path, lgs: Path, idlewave: list[str]) -> dict:
    scenario = work / f"{case}_{p}.toml"
    # (JSON's strings, numbers and lists are TOML's)
    scenario.write_text("[workload]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in {**CASES[case], "ranks": p}.items()))
    text, ours_bin, their_bin = work / f"{case}_{p}.goal", work / f"{case}_{p}.bin", work / f"{case}_{p}.lgs.bin"
    for path, to in ((text, "text"), (ours_bin, "binary")):
        subprocess.run([*idlewave, "goal", "export", str(scenario), "-o", str(path), "--to", to, "-q"], check=True,
                       stdout=subprocess.DEVNULL)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    t2b = run([str(lgs / "txt2bin"), "-i", str(text), "-o", str(their_bin)], logs / f"{case}_{p}.txt2bin")
    sim = run([str(lgs / "LogGOPSim"), "-f", str(their_bin), "-b"], logs / f"{case}_{p}.loggopsim")
    # (compared in chunks: this process's own peak would be every later child's starting peak)
    same_binary = filecmp.cmp(their_bin, ours_bin, shallow=False)
    their_bin.unlink()
    ours_text = run([*idlewave, "loggopsim", str(text), "-b"], logs / f"{case}_{p}.text")
    ours_binary = run([*idlewave, "loggopsim", str(ours_bin), "-b"], logs / f"{case}_{p}.binary")
    ends = [end_time(r["out"]) for r in (sim, ours_text, ours_binary)]
    row = {
        "case": case, "ranks": p, "text_bytes": text.stat().st_size, "binary_bytes": ours_bin.stat().st_size,
        "txt2bin_cpu_s": t2b["cpu_s"], "loggopsim_run_cpu_s": sim["cpu_s"],
        "loggopsim_cpu_s": t2b["cpu_s"] + sim["cpu_s"], "loggopsim_peak_bytes": max(t2b["peak_bytes"], sim["peak_bytes"]),
        "text_cpu_s": ours_text["cpu_s"], "text_peak_bytes": ours_text["peak_bytes"],
        "binary_cpu_s": ours_binary["cpu_s"], "binary_peak_bytes": ours_binary["peak_bytes"],
        "end_ns": ends, "equal": ends[0] is not None and len(set(ends)) == 1, "txt2bin_bytes_equal": same_binary,
    }
    text.unlink()
    ours_bin.unlink()
    return row


if __name__ == "__main__":
    main()
