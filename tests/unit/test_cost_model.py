"""The LightGBM ranking cost model: grades, grouped training data, fitting, warm starts, persistence, features."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

import compiler_core as cc
from compiler_core.space import Knob, Space
from tuner_server.cost_model import (
    FAILED_GRADE,
    MAX_GRADE,
    CostModel,
    FeatureCache,
    KnobFeatures,
    LoweredFeatures,
    ModelFormatError,
    lowered_featurizers,
    ranking_data,
    relevance_grades,
    train_on_trials,
)
from tuner_server.search import TransferTrial

NAMES = ("a", "b", "c")


def synthetic(n: int, seed: int, shift: float = 0.0):
    """Rows of 3 features and runtimes that are a smooth function of them (lower is faster)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 4, size=(n, 3)).astype(np.float32)
    runtime = np.exp((X[:, 0] - 1.5 - shift) ** 2 + 0.5 * X[:, 1] - 0.2 * X[:, 2])
    return X, list(runtime)


def test_grades_rank_within_the_group_and_failures_are_worst():
    medians = [5.0, 1.0, None, 3.0, 1.0, 2.0, 9.0]
    statuses = ["OK", "OK", "COMPILE_ERROR", "OK", "OK", "OK", "WRONG_ANSWER"]
    grades = relevance_grades(medians, statuses)
    assert grades[2] == grades[6] == FAILED_GRADE  # a wrong answer is no better than a compile error
    assert grades[1] == grades[4] == MAX_GRADE  # equal runtimes, equal grades
    assert grades[1] >= grades[5] >= grades[3] >= grades[0] >= 1
    assert list(relevance_grades([None, None], ["TIMEOUT", "RUNTIME_ERROR"])) == [0, 0]
    many = relevance_grades(list(range(1, 201)), ["OK"] * 200)
    assert many[0] == MAX_GRADE and many[-1] == 1 and np.all(np.diff(many) <= 0)


def test_ranking_data_groups_queries_and_drops_unusable_rows():
    X, y = synthetic(25, 0)
    X[3] = np.nan  # a config that could not be lowered
    single = (X[:1], y[:1], ["OK"])
    data = ranking_data([(X, y, ["OK"] * 25), single, (X[:10], y[:10], ["OK"] * 10)], max_query=10)
    assert sum(data.queries) == len(data) == 24 + 9  # the NaN row is in both
    assert max(data.queries) <= 10 and min(data.queries) >= 2
    assert not np.isnan(data.X).any()
    assert ranking_data([]).queries == []


def test_fit_learns_a_ranking_and_generalizes():
    X, y = synthetic(300, 1)
    model = CostModel(NAMES, seed=0).fit(ranking_data([(X, y, ["OK"] * 300)]), rounds=60)
    Xt, yt = synthetic(200, 2)
    tau = kendalltau(-model.predict(Xt), yt)[0]
    assert tau > 0.6, tau


@pytest.mark.parametrize("objective", ["rank_xendcg", "lambdarank"])
def test_fine_tuned_and_update_warm_start(objective):
    X, y = synthetic(120, 3)
    base = CostModel(NAMES, objective).fit(ranking_data([(X, y, ["OK"] * 120)]), rounds=15)
    before = base.predict(X)
    X2, y2 = synthetic(60, 4, shift=1.0)
    tuned = base.fine_tuned(ranking_data([(X2, y2, ["OK"] * 60)]), rounds=5)
    assert tuned.num_trees == base.num_trees + 5
    np.testing.assert_array_equal(base.predict(X), before)  # the base model is left as it was
    assert base.num_trees == 15
    again = base.fine_tuned(ranking_data([(X2, y2, ["OK"] * 60)]), rounds=5)  # the first left nothing behind
    np.testing.assert_array_equal(again.predict(X), tuned.predict(X))
    base.update(ranking_data([(X2, y2, ["OK"] * 60)]), rounds=3)
    assert base.num_trees == 18


def test_serialization_round_trip_and_layout_check():
    X, y = synthetic(80, 5)
    model = CostModel(NAMES, "lambdarank", seed=7).fit(ranking_data([(X, y, ["OK"] * 80)]), rounds=10)
    blob = model.to_bytes()
    loaded = CostModel.from_bytes(blob, feature_names=NAMES)
    np.testing.assert_allclose(loaded.predict(X), model.predict(X))
    assert loaded.objective == "lambdarank" and loaded.seed == 7
    with pytest.raises(ModelFormatError, match="layout"):
        CostModel.from_bytes(blob, feature_names=("a", "b", "z"))
    with pytest.raises(ModelFormatError):
        CostModel.from_bytes(b"garbage")
    empty = CostModel.from_bytes(CostModel(NAMES).to_bytes())
    assert not empty.trained and list(empty.predict(X[:3])) == [0, 0, 0]


def test_nothing_to_rank_leaves_the_model_untrained():
    X, _ = synthetic(10, 6)
    all_failed = ranking_data([(X, [None] * 10, ["COMPILE_ERROR"] * 10)])
    assert not CostModel(NAMES).fit(all_failed).trained
    with pytest.raises(ValueError, match="objective"):
        CostModel(NAMES, objective="poisson")


def test_feature_cache_is_bounded_lru_and_persists():
    cache = FeatureCache(max_entries=2)
    for i in range(3):
        cache.put(("w", str(i)), np.full(4, i, np.float32))
    assert ("w", "0") not in cache and len(cache) == 2
    assert cache.get(("w", "1")) is not None and cache.get(("w", "0")) is None
    restored = FeatureCache.from_bytes(cache.to_bytes())
    np.testing.assert_array_equal(restored.get(("w", "2")), np.full(4, 2, np.float32))


def test_feature_cache_forgets_one_featurizer():
    cache = FeatureCache()
    for prefix in ("w", "v"):
        for i in range(3):
            cache.put((prefix, str(i)), np.zeros(2, np.float32))
    assert cache.forget("w") == 3 and len(cache) == 3 and ("v", "0") in cache and ("w", "0") not in cache
    assert cache.forget("w") == 0


def test_lowered_features_are_cached_and_unlowerable_configs_are_nan():
    w = cc.make_workload("softmax", {"rows": 64, "cols": 128})
    target = cc.cpu_target(isa="avx2", cores=1)
    configs = cc.get_space(w, target).sample(__import__("random").Random(0), 3)
    feats = LoweredFeatures(w.key, target, FeatureCache())
    X = feats(configs)
    assert X.shape == (3, len(cc.FEATURE_NAMES)) and feats.computed == 3
    np.testing.assert_array_equal(feats(configs[:1]), X[:1])
    assert feats.computed == 3 and feats.cached(configs[0])
    assert np.isnan(feats([{"no_such_knob": 1}])).all()


def test_knob_features_encode_numbers_and_choices():
    space = Space((Knob("tile", (8, 16)), Knob("order", ("ij", "ji"))))
    X = KnobFeatures(space)([{"tile": 16, "order": "ji"}, {"tile": 8, "order": "ij"}])
    np.testing.assert_array_equal(X, [[16, 1], [8, 0]])


def test_train_on_trials_of_several_workloads():
    """Explicit vectors are 3x faster on two softmax shapes; the model ranks them first on a third shape."""
    target = cc.cpu_target(isa="avx2", cores=1)
    cache = FeatureCache()

    def configs(rows: int) -> tuple[str, list[dict]]:
        w = cc.make_workload("softmax", {"rows": rows, "cols": 256})
        return w.key, [c for c in cc.get_space(w, target) if c["accumulators"] == 2]

    trials = []
    for rows in (64, 256):
        key, space = configs(rows)
        trials += [TransferTrial(key, c, (1.0 if c["vector"] == "explicit" else 3.0) * (1 + 0.01 * i), "OK")
                   for i, c in enumerate(space)]
    model = train_on_trials(trials, cc.FEATURE_NAMES, lowered_featurizers(target, cache), rounds=20)
    assert model.trained
    key, space = configs(128)
    scores = model.predict(LoweredFeatures(key, target, cache)(space))
    explicit = np.array([s for s, c in zip(scores, space, strict=True) if c["vector"] == "explicit"])
    simd = np.array([s for s, c in zip(scores, space, strict=True) if c["vector"] != "explicit"])
    assert np.mean(explicit[:, None] > simd[None, :]) > 0.9
