"""Acquisition: how a surrogate's predicted mean and spread rank unmeasured configs. Expected improvement is shared by
the Gaussian processes (`tuner_server.search.gaussian_process`) and the model-guided strategy's ensemble, whose
members' scores also rank by their mean, or by an upper confidence bound."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr


def expected_improvement(improvement: np.ndarray, sd: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """E[max(gain, 0)] of a normal prediction whose mean beats the incumbent by `improvement`, with spread `sd`
    (`floor`: the least spread the ratio divides by, where a prediction can be certain)."""
    gain = improvement / (np.maximum(sd, floor) if floor else sd)
    return improvement * ndtr(gain) + sd * np.exp(-0.5 * gain ** 2) / math.sqrt(2 * math.pi)


def ensemble_acquisition(S: np.ndarray, how: str, kappa: float, incumbent: Callable[[], float]) -> np.ndarray:
    """Values of "mean", "ucb" (mean + kappa * spread) or "ei" from member scores S (members x configs, higher is
    better); `incumbent` gives the mean score of the best measured config (asked for only by "ei")."""
    with np.errstate(invalid="ignore"):
        mean, spread = S.mean(axis=0), S.std(axis=0)
    if how == "mean" or len(S) == 1:
        return mean
    if how == "ucb":
        return mean + kappa * spread
    with np.errstate(invalid="ignore"):
        ei = expected_improvement(mean - incumbent(), spread, floor=1e-9)
    return np.where(np.isfinite(mean), ei, -np.inf)
