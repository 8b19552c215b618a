"""The portfolio GP's fitted kernel: analytic gradients match finite differences, the length scales find the knobs
that matter, the noise follows the data's noise, and the fitted GP predicts held-out points better than the fixed
kernel of the BO reference strategy."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from tuner_server.search.gaussian_process import GaussianProcess, standardised
from tuner_server.search.gp_fit import BOUNDS, PRIOR_LENGTHSCALE, Hyperparameters, _objective, fit_hyperparameters


def normalised(y: np.ndarray) -> np.ndarray:
    return standardised(y)[0]


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    X = rng.random((30, 4))
    z = normalised(np.sin(4 * X[:, 0]) + 0.2 * X[:, 2] + 0.05 * rng.standard_normal(30))
    theta = np.log([0.3, 0.8, 1.7, 0.4, 1.4, 0.03])
    _, grad = _objective(theta, X, z)
    numeric = approx_fprime(theta, lambda t: _objective(t, X, z)[0], 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-4)


def test_the_knobs_that_matter_get_short_length_scales():
    rng = np.random.default_rng(1)
    X = rng.random((60, 5))
    z = normalised(np.cos(5 * X[:, 1]) + np.sin(4 * X[:, 3]))  # knobs 1 and 3 decide; 0, 2, 4 do nothing
    h = fit_hyperparameters(X, z)
    assert max(h.lengthscales[[1, 3]]) < 0.5 * min(h.lengthscales[[0, 2, 4]])
    lo, hi = BOUNDS["lengthscale"]
    assert np.all((h.lengthscales >= lo * (1 - 1e-9)) & (h.lengthscales <= hi * (1 + 1e-9)))


def test_noise_follows_the_data():
    rng = np.random.default_rng(2)
    X = rng.random((80, 3))
    signal = np.sin(3 * X[:, 0]) + X[:, 1]
    quiet = fit_hyperparameters(X, normalised(signal))
    noisy = fit_hyperparameters(X, normalised(signal + 0.5 * rng.standard_normal(80)))
    assert noisy.noise > 10 * quiet.noise


def test_fitted_kernel_predicts_held_out_points_better_than_the_fixed_one():
    rng = np.random.default_rng(3)
    X = rng.random((140, 6))
    y = np.exp(np.sin(6 * X[:, 0]) + 2 * (X[:, 2] - 0.4) ** 2)  # two of six knobs matter
    train, test = slice(0, 60), slice(60, None)
    h = fit_hyperparameters(X[train], normalised(y[train]))
    errors = {}
    for name, gp in {"fitted": GaussianProcess(X[train], y[train], h.lengthscales, h.amplitude, h.noise),
                     "fixed": GaussianProcess(X[train], y[train], 1.5)}.items():
        mean = gp.posterior(X[test])[0] * gp.sd + gp.mu
        errors[name] = float(np.sqrt(np.mean((mean - y[test]) ** 2)))
    assert errors["fitted"] < 0.5 * errors["fixed"]


@pytest.mark.parametrize("n", [0, 1, 2])
def test_too_few_points_keep_the_start(n):
    X, z = np.zeros((n, 3)), np.zeros(n)
    start = Hyperparameters.default(3)
    assert fit_hyperparameters(X, z, start) is start


def test_a_start_widened_to_more_coordinates_keeps_its_own_and_gives_the_new_ones_the_prior():
    h = Hyperparameters(np.array([0.2, 3.0]), 2.0, 0.1)
    wide = h.widened(4)
    assert np.array_equal(wide.lengthscales, [0.2, 3.0, PRIOR_LENGTHSCALE, PRIOR_LENGTHSCALE])
    assert (wide.amplitude, wide.noise) == (2.0, 0.1)
    assert h.widened(2) is h and h.widened(1) is h


def test_a_warm_start_of_other_dimensions_is_ignored():
    rng = np.random.default_rng(4)
    X = rng.random((20, 3))
    h = fit_hyperparameters(X, normalised(X[:, 0]), Hyperparameters.default(5))
    assert len(h.lengthscales) == 3
