"""The learned cost model: a LightGBM ranker over lowered-IR features, one per device class (see `model`).

`featurize` turns configs into feature rows (with a cache), `grades` turns runtimes into ranking labels, `training`
fits a model on trials of many workloads, `ensemble` bags models of one job's trials (a mean and a spread).
Strategies use it through `tuner_server.search.model_guided`.
"""
from tuner_server.cost_model.ensemble import Ensemble, Mixture
from tuner_server.cost_model.featurize import (
    BothFeatures,
    FeatureCache,
    KnobFeatures,
    LoweredFeatures,
    featurizer_for,
    shared_cache,
)
from tuner_server.cost_model.grades import FAILED_GRADE, MAX_GRADE, RankingData, ranking_data, relevance_grades
from tuner_server.cost_model.model import OBJECTIVES, Blend, CostModel, ModelFormatError
from tuner_server.cost_model.training import group_trials, lowered_featurizers, train_on_trials

__all__ = [
    "FAILED_GRADE", "MAX_GRADE", "OBJECTIVES", "Blend", "BothFeatures", "CostModel", "Ensemble", "FeatureCache",
    "KnobFeatures", "LoweredFeatures", "Mixture",
    "ModelFormatError", "RankingData", "featurizer_for", "group_trials", "lowered_featurizers", "ranking_data",
    "relevance_grades", "shared_cache", "train_on_trials",
]
