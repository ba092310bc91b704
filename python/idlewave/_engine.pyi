"""Type stub of the compiled engine (src/python.rs); a test checks it names
every function the module has."""

from collections.abc import Callable
from typing import Any

import numpy as np

__version__: str

class SimulationError(ValueError):
    """A scenario that cannot be simulated: bad input, deadlock, unmatched messages, or too large."""

    key: str | None
    """The scenario key a run refuses (a check only the run can make: a torus too small for the ranks, a mapping file
    that cannot be read), else None."""

class DeadlockError(SimulationError): ...
class UnmatchedError(SimulationError): ...
class MemoryLimitError(SimulationError): ...
class TimeLimitError(SimulationError): ...

class TraceReplayError(SimulationError):
    """A trace that cannot be read, converted or extrapolated."""

    path: str | None
    """The rank file or trace directory to blame, if one is."""
    record: int | None
    """The record's index in that rank file (from 0), if one is to blame."""

class InputFileError(SimulationError):
    """An input file (a rank file, a detour trace) that cannot be read."""

    path: str
    line: int | None
    """The line to blame (from 1), if one is."""

class Scenario:
    """A checked scenario (src/scenario/load.rs): read from TOML text or a dict, every default filled in,
    its rules checked. Errors are idlewave.scenario.ScenarioError (source, key, line, column, kind, message)."""

    def __init__(self, text: str, source: str = "<string>", base_dir: str | None = None,
                 overrides: dict[str, Any] | None = None) -> None: ...
    @staticmethod
    def from_file(path: str, overrides: dict[str, Any] | None = None) -> Scenario: ...
    @staticmethod
    def from_dict(doc: dict[str, Any], source: str = "<dict>", base_dir: str | None = None,
                  overrides: dict[str, Any] | None = None) -> Scenario: ...
    def set(self, key: str, value: Any) -> None:
        """Sets one dotted key (as --set key.path=value) and checks the scenario again."""
    def to_json(self) -> str: ...
    def to_dict(self) -> dict[str, Any]: ...
    @property
    def source(self) -> str: ...

def read_toml(text: str, source: str) -> dict[str, Any]:
    """TOML text as a dict; a syntax error is a ScenarioError at source:line:column."""

def platform_presets() -> list[tuple[str, str]]:
    """(preset name, its first comment line) of the presets compiled in."""

def apply_overrides(raw: dict[str, Any], overrides: dict[str, Any], source: str = "<dict>") -> dict[str, Any]:
    """Overrides (dotted key -> value) over a scenario dict, unchecked."""

class Result:
    """What one run produced (src/python/result.rs); idlewave.simulate wraps it in idlewave.Result. Each getter
    converts the run's data when asked."""

    @property
    def finish_times_s(self) -> np.ndarray:
        """When each rank finished, in seconds (float64)."""
    @property
    def finish_times_ps(self) -> np.ndarray:
        """When each rank finished, in picoseconds (uint64)."""
    @property
    def timers(self) -> dict[str, np.ndarray]:
        """Timer name -> ranks x iterations matrix of durations in seconds (NaN where a rank never ran the region)."""
    @property
    def ranks(self) -> int: ...
    @property
    def iterations(self) -> int: ...
    @property
    def makespan_s(self) -> float: ...
    @property
    def makespan_ps(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def algorithm(self) -> str | None:
        """The algorithm a collective loop ran (the one auto chose); None for other workloads."""
    @property
    def wall_s(self) -> float: ...
    @property
    def peak_memory_bytes(self) -> int: ...
    @property
    def estimated_memory_bytes(self) -> int | None:
        """What the run was estimated to need, and checked against, before it allocated."""
    @property
    def derived(self) -> dict[str, float]:
        """Quantities the workload derived (e.g. a skeleton's computation time), in seconds."""
    @property
    def trace_report(self) -> dict[str, Any] | None:
        """A trace replay's report; None for other workloads."""
    @property
    def held_back(self) -> dict[str, Any] | None: ...
    @property
    def explain(self) -> dict[str, Any] | None:
        """The critical path, if kept: makespan_ps, last_rank, peak_bytes, causes_ps, counts, derivatives, waits
        (arrays per rank), route (arrays per segment)."""
    @property
    def timeline(self) -> dict[str, Any] | None:
        """The captured spans as arrays (rank, peer, start_ps, end_ps, activity, tag, bytes) and truncated, if asked."""

def simulate(scenario: Scenario, progress: Callable[..., bool] | None = None, timeline_spans: int = 0,
             explain: bool = False, progress_done: bool = False) -> Result:
    """Runs one checked scenario (run as read, no second parse)."""

def estimate_memory(scenario: Scenario, timeline_spans: int = 0, explain: bool = False) -> dict[str, Any]:
    """What a checked scenario is estimated to need, without running it; keys: ranks, estimated_memory_bytes,
    max_memory_bytes, limit (what the limit is), refused (the refusal's message or None)."""

def loggopsim(
    path: str,
    l_ns: int,
    o_ns: int,
    g_ns: int,
    big_g_ns: float,
    big_o_ns: float,
    s_bytes: int,
    noise_trace: str | None = None,
    noise_cosched: bool = False,
    seed: int = 0,
) -> tuple[list[int], int]:
    """LogGOPSim mode: (host finishing times in ps, events)."""

def export_goal_text(scenario: Scenario) -> str:
    """The scenario's built-in workload written as a GOAL schedule."""

def export_goal_file(scenario: Scenario, path: str, to: str) -> tuple[int, int]:
    """Writes the scenario's built-in workload as a GOAL schedule (to: "text" or "binary"); (ranks, ops)."""

def spmv_partners_text(scenario: Scenario) -> str:
    """The partner file of a banded spmv scenario."""

def scenario_schema() -> str:
    """The scenario's JSON Schema (JSON text)."""

def rank_nodes(scenario: Scenario) -> list[int]:
    """The node each rank runs on under the scenario's mapping."""

def node_hops(scenario: Scenario, pairs: list[tuple[int, int]]) -> list[int]:
    """Links between the nodes of each pair (0: the same node) in the scenario's topology."""

def loggops_costs(l_ps: int, o_ps: int, g_ps: int, big_g_ps: float, big_o_ps: float, s_bytes: int, size: int) -> tuple[int, int, int, int]:
    """(send CPU, send NIC, receive CPU, receive NIC) of one message, in ps."""

def alpha_update(alpha: float, wait_in: float, wait_out: float, theta: float, epsilon: float) -> float:
    """Algorithm 3 of the HMM paper (the engine's)."""

def table1_beta() -> list[tuple[str, float]]:
    """Table 1 of the noise paper: (application, β)."""

def node_blocks(grid: list[int], per_node: int) -> list[int]: ...
def cartesian_nodes(grid: list[int], block: list[int], torus: list[int] | None = None) -> list[int]: ...
def measure_selfish(duration_s: float, threshold_ns: int) -> list[tuple[int, int]]: ...
def measure_fwq(work: int, samples: int) -> list[int]: ...
def bench_case(case: str) -> dict[str, Any]: ...
def bench_cases(smaller: bool = False) -> list[str]: ...
def goal_convert(src: str, dst: str, to: str) -> tuple[str, int, int]:
    """A GOAL schedule converted between text and LogGOPSim's binary layout: (input format, ranks, ops)."""
def trace_export_goal(spec_json: str, path: str) -> tuple[int, int]:
    """Streams a trace replay's schedule into a GOAL file; (ranks, ops)."""

def trace_ops() -> list[tuple[int, str]]: ...
def write_synthetic_trace(dir: str, ranks: int, iterations: int) -> None: ...
def trace_grid(dir: str) -> tuple[list[int], list[bool]]: ...
def grid_target(dims: list[int], periodic: list[bool], ranks: int) -> list[int]: ...

#: The largest time any input may give, in ps (2^60, about 13 days).
MAX_INPUT_PS: int
