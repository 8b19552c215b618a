"""Kernel hyperparameters of a Gaussian process fitted to the job's own measurements: one Matérn 3/2 length scale
per knob (automatic relevance determination), the signal amplitude and the noise, at the maximum of the marginal
likelihood times weak priors.

The BO reference strategy keeps Kernel Tuner's fixed kernel (one length scale of 1.5 for every knob, no noise). On
real schedule spaces a few knobs decide most of the runtime (the tile sizes of a GEMM, the vector width of a softmax)
and the rest barely matter; a kernel that knows which is which predicts a config from its neighbours along the
knobs that matter and ignores the others, so expected improvement stops spending measurements on knobs that do
not. Fitted noise lets the posterior mean smooth over timing noise instead of interpolating it.

With a few dozen points a marginal likelihood alone can pick absurd values (every length scale tiny: each point its
own island), so log length scales get a normal prior around `PRIOR_LENGTHSCALE` and the noise a prior that expects
little of it; the optimiser (L-BFGS-B with analytic gradients, warm-started from the last fit) works on log values
inside `BOUNDS`. The cost: one Cholesky factorization and d rank-one contractions of n x n matrices per step, a few
milliseconds for the at most `gp_points` observations the portfolio fits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize

PRIOR_LENGTHSCALE = 0.5  # centre of the log-normal prior on each length scale, on [0, 1] knob coordinates
PRIOR_LOG_SD = 1.0  # its spread, in e-folds
PRIOR_NOISE = 1e-2  # centre of the log-normal prior on the noise variance (targets normalised to spread 1)
PRIOR_NOISE_LOG_SD = 2.0
BOUNDS = {"lengthscale": (0.03, 30.0), "amplitude": (0.05, 20.0), "noise": (1e-6, 1.0)}
STEPS = 40  # L-BFGS-B iterations at most per fit
SQRT3 = math.sqrt(3.0)


@dataclass(frozen=True)
class Hyperparameters:
    lengthscales: np.ndarray  # one per coordinate
    amplitude: float  # signal variance
    noise: float  # noise variance, on targets normalised to mean 0 and spread 1

    @classmethod
    def default(cls, dims: int) -> Hyperparameters:
        return cls(np.full(dims, PRIOR_LENGTHSCALE), 1.0, PRIOR_NOISE)

    def widened(self, dims: int) -> Hyperparameters:
        """These hyperparameters for `dims` coordinates when they are the first of them (coordinates joined by more:
        the new ones start at the prior); unchanged otherwise."""
        extra = dims - len(self.lengthscales)
        if extra <= 0:
            return self
        return Hyperparameters(np.concatenate([self.lengthscales, np.full(extra, PRIOR_LENGTHSCALE)]), self.amplitude,
                               self.noise)

    def packed(self) -> np.ndarray:
        return np.log(np.concatenate([self.lengthscales, [self.amplitude, self.noise]]))

    @classmethod
    def unpacked(cls, theta: np.ndarray) -> Hyperparameters:
        values = np.exp(theta)
        return cls(values[:-2], float(values[-2]), float(values[-1]))


def _bounds(dims: int) -> list[tuple[float, float]]:
    logs = {name: (math.log(lo), math.log(hi)) for name, (lo, hi) in BOUNDS.items()}
    return [logs["lengthscale"]] * dims + [logs["amplitude"], logs["noise"]]


def _objective(theta: np.ndarray, X: np.ndarray, z: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative log posterior of the hyperparameters (up to a constant) and its gradient in log space."""
    n, dims = X.shape
    h = Hyperparameters.unpacked(theta)
    S = X / h.lengthscales
    squared = (S * S).sum(1)[:, None] + (S * S).sum(1)[None, :] - 2 * S @ S.T
    r = np.sqrt(np.maximum(squared, 0.0))
    decay = np.exp(-SQRT3 * r)
    base = (1 + SQRT3 * r) * decay
    K = h.amplitude * base + h.noise * np.eye(n)
    try:
        factor = cho_factor(K, lower=True)
    except np.linalg.LinAlgError:
        return 1e10, np.zeros_like(theta)
    alpha = cho_solve(factor, z)
    nll = 0.5 * z @ alpha + np.log(np.diag(factor[0])).sum()
    W = cho_solve(factor, np.eye(n)) - np.outer(alpha, alpha)  # dNLL/dtheta = 0.5 * sum(W * dK/dtheta)
    E = W * decay
    grad = np.empty_like(theta)
    # dK/dlog(l_k) = amplitude * 3 * exp(-sqrt3 r) * (x_ik - x_jk)^2 / l_k^2
    grad[:dims] = 1.5 * h.amplitude * (2 * (E.sum(1) @ (S * S)) - 2 * (S * (E @ S)).sum(0))
    grad[dims] = 0.5 * h.amplitude * (W * base).sum()
    grad[dims + 1] = 0.5 * h.noise * np.trace(W)
    # log-normal priors: on each length scale and on the noise (the amplitude's is flat within its bounds)
    dl = theta[:dims] - math.log(PRIOR_LENGTHSCALE)
    dn = theta[dims + 1] - math.log(PRIOR_NOISE)
    nll += 0.5 * (dl @ dl) / PRIOR_LOG_SD ** 2 + 0.5 * dn * dn / PRIOR_NOISE_LOG_SD ** 2
    grad[:dims] += dl / PRIOR_LOG_SD ** 2
    grad[dims + 1] += dn / PRIOR_NOISE_LOG_SD ** 2
    return float(nll), grad


def fit_hyperparameters(X: np.ndarray, z: np.ndarray, start: Hyperparameters | None = None) -> Hyperparameters:
    """The MAP hyperparameters for points X (n x d, [0, 1] coordinates) and normalised targets z."""
    dims = X.shape[1]
    if start is None or len(start.lengthscales) != dims:
        start = Hyperparameters.default(dims)
    if len(X) < 3 or dims == 0:
        return start
    bounds = _bounds(dims)
    theta0 = np.clip(start.packed(), [lo for lo, _ in bounds], [hi for _, hi in bounds])
    result = minimize(_objective, theta0, args=(X, z), jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"maxiter": STEPS})
    theta = result.x if np.all(np.isfinite(result.x)) else theta0
    return Hyperparameters.unpacked(theta)
