"""Runs LogGOPSim itself on the peers' GOAL schedules under tests/data and
prints the end times it reports, in the layout of
tests/data/loggopsim/end_times.txt (which tests/test_peer_goal.py holds
`idlewave loggopsim` to, line for line).

    python3 scripts/loggopsim_end_times.py DIR > tests/data/loggopsim/end_times.txt
    python3 scripts/loggopsim_end_times.py DIR --check   # exit 1 if DIR's LogGOPSim prints otherwise

DIR holds a LogGOPSim build: `LogGOPSim` and `txt2bin` (how the recorded
file's were built: tests/data/loggopsim/README.md). Each schedule is
converted by that txt2bin, then run as `LogGOPSim -f X.bin FLAGS`; its
`Host i: t` lines (16 hosts or fewer) or its `Maximum finishing time` line
are kept."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
RECORDED = DATA / "loggopsim" / "end_times.txt"

SCHEDULES = [
    "loggopsim/binomialtreereduce_8.goal",
    "loggopsim/binomialtreereduce_20.goal",
    "loggopsim/binary_tree_32.goal",
    "llamp/blocking.goal",
    "llamp/non_blocking.goal",
]
# LogGOPSim's defaults, a rendezvous below 1 KiB, O and a large g, small
# parameters with every one non-zero, and large ones (its -G takes integers)
FLAG_SETS = ["", "-S 512", "-O 2 -g 3000", "-L 100 -o 10 -g 50 -G 1 -O 1 -S 100", "-L 5000 -o 200 -g 7000 -G 20 -S 1023"]
# LLAMP's o (LPConverter's default) and the G of its tests' diagrams, with
# L on both sides of each schedule's critical latencies (tests/data/llamp/README.md)
LLAMP_LATENCIES = [0, 481, 482, 483, 499, 500, 501, 2481, 2482, 2483, 3000]

HEADER = """\
# End times printed by LogGOPSim (spcl/LogGOPSim 76451de; tests/data/loggopsim/README.md),
# written by scripts/loggopsim_end_times.py: per case `== SCHEDULE FLAGS` (SCHEDULE under
# tests/data), then the lines `txt2bin -i SCHEDULE -o X.bin; LogGOPSim -f X.bin FLAGS` printed.
"""


def cases() -> list[tuple[str, str]]:
    """(schedule under tests/data, LogGOPSim flags), in the file's order."""
    grid = [(s, f) for s in SCHEDULES for f in FLAG_SETS]
    sweep = [(s, f"-o 1500 -G 6 -L {L}") for s in SCHEDULES if s.startswith("llamp/") for L in LLAMP_LATENCIES]
    return grid + sweep


def parse(text: str) -> dict[tuple[str, str], list[str]]:
    """The recorded file: (schedule, flags) -> the lines LogGOPSim printed."""
    runs: dict[tuple[str, str], list[str]] = {}
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("== "):
            schedule, _, flags = line[3:].partition(" ")
            lines = runs.setdefault((schedule, flags), [])
        elif line and not line.startswith("#"):
            lines.append(line)
    return runs


def end_lines(output: str) -> list[str]:
    """The end-time lines of LogGOPSim's (or `idlewave loggopsim`'s) output."""
    return [line for line in output.splitlines() if line.startswith(("Host ", "Maximum finishing time"))]


def run(build: Path) -> str:
    """The recorded file's text, as the LogGOPSim in `build` prints it now."""
    out = [HEADER]
    with tempfile.TemporaryDirectory() as tmp:
        binaries: dict[str, Path] = {}
        for schedule, flags in cases():
            if schedule not in binaries:
                binaries[schedule] = Path(tmp, f"{len(binaries)}.bin")
                subprocess.run([str(build / "txt2bin"), "-i", str(DATA / schedule), "-o", str(binaries[schedule])],
                               check=True, capture_output=True)
            p = subprocess.run([str(build / "LogGOPSim"), "-f", str(binaries[schedule]), *flags.split()],
                               check=True, capture_output=True, text=True)
            out.append(f"== {schedule} {flags}".rstrip() + "\n" + "".join(f"{line}\n" for line in end_lines(p.stdout)))
    return "".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", type=Path, help="directory with LogGOPSim and txt2bin")
    parser.add_argument("--check", action="store_true", help=f"compare with {RECORDED.relative_to(DATA.parent.parent)} instead of printing")
    args = parser.parse_args()
    text = run(args.build)
    if not args.check:
        sys.stdout.write(text)
        return 0
    recorded, now = parse(RECORDED.read_text()), parse(text)
    differ = [f"{s} {f}: recorded {recorded.get((s, f))}, LogGOPSim {now.get((s, f))}"
              for s, f in dict.fromkeys([*recorded, *now]) if recorded.get((s, f)) != now.get((s, f))]
    print("\n".join(differ) or f"all {len(recorded)} cases as recorded")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
