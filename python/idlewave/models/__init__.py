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

from idlewave.models import fit, hyperbolic, loggops, nbc, postal

__all__ = ["fit", "hyperbolic", "loggops", "nbc", "postal"]
