"""How far the model-guided strategy trusts each surrogate: every surrogate's scores of the configs proposed, and,
once they are measured, each one's Spearman rank correlation with the measured speeds, kept as an exponential
average over batches (`tuner_server.search.portfolio` turns the averages into shares of a batch)."""
from __future__ import annotations

import math

import numpy as np

from tuner_server.search.base import OK, Observation
from tuner_server.search.knob_walk import config_id

SURROGATES = ("gp", "smooth", "ensemble")  # the order of every score tuple
MIN_RANKED = 3  # measured configs of a batch before its rank correlations count


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (ties get their average rank; -inf ranks lowest); 0 when either is constant."""
    ra, rb = _ranks(a), _ranks(b)
    if np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    values, inverse = np.unique(x, return_inverse=True)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    return (np.bincount(inverse, weights=ranks, minlength=len(values)) / np.bincount(inverse))[inverse]


class SurrogateTrust:
    """The surrogates' scores of configs not measured yet, and the trust in each (`trust`, by SURROGATES name)."""

    def __init__(self, memory: float):
        self.memory = memory  # weight of earlier batches (`trust_memory`)
        self.trust = dict.fromkeys(SURROGATES, 0.0)  # exponential averages of rank correlations
        self.updates = 0
        self.predicted: dict[tuple, tuple[float, ...]] = {}  # config id -> scores per SURROGATES, higher better
        self._outcomes: list[tuple[float, ...]] = []  # (*scores, speed) of measured predicted configs

    def remember(self, config: dict, scores: tuple[float, ...]) -> None:
        self.predicted[config_id(config)] = scores

    def measured(self, result: Observation) -> None:
        """Compare a measured config with what each surrogate predicted for it; once a batch is in, update the
        trust (failures rank slowest)."""
        scores = self.predicted.pop(config_id(result.config), None)
        if scores is None:
            return
        ok = result.status == OK and result.median_s is not None and result.median_s > 0
        self._outcomes.append((*scores, -math.log(result.median_s) if ok else -math.inf))
        if not self.predicted or len(self._outcomes) >= 8 * MIN_RANKED:  # a batch is in
            self._update()

    def _update(self) -> None:
        outcomes, self._outcomes = self._outcomes, []
        if len(outcomes) < MIN_RANKED:
            return
        speed = np.array([o[-1] for o in outcomes])
        memory = self.memory if self.updates else 0.0
        for i, name in enumerate(SURROGATES):
            scores = np.array([o[i] for o in outcomes])
            usable = ~np.isnan(scores)
            rho = 0.0
            if usable.sum() >= MIN_RANKED:
                rho = rank_correlation(scores[usable], speed[usable])
            self.trust[name] = memory * self.trust[name] + (1 - memory) * (rho if math.isfinite(rho) else 0.0)
        self.updates += 1
