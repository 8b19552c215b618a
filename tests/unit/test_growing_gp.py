"""The last phase's growing posterior: extended a batch at a time it is the posterior a GP fitted afresh gives, picks
as it does, never picks an excluded row, and takes only points that extend the ones it holds."""
from __future__ import annotations

import numpy as np
import pytest

from tuner_server.search.gaussian_process import GaussianProcess
from tuner_server.search.growing_gp import GrowingPosterior, _Fitted


def points(rows: int, seed: int) -> np.ndarray:
    """Coordinates as KnobCoordinates gives them: knob choices on a grid of [0, 1]^4."""
    return (np.random.default_rng(seed).integers(0, 8, (rows, 4)) + 0.5) / 8


@pytest.mark.parametrize("lengthscale", [0.3, 1.5])
def test_grown_a_batch_at_a_time_it_is_the_gp_fitted_afresh(lengthscale):
    X, C = points(60, 0), points(500, 1)
    y = np.exp(X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * np.random.default_rng(2).standard_normal(60))
    grown = GrowingPosterior(C, lengthscale, capacity=64)
    for n in (1, 9, 17, 40, 60):  # a first point alone, then batches of 8 and a larger step
        assert grown.covers(X[:n])
        grown.extend(X[:n])
    gp = GaussianProcess(X, y, lengthscale)
    mean, var, _ = gp.posterior(C)
    g_mean, g_var, _ = _Fitted(grown, y).posterior(C)
    np.testing.assert_allclose(g_mean, mean, atol=1e-6)
    np.testing.assert_allclose(g_var, var, atol=1e-8)
    none = np.zeros(len(C), bool)
    assert grown.ei_batch(y, 6, 0.01, none) == gp.ei_batch(C, 6, 0.01)


def test_excluded_rows_are_never_picked_and_only_extensions_are_taken():
    X, C = points(30, 3), points(200, 4)
    y = X.sum(1) + 1.0
    grown = GrowingPosterior(C, 1.5, capacity=32)
    grown.extend(X)
    first = grown.ei_batch(y, 5, 0.01, np.zeros(len(C), bool))
    excluded = np.zeros(len(C), bool)
    excluded[first] = True
    again = grown.ei_batch(y, 5, 0.01, excluded)
    assert not set(first) & set(again) and len(again) == 5
    excluded[:] = True
    excluded[[7, 11]] = False
    assert sorted(grown.ei_batch(y, 5, 0.01, excluded)) == [7, 11]  # fewer left than asked: the ones left
    assert not grown.covers(X[1:])  # not the points held, in order
    assert not grown.covers(np.vstack([X, points(3, 5)]))  # past the capacity
    assert grown.covers(np.vstack([X, points(2, 5)]))
