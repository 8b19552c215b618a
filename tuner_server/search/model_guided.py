"""Model-guided search: a bagged LightGBM ensemble scores configs with a mean and a spread; batches mix the most
promising configs (upper confidence bound, expected improvement or Thompson sampling) with one-knob sweeps of the
best configs of several distinct basins and, in the first rounds, the picks of a Gaussian process (a surrogate
portfolio: each surrogate gets the share its predictions of the latest batches earn).

Each `propose(n)`:
1. refits when the job's observations grew by `refit_growth` of those the last fit saw (at least one; the members
   refit from scratch, so the fitting cost per observation stays bounded as the job grows). `members` models are
   fitted on bootstrap resamples of the job's trials (`tuner_server.cost_model.ensemble`; by default regressions on
   -log(runtime): within one workload runtimes compare directly, and a regression learns more from a few dozen
   trials than a ranker; with knob features, distances to the best configs of a few basins join the features, so
   "near a good config" is one split for a tree); a ranking model of the device
   class's other workloads (`StrategyContext.cost_model`, or fitted on `StrategyContext.transfer`) is fine-tuned on
   the job's trials and mixed in front of them with weight 1 - n / (n + own_weight_at) (n: own observations);
2. without a model yet, proposes space-filling configs (spread over every knob's values);
3. otherwise scores candidates: every unseen config when the space is listed and the featurizer is cheap (knob
   values), else a pool explored by annealing chains from the best configs known (measured or predicted), one knob
   at a time, topped up with random configs never looked at (coverage);
4. fills the batch: once `stall` observations in a row found nothing faster (off by default), an `explore` share goes
   to the best by acquisition of a random draw of configs at least `basin_distance` knobs from every basin best; a
   `sweep` share goes to unmeasured one-knob neighbours of the best configs of up to `basins` distinct basins
   (`tuner_server.search.basins`: configs at least `basin_distance` knobs apart, by default half the knobs, among
   the fastest 64; in the last phase `late_basins` among the fastest `late_basin_pool`), taken round-robin so no
   basin is deepened alone; before `joint_until` observations (48 without a transfer model) the
   rest goes to the expected improvements of the portfolio's Gaussian processes together (the fitted, the smooth and the
   additive one: `tuner_server.search.additive_gp`), and after that, while the job has fewer than `gp_until`
   observations, a share of the rest goes to a Gaussian process on knob coordinates (expected improvement,
   `tuner_server.search.portfolio`: the surrogate that finds good configs from a few dozen observations, where the
   ensemble is weak), the share following how well each surrogate ranked the latest measured batches, and from
   `gp_settle` observations on at least a `smooth` share to a smooth GP (the BO reference's: a model of the whole
   space); the rest to the best candidates by the ensemble's acquisition, no two closer than `min_distance` knobs,
   each slot a random unseen config with probability `epsilon`. Nothing proposed or observed is ever proposed again;
5. orders the batch (`fastest_first`): the configs the fitted Gaussian process predicts fastest go out first, since
   agents lease a job's tasks in the order they were queued.

Features (`own_features`): lowered-IR features when the workload and target are known (what carries one workload's
trials over to another's, and on the recorded GPU GEMM tables what the job's own models learn fastest from), else
the knob values; a job without a transfer model may instead learn from knob values ("knobs", which tell one
workload's configs apart exactly and cost nothing) or from both. The limits follow the featurizer's cost (`cheap`):
knob features cost nothing, so every unseen config of a listed space is scored each round and the pool holds up to
65,536 configs; lowered-IR features cost milliseconds, so a round may featurize at most `feature_budget` (16)
configs new to this strategy per proposed config (the budget counts configs new to this strategy, not cache misses,
so runs do not depend on what the shared cache holds), the pool holds 4,096, and the ensemble has fewer members.
With a feature pool (`StrategyContext.feature_pool`, the tuner's case) lowering happens in worker processes: a round
scores and trains on the configs whose features are ready, asks for the rest, and finds them ready a round later;
every proposed config is asked for at once, so its features are there when its measurement comes back. With
`patience`, proposing stops once that many observations in a row have not improved the best runtime.

Its options, with their defaults and meanings, are OPTIONS (`search/model_guided_options.py`; GET /v1/ops lists
them under `strategies`).
"""
from __future__ import annotations

import random

import numpy as np

from tuner_server.cost_model.ensemble import Ensemble, Mixture
from tuner_server.cost_model.featurize import BothFeatures, KnobFeatures, LoweredFeatures, featurizer_for
from tuner_server.cost_model.grades import ranking_data
from tuner_server.cost_model.model import CostModel
from tuner_server.cost_model.training import lowered_featurizers, train_on_trials
from tuner_server.search.base import (
    OK,
    Observation,
    StrategyContext,
    check_batch_size,
    parse_options,
)
from tuner_server.search.basins import Neighbourhoods, basin_bests, far_from, sweeps
from tuner_server.search.ensemble_scores import EnsembleScores
from tuner_server.search.knob_walk import anneal, config_id, mutate, pick_diverse, space_filling
from tuner_server.search.listing import ListedScores, UnseenDraws
from tuner_server.search.model_guided_options import OPTIONS, resolve_defaults
from tuner_server.search.portfolio import Portfolio

EXPLORE_GROWTH = 0.25  # annealing explores the pool again when the job's trials grew by this fraction


class ModelGuided:
    """Bagged LightGBM rankers (started from the device class's model when there is one), with UCB / EI / Thompson
    selection, and Gaussian processes on the knobs (a fitted one and BO's smooth one) share each batch
    (search/portfolio.py); one-knob sweeps of several basins' best configs; diverse batches and optional early
    stopping."""

    OPTIONS = OPTIONS

    def __init__(self, context: StrategyContext):
        self.options = o = parse_options(OPTIONS, context.options)
        self.context, self.space = context, context.space
        self.rng = random.Random(context.seed)
        transferring = o["transfer"] and (context.cost_model is not None or bool(context.transfer))
        lowered = o["own_features"] != "knobs" or transferring  # a transfer model reads lowered-IR features
        self.features = featurizer_for(context.space, context.workload_key if lowered else None, context.target,
                                       pool=context.feature_pool)
        if o["own_features"] == "both" and not transferring and isinstance(self.features, LoweredFeatures):
            self.features = BothFeatures(self.features, KnobFeatures(context.space))
        self.cheap = bool(getattr(self.features, "cheap", False))
        resolve_defaults(o, self.cheap, transferring)
        if o["basin_distance"] is None:
            o["basin_distance"] = max(2, len(context.space.knobs) // 2)
        o["min_distance"] = min(o["min_distance"], len(context.space.knobs))  # configs differ in no more knobs
        self._seen: set[tuple] = set()  # config ids proposed or observed
        self._own: dict[tuple, Observation] = {}  # config key -> latest observation of this job
        self._rows_of: dict[tuple, np.ndarray] = {}  # features of every config this strategy looked at (budgeted)
        self._asked: set[tuple] = set()  # configs whose features were asked of the pool (budget already spent)
        self._to_ask: list[dict] = []  # ... asked for at the end of the round, in one request
        self._pool: dict[tuple, dict] = {}  # unseen candidates, best predicted first after each ranking
        self._draws = UnseenDraws(context.space, self._seen, self.rng)
        self._near = Neighbourhoods(context.space, self._draws.is_valid, self.options["sweep_pairs"])
        self._base: CostModel | None | bool = False  # False: not built yet
        self._model: Mixture | None = None
        self._explored_with = None  # the model the pool was last explored with
        self._explored_at = 0  # own observations when the pool was last explored
        self._scores = EnsembleScores(self._rows, self._incumbent, o["acquisition"], o["kappa"], self.rng)
        self._listed: ListedScores | None = None  # cheap features over a listed space: every config at once
        self._fitted_at = -1
        self._best: float | None = None
        self._since_best = 0
        self._portfolio = Portfolio(context.space, o, self.rng, self._draws)
        self.observe(list(context.history))

    # ---- ask / tell ---------------------------------------------------------------------------------------------
    def propose(self, n: int) -> list[dict]:
        if check_batch_size(n) == 0 or self.stopped:
            return []
        model = self._current_model()
        if model is None:
            batch = space_filling(self._random_unseen(max(16 * n, 64), limit=512), n, self.rng,
                                  taken=self._recent(256))
        else:
            batch = self._model_batch(model, n)
            self._portfolio.predicted(batch, self._ensemble_means(model, batch))
            if self.options["fastest_first"]:
                batch = self._portfolio.fastest_first(batch)
        for config in batch:
            self._seen.add(config_id(config))
            self._pool.pop(config_id(config), None)
            if self._listed is not None:
                self._listed.mark_seen(config)
        # The batch first: its features are needed when its measurements come back (the next fit).
        self.features.prefetch(batch + [c for c in self._to_ask if config_id(c) not in self._seen])
        self._to_ask = []
        return batch

    def observe(self, results: list[Observation]) -> None:
        for result in results:
            key = config_id(result.config)
            self._seen.add(key)
            self._pool.pop(key, None)
            if self._listed is not None:
                self._listed.mark_seen(result.config)
            if not self._draws.is_valid(result.config):
                continue  # outside the space: seen, and nothing a surrogate could place (its features, coordinates)
            self._own[key] = result
            self._portfolio.measured(result)
            if result.status == OK and result.median_s is not None and (self._best is None
                                                                       or result.median_s < self._best):
                self._best, self._since_best = result.median_s, 0
            else:
                self._since_best += 1

    @property
    def stopped(self) -> bool:
        """True once `patience` observations in a row have not improved the best runtime."""
        patience = self.options["patience"]
        return patience is not None and self._since_best >= patience and bool(self._own)

    # ---- the model ------------------------------------------------------------------------------------------------
    def _base_model(self) -> CostModel | None:
        """The model of the device class's other workloads (None without transfer); built once."""
        if self._base is False:
            self._base = None
            ctx, names = self.context, tuple(self.features.names)
            if not self.options["transfer"]:
                return None
            if ctx.cost_model is not None and tuple(ctx.cost_model.feature_names) == names:
                self._base = ctx.cost_model if ctx.cost_model.trained else None
            elif ctx.transfer:
                if isinstance(self.features, LoweredFeatures):
                    featurize = lowered_featurizers(ctx.target, self.features.cache)
                else:
                    featurize = lambda _key: self.features  # noqa: E731 - knob features: one space for all
                model = train_on_trials(ctx.transfer, names, featurize, objective=self.options["objective"],
                                        seed=ctx.seed)  # train_on_trials' rounds: as the tuner's class model
                self._base = model if model.trained else None
        return self._base

    def _current_model(self) -> Mixture | None:
        grown = len(self._own) - max(self._fitted_at, 0)
        if self._fitted_at >= 0 and grown < max(1.0, self.options["refit_growth"] * self._fitted_at):
            return self._model
        base = self._base_model()
        observations = self._ready_observations()
        if base is None and len(observations) < self.options["min_train"]:
            return self._model
        X = self._rows([o.config for o in observations])
        medians, statuses = [o.median_s for o in observations], [o.status for o in observations]
        own = None
        if len(observations) >= self.options["min_train"]:
            anchors = basin_bests(observations, self.options["anchors"], self.options["basin_distance"])
            own = Ensemble(self.features.names, self.options["own_objective"], self.context.seed,
                           self.options["members"], self.options["rounds"],
                           anchors=self._rows(anchors) if anchors else None).fit(X, medians, statuses)
        tuned = None
        if base is not None:
            data = ranking_data([(X, medians, statuses)], seed=self.context.seed)
            tuned = base.fine_tuned(data, self.options["refit_rounds"],
                                    {"learning_rate": self.options["refit_rate"]}) if len(data) else base
        weight = len(observations) / (len(observations) + self.options["own_weight_at"])
        model = Mixture(tuned, own, weight, X)
        self._model = model if model.trained else None
        self._fitted_at = len(observations)
        return self._model

    def _ready_observations(self) -> list[Observation]:
        """The job's observations whose features can be had now (all of them without a feature pool)."""
        observations = list(self._own.values())
        ready = {config_id(c) for c in self._ready([o.config for o in observations])}  # the rest: asked for
        return [o for o in observations if config_id(o.config) in ready]

    def _ready(self, configs: list[dict], budget: list[int] | None = None,
               keys: list[tuple] | None = None) -> list[dict]:
        """The configs whose features can be had now; with a feature pool, the others are asked for. A config new to
        this strategy costs one unit of `budget` when given (skipped once it is spent). `keys`: the configs' ids,
        when the caller has them."""
        out, ask = [], []
        for config, key in zip(configs, keys or map(config_id, configs), strict=True):
            if key in self._rows_of:
                out.append(config)
                continue
            if budget is not None and key not in self._asked:
                if budget[0] <= 0:
                    continue
                budget[0] -= 1
                self._asked.add(key)
            if self.features.asynchronous and not self.features.cached(config):
                ask.append(config)
            else:
                out.append(config)
        self._to_ask.extend(ask)
        return out

    def _rows(self, configs: list[dict]) -> np.ndarray:
        keys = [config_id(c) for c in configs]
        new = [c for c, k in zip(configs, keys, strict=True) if k not in self._rows_of]
        if new:
            for config, row in zip(new, self.features(new), strict=True):
                self._rows_of[config_id(config)] = row
        if not keys:
            return np.zeros((0, len(self.features.names)), np.float32)
        return np.stack([self._rows_of[k] for k in keys])

    # ---- scoring ------------------------------------------------------------------------------------------------
    def _incumbent(self) -> dict | None:
        """The fastest measured config, when its features are ready (what expected improvement improves on)."""
        best = min((o for o in self._own.values() if o.status == OK and o.median_s is not None),
                   key=lambda o: o.median_s, default=None)
        return best.config if best is not None and config_id(best.config) in self._rows_of else None

    def _ensemble_means(self, model: Mixture, configs: list[dict]) -> np.ndarray:
        """The members' mean score of each config whose features are ready (NaN for the others)."""
        ready = {config_id(c) for c in self._ready(configs)}
        known = self._scores.members(model, [c for c in configs if config_id(c) in ready])
        return np.array([float(np.mean(known[config_id(c)])) if config_id(c) in ready else np.nan for c in configs])

    def _score(self, model: Mixture, configs: list[dict], budget: list[int]) -> np.ndarray:
        """Acquisition values; a config new to this strategy costs one unit of `budget` (-inf once it is spent,
        and while its features are being computed in the pool)."""
        allowed = self._ready(configs, budget)
        if len(allowed) == len(configs):  # every one (`_ready` keeps their order): no lookup by id
            return self._scores.acquisition(model, allowed)
        values = dict(zip((config_id(c) for c in allowed), self._scores.acquisition(model, allowed), strict=True))
        return np.array([values.get(config_id(c), -np.inf) for c in configs])

    # ---- a batch ------------------------------------------------------------------------------------------------
    def _model_batch(self, model: Mixture, n: int) -> list[dict]:
        self._scores.new_round()
        budget = [self.options["feature_budget"] * n]
        unseen = None if self._listed_cheaply() else self._all_unseen()
        if self._listed is not None:
            pass  # every unseen config is ranked at once (`_ranked`)
        elif unseen is not None and sum(config_id(c) not in self._rows_of for c in unseen) <= budget[0]:
            self._pool.update((config_id(c), c) for c in unseen)  # a small space: score all of it
        elif self._explored_with is None or self._ready_in_pool() < 4 * n or \
                len(self._own) - self._explored_at >= max(n, EXPLORE_GROWTH * self._explored_at):
            # a first model, a pool running dry, or a model fitted on a quarter more trials: worth the annealing
            # (a refit in between re-ranks the pool, whose features are there: the costly part is new lowering)
            self._explore(model, budget)
            self._spend_on_coverage(budget)
            self._explored_with, self._explored_at = model, len(self._own)
        n_random = sum(self.rng.random() < self.options["epsilon"] for _ in range(n))
        if len(self._own) < self.options["min_train"]:  # a transferred model: half the first configs spread out,
            n_random = max(n_random, n // 2)  # so the job's own model starts from an unbiased sample
        batch = self._far(model, min(self._far_slots(n), n - n_random), budget)
        batch += self._sweeps(model, min(round(self.options["sweep"] * n), n - n_random - len(batch)), budget)
        batch += self._portfolio.picks(list(self._own.values()), n - n_random - len(batch), self._seen, batch,
                                       self._pool)
        batch += pick_diverse(self._ranked(model, max(8 * n, 64)), n - n_random - len(batch),
                              self.options["min_distance"], taken=batch)
        taken = {config_id(c) for c in batch}
        extra = [c for c in self._random_unseen(4 * n + 8, limit=512) if config_id(c) not in taken]
        return batch + space_filling(extra, n - len(batch), self.rng, taken=batch + self._recent(64))

    def _far_slots(self, n: int) -> int:
        """Slots for configs away from every basin: none until `stall` observations in a row found nothing faster."""
        stall = self.options["stall"]
        return round(self.options["explore"] * n) if stall is not None and self._since_best >= stall else 0

    def _bests(self) -> list[dict]:
        """The basin bests the sweeps deepen: up to `basins` among the fastest 64 measured configs, and in the last
        phase up to `late_basins` among the fastest `late_basin_pool`. By then the first basins' bests are mostly
        one-knob local optima with nothing left to sweep, and the optimum's basin may be one whose measured configs
        look mediocre (benchmarks/results/2026-11-30-sweep-later-160seeds/)."""
        if self._portfolio.late(len(self._own)):
            return basin_bests(self._own.values(), self.options["late_basins"], self.options["basin_distance"],
                               self.options["late_basin_pool"])
        return basin_bests(self._own.values(), self.options["basins"], self.options["basin_distance"])

    def _far(self, model: Mixture, slots: int, budget: list[int]) -> list[dict]:
        """Configs away from every basin best (`basins.far_from`): when the basins swept so far stopped improving, a
        second basin as good as the first is found by looking elsewhere, not deeper."""
        if slots <= 0:
            return []
        return far_from(self._bests(), lambda k: self._random_unseen(k, limit=512),
                        lambda configs: self._score(model, configs, budget), slots, self.options["basin_distance"],
                        self.options["min_distance"])

    def _sweeps(self, model: Mixture, slots: int, budget: list[int]) -> list[dict]:
        """Unmeasured one-knob neighbours of basin bests (`basins.sweeps`), each basin in turn."""
        if slots <= 0:
            return []
        return sweeps(self._bests(), self._near, self._seen, lambda configs: self._score(model, configs, budget),
                      slots, self.options["min_distance"])

    def _listed_cheaply(self) -> bool:
        """Whether every config is scored each round: features are cheap and the space is listed (once a space
        turns out to need listing, `UnseenDraws` lists it)."""
        if self._listed is None and self.cheap and self._draws.valid is not None \
                and len(self._draws.valid) <= self.options["pool_size"]:
            self._listed = ListedScores(self._draws.valid, self.features, self._seen)
        return self._listed is not None

    def _ranked(self, model: Mixture, k: int) -> list[dict]:
        """The k best unseen candidates by acquisition."""
        if self._listed is None:
            return self._ranked_pool(model)[:k]
        return self._listed.top(model, lambda S: self._scores.acquire(model, S), k)

    def _ready_in_pool(self) -> int:
        return sum(1 for key in self._pool if key in self._rows_of and key not in self._seen)

    def _recent(self, k: int) -> list[dict]:
        """The configs of the last k observations (what space-filling keeps its distance from)."""
        own = list(self._own.values()) if len(self._own) <= k else list(self._own.values())[-k:]
        return [o.config for o in own]

    def _explore(self, model: Mixture, budget: list[int]) -> None:
        chains = self.options["chains"]
        measured = sorted((o for o in self._own.values() if o.status == OK and o.median_s is not None),
                          key=lambda o: o.median_s)
        starts = [o.config for o in measured[: chains // 2]]
        starts += self._ranked(model, chains - len(starts))
        starts += self._random_unseen(chains - len(starts))
        if not starts or self.options["steps"] == 0:
            return
        start_scores = self._score(model, starts, budget)
        visited = anneal(starts, start_scores, lambda c: mutate(self.space, c, self.rng),
                         lambda cs: self._score(model, cs, budget), self.rng, self.options["steps"])
        for config, _ in visited:
            if config_id(config) not in self._seen:
                self._pool.setdefault(config_id(config), config)

    def _spend_on_coverage(self, budget: list[int]) -> None:
        fresh = [c for c in self._random_unseen(min(budget[0], self.options["pool_size"]) + 16)
                 if config_id(c) not in self._rows_of and config_id(c) not in self._asked]
        for config in fresh[: max(budget[0], 0)]:
            self._pool.setdefault(config_id(config), config)
            self._asked.add(config_id(config))
        self._to_ask.extend(fresh[: max(budget[0], 0)])
        budget[0] = 0

    def _ranked_pool(self, model: Mixture) -> list[dict]:
        """Unseen pool configs, best by acquisition first (ties keep pool order); the pool is cut to `pool_size`."""
        unseen = {key: c for key, c in self._pool.items() if key not in self._seen}
        # the pool's keys are its configs' ids: looked up by object below, not computed again (ids were a tenth of it)
        key_of = {id(c): key for key, c in unseen.items()}
        configs = self._ready(list(unseen.values()), keys=list(unseen))
        pending = [c for key, c in unseen.items() if key not in self._rows_of]  # still being featurized in the pool
        if not configs:
            self._pool = {key_of[id(c)]: c for c in pending[: self.options["pool_size"]]}
            return []
        values = self._scores.acquisition(model, configs, [key_of[id(c)] for c in configs])
        order = np.argsort(-values, kind="stable")
        ranked = [configs[i] for i in order if np.isfinite(values[i])]
        kept = ranked[: self.options["pool_size"]]
        kept += pending[: self.options["pool_size"] - len(kept)]  # still being featurized: ranked next round
        self._pool = {key_of[id(c)]: c for c in kept}
        return ranked

    def _all_unseen(self) -> list[dict] | None:
        """Every unseen valid config when the space is listed and no larger than the pool, else None."""
        listed = self._draws.valid
        if listed is None or len(listed) > self.options["pool_size"]:
            return None
        return [c for c in listed if config_id(c) not in self._seen]

    def _random_unseen(self, n: int, limit: int | None = None) -> list[dict]:
        """Up to n distinct valid configs never proposed or observed, drawn uniformly."""
        return self._draws.draw(min(n, limit) if limit is not None else n)
