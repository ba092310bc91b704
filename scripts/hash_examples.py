"""Runs every example and prints a hash of what it computed, so a refactoring
can show that it changed no result: run it before and after, or compare with
the stored table (`--check`), which `make test` does.

    .venv/bin/python scripts/hash_examples.py [--write FILE | --check FILE]

What is hashed: finish times (integer picoseconds), every timer matrix and the
summary without the figures that depend on the machine (wall time, events/s,
memory measured and estimated, version)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MACHINE = {"wall_s", "events_per_s", "peak_memory_bytes", "estimated_memory_bytes", "engine_version"}


def digest(result) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(result.finish_times_ps, dtype="<u8").tobytes())
    for name in sorted(result.timers):
        h.update(name.encode())
        h.update(np.ascontiguousarray(result.timers[name], dtype="<f8").tobytes())
    summary = {k: v for k, v in result.summary.items() if k not in MACHINE}
    h.update(json.dumps(summary, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def one(name: str) -> str:
    """The hash of one example (a file in examples/, or the synthetic trace)."""
    import idlewave
    from idlewave import _engine

    if name == "synthetic-trace":
        with tempfile.TemporaryDirectory() as d:
            _engine.write_synthetic_trace(d, 5, 50)
            return digest(idlewave.simulate({"workload": {"kind": "trace", "dir": d}}))
    path = EXAMPLES / name
    if path.suffix == ".goal":
        return digest(idlewave.simulate({"workload": {"kind": "goal", "path": str(path)}}))
    return digest(idlewave.simulate(path))


def hashes() -> dict[str, str]:
    """Every example's hash, the examples run side by side on the machine's cores."""
    from concurrent.futures import ProcessPoolExecutor

    names = [p.name for p in sorted(EXAMPLES.glob("*.toml"))] + [p.name for p in sorted(EXAMPLES.glob("*.goal"))]
    names.append("synthetic-trace")
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(names, pool.map(one, names)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", type=Path, help="store the table in this JSON file")
    ap.add_argument("--check", type=Path, help="compare with the table in this JSON file")
    args = ap.parse_args()
    got = hashes()
    if args.write:
        args.write.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    if args.check:
        want = json.loads(args.check.read_text())
        diff = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
        for k in diff:
            print(f"{k}: stored {want.get(k)}, now {got.get(k)}", file=sys.stderr)
        if diff:
            print(f"{len(diff)} of {len(got)} examples give other results than stored in {args.check}", file=sys.stderr)
            return 1
        print(f"{len(got)} examples: results identical to {args.check}")
        return 0
    print(json.dumps(got, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
