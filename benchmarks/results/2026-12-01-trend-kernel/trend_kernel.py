"""Issue 11 screen (2026-12-01, not kept): the fitted GP's kernel gains a trend term, a fixed long Matérn 3/2
(BO's length scale) on the knob coordinates alone, with its own fitted amplitude:
k = a * M32_ARD(codes) + a_t * M32(coords, 1.5) + noise.
TREND_L (env, default 1.5), TREND_START (0.25). Runs benchmarks/search_efficiency.py with the patch (made before
its workers fork; S10 is the ten spaces of the README):

    TREND_L=1.5 python3 benchmarks/results/2026-12-01-trend-kernel/trend_kernel.py --tables "" --synthetic S10 \
        --seeds 40 --strategies model --jobs 16 --decided --checkpoint OUT.jsonl
"""
import math
import os
import sys

sys.path[:0] = ["benchmarks", "."]
import numpy as np  # noqa: E402
import search_efficiency as se  # noqa: E402
from scipy.linalg import cho_factor, cho_solve  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

from tuner_server.search import gp_fit, portfolio  # noqa: E402
from tuner_server.search.gaussian_process import GaussianProcess, matern32, standardised  # noqa: E402

TREND_L = float(os.environ.get("TREND_L", "1.5"))
TREND_START = float(os.environ.get("TREND_START", "0.25"))
TREND_BOUNDS = (1e-3, 20.0)
SQRT3 = math.sqrt(3.0)


def objective(theta, X, z, T):
    dims = X.shape[1]
    n = len(X)
    ls, amp, noise, amp_t = np.exp(theta[:dims]), math.exp(theta[dims]), math.exp(theta[dims + 1]), \
        math.exp(theta[dims + 2])
    S = X / ls
    squared = (S * S).sum(1)[:, None] + (S * S).sum(1)[None, :] - 2 * S @ S.T
    r = np.sqrt(np.maximum(squared, 0.0))
    decay = np.exp(-SQRT3 * r)
    base = (1 + SQRT3 * r) * decay
    K = amp * base + amp_t * T + noise * np.eye(n)
    try:
        factor = cho_factor(K, lower=True)
    except np.linalg.LinAlgError:
        return 1e10, np.zeros_like(theta)
    alpha = cho_solve(factor, z)
    nll = 0.5 * z @ alpha + np.log(np.diag(factor[0])).sum()
    W = cho_solve(factor, np.eye(n)) - np.outer(alpha, alpha)
    E = W * decay
    grad = np.empty_like(theta)
    grad[:dims] = 1.5 * amp * (2 * (E.sum(1) @ (S * S)) - 2 * (S * (E @ S)).sum(0))
    grad[dims] = 0.5 * amp * (W * base).sum()
    grad[dims + 1] = 0.5 * noise * np.trace(W)
    grad[dims + 2] = 0.5 * amp_t * (W * T).sum()
    dl = theta[:dims] - math.log(gp_fit.PRIOR_LENGTHSCALE)
    dn = theta[dims + 1] - math.log(gp_fit.PRIOR_NOISE)
    nll += 0.5 * (dl @ dl) / gp_fit.PRIOR_LOG_SD ** 2 + 0.5 * dn * dn / gp_fit.PRIOR_NOISE_LOG_SD ** 2
    grad[:dims] += dl / gp_fit.PRIOR_LOG_SD ** 2
    grad[dims + 1] += dn / gp_fit.PRIOR_NOISE_LOG_SD ** 2
    return float(nll), grad


def fit(X, z, d0, start):
    dims = X.shape[1]
    h, amp_t = start if start is not None else (None, TREND_START)
    if h is None or len(h.lengthscales) != dims:
        h = gp_fit.Hyperparameters.default(dims) if h is None else h.widened(dims)
    if len(X) < 3:
        return h, amp_t
    T = matern32(X[:, :d0], X[:, :d0], TREND_L)
    bounds = gp_fit._bounds(dims) + [(math.log(TREND_BOUNDS[0]), math.log(TREND_BOUNDS[1]))]
    theta0 = np.clip(np.concatenate([h.packed(), [math.log(amp_t)]]), [lo for lo, _ in bounds],
                     [hi for _, hi in bounds])
    result = minimize(objective, theta0, args=(X, z, T), jac=True, method="L-BFGS-B", bounds=bounds,
                      options={"maxiter": gp_fit.STEPS})
    theta = result.x if np.all(np.isfinite(result.x)) else theta0
    return gp_fit.Hyperparameters.unpacked(theta[:-1]), float(math.exp(theta[-1]))


class TrendGP(GaussianProcess):
    def __init__(self, X, y, lengthscale, amplitude, noise, amp_t, d0):
        self.X, self.lengthscale, self.amplitude = X, lengthscale, amplitude
        self.amp_t, self.d0 = amp_t, d0
        self.z, self.mu, self.sd = standardised(y)
        self.factor = cho_factor(self._kernel(X, X) + noise * np.eye(len(X)), lower=True)

    def _kernel(self, a, b):
        return self.amplitude * matern32(a, b, self.lengthscale) + \
            self.amp_t * matern32(a[:, :self.d0], b[:, :self.d0], TREND_L)

    def posterior(self, C):
        from scipy.linalg import solve_triangular
        Ks = self._kernel(self.X, C)
        mean = Ks.T @ cho_solve(self.factor, self.z)
        V = solve_triangular(self.factor[0], Ks, lower=True)
        var = np.maximum(self.amplitude + self.amp_t - (V * V).sum(axis=0), 1e-12)
        return mean, var, V


def _fit(self, observations):
    if len(observations) >= self.options["gp_until"]:
        self._gp = None
        return
    if len(observations) == self._fitted_on:
        return
    self._fitted_on = len(observations)
    codes = self._sees_codes(len(observations))
    ran, y = self._ran(observations, self.options["gp_points"])
    X = self._frame(codes).at(ran)
    if len(y) < 2:
        self._gp = None
        return
    y = np.log(y)
    d0 = self.coords.knobs
    if self._refits(len(observations), X.shape[1]):
        start = getattr(self, "_trend_hyper", None)
        self._trend_hyper = fit(X, standardised(y)[0], d0, start)
        self._hyper = self._trend_hyper[0]
        self._kernel_fitted_on = len(observations)
    h, amp_t = self._trend_hyper
    self._gp = TrendGP(X, y, h.lengthscales, h.amplitude, h.noise, amp_t, d0)


portfolio.Portfolio._fit = _fit

if __name__ == "__main__":
    se.main()
