"""Uniform draws of unseen valid configs, listing the space only when that is cheap enough.

Drawing from the knobs' product and keeping valid unseen configs is uniform over what is left and costs nothing up
front, but fails on a space with few valid configs (a template's constraints, or a replay table recording a small
part of a large product). Then the space is listed once, if its listing is bounded: a compiler_core space lists by
walking its product (`Space.size`, ~10 us a config), a replay space (`listed_size`) lists its recorded configs.
"""
from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from compiler_core.space import Space
from tuner_server.search.knob_walk import config_id, draw_unseen

LIST_LIMIT = 200_000  # configs walked at most to list a space (about 2 s); larger spaces are only sampled


def listing_cost(space: Space) -> int:
    """Configs walked to list `space`: its recorded configs for a replay space, else its knobs' product."""
    return getattr(space, "listed_size", space.size)


class UnseenDraws:
    """Uniform draws of valid configs whose `config_id` is not in `seen` (a set the owner keeps up to date)."""

    def __init__(self, space: Space, seen: set[tuple], rng: random.Random, eager_limit: int = 20_000):
        self.space, self.seen, self.rng = space, seen, rng
        # Cheap listings are made at once; larger ones only if random draws turn out mostly invalid.
        self.valid: list[dict] | None = list(space) if listing_cost(space) <= eager_limit else None
        self._valid_ids: set[tuple] | None = None

    def is_valid(self, config: dict) -> bool:
        """Membership in the space: a set lookup once it is listed (checking constraints costs microseconds)."""
        if self.valid is None:
            return self.space.is_valid(config)
        if self._valid_ids is None:
            self._valid_ids = {config_id(c) for c in self.valid}
        try:
            return config_id(config) in self._valid_ids
        except TypeError:  # a value that cannot be sorted against the others: not a config of this space
            return False

    def listed(self) -> list[dict] | None:
        """Every valid config, listing the space now if that is bounded (None when it is not)."""
        if self.valid is None and listing_cost(self.space) <= LIST_LIMIT:
            self.valid = list(self.space)
        return self.valid

    def draw(self, n: int) -> list[dict]:
        """Up to n distinct valid unseen configs (fewer only once the space is nearly exhausted)."""
        if n <= 0:
            return []
        if self.valid is None:
            # Never spend more draws than a listing walks: a replay table recording 50,000 configs of a product of
            # millions gave a pool of 65,536 draws 1.3 million rejections (34 of a job's 48 s) before it was listed.
            cost = listing_cost(self.space)
            drawn = draw_unseen(self.space, self.seen, self.rng, n, max_draws=cost if cost <= LIST_LIMIT else None)
            if len(drawn) == n or self.listed() is None:
                return drawn
        out, keys, misses = [], set(), 0
        while len(out) < n and misses < 4 * n + 64 and self.valid:
            config = self.valid[self.rng.randrange(len(self.valid))]
            key = config_id(config)
            if key in keys or key in self.seen:
                misses += 1
                continue
            out.append(config)
            keys.add(key)
        if len(out) < n:  # nearly exhausted: list what is left
            rest = [c for c in self.valid if config_id(c) not in self.seen and config_id(c) not in keys]
            out += self.rng.sample(rest, min(n - len(out), len(rest)))
        return out


class ListedScores:
    """Every config of a listed space with its features, for featurizers cheap enough to score them all each round:
    one feature matrix, a mask of unseen rows, and the members' scores of all rows, predicted once per model."""

    def __init__(self, configs: list[dict], featurize: Callable[[list[dict]], np.ndarray], seen: set[tuple]):
        self.configs = configs
        self.row_of = {config_id(c): i for i, c in enumerate(configs)}
        self.X = featurize(configs) if configs else None
        self.unseen = np.array([key not in seen for key in self.row_of], dtype=bool)
        self._model, self._scores = None, None

    def mark_seen(self, config: dict) -> None:
        row = self.row_of.get(config_id(config))
        if row is not None:
            self.unseen[row] = False

    def top(self, model, acquire: Callable[[np.ndarray], np.ndarray], k: int) -> list[dict]:
        """The k unseen configs with the highest `acquire(member scores)`, best first (ties: listing order)."""
        rows = np.flatnonzero(self.unseen)
        if k <= 0 or not len(rows):
            return []
        if model is not self._model:
            self._model, self._scores = model, model.member_scores(self.X)
        values = acquire(self._scores[:, rows])
        values = np.where(np.isfinite(values), values, -np.inf)
        if len(rows) > k:
            part = np.argpartition(-values, k - 1)[:k]
            order = part[np.lexsort((rows[part], -values[part]))]
        else:
            order = np.lexsort((rows, -values))
        return [self.configs[rows[i]] for i in order if np.isfinite(values[i])]
