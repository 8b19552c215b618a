"""Model-guided search: simulated annealing over the space, scored by a LightGBM ranking cost model.

Each `propose(n)`:
1. refits the model when the job's observations grew by `refit_growth` (a model trained on other workloads of the
   device class, from `StrategyContext.cost_model` or fitted on `StrategyContext.transfer`, is fine-tuned with a few
   rounds on the job's own trials; with neither, a model is fitted on the job's trials once there are `min_train`);
2. without a model yet, proposes space-filling configs (spread over every knob's values);
3. otherwise explores: annealing chains start from the best configs known (measured or predicted) and mutate one
   knob at a time; every config they reach is scored and kept in a pool of unmeasured candidates; what is left of
   the round's feature budget goes to random configs never looked at (coverage);
4. proposes the pool's best-scored configs, no two closer than `min_distance` knobs, where each slot is instead a
   random unseen config with probability `epsilon`. Nothing proposed or observed is ever proposed again.

Lowering a config for its features costs milliseconds, so a round may look at no more than `feature_budget` new
configs per proposed one (the budget counts configs new to this strategy, not cache misses, so runs do not depend
on what the shared feature cache holds). With a feature pool (`StrategyContext.feature_pool`, the tuner's case) the
lowering happens in worker processes: a round scores and trains on the configs whose features are ready, asks for
the rest, and finds them ready a round later; every proposed config is asked for at once, so its features are there
when its measurement comes back. With `patience`, proposing stops once that many observations in a row
have not improved the best runtime.

| option           | default      | meaning                                                                      |
|------------------|--------------|------------------------------------------------------------------------------|
| epsilon          | 0.05         | chance that a batch slot is a random unseen config (exploration)             |
| min_distance     | 2            | knobs in which two configs of one batch must differ (relaxed if needed)      |
| patience         | None         | stop after this many observations without a better runtime; None: never     |
| transfer         | True         | start from the device class's model / other workloads' trials when given     |
| objective        | rank_xendcg  | LightGBM ranking objective: rank_xendcg or lambdarank                        |
| rounds           | 60           | boosting rounds of a model fitted from scratch                               |
| refit_rounds     | 20           | boosting rounds added to the transfer model on the job's own trials          |
| refit_rate       | 0.1          | learning rate of those rounds (the job's own trials can overrule transfer)   |
| own_weight_at    | 16           | with transfer, a model of the job's own trials is blended in with weight     |
|                  |              | n / (n + own_weight_at) (n: own observations), so a wrong prior fades        |
| refit_growth     | 0.25         | refit when the job's observations grew by this fraction (at least one)       |
| min_train        | 8            | own observations before a model without transfer is fitted                   |
| chains           | 16           | annealing chains per round                                                   |
| steps            | 16           | annealing steps per round                                                    |
| feature_budget   | 16           | configs new to the strategy it may featurize per proposed config per round   |
| pool_size        | 4096         | unmeasured scored candidates kept between rounds (the best ones)             |
"""
from __future__ import annotations

import random

import numpy as np

from tuner_server.cost_model.featurize import LoweredFeatures, featurizer_for
from tuner_server.cost_model.grades import ranking_data
from tuner_server.cost_model.model import OBJECTIVES, Blend, CostModel
from tuner_server.cost_model.training import lowered_featurizers, train_on_trials
from tuner_server.search.base import (
    OK,
    Observation,
    Option,
    StrategyContext,
    check_batch_size,
    parse_options,
)
from tuner_server.search.knob_walk import anneal, config_id, draw_unseen, mutate, pick_diverse, space_filling

OPTIONS: dict[str, tuple] = {
    "epsilon": Option(float, 0.05, "chance that a batch slot is a random unseen config", minimum=0.0),
    "min_distance": Option(int, 2, "knobs in which two configs of one batch must differ", minimum=0),
    "patience": Option(int, None, "stop after this many observations without a better runtime", minimum=1),
    "transfer": Option(bool, True, "start from a model of the device class's other workloads when given"),
    "objective": Option(str, "rank_xendcg", "LightGBM ranking objective", choices=OBJECTIVES),
    "rounds": Option(int, 60, "boosting rounds of a model fitted from scratch", minimum=1),
    "refit_rounds": Option(int, 20, "rounds added to the transfer model on the job's own trials", minimum=1),
    "refit_rate": Option(float, 0.1, "learning rate of the rounds added to the transfer model", minimum=0.0),
    "own_weight_at": Option(int, 16, "own observations at which the job's own model weighs as much as the "
                                     "transfer model in a blend", minimum=1),
    "refit_growth": Option(float, 0.25, "refit when observations grew by this fraction", minimum=0.0),
    "min_train": Option(int, 8, "own observations before a model without transfer is fitted", minimum=2),
    "chains": Option(int, 16, "annealing chains per round", minimum=1),
    "steps": Option(int, 16, "annealing steps per round", minimum=0),
    "feature_budget": Option(int, 16, "new configs featurized per proposed config per round", minimum=1),
    "pool_size": Option(int, 4096, "unmeasured scored candidates kept between rounds", minimum=1),
}
EAGER_LIST_LIMIT = 20_000  # spaces whose knob product is at most this are listed up front
LIST_LIMIT = 200_000  # ... at most this, listed once random draws turn out mostly invalid


class ModelGuided:
    """Simulated annealing scored by a LightGBM ranking model (transfer from the device class), with ε-greedy,
    diverse batches and optional early stopping."""

    OPTIONS = OPTIONS

    def __init__(self, context: StrategyContext):
        self.options = o = parse_options(OPTIONS, context.options)
        if o["epsilon"] > 1:
            raise ValueError(f"option 'epsilon'={o['epsilon']!r} must be at most 1")
        self.context, self.space = context, context.space
        self.rng = random.Random(context.seed)
        self.features = featurizer_for(context.space, context.workload_key, context.target,
                                       pool=context.feature_pool)
        self._seen: set[tuple] = set()  # config ids proposed or observed
        self._own: dict[tuple, Observation] = {}  # config key -> latest observation of this job
        self._rows_of: dict[tuple, np.ndarray] = {}  # features of every config this strategy looked at (budgeted)
        self._asked: set[tuple] = set()  # configs whose features were asked of the pool (budget already spent)
        self._to_ask: list[dict] = []  # ... asked for at the end of the round, in one request
        self._pool: dict[tuple, dict] = {}  # unseen candidates, best predicted first after each ranking
        # Small products are listed at once; larger ones only if random draws are mostly invalid (listing costs ~1 s
        # per 100,000 configs): `_random_unseen` decides.
        self._valid: list[dict] | None = list(context.space) if context.space.size <= EAGER_LIST_LIMIT else None
        self._base: CostModel | None | bool = False  # False: not built yet
        self._model: CostModel | None = None
        self._explored_with = self._scored_with = None  # the model the pool was last explored / scored with
        self._score_of: dict[tuple, float] = {}
        self._fitted_at = -1
        self._best: float | None = None
        self._since_best = 0
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
        for config in batch:
            self._seen.add(config_id(config))
            self._pool.pop(config_id(config), None)
        # The batch first: its features are needed when its measurements come back (the next fit).
        self.features.prefetch(batch + [c for c in self._to_ask if config_id(c) not in self._seen])
        self._to_ask = []
        return batch

    def observe(self, results: list[Observation]) -> None:
        for result in results:
            self._seen.add(config_id(result.config))
            key = config_id(result.config)
            self._pool.pop(key, None)
            self._own[key] = result
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
                                        rounds=self.options["rounds"], seed=ctx.seed)
                self._base = model if model.trained else None
        return self._base

    def _current_model(self) -> CostModel | None:
        grown = len(self._own) - max(self._fitted_at, 0)
        if self._fitted_at >= 0 and grown < max(1.0, self.options["refit_growth"] * self._fitted_at):
            return self._model
        base = self._base_model()
        observations = self._ready_observations()
        if base is None and len(observations) < self.options["min_train"]:
            return self._model
        X = self._rows([o.config for o in observations])
        data = ranking_data([(X, [o.median_s for o in observations], [o.status for o in observations])],
                            seed=self.context.seed)
        own = None
        if len(observations) >= self.options["min_train"]:
            own = CostModel(self.features.names, self.options["objective"], self.context.seed)
            own = own.fit(data, self.options["rounds"]) if len(data) else own
        if base is not None:
            tuned = base.fine_tuned(data, self.options["refit_rounds"],
                                    {"learning_rate": self.options["refit_rate"]}) if len(data) else base
            weight = len(observations) / (len(observations) + self.options["own_weight_at"])
            self._model = Blend([(tuned, 1 - weight), (own, weight)], X) if own and own.trained else tuned
        else:
            self._model = own if own is not None and own.trained else None
        self._fitted_at = len(observations)
        return self._model

    def _ready_observations(self) -> list[Observation]:
        """The job's observations whose features can be had now (all of them without a feature pool)."""
        observations = list(self._own.values())
        ready = {config_id(c) for c in self._ready([o.config for o in observations])}  # the rest: asked for
        return [o for o in observations if config_id(o.config) in ready]

    def _ready(self, configs: list[dict], budget: list[int] | None = None) -> list[dict]:
        """The configs whose features can be had now; with a feature pool, the others are asked for. A config new to
        this strategy costs one unit of `budget` when given (skipped once it is spent)."""
        out, ask = [], []
        for config in configs:
            key = config_id(config)
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

    # ---- exploring ---------------------------------------------------------------------------------------------
    def _model_batch(self, model: CostModel, n: int) -> list[dict]:
        budget = [self.options["feature_budget"] * n]
        unseen = self._all_unseen()
        if unseen is not None and sum(config_id(c) not in self._rows_of for c in unseen) <= budget[0]:
            self._pool.update((config_id(c), c) for c in unseen)  # a small space: score all of it
        elif model is not self._explored_with or self._ready_in_pool() < 4 * n:
            self._explore(model, budget)  # a new model (or a pool running dry): worth the annealing
            self._spend_on_coverage(budget)
            self._explored_with = model
        ranked = self._ranked_pool(model)
        n_random = sum(self.rng.random() < self.options["epsilon"] for _ in range(n))
        if len(self._own) < self.options["min_train"]:  # a transferred model: half the first configs spread out,
            n_random = max(n_random, n // 2)  # so the job's own model starts from an unbiased sample
        batch = pick_diverse(ranked[: max(8 * n, 64)], n - n_random, self.options["min_distance"])
        taken = {config_id(c) for c in batch}
        extra = [c for c in self._random_unseen(4 * n + 8, limit=512) if config_id(c) not in taken]
        return batch + space_filling(extra, n - len(batch), self.rng, taken=batch + self._recent(64))

    def _ready_in_pool(self) -> int:
        return sum(1 for key in self._pool if key in self._rows_of and key not in self._seen)

    def _recent(self, k: int) -> list[dict]:
        """The configs of the last k observations (what space-filling keeps its distance from)."""
        own = list(self._own.values()) if len(self._own) <= k else list(self._own.values())[-k:]
        return [o.config for o in own]

    def _score(self, model: CostModel, configs: list[dict], budget: list[int]) -> np.ndarray:
        """Model scores; a config new to this strategy costs one unit of `budget` (-inf once it is spent, and while
        its features are being computed in the pool)."""
        allowed = self._ready(configs, budget)
        known = self._scores_of(model, allowed)
        return np.array([known.get(config_id(c), -np.inf) for c in configs])

    def _scores_of(self, model: CostModel, configs: list[dict]) -> dict[tuple, float]:
        """Scores of `configs` (features ready) under `model`, each predicted once per model (NaN rows: -inf)."""
        if model is not self._scored_with:
            self._scored_with, self._score_of = model, {}
        need = [c for c in dict((config_id(c), c) for c in configs).values() if config_id(c) not in self._score_of]
        if need:
            X = self._rows(need)
            predicted = model.predict(X)
            predicted[np.all(np.isnan(X), axis=1)] = -np.inf
            self._score_of.update((config_id(c), float(v)) for c, v in zip(need, predicted, strict=True))
        return self._score_of

    def _explore(self, model: CostModel, budget: list[int]) -> None:
        chains = self.options["chains"]
        measured = sorted((o for o in self._own.values() if o.status == OK and o.median_s is not None),
                          key=lambda o: o.median_s)
        starts = [o.config for o in measured[: chains // 2]]
        starts += self._ranked_pool(model)[: chains - len(starts)]
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
        fresh = [c for c in self._random_unseen(budget[0] + 16) if config_id(c) not in self._rows_of
                 and config_id(c) not in self._asked]
        for config in fresh[: max(budget[0], 0)]:
            self._pool.setdefault(config_id(config), config)
            self._asked.add(config_id(config))
        self._to_ask.extend(fresh[: max(budget[0], 0)])
        budget[0] = 0

    def _ranked_pool(self, model: CostModel) -> list[dict]:
        """Unseen pool configs, best predicted first (ties keep pool order); the pool is cut to `pool_size`."""
        unseen = [c for c in self._pool.values() if config_id(c) not in self._seen]
        configs = self._ready(unseen)
        known = self._scores_of(model, configs)
        pending = [c for c in unseen if config_id(c) not in self._rows_of]  # still being featurized in the pool
        if not configs:
            self._pool = {config_id(c): c for c in pending[: self.options["pool_size"]]}
            return []
        scores = np.array([known[config_id(c)] for c in configs])
        order = np.argsort(-scores, kind="stable")
        ranked = [configs[i] for i in order if np.isfinite(scores[i])]
        kept = ranked[: self.options["pool_size"]]
        kept += pending[: self.options["pool_size"] - len(kept)]  # still being featurized: ranked next round
        self._pool = {config_id(c): c for c in kept}
        return ranked

    def _all_unseen(self) -> list[dict] | None:
        """Every unseen valid config when the space is listed and no larger than the pool, else None."""
        if self._valid is None or len(self._valid) > self.options["pool_size"]:
            return None
        return [c for c in self._valid if config_id(c) not in self._seen]

    def _random_unseen(self, n: int, limit: int | None = None) -> list[dict]:
        """Up to n distinct valid configs never proposed or observed, drawn uniformly."""
        n = min(n, limit) if limit is not None else n
        if n <= 0:
            return []
        if self._valid is None:
            drawn = draw_unseen(self.space, self._seen, self.rng, n)
            if len(drawn) == n or self.space.size > LIST_LIMIT:
                return drawn
            self._valid = list(self.space)
        out, keys, misses = [], set(), 0
        while len(out) < n and misses < 4 * n + 64 and self._valid:
            config = self._valid[self.rng.randrange(len(self._valid))]
            key = config_id(config)
            if key in keys or key in self._seen:
                misses += 1
                continue
            out.append(config)
            keys.add(key)
        if len(out) < n:  # nearly exhausted: list what is left
            rest = [c for c in self._valid if config_id(c) not in self._seen and config_id(c) not in keys]
            out += self.rng.sample(rest, min(n - len(out), len(rest)))
        return out
