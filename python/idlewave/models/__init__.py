"""Analytic performance models and calibration (pure Python):

* :mod:`~idlewave.models.postal` — the postal model per protocol and link
  class with the max-rate, hops, congestion, synchronization and overlap
  penalties; allreduce, halo-exchange and PCG-family models; idle-wave speed.
* :mod:`~idlewave.models.loggops` — LogGOPS closed forms (p2p, binomial
  broadcast, dissemination) charged exactly as the engine charges them.
* :mod:`~idlewave.models.nbc` — the nonblocking-collective bounds, Eq. (1)–(7).
* :mod:`~idlewave.models.hyperbolic` — y = aη/(η+d): fit, quick fit, comparison.
* :mod:`~idlewave.models.fit` — α, β per protocol and the protocol limits
  from ping-pong data; node bandwidth; platform TOML.
"""

import importlib
from typing import Any

__all__ = ["fit", "hyperbolic", "loggops", "nbc", "postal"]


def __getattr__(name: str) -> Any:
    # submodules load on first use (fit needs scipy, which the CLI's start-up should not pay for)
    if name in __all__:
        return importlib.import_module(f"idlewave.models.{name}")
    raise AttributeError(f"module 'idlewave.models' has no attribute {name!r}")
