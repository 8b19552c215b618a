"""An additive Gaussian process over knob values: the third model of the portfolio's joint rounds, beside the fitted
GP (a length scale per knob: local) and the smooth GP (BO's long isotropic kernel: the whole space's bowl).

Its kernel is linear in features of a config: each knob's one-hot code (one effect per value, whatever the values'
order), its coordinate and its squared coordinate (a quadratic trend along the values). The posterior mean is then a
sum of one function per knob, the main-effects model a performance engineer fits by hand, and its best config takes
each knob's best value even when no measured config combined them. That is how a basin is found from configs that
each match only part of it: on a landscape of basins (log-runtime growing with the number of knobs that differ from a
centre) every knob that matches the centre pays off on its own. The other two models look near measured configs (the
fitted one) or along a smooth trend over coordinates (the smooth one), and neither proposes such a combination first.

Bayesian linear regression in kernel form: K = scale * F F^T + noise * I on log-runtimes normalised to spread 1, the
scale and noise the best of a small grid by marginal likelihood (a handful of n x n Cholesky factorizations; n is at
most the portfolio's `gp_points`), so it costs about what the fixed-kernel GP does.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from compiler_core.space import Space
from tuner_server.search.gaussian_process import GaussianProcess, KnobCoordinates, standardised

SCALES = (0.03, 0.1, 0.3, 1.0)  # prior variance of each feature's weight, on targets of spread 1
NOISES = (0.01, 0.05, 0.2)  # noise variances tried


class AdditiveFeatures:
    """Rows of additive features for configs given as choice indices (`KnobCoordinates.indices`): each varied knob's
    coordinate and one-hot code (height 1), then its squared coordinate."""

    def __init__(self, space: Space):
        self._frame = KnobCoordinates(space, onehot=1.0)

    def at(self, indices: np.ndarray) -> np.ndarray:
        points = self._frame.at(indices)
        return np.hstack([points, points[:, :self._frame.knobs] ** 2])


class AdditiveGP(GaussianProcess):
    """The posterior of the additive model on features F (n x p) and runtimes y (modelled as their logarithms), with
    the interface of `GaussianProcess` (`posterior`, `_kernel`, `z`), so `joint_ei_batch` can take it beside others."""

    def __init__(self, F: np.ndarray, y: np.ndarray):
        self.X, self.lengthscale = F, None
        self.z, self.mu, self.sd = standardised(np.log(y))
        gram = F @ F.T
        best = None
        for scale in SCALES:
            for noise in NOISES:  # a Gram matrix plus noise on the diagonal: positive definite
                factor = cho_factor(scale * gram + noise * np.eye(len(F)), lower=True)
                nll = 0.5 * self.z @ cho_solve(factor, self.z) + np.log(np.diag(factor[0])).sum()
                if best is None or nll < best[0]:
                    best = (nll, scale, noise, factor)
        _, self.amplitude, self.noise, self.factor = best

    def _kernel(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.amplitude * a @ b.T

    def posterior(self, C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        Ks = self._kernel(self.X, C)
        mean = Ks.T @ cho_solve(self.factor, self.z)
        V = solve_triangular(self.factor[0], Ks, lower=True)
        prior = self.amplitude * (C * C).sum(axis=1)  # a linear kernel's prior variance depends on the point
        return mean, np.maximum(prior - (V * V).sum(axis=0), 1e-12), V
