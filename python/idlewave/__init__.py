"""idlewave: how an MPI program behaves at scale under noise.

    >>> import idlewave
    >>> result = idlewave.simulate("examples/bsp_noise.toml")
    >>> result.summary["makespan_s"]
"""

from typing import Any

from idlewave._engine import DeadlockError, MemoryLimitError, SimulationError, UnmatchedError
from idlewave.scenario import ScenarioError, load_scenario

# Bad input: ScenarioError (key path, file:line). A run that cannot complete:
# SimulationError, or one of its kinds DeadlockError, UnmatchedError, MemoryLimitError.
__all__ = ["simulate", "spmv_partners", "Result", "load_scenario", "ScenarioError", "SimulationError",
           "DeadlockError", "UnmatchedError", "MemoryLimitError"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # simulation pulls in polars; importing it on first use keeps `idlewave --help` fast
    if name in ("simulate", "spmv_partners", "Result"):
        from idlewave import simulation

        return getattr(simulation, name)
    raise AttributeError(f"module 'idlewave' has no attribute {name!r}")
