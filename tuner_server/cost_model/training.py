"""Training a cost model from trials: group them by workload, featurize, grade, fit.

`train_on_trials` is what the tuner calls to (re)build a device class's model from every trial of that class
(`TransferTrial`s: workload key, config, median, status), and what a model-guided strategy uses for its own.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from compiler_core.space import config_key
from tuner_server.cost_model.featurize import FeatureCache, LoweredFeatures
from tuner_server.cost_model.grades import RankingData, ranking_data
from tuner_server.cost_model.model import CostModel

if TYPE_CHECKING:  # the search package depends on this one, never the other way round
    from tuner_server.search.base import TransferTrial

Group = tuple[np.ndarray, list, list]


def group_trials(trials: Sequence[TransferTrial], featurize: Callable[[str], Callable]) -> list[Group]:
    """(features, medians, statuses) per workload, workloads in first-seen order; `featurize(workload_key)` gives
    the featurizer of a workload. A config measured twice keeps its last trial."""
    by_workload: dict[str, dict[str, TransferTrial]] = {}
    for t in trials:
        by_workload.setdefault(t.workload_key, {})[config_key(t.config)] = t
    groups = []
    for key, rows in by_workload.items():
        items = list(rows.values())
        X = featurize(key)([t.config for t in items])
        groups.append((X, [t.median_s for t in items], [t.status for t in items]))
    return groups


def lowered_featurizers(target, cache: FeatureCache | None = None) -> Callable[[str], LoweredFeatures]:
    """workload key -> its LoweredFeatures on `target` (one per key, sharing `cache`)."""
    made: dict[str, LoweredFeatures] = {}

    def get(workload_key: str) -> LoweredFeatures:
        if workload_key not in made:
            made[workload_key] = LoweredFeatures(workload_key, target, cache)
        return made[workload_key]

    return get


def train_on_trials(trials: Sequence[TransferTrial], feature_names: Sequence[str],
                    featurize: Callable[[str], Callable], *, objective: str = "rank_xendcg", rounds: int = 60,
                    seed: int = 0, params: dict | None = None) -> CostModel:
    """A CostModel fitted on `trials` (untrained when they hold nothing to rank)."""
    data: RankingData = ranking_data(group_trials(trials, featurize), seed=seed)
    return CostModel(feature_names, objective, seed, params).fit(data, rounds)
