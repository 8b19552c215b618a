"""What the model-guided strategy's ensemble says about configs: member scores and acquisition values, each computed
once per fitted model (one round scores the same configs for its sweeps, its annealed pool and its batch).

Configs given here have their features ready (the strategy decides which may be featurized, `ModelGuided._ready`);
a config that cannot be lowered (all-NaN features) scores -inf under every member, so its acquisition value is not
finite and no ranking keeps it.
"""
from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from tuner_server.cost_model.ensemble import Mixture
from tuner_server.search.acquisition import ensemble_acquisition
from tuner_server.search.knob_walk import config_id


class EnsembleScores:
    """Per-model caches of member scores and acquisition values (`acquisition`: "ucb", "ei", "mean" or "thompson")."""

    def __init__(self, rows: Callable[[list[dict]], np.ndarray], incumbent: Callable[[], dict | None],
                 acquisition: str, kappa: float, rng: random.Random):
        self.rows = rows  # configs -> their feature rows
        self.incumbent = incumbent  # the best measured config whose features are ready (None: none yet)
        self.how, self.kappa, self.rng = acquisition, kappa, rng
        self._model: Mixture | None = None  # the model the caches hold scores of
        self._members: dict[tuple, np.ndarray] = {}  # config id -> member scores under `_model`
        self._acquired: dict[tuple, float] = {}  # config id -> acquisition value under `_model`
        self._round_member: int | None = None  # Thompson sampling: the member whose scores rank this round

    def new_round(self) -> None:
        """Thompson sampling draws a fresh member for each round."""
        self._round_member = None

    def members(self, model: Mixture, configs: list[dict], keys: list[tuple] | None = None) -> dict[tuple, np.ndarray]:
        """Member scores of `configs` under `model` (by config id; `keys`: their ids, when the caller has them), each
        predicted once per model."""
        if model is not self._model:
            self._model, self._members, self._acquired = model, {}, {}
        need: dict[tuple, dict] = {}
        for key, config in zip(keys or map(config_id, configs), configs, strict=True):
            if key not in self._members:
                need.setdefault(key, config)
        if need:
            X = self.rows(list(need.values()))
            scores = model.member_scores(X)
            scores[:, np.all(np.isnan(X), axis=1)] = -np.inf
            self._members.update((key, scores[:, i]) for i, key in enumerate(need))
        return self._members

    def acquisition(self, model: Mixture, configs: list[dict], keys: list[tuple] | None = None) -> np.ndarray:
        """What ranks `configs`: the acquisition over the members' mean and spread (`keys`: their ids, when the caller
        has them)."""
        if not configs:
            return np.zeros(0)
        keys = [config_id(c) for c in configs] if keys is None else keys
        known = self.members(model, configs, keys)
        if self.how == "thompson":  # a fresh member each round: nothing to keep
            return self.acquire(model, np.stack([known[k] for k in keys], axis=1))
        # else a config's value is fixed per model: computed once
        need = list(dict.fromkeys(k for k in keys if k not in self._acquired))
        if need:
            values = self.acquire(model, np.stack([known[k] for k in need], axis=1))
            self._acquired.update(zip(need, values.tolist(), strict=True))
        return np.array([self._acquired[k] for k in keys])

    def acquire(self, model: Mixture, S: np.ndarray) -> np.ndarray:
        """Acquisition values from member scores S (members x configs)."""
        if self.how == "thompson":
            if self._round_member is None:
                self._round_member = self.rng.randrange(len(S))
            return S[min(self._round_member, len(S) - 1)]
        return ensemble_acquisition(S, self.how, self.kappa, lambda: self._incumbent_score(model))

    def _incumbent_score(self, model: Mixture) -> float:
        best = self.incumbent()
        return 0.0 if best is None else float(np.mean(self.members(model, [best])[config_id(best)]))
