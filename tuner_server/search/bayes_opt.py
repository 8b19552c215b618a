"""Bayesian optimisation: a reference strategy after Kernel Tuner 1.5's `bayes_opt` (not a default).

As there, a config is a point of [0, 1]^d: each knob's choice index i maps to eps * i + eps / 2, with eps = 1 / (the
largest number of choices), and knobs with one choice are left out. A Gaussian process with a fixed Matérn kernel
(nu = 3/2, length scale 1.5, as Kernel Tuner's defaults) and normalised targets is fitted on the measured runtimes
of configs that ran (failed configs are only marked as seen, as there). After an initial space-filling sample of
`popsize` configs, each round scores unmeasured configs by expected improvement over the best runtime and proposes
the best. A batch of n is chosen by the "kriging believer": after each pick the posterior variance is updated as if
the pick had been measured at its predicted mean, so the next pick goes elsewhere (Kernel Tuner measures one config
at a time).

Differences, for bounded cost per proposal: EI with a fixed exploration offset `xi` (in standard deviations of the
runtimes) instead of Kernel Tuner's portfolio of acquisition functions; and when more than `candidates` configs are
unmeasured, a fresh uniform sample of that many is scored each round instead of all of them.

| option      | default | meaning                                                                      |
|-------------|---------|------------------------------------------------------------------------------|
| popsize     | 20      | configs of the initial space-filling sample                                  |
| lengthscale | 1.5     | Matérn 3/2 length scale (on the [0, 1] coordinates)                           |
| xi          | 0.01    | EI's exploration offset, in standard deviations of the measured runtimes     |
| candidates  | 2048    | unmeasured configs scored per round at most (a fresh sample each round)      |
"""
from __future__ import annotations

import math
import random

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.special import ndtr

from tuner_server.search.base import OK, Observation, Option, StrategyContext, check_batch_size, parse_options
from tuner_server.search.knob_walk import config_id, space_filling
from tuner_server.search.listing import UnseenDraws

OPTIONS: dict[str, tuple] = {
    "popsize": Option(int, 20, "configs of the initial space-filling sample", minimum=1),
    "lengthscale": Option(float, 1.5, "Matérn 3/2 length scale on the [0, 1] coordinates", minimum=1e-3),
    "xi": Option(float, 0.01, "EI exploration offset, in standard deviations of the runtimes", minimum=0.0),
    "candidates": Option(int, 2048, "unmeasured configs scored per round at most", minimum=1),
}
JITTER = 1e-6  # added to the kernel's diagonal: Kernel Tuner's alpha=1e-10 is too small for float64 Cholesky here


def matern32(a: np.ndarray, b: np.ndarray, lengthscale: float) -> np.ndarray:
    squared = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T
    d = np.sqrt(np.maximum(squared, 0.0)) * (math.sqrt(3) / lengthscale)
    return (1 + d) * np.exp(-d)


class BayesOpt:
    """Gaussian-process Bayesian optimisation with expected improvement (reference strategy, after Kernel Tuner)."""

    OPTIONS = OPTIONS

    def __init__(self, context: StrategyContext):
        self.options = parse_options(OPTIONS, context.options)
        self.space = context.space
        self.rng = random.Random(context.seed)
        self._seen: set[tuple] = set()
        self._draws = UnseenDraws(context.space, self._seen, self.rng)
        varied = [k for k in context.space.knobs if len(k.choices) > 1]
        eps = 1.0 / max((len(k.choices) for k in varied), default=1)
        self._coords = [(k.name, {v: eps * i + eps / 2 for i, v in enumerate(k.choices)}) for k in varied]
        self._X: list[np.ndarray] = []  # coordinates and runtimes of the configs that ran
        self._y: list[float] = []
        self._measured = 0
        self._fitted: set[tuple] = set()
        self._listed_ids: list[tuple] | None = None
        self.observe(list(context.history))

    def propose(self, n: int) -> list[dict]:
        if check_batch_size(n) == 0:
            return []
        if self._measured < self.options["popsize"] or len(self._y) < 2:
            batch = space_filling(self._draws.draw(max(16 * n, 64)), n, self.rng)
        else:
            batch = self._ei_batch(n)
        for config in batch:
            self._seen.add(config_id(config))
        return batch

    def observe(self, results: list[Observation]) -> None:
        for r in results:
            key = config_id(r.config)
            self._seen.add(key)
            if key in self._fitted:
                continue  # measured twice: the GP keeps the first (a repeated point makes its kernel singular)
            self._fitted.add(key)
            self._measured += 1
            if r.status == OK and r.median_s is not None:
                self._X.append(self._point(r.config))
                self._y.append(r.median_s)

    def _point(self, config: dict) -> np.ndarray:
        return np.array([codes[config[name]] for name, codes in self._coords], dtype=np.float64)

    def _candidates(self) -> list[dict]:
        listed = self._draws.listed()
        cap = self.options["candidates"]
        if listed is not None:
            if self._listed_ids is None:
                self._listed_ids = [config_id(c) for c in listed]
            unseen = [c for c, key in zip(listed, self._listed_ids, strict=True) if key not in self._seen]
            return unseen if len(unseen) <= cap else self.rng.sample(unseen, cap)
        return self._draws.draw(cap)

    def _ei_batch(self, n: int) -> list[dict]:
        candidates = self._candidates()
        if len(candidates) <= n:
            return candidates
        ls = self.options["lengthscale"]
        X, y = np.stack(self._X), np.asarray(self._y)
        mu_y, sd_y = y.mean(), y.std() or 1.0
        z = (y - mu_y) / sd_y
        C = np.stack([self._point(c) for c in candidates])
        factor = cho_factor(matern32(X, X, ls) + JITTER * np.eye(len(X)), lower=True)
        Ks = matern32(X, C, ls)  # observations x candidates
        mean = Ks.T @ cho_solve(factor, z)
        V = solve_triangular(factor[0], Ks, lower=True)
        var = np.maximum(1.0 - (V * V).sum(axis=0), 1e-12)
        best = z.min() - self.options["xi"]
        picks: list[int] = []
        believed: list[np.ndarray] = []  # u_j: the covariance each believed pick removes
        for _ in range(n):
            sd = np.sqrt(np.maximum(var, 1e-12))
            gain = (best - mean) / sd
            ei = (best - mean) * ndtr(gain) + sd * np.exp(-0.5 * gain ** 2) / math.sqrt(2 * math.pi)
            ei[picks] = -np.inf
            j = int(np.argmax(ei))
            picks.append(j)
            cov = matern32(C, C[j:j + 1], ls)[:, 0] - V.T @ V[:, j]
            for u in believed:
                cov -= u * u[j]
            u = cov / math.sqrt(max(var[j], 1e-12))
            believed.append(u)
            var = np.maximum(var - u * u, 1e-12)
        return [candidates[j] for j in picks]
