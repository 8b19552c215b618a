"""Random search: uniform random valid configs, seeded, without repeats; exhausts small spaces exactly.

Each config is drawn uniformly from the knobs' product and kept when it is valid and unseen, which is uniform over
the valid configs not yet seen. When MAX_MISSES draws in a row fail (the space is nearly exhausted, or its valid
fraction is small) the strategy lists the remaining valid configs once, shuffles them with the same generator and
deals from that list, so it ends exactly when the space does. A space whose listing walks more than
`listing.LIST_LIMIT` configs (a compiler space's product; a replay space lists just its recorded configs, however
large the knobs' product) is never listed: there, MAX_MISSES_UNLISTED failed draws in a row count as exhaustion
(bounded work per call; such a space with almost no valid configs left may end early).
"""
from __future__ import annotations

import random

from tuner_server.search.base import (
    Observation,
    SeenConfigs,
    StrategyContext,
    check_batch_size,
    parse_options,
)
from tuner_server.search.listing import LIST_LIMIT, listing_cost

OPTIONS: dict[str, tuple] = {}
MAX_MISSES = 64  # rejected draws in a row before listing a listable space
MAX_MISSES_UNLISTED = 10_000


class RandomSearch:
    """Uniform random valid configs without repeats (seeded by the job's seed)."""

    OPTIONS = OPTIONS

    def __init__(self, context: StrategyContext):
        self.options = parse_options(OPTIONS, context.options)
        self.space = context.space
        self._rng = random.Random(context.seed)
        self._seen = SeenConfigs(o.config for o in context.history)
        self._rest: list[dict] | None = None  # the remaining configs in dealing order, once listed
        self._listable = listing_cost(self.space) <= LIST_LIMIT

    def propose(self, n: int) -> list[dict]:
        out = []
        while len(out) < check_batch_size(n):
            config = self._next()
            if config is None:
                break
            self._seen.add(config)
            out.append(config)
        return out

    def observe(self, results: list[Observation]) -> None:
        for result in results:
            self._seen.add(result.config)

    def _next(self) -> dict | None:
        if self._rest is None:
            config = self._draw()
            if config is not None:
                return config
            self._rest = self._list_rest()
        while self._rest:
            config = self._rest.pop()
            if config not in self._seen:
                return config
        return None

    def _draw(self) -> dict | None:
        if self.space.size == 0:
            return None
        knobs = self.space.knobs
        for _ in range(MAX_MISSES if self._listable else MAX_MISSES_UNLISTED):
            config = {k.name: self._rng.choice(k.choices) for k in knobs}
            if config not in self._seen and self.space.admits(config):  # drawn from the choices
                return config
        return None

    def _list_rest(self) -> list[dict]:
        if not self._listable:
            return []
        rest = [c for c in self.space if c not in self._seen]
        self._rng.shuffle(rest)
        return rest
