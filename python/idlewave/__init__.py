"""idlewave: how an MPI program behaves at scale under noise.

    >>> import idlewave
    >>> result = idlewave.simulate("examples/bsp_noise.toml")
    >>> result.summary["makespan_s"]
"""

from idlewave._engine import SimulationError
from idlewave.scenario import ScenarioError, load_scenario
from idlewave.simulation import Result, simulate, spmv_partners

__all__ = ["simulate", "spmv_partners", "Result", "load_scenario", "ScenarioError", "SimulationError"]
__version__ = "0.1.0"
