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
unmeasured, a fresh uniform sample of that many is scored each round instead of all of them (the farm's default
bounds a proposal's cost; benchmarks/search_efficiency.py scores every config, as Kernel Tuner does, unless told
`--bo-sample`). The GP itself lives in
`tuner_server.search.gaussian_process` (the model-guided strategy's portfolio uses it too).

Its options, with their defaults and meanings, are OPTIONS below (GET /v1/ops lists them under `strategies`).
"""
from __future__ import annotations

import random

import numpy as np

from tuner_server.search.base import OK, Observation, Option, StrategyContext, check_batch_size, parse_options
from tuner_server.search.gaussian_process import GaussianProcess, KnobCoordinates, one_blas_thread
from tuner_server.search.knob_walk import config_id, space_filling
from tuner_server.search.listing import UnseenDraws

OPTIONS: dict[str, tuple] = {
    "popsize": Option(int, 20, "configs of the initial space-filling sample", minimum=1, maximum=4096),
    "lengthscale": Option(float, 1.5, "Matérn 3/2 length scale on the [0, 1] coordinates", minimum=1e-3),
    "xi": Option(float, 0.01, "EI exploration offset, in standard deviations of the runtimes", minimum=0.0),
    "candidates": Option(int, 2048, "unmeasured configs scored per round at most", minimum=1, maximum=1 << 16),
}


class BayesOpt:
    """Gaussian-process Bayesian optimisation with expected improvement (reference strategy, after Kernel Tuner)."""

    OPTIONS = OPTIONS

    def __init__(self, context: StrategyContext):
        self.options = parse_options(OPTIONS, context.options)
        self.space = context.space
        self.rng = random.Random(context.seed)
        self._seen: set[tuple] = set()
        self._draws = UnseenDraws(context.space, self._seen, self.rng)
        self._coords = KnobCoordinates(context.space)
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
            if key in self._fitted or not self._draws.is_valid(r.config):
                continue  # measured twice: the GP keeps the first (a repeated point makes its kernel singular);
                # outside the space: seen, and no point of the GP's (its knobs have no coordinates there)
            self._fitted.add(key)
            self._measured += 1
            if r.status == OK and r.median_s is not None:
                self._X.append(self._coords.point(r.config))
                self._y.append(r.median_s)

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
        with one_blas_thread():
            gp = GaussianProcess(np.stack(self._X), np.asarray(self._y), self.options["lengthscale"])
            C = self._coords.points(candidates)
            return [candidates[j] for j in gp.ei_batch(C, n, self.options["xi"])]
