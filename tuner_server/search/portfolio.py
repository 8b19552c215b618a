"""The model-guided strategy's surrogate portfolio: a Gaussian process on knob coordinates beside the bagged GBM
ensemble, each given a share of a batch by how well it ranked the latest measured batches.

With a few dozen observations a GBM ensemble is weak: trees split on single knobs and bootstrap members of 20 rows
agree on little. A Gaussian process with a fixed Matérn kernel (the surrogate of Bayesian optimisation) interpolates
smoothly between its points and knows where it has not looked, which is what finds good configs in the first rounds;
the trees take over once they have seen enough to learn interactions, invalid regions and needles. Neither is right
everywhere, so both predict every config of every batch before it is measured, and each surrogate's Spearman rank
correlation with the measured speeds (failures slowest) is kept as an exponential average over batches
(`trust_memory`). The GP's share of the batch slots the acquisition fills is the logistic function of the difference
of the two averages over `trust_temperature` (one half while nothing is known). Its slots are filled by expected
improvement with the kriging believer, over at most `gp_candidates` unseen configs (all of them when fewer).

Unlike the BO reference strategy's fixed kernel, the portfolio's GP fits its kernel to the job (`gp_kernel`
"fitted", `tuner_server.search.gp_fit`: a length scale per knob, amplitude, noise) and models log-runtimes
(`gp_targets`). With the fixed kernel, logarithms had done worse on the recorded matmul tables (the slow tail then
weighs as much as the fast end); with per-knob length scales they did better (CPU matmul 256^3: 29.5 -> 25
measurements to 5 %, median of 20 seeds). Against the fixed kernel on runtimes, the 20 spaces of
benchmarks/search_efficiency.py moved where BO had won: CPU matmul 256^3 41.5 -> 25, 384x192x256 27.5 -> 18, H100
softmax 1024x4096 12 -> 10.5, noisy 47.5 -> 43.5 (BO: 35.5, 18.5, 10.5, 43).

The cost is bounded: the GP is fitted on at most `gp_points` observations (the fastest half, then the latest), and
only while the job has fewer than `gp_until` observations; after that the ensemble fills every slot.
"""
from __future__ import annotations

import math
import random
from collections.abc import Iterable

import numpy as np
from threadpoolctl import ThreadpoolController

from compiler_core.space import Space
from tuner_server.search.base import OK, Observation
from tuner_server.search.gaussian_process import GaussianProcess, KnobCoordinates, standardised
from tuner_server.search.gp_fit import Hyperparameters, fit_hyperparameters
from tuner_server.search.knob_walk import config_id
from tuner_server.search.listing import UnseenDraws

XI = 0.01  # EI's exploration offset in spreads of the targets (as the BO reference strategy)
MIN_RANKED = 3  # measured configs of a batch before its rank correlations count
BLAS = ThreadpoolController()  # the GP's matrices are small: threaded BLAS only spins (10x the CPU on a busy host)
UNLISTED_POOL = 512  # the strategy's pool candidates the GP scores per round when the space is not listed ...
UNLISTED_DRAWS = 128  # ... and random configs drawn beside them (drawing checks validity: ~10 us a config)


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (ties get their average rank; -inf ranks lowest); 0 when either is constant."""
    ra, rb = _ranks(a), _ranks(b)
    if np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    values, inverse = np.unique(x, return_inverse=True)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    return (np.bincount(inverse, weights=ranks, minlength=len(values)) / np.bincount(inverse))[inverse]


class Portfolio:
    """The GP surrogate and the trust in each surrogate (see the module docstring); options from the model-guided
    strategy's OPTIONS table."""

    def __init__(self, space: Space, options: dict, rng: random.Random, draws: UnseenDraws):
        self.options, self.rng, self.draws = options, rng, draws
        self.coords = KnobCoordinates(space)
        self.trust = {"gp": 0.0, "ensemble": 0.0}  # exponential averages of rank correlations
        self.updates = 0
        self._gp: GaussianProcess | None = None
        self._fitted_on = -1  # observations the GP was fitted on
        self._hyper: Hyperparameters | None = None  # the kernel's last fitted hyperparameters (the next fit's start)
        self._predicted: dict[tuple, tuple[float, float]] = {}  # config id -> (gp, ensemble) scores, higher better
        self._outcomes: list[tuple[float, float, float]] = []  # (gp, ensemble, speed) of measured predicted configs
        self._listed: tuple[list[dict], list[tuple], np.ndarray] | None = None

    # ---- trust ------------------------------------------------------------------------------------------------
    def gp_share(self) -> float:
        """Share of the acquisition's slots the GP fills: logistic in the difference of the trusts."""
        gap = (self.trust["gp"] - self.trust["ensemble"]) / self.options["trust_temperature"]
        return 1.0 / (1.0 + math.exp(-max(min(gap, 50.0), -50.0)))

    def predicted(self, batch: list[dict], ensemble: np.ndarray) -> None:
        """Remember both surrogates' scores of a proposed batch (compared with its measurements later)."""
        if self._gp is None or not batch:
            return
        with BLAS.limit(limits=1, user_api="blas"):
            gp = -self._gp.posterior(self.coords.points(batch))[0]
        for config, g, e in zip(batch, gp, ensemble, strict=True):
            self._predicted[config_id(config)] = (float(g), float(e))

    def measured(self, result: Observation) -> None:
        scores = self._predicted.pop(config_id(result.config), None)
        if scores is None:
            return
        ok = result.status == OK and result.median_s is not None and result.median_s > 0
        self._outcomes.append((*scores, -math.log(result.median_s) if ok else -math.inf))
        if not self._predicted or len(self._outcomes) >= 8 * MIN_RANKED:  # a batch is in: update the trust
            self._update_trust()

    def _update_trust(self) -> None:
        outcomes, self._outcomes = self._outcomes, []
        if len(outcomes) < MIN_RANKED:
            return
        speed = np.array([o[2] for o in outcomes])
        memory = self.options["trust_memory"] if self.updates else 0.0
        for i, name in enumerate(("gp", "ensemble")):
            scores = np.array([o[i] for o in outcomes])
            usable = ~np.isnan(scores)
            rho = 0.0
            if usable.sum() >= MIN_RANKED:
                rho = rank_correlation(scores[usable], speed[usable])
            self.trust[name] = memory * self.trust[name] + (1 - memory) * (rho if math.isfinite(rho) else 0.0)
        self.updates += 1

    # ---- the GP's picks -----------------------------------------------------------------------------------------
    def picks(self, observations: list[Observation], slots: int, seen: set[tuple], taken: list[dict],
              pool: Iterable[dict]) -> list[dict]:
        """The GP's share of `slots` (unseen configs not in `taken`, by expected improvement); fits the GP first.
        `pool`: the strategy's own candidates, scored when the space is not listed."""
        with BLAS.limit(limits=1, user_api="blas"):
            return self._picks(observations, slots, seen, taken, pool)

    def _picks(self, observations: list[Observation], slots: int, seen: set[tuple], taken: list[dict],
               pool: Iterable[dict]) -> list[dict]:
        self._fit(observations)
        if self._gp is None or slots <= 0:
            return []
        k = round(self.gp_share() * slots)
        if k <= 0:
            return []
        skip = seen | {config_id(c) for c in taken}
        candidates, C = self._candidates(skip, pool)
        if len(candidates) <= k:
            return candidates
        return [candidates[j] for j in self._gp.ei_batch(C, k, XI)]

    def _fit(self, observations: list[Observation]) -> None:
        if len(observations) >= self.options["gp_until"]:
            self._gp = None
            return
        if len(observations) == self._fitted_on:
            return
        ok = [o for o in observations if o.status == OK and o.median_s is not None and o.median_s > 0]
        self._fitted_on = len(observations)
        if len(ok) < 2:
            self._gp = None
            return
        cap = self.options["gp_points"]
        if len(ok) > cap:  # the fastest half and the latest: where the optimum is sought, and where it looks now
            fastest = set(sorted(range(len(ok)), key=lambda i: ok[i].median_s)[: cap // 2])
            latest = [i for i in range(len(ok) - 1, -1, -1) if i not in fastest][: cap - len(fastest)]
            ok = [ok[i] for i in sorted(fastest.union(latest))]
        X = self.coords.points([o.config for o in ok])
        y = np.array([o.median_s for o in ok])
        if self.options["gp_targets"] == "log":
            y = np.log(y)
        if self.options["gp_kernel"] == "fixed":
            self._gp = GaussianProcess(X, y, self.options["gp_lengthscale"])
            return
        self._hyper = fit_hyperparameters(X, standardised(y)[0], self._hyper)
        self._gp = GaussianProcess(X, y, self._hyper.lengthscales, self._hyper.amplitude, self._hyper.noise)

    def _candidates(self, skip: set[tuple], pool: Iterable[dict]) -> tuple[list[dict], np.ndarray]:
        cap = self.options["gp_candidates"]
        listed = self.draws.valid
        if listed is not None:
            if self._listed is None:
                self._listed = (listed, [config_id(c) for c in listed], self.coords.points(listed))
            configs, ids, points = self._listed
            rows = [i for i, key in enumerate(ids) if key not in skip]
            if len(rows) > cap:
                rows = sorted(self.rng.sample(rows, cap))
            return [configs[i] for i in rows], points[rows]
        candidates, keys = [], set(skip)
        for config in pool:  # the ensemble's candidates (annealed towards what it predicts best)
            if len(candidates) >= min(cap, UNLISTED_POOL):
                break
            if (key := config_id(config)) not in keys:
                candidates.append(config)
                keys.add(key)
        fresh = self.draws.draw(min(cap - len(candidates), UNLISTED_DRAWS))
        candidates += [c for c in fresh if config_id(c) not in keys]
        return candidates, self.coords.points(candidates)
