"""`idlewave loggopsim`: a GOAL schedule run as LogGOPSim runs it (same flags, same output).
Its commands are listed in idlewave/cli/root.py."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from idlewave import _engine
from idlewave.cli.common import QUIET, fail, print_json
from idlewave.scenario import ScenarioError, default


def _default_ns(key: str) -> int:
    """A LogGOPSim default in ns (its command line's unit)."""
    return round(default(f"network.{key}") * 1e9)


def loggopsim(
    goal: Path | None = typer.Argument(None, help="GOAL schedule (text; no txt2bin step needed)."),
    filename: Path | None = typer.Option(None, "-f", "--filename", help="The schedule, as LogGOPSim's -f."),
    L: int = typer.Option(_default_ns("L_s"), "-L", "--LogGOPS_L", help="Latency L in ns."),
    o: int = typer.Option(_default_ns("o_s"), "-o", "--LogGOPS_o", help="CPU overhead o in ns."),
    g: int = typer.Option(_default_ns("g_s"), "-g", "--LogGOPS_g", help="Gap per message g in ns."),
    G: float = typer.Option(_default_ns("G_s_per_byte"), "-G", "--LogGOPS_G", help="Gap per byte G in ns."),
    O: float = typer.Option(_default_ns("O_s_per_byte"), "-O", "--LogGOPS_O", help="Overhead per byte O in ns."),
    S: int = typer.Option(default("network.S_bytes"), "-S", "--LogGOPS_S", help="Largest eager message in bytes."),
    noise_trace: Path | None = typer.Option(None, "--noise-trace", help="Detour trace: a start and a duration in ns per line, separated by a tab."),
    noise_cosched: bool = typer.Option(False, "--noise-cosched", help="Same trace offset on every rank."),
    seed: int = typer.Option(0, "--seed", help="Seed for the per-rank trace offsets (LogGOPSim uses the clock)."),
    batchmode: bool = typer.Option(False, "-b", "--batchmode", help="Never print per-host times."),
    save_mem: bool = typer.Option(False, "--save-mem", help="Accepted for compatibility; no effect (text is read directly)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Accepted for compatibility."),
    explain_run: bool = typer.Option(False, "--explain", help="Then explain the run: the makespan by cause and its "
                                     "derivatives (the schedule is simulated a second time, with the path kept)."),
    as_json: bool = typer.Option(False, "--json", help="Print the hosts' finishing times (ps) and the run's figures as JSON "
                                 "instead of LogGOPSim's lines."),
    quiet: bool = QUIET,
):
    """LogGOPSim-compatible run of a GOAL schedule: same flags, same 'Host i: t' output."""
    if goal is not None and filename is not None and goal != filename:
        fail(f"two GOAL files given ({goal} and -f {filename}); give one")
    path = goal or filename
    if path is None:
        fail("give a GOAL file (positional or -f)")
    for given in (path, noise_trace):  # a usage error (exit 2), as everywhere, not a failed run
        if given is not None and not Path(given).is_file():
            fail(f"{given}: no such file" if not Path(given).exists() else f"{given}: not a regular file")
    for name, v in (("L", L), ("o", o), ("g", g), ("G", G), ("O", O), ("S", S), ("-seed", seed)):
        if not 0 <= v < 2**64:
            fail(f"-{name} must be between 0 and 2^64 - 1, got {v}")
    for name, v in (("L", L), ("o", o), ("g", g)):
        if v * 1000 > _engine.MAX_INPUT_PS:
            fail(f"-{name} must be at most {_engine.MAX_INPUT_PS // 1000} ns (about 13 days), got {v}")
    start = time.perf_counter()
    try:
        times_ps, events = _engine.loggopsim(
            str(path), L, o, g, float(G), float(O), S, str(noise_trace) if noise_trace else None, noise_cosched, seed
        )
    except _engine.SimulationError as e:
        fail(str(e), code=1)
    except KeyboardInterrupt:
        fail("interrupted", code=130)
    wall = time.perf_counter() - start
    p = len(times_ps)
    explanation = _explain_goal(path, (L, o, g, G, O, S), noise_trace, noise_cosched, seed) if explain_run else None
    host = max(range(p), key=lambda i: (times_ps[i], -i))
    if as_json:
        doc = {"hosts_ps": list(times_ps), "max_host": host, "max_ps": times_ps[host], "events": events, "wall_s": wall}
        if explanation is not None:
            doc["explain"] = explanation.to_json()
        print_json(doc, None)
        return
    print(f"size: {p}; L={L}, o={o} g={g}, G={_num(G)}, O={_num(O)}, P={p}, S={S}")
    print(f"PERFORMANCE: Processes: {p} \t Events: {events} \t Time: {wall:.3f} s \t Speed: {events / max(wall, 1e-9):.2f} ev/s")
    if p <= 16 and not batchmode:
        print("Times: ")
        for i, t in enumerate(times_ps):
            print(f"Host {i}: {_ns(t)}")
    else:
        print(f"Maximum finishing time at host {host}: {_ns(times_ps[host])} ({times_ps[host] / 1e12:g} s)")
    if explanation is not None:
        from idlewave.cli.explain import show_explanation  # (its tables: only with --explain)

        show_explanation(explanation)


def _explain_goal(path: Path, params: tuple, noise_trace: Path | None, noise_cosched: bool, seed: int):
    """The GOAL schedule run again as a scenario with its critical path kept."""
    from idlewave.simulation import simulate as run_scenario

    L, o, g, G, O, S = params
    net = {"L_s": L * 1e-9, "o_s": o * 1e-9, "g_s": g * 1e-9, "G_s_per_byte": G * 1e-9, "O_s_per_byte": O * 1e-9, "S_bytes": S}
    noise = [{"kind": "trace", "path": str(noise_trace), "cosched": noise_cosched}] if noise_trace else []
    try:
        r = run_scenario({"seed": seed, "network": net, "noise": noise, "record": {"timers": False},
                          "workload": {"kind": "goal", "path": str(path)}}, explain=True)
    except (ScenarioError, _engine.SimulationError) as e:
        fail(str(e), code=1)
    return r.explain


def _ns(ps: int) -> str:
    return str(ps // 1000) if ps % 1000 == 0 else f"{ps / 1000:.3f}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)
