"""Bagged rankers: how sure the cost model is of a config, from how much models fitted on resamples disagree.

`Ensemble.fit` trains `members` CostModels, each on a bootstrap resample of one group of trials (members == 1: the
trials as they are). Ranking scores have no common scale, so each member's scores are standardized by their mean and
spread over the training rows; `member_scores(X)` returns the members x rows matrix of standardized scores, whose
mean over members ranks configs and whose spread over members is the model's uncertainty (what UCB, expected
improvement and Thompson sampling in `tuner_server.search.model_guided` read).

With `anchors` (feature rows of reference configs, e.g. the best measured config of each basin), each row also gets
the fraction of features in which it differs from each anchor: with knob features, its Hamming distance to the
anchors. Trees split on single features, so "near the best config" is hard for them to learn from knob values alone;
these columns make locality one split.

`Mixture` puts a transfer model (trained on other workloads of the device class, standardized the same way) in front
of an ensemble with a weight: row i is (1 - w) * transfer + w * member i, so the spread is the own members' spread
times w, and a job's own trials take over as they grow.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tuner_server.cost_model.grades import OK, RankingData, ranking_data
from tuner_server.cost_model.model import REGRESSION, CostModel


def speed_labels(medians: Sequence[float | None], statuses: Sequence[str]) -> np.ndarray:
    """Regression labels: -log(runtime) of the configs that ran; failures one spread below the slowest of them."""
    ok = np.array([s == OK and m is not None and m > 0 for m, s in zip(medians, statuses, strict=True)], bool)
    labels = np.zeros(len(medians))
    if ok.any():
        labels[ok] = -np.log([m for m, good in zip(medians, ok, strict=True) if good])
        labels[~ok] = labels[ok].min() - (labels[ok].std() or 1.0)
    return labels


def _standardizer(model, X: np.ndarray) -> tuple[float, float]:
    if len(X) < 2:
        return 0.0, 1.0
    scores = model.predict(X)
    return float(np.mean(scores)), float(np.std(scores)) or 1.0


class Ensemble:
    """`members` rankers fitted on bootstrap resamples of one group of trials; see the module docstring."""

    def __init__(self, feature_names: Sequence[str], objective: str, seed: int, members: int, rounds: int,
                 params: dict | None = None, anchors: np.ndarray | None = None):
        self.anchors = None if anchors is None or not len(anchors) else np.asarray(anchors, dtype=np.float32)
        extra = () if self.anchors is None else tuple(f"anchor_distance_{i}" for i in range(len(self.anchors)))
        self.feature_names, self.objective, self.seed = tuple(feature_names) + extra, objective, seed
        self.members, self.rounds, self.params = members, rounds, params
        self.models: list[tuple[CostModel, float, float]] = []  # (model, mean, spread) of its training scores

    def _with_anchors(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        if self.anchors is None:
            return X
        distances = (X[:, None, :] != self.anchors[None, :, :]).mean(axis=2, dtype=np.float32)
        return np.hstack([X, distances])

    @property
    def trained(self) -> bool:
        return bool(self.models)

    def fit(self, X: np.ndarray, medians: Sequence[float | None], statuses: Sequence[str]) -> Ensemble:
        """Fit the members on (X, medians, statuses), one group; members that find nothing to rank are left out."""
        rng = np.random.default_rng(self.seed)
        X = self._with_anchors(X)
        medians, statuses = list(medians), list(statuses)
        speed = speed_labels(medians, statuses)
        self.models = []
        for i in range(self.members):
            rows = np.arange(len(X)) if self.members == 1 else np.sort(rng.integers(0, len(X), size=len(X)))
            if self.objective == REGRESSION:
                data = RankingData(X[rows], speed[rows], [len(rows)])
            else:
                data = ranking_data([(X[rows], [medians[r] for r in rows], [statuses[r] for r in rows])],
                                    seed=self.seed + i)
            if not len(data):
                continue
            model = CostModel(self.feature_names, self.objective, self.seed + i, self.params).fit(data, self.rounds)
            if model.trained:
                self.models.append((model, *_standardizer(model, X)))
        return self

    def member_scores(self, X: np.ndarray) -> np.ndarray:
        """members x rows, each member's scores standardized over its training rows."""
        X = self._with_anchors(X)
        if not self.models:
            return np.zeros((1, len(X)))
        return np.stack([(m.predict(X) - mu) / sd for m, mu, sd in self.models])


class Mixture:
    """A transfer model in front of an ensemble (see the module docstring); either part may be None."""

    def __init__(self, transfer: CostModel | None, own: Ensemble | None, own_weight: float, X: np.ndarray):
        self.transfer = transfer
        self.own = own if own is not None and own.trained else None
        self.weight = own_weight if transfer is not None and self.own is not None else (
            1.0 if self.own is not None else 0.0)
        self._standard = _standardizer(transfer, X) if transfer is not None else (0.0, 1.0)

    @property
    def trained(self) -> bool:
        return self.transfer is not None or self.own is not None

    def member_scores(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float32)
        own = self.own.member_scores(X) if self.own is not None else np.zeros((1, len(X)))
        if self.transfer is None:
            return own
        mu, sd = self._standard
        prior = (self.transfer.predict(X) - mu) / sd
        return (1 - self.weight) * prior[None, :] + self.weight * own
