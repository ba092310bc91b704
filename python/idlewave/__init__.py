"""idlewave: how an MPI program behaves at scale under noise.

    >>> import idlewave
    >>> result = idlewave.simulate("examples/bsp_noise.toml")
    >>> result.summary["makespan_s"]
"""

import sys

if sys.argv and sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] in ("idlewave", "idlewave.exe"):
    from idlewave import interrupts

    if "multiprocessing" not in sys.modules:
        # the console script imports all of idlewave.cli before its main() runs:
        # a Ctrl-C meanwhile ends it at once, with one line (see idlewave.interrupts)
        interrupts.exit_at_once()
    else:
        # a worker process of `sweep`'s local cluster (spawned with the command's argv):
        # a Ctrl-C at the terminal is the command's to answer, and it stops its workers
        interrupts.ignore_interrupts()
        # polars' first import installs a SIGINT handler of its own, even over an ignored
        # SIGINT, and its queries then raise KeyboardInterrupt in the worker's task threads:
        # imported here, in the main thread, `held` puts the ignored SIGINT back afterwards
        with interrupts.held():
            import polars  # noqa: F401

from typing import TYPE_CHECKING, Any  # noqa: E402

from idlewave._engine import DeadlockError, MemoryLimitError, SimulationError, TimeLimitError, UnmatchedError  # noqa: E402
from idlewave.scenario import ScenarioError, load_scenario  # noqa: E402

# Bad input: ScenarioError (key path, file:line). A run that cannot complete:
# SimulationError, or one of its kinds DeadlockError, UnmatchedError, MemoryLimitError, TimeLimitError.
__all__ = ["simulate", "spmv_partners", "Result", "load_scenario", "ScenarioError", "SimulationError",
           "DeadlockError", "UnmatchedError", "MemoryLimitError", "TimeLimitError"]
__version__ = "0.1.0"

# simulation pulls in numpy and polars: importing it on first use (PEP 562) keeps
# `import idlewave` and `idlewave --help` quick; type checkers see the names here
_LAZY = ("simulate", "spmv_partners", "Result")
if TYPE_CHECKING:
    from idlewave.simulation import Result, simulate, spmv_partners


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from idlewave import simulation

        return getattr(simulation, name)
    raise AttributeError(f"module 'idlewave' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
