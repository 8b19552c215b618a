"""The feature pool lowers configs in worker processes; the model-guided strategy searches with it without waiting."""
from __future__ import annotations

import random
import time

import numpy as np
import pytest

import compiler_core as cc
from compiler_core.space import config_key
from tuner_server.cost_model import FeatureCache, LoweredFeatures
from tuner_server.cost_model.feature_pool import FeaturePool
from tuner_server.search import Observation, StrategyContext, make_strategy

WORKLOAD = cc.make_workload("softmax", {"rows": 64, "cols": 96})
TARGET = cc.cpu_target(cores=1)


@pytest.fixture(scope="module")
def pool():
    pool = FeaturePool(workers=1)
    yield pool
    pool.close()


def test_prefetch_fills_the_cache_with_the_same_vectors_as_inline_lowering(pool):
    configs = cc.get_space(WORKLOAD, TARGET).sample(random.Random(0), 20)
    background = LoweredFeatures(WORKLOAD.key, TARGET, FeatureCache(), pool)
    background.prefetch(configs)
    background.prefetch(configs)  # in flight already: not submitted twice
    assert pool.wait(timeout_s=120)
    assert all(background.cached(c) for c in configs)
    inline = LoweredFeatures(WORKLOAD.key, TARGET, FeatureCache())(configs)
    np.testing.assert_array_equal(background(configs), inline)
    assert background.computed == 0  # nothing was lowered in this process
    assert pool.in_flight() == 0


def test_a_config_that_cannot_be_lowered_gets_a_nan_row(pool):
    features = LoweredFeatures(WORKLOAD.key, TARGET, FeatureCache(), pool)
    bad = {"no_such_knob": 1}
    features.prefetch([bad])
    assert pool.wait(timeout_s=60)
    assert features.cached(bad) and np.isnan(features([bad])).all()


def test_model_guided_search_with_a_pool_never_waits_and_never_repeats(pool):
    space = cc.get_space(WORKLOAD, TARGET)
    context = StrategyContext(space, seed=3, workload_key=WORKLOAD.key, target=TARGET, feature_pool=pool,
                              options={"min_train": 4, "own_features": "lowered"})
    strategy = make_strategy("model", context)
    seen, slowest = set(), 0.0
    rng = random.Random(0)
    for _ in range(8):
        t0 = time.perf_counter()
        batch = strategy.propose(4)
        slowest = max(slowest, time.perf_counter() - t0)
        assert batch and all(space.is_valid(c) for c in batch)
        keys = {config_key(c) for c in batch}
        assert not keys & seen
        seen |= keys
        strategy.observe([Observation(c, rng.uniform(1e-4, 2e-4)) for c in batch])
        pool.wait(timeout_s=120)  # a measurement takes longer than lowering: features are ready next round
    assert strategy.features.computed == 0  # every vector came from the pool
    assert strategy._model is not None  # it fitted a model on features from the pool
    assert slowest < 5.0
