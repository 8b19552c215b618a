"""The ensemble's scores of configs: predicted once per model, acquisition over members, -inf where nothing lowers."""
from __future__ import annotations

import random

import numpy as np

from tuner_server.search.ensemble_scores import EnsembleScores


class CountingModelDouble:
    """Test double of a fitted Mixture: member m scores a config's feature row x as (m + 1) * x[0]."""

    def __init__(self, members: int = 3):
        self.members, self.rows_scored = members, 0

    def member_scores(self, X: np.ndarray) -> np.ndarray:
        self.rows_scored += len(X)
        return np.stack([(m + 1) * X[:, 0] for m in range(self.members)]).astype(float)


def rows(configs: list[dict]) -> np.ndarray:
    return np.array([[np.nan] if c["x"] is None else [c["x"]] for c in configs], dtype=float)


CONFIGS = [{"x": 1.0}, {"x": 3.0}, {"x": 2.0}, {"x": None}]


def scores(how: str, incumbent=lambda: None, seed: int = 0) -> EnsembleScores:
    return EnsembleScores(rows, incumbent, how, kappa=1.0, rng=random.Random(seed))


def test_each_config_is_predicted_once_per_model():
    s, model = scores("ucb"), CountingModelDouble()
    first = s.acquisition(model, CONFIGS)
    assert np.array_equal(s.acquisition(model, CONFIGS[:2] + CONFIGS[:2]), np.concatenate([first[:2], first[:2]]))
    assert model.rows_scored == len(CONFIGS)
    s.acquisition(CountingModelDouble(), CONFIGS)  # a refit: scored afresh
    assert model.rows_scored == len(CONFIGS)


def test_ucb_is_the_mean_plus_the_spread_and_unlowerable_configs_are_never_ranked():
    values = scores("ucb").acquisition(CountingModelDouble(), CONFIGS)
    member = np.array([1.0, 2.0, 3.0])
    assert np.allclose(values[:3], [x * member.mean() + x * member.std() for x in (1.0, 3.0, 2.0)])
    assert not np.isfinite(values[3])  # every ranking keeps finite values only
    assert np.nanargmax(values) == 1


def test_thompson_ranks_a_round_by_one_member_and_draws_another_next_round():
    s, model = scores("thompson", seed=3), CountingModelDouble(members=8)
    picked = s.acquisition(model, CONFIGS[:3]) / np.array([1.0, 3.0, 2.0])
    assert len(set(picked.round(9))) == 1  # one member for the whole round
    assert np.array_equal(s.acquisition(model, CONFIGS[:3]), picked * np.array([1.0, 3.0, 2.0]))
    seen = {picked[0]}
    for _ in range(20):
        s.new_round()
        seen.add((s.acquisition(model, CONFIGS[:1]) / 1.0)[0])
    assert len(seen) > 1


def test_expected_improvement_is_over_the_incumbents_mean_score():
    model = CountingModelDouble()
    near = scores("ei", incumbent=lambda: {"x": 3.0}).acquisition(model, CONFIGS[:3])
    none = scores("ei").acquisition(model, CONFIGS[:3])  # no incumbent yet: improvement over a score of 0
    assert np.argmax(near) == 1 and np.all(near <= none + 1e-12)
    assert near[0] < near[2] < near[1]
