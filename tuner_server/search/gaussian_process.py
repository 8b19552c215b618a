"""A Gaussian process over knob coordinates with expected improvement and kriging-believer batches: the surrogate of
the BO reference strategy (`tuner_server.search.bayes_opt`) and of the model-guided strategy's surrogate portfolio.

Coordinates follow Kernel Tuner: each knob's choice index i maps to eps * i + eps / 2 in [0, 1], with eps = 1 / (the
largest number of choices); knobs with one choice are left out. The kernel is a fixed Matérn 3/2 (no hyperparameter
fit: a few dozen points cannot pin a length scale, and a fixed one costs one Cholesky factorization per fit). Targets
are normalised to mean 0 and spread 1; lower is better (runtimes, or their logarithms).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from operator import itemgetter

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from threadpoolctl import ThreadpoolController

from compiler_core.space import Space
from tuner_server.search.acquisition import expected_improvement

_BLAS = ThreadpoolController()
JITTER = 1e-6  # added to the kernel's diagonal: Kernel Tuner's alpha=1e-10 is too small for float64 Cholesky here


def one_blas_thread():
    """A context in which BLAS runs on one thread: a GP's matrices are small, so threaded BLAS only spins (10x the CPU
    on a busy host; in 16 benchmark processes on a host whose environment asks for 16 BLAS threads each, BO ran 10x
    slower). Every GP is fitted and scored inside one."""
    return _BLAS.limit(limits=1, user_api="blas")


def matern32(a: np.ndarray, b: np.ndarray, lengthscale: float | np.ndarray) -> np.ndarray:
    """The Matérn 3/2 kernel between rows of a and b; `lengthscale` is one for every coordinate or one each."""
    if not np.isscalar(lengthscale):
        a, b, lengthscale = a / lengthscale, b / lengthscale, 1.0
    squared = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T
    d = np.sqrt(np.maximum(squared, 0.0)) * (math.sqrt(3) / lengthscale)
    return (1 + d) * np.exp(-d)


def standardised(y: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Targets shifted to mean 0 and scaled to spread 1 (spread 1 when constant), with that mean and spread."""
    mu, sd = float(y.mean()), float(y.std()) or 1.0
    return (y - mu) / sd, mu, sd


class KnobCoordinates:
    """Configs of a space as points of [0, 1]^d (see the module docstring); with `onehot` > 0 each knob's choice is
    also given as a one-hot code of that height after the d coordinates, so that a fitted kernel can treat a knob as
    an ordered value, as a category, or as both. `indices` gives configs as choice indices (small integers: what a
    caller keeps of many configs) and `at` their points."""

    def __init__(self, space: Space, onehot: float = 0.0):
        varied = [k for k in space.knobs if len(k.choices) > 1]
        self._eps = 1.0 / max((len(k.choices) for k in varied), default=1)
        self._index = [(k.name, {v: i for i, v in enumerate(k.choices)}) for k in varied]
        self.knobs = len(varied)  # the knobs a config's point has a coordinate of
        self._onehot = onehot
        self._offsets = np.cumsum([0] + [len(k.choices) for k in varied])  # each knob's first one-hot column
        self.columns = len(varied) + (int(self._offsets[-1]) if onehot > 0 else 0)

    def indices(self, configs: list[dict]) -> np.ndarray:
        """Each config's choice index per varied knob (configs x knobs)."""
        out = np.empty((len(configs), self.knobs), dtype=np.int16)
        for j, (name, index) in enumerate(self._index):  # a column at a time, each lookup in C: the hot path's rows
            out[:, j] = np.fromiter(map(index.__getitem__, map(itemgetter(name), configs)), np.int16, len(configs))
        return out

    def at(self, indices: np.ndarray) -> np.ndarray:
        """The points of configs given by `indices`."""
        out = np.zeros((len(indices), self.columns))
        d = self.knobs
        out[:, :d] = self._eps * indices + self._eps / 2
        if self._onehot > 0 and len(indices):
            np.put_along_axis(out, d + indices + self._offsets[:-1], self._onehot, axis=1)
        return out

    def point(self, config: dict) -> np.ndarray:
        return self.points([config])[0]

    def points(self, configs: list[dict]) -> np.ndarray:
        return self.at(self.indices(configs))


class GaussianProcess:
    """Posterior of a zero-mean GP with a Matérn 3/2 kernel on normalised targets (lower is better). The defaults
    (one length scale, amplitude 1, no noise but the jitter) are Kernel Tuner's fixed kernel; fitted per-knob length
    scales, amplitude and noise come from `tuner_server.search.gp_fit`."""

    def __init__(self, X: np.ndarray, y: np.ndarray, lengthscale: float | np.ndarray, amplitude: float = 1.0,
                 noise: float = JITTER):
        self.X, self.lengthscale, self.amplitude = X, lengthscale, amplitude
        self.z, self.mu, self.sd = standardised(y)
        self.factor = cho_factor(amplitude * matern32(X, X, lengthscale) + noise * np.eye(len(X)), lower=True)

    def _kernel(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.amplitude * matern32(a, b, self.lengthscale)

    def posterior(self, C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Normalised mean and variance at rows C, and V = L^-1 K(X, C) (what a believer batch updates)."""
        Ks = self._kernel(self.X, C)  # observations x candidates
        mean = Ks.T @ cho_solve(self.factor, self.z)
        V = solve_triangular(self.factor[0], Ks, lower=True)
        var = np.maximum(self.amplitude - (V * V).sum(axis=0), 1e-12)
        return mean, var, V

    def ei_batch(self, C: np.ndarray, n: int, xi: float) -> list[int]:
        """Rows of C picked one after another by expected improvement over the best target (less `xi`, in spreads);
        after each pick the variance is updated as if the pick had been measured at its predicted mean (the
        "kriging believer"), so the next pick goes elsewhere."""
        return joint_ei_batch([self], [C], n, xi)


def joint_ei_batch(gps: list[GaussianProcess], frames: list[np.ndarray], n: int, xi: float,
                   combine: Callable[[list[np.ndarray]], np.ndarray] | None = None,
                   weights: tuple[float, ...] | None = None, excluded: np.ndarray | None = None) -> list[int]:
    """Rows of the candidates picked one after another by the GPs' expected improvements together (`ei_batch` with
    one GP): each GP's EI over its largest at the first pick, summed (times its `weights`, when given), so that models
    of different targets (runtimes and their logarithms, say) weigh as told, or `combine` of the GPs' EIs; `frames`
    holds the same candidates as each GP sees them. Every GP believes each pick (kriging believer). Rows `excluded`
    (a mask) are never picked."""
    states = []  # per GP: its mean, variance, V and the covariance each believed pick removed
    for gp, C in zip(gps, frames, strict=True):
        mean, var, V = gp.posterior(C)
        states.append((gp, C, mean, var, V, []))
    count = len(frames[0]) if frames else 0
    if excluded is not None:
        count -= int(excluded.sum())
    scales: list[float] | None = None
    picks: list[int] = []
    for _ in range(min(n, count)):
        eis = [expected_improvement(gp.z.min() - xi - mean, np.sqrt(np.maximum(var, 1e-12)))
               for gp, _, mean, var, _, _ in states]
        if combine is not None:
            value = combine(eis)
        else:
            if scales is None:  # one GP: its EI as it is (no rescaled ties)
                scales = [1.0] if len(eis) == 1 else [max(float(ei.max()), 1e-300) for ei in eis]
            value = sum(w * ei / sc for w, ei, sc in zip(weights or (1.0,) * len(eis), eis, scales, strict=True))
        value[picks] = -np.inf
        if excluded is not None:
            value[excluded] = -np.inf
        j = int(np.argmax(value))
        picks.append(j)
        for i, (gp, C, mean, var, V, believed) in enumerate(states):
            cov = gp._kernel(C, C[j:j + 1])[:, 0] - V.T @ V[:, j]
            for u in believed:
                cov -= u * u[j]
            u = cov / math.sqrt(max(var[j], 1e-12))
            believed.append(u)
            states[i] = (gp, C, mean, np.maximum(var - u * u, 1e-12), V, believed)
    return picks
