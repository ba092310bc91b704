"""Regime extraction and robust comparison of noisy timings (the HMM
paper's statistical method) for any T[p, k]: measured, simulated or
loaded from a user's file."""

from idlewave.stats.data import DataError, load
from idlewave.stats.regimes import Fit, decode, fit, gmm, representative_ranks
from idlewave.stats.run import analyze

__all__ = ["DataError", "load", "Fit", "fit", "decode", "gmm", "representative_ranks", "analyze"]
