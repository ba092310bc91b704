#!/usr/bin/env python3
"""Breaks the models on purpose, one way at a time, and shows the fast tests catch each break.

    python scripts/mutants.py            # every mutant (make mutants): caught or MISSED, exit 1 if any missed
    python scripts/mutants.py NAME ...   # some of them
    python scripts/mutants.py --check    # only that each mutant still applies (tests/test_mutants.py)

Each mutant replaces one piece of source text (which must occur exactly once) in a scratch git
worktree of HEAD, rebuilds the engine there if the text is Rust, and runs the tests named for it: it
is caught when they fail. The working tree is never touched. A mutant that stops applying (its code
moved) fails `--check`: update its text with the code."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    name: str
    why: str
    path: str
    old: str
    new: str
    pytest: tuple[str, ...] = ()
    cargo: str = ""  # a `cargo test --lib` filter


MUTANTS = [
    Mutant("table1-beta", "a wrong β in the noise paper's Table 1 (HPCCG 90 for 95.15)",
           "src/workloads/skeleton.rs", '("HPCCG", 95.15)', '("HPCCG", 90.0)',
           pytest=("tests/test_models.py", "-k", "table1")),
    Mutant("eq4-bound", "Eq. (4)'s bound off by 0.004 (hidden by rounding to the printed digits)",
           "python/idlewave/models/nbc.py", '"eq4": (1 + beta) / beta,', '"eq4": (1 + beta) / beta + 0.004,',
           pytest=("tests/test_models.py", "-k", "table1 or nbc")),
    Mutant("fig9-allreduce", "Fig. 9's allreduce by recursive doubling, not the paper's dissemination",
           "python/idlewave/studies/reproduce.py", '"allreduce": "dissemination", "allgather": "bruck"',
           '"allreduce": "recursive_doubling", "allgather": "bruck"',
           pytest=("tests/test_reproduce.py", "-k", "fig9")),
    Mutant("per-byte-count", "G and O charged for s bytes, not LogGOPS's s - 1",
           "src/network/mod.rs", "((size - 1) as f64 * per_byte_ps + 0.5)", "(size as f64 * per_byte_ps + 0.5)",
           pytest=("tests/test_models.py", "tests/test_peer_goal.py", "-k", "closed_forms or loggopsim")),
    Mutant("dissemination-rounds", "a dissemination with one round too few",
           "src/collectives/algorithms.rs",
           "fn dissemination(rank: u32, p: u32, bytes: u64, k: u32) -> Option<Step> {\n    (k < ceil_log2(p))",
           "fn dissemination(rank: u32, p: u32, bytes: u64, k: u32) -> Option<Step> {\n    (k + 1 < ceil_log2(p))",
           pytest=("tests/test_models.py", "-k", "closed_forms")),
    Mutant("flow-cap", "shared links ignore a flow's own NIC cap in max-min sharing",
           "src/engine/flows.rs", "level = level.min(f.cap);", "level = level.min(f.cap * 2.0);",
           cargo="engine::flow"),
    Mutant("poisson-rate", "Poisson noise at half its rate",
           "src/noise/mod.rs", "let window = 1e12 / rate_per_s;", "let window = 2e12 / rate_per_s;",
           cargo="noise::"),
    Mutant("idle-wave-speed", "the idle wave's speed without the distance d",
           "python/idlewave/models/postal.py", "return sigma * d / (t_exec + t_comm)", "return sigma / (t_exec + t_comm)",
           pytest=("tests/test_models.py", "tests/test_phenomena.py", "-k", "wave")),
    Mutant("wavefront-active", "ranks computing at once counted over whole iterations, not within the window",
           "python/idlewave/analyze.py",
           "computing = np.clip(begin + comp[:, first:last], t0, t1) - np.clip(begin, t0, t1)",
           "computing = comp[:, first:last]",
           pytest=("tests/test_phenomena.py", "-k", "wavefront")),
    Mutant("paired-interval", "the seeds' confidence interval from the normal quantile, not Student's t",
           "python/idlewave/studies/claims.py", "half = float(t.ppf(0.975, n - 1)) * sd / n ** 0.5",
           "half = 1.96 * sd / n ** 0.5", pytest=("tests/test_reproductions_table.py", "-k", "effect")),
]


def check() -> list[str]:
    """What no longer applies: each mutant's text must occur exactly once in its file."""
    bad = []
    for m in MUTANTS:
        text = (ROOT / m.path).read_text()
        if text.count(m.old) != 1:
            bad.append(f"{m.name}: {m.path} has {text.count(m.old)} copies of its text (needs exactly 1)")
        if not (m.pytest or m.cargo):
            bad.append(f"{m.name}: names no tests")
    return bad


def run(cmd: list[str], cwd: Path, env: dict) -> bool:
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="mutants to run (default: all)")
    ap.add_argument("--check", action="store_true", help="only check that every mutant applies")
    args = ap.parse_args()
    bad = check()
    if bad or args.check:
        print("\n".join(bad) or f"{len(MUTANTS)} mutants apply")
        sys.exit(1 if bad else 0)
    unknown = set(args.names) - {m.name for m in MUTANTS}
    if unknown:
        sys.exit(f"unknown mutants: {', '.join(sorted(unknown))} (known: {', '.join(m.name for m in MUTANTS)})")
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    work = Path(tempfile.mkdtemp(prefix="idlewave-mutants-"))
    tree = work / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), "HEAD"], check=True)
    python = str(ROOT / ".venv" / "bin" / "python")
    env = {**os.environ, "PYTHONPATH": str(tree / "python"), "CARGO_TARGET_DIR": str(ROOT / "target" / "mutants")}
    build = ["cargo", "build", "--release", "--features", "python,pyo3/extension-module", "--lib"]
    so = ROOT / "target" / "mutants" / "release" / "libidlewave.so"
    missed = []
    try:
        def rebuild() -> bool:
            ok = run(build, tree, env)
            if ok:
                shutil.copy(so, tree / "python" / "idlewave" / "_engine.abi3.so")
            return ok

        print("building the unmutated engine...", flush=True)
        if not rebuild():
            sys.exit("the unmutated tree does not build")
        for m in chosen:
            path = tree / m.path
            original = path.read_text()
            path.write_text(original.replace(m.old, m.new, 1))
            start = time.perf_counter()
            try:
                rust = m.path.endswith(".rs")
                built = rebuild() if rust and m.pytest else True
                passed = built and (not m.pytest or run([python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *m.pytest], tree, env))
                if m.cargo:
                    passed = passed and run(["cargo", "test", "--release", "--lib", m.cargo], tree, env)
            finally:
                path.write_text(original)
            verdict = "caught" if not passed else "MISSED"
            if passed:
                missed.append(m.name)
            print(f"{verdict:7} {m.name:22} {m.why} ({time.perf_counter() - start:.0f} s)", flush=True)
            if rust and m.pytest:
                rebuild()
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(chosen) - len(missed)} of {len(chosen)} mutants caught" + (f"; missed: {', '.join(missed)}" if missed else ""))
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
