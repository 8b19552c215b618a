"""Grid search: the space's valid configs in its deterministic iteration order, without repeats.

`shuffle_seed` visits them in an order shuffled by `random.Random(shuffle_seed)` instead; `stride` k visits every
k-th config first (a coarse sweep of the whole space), then fills in the skipped ones, one offset per pass. The plain
order (no shuffle, stride 1) is walked lazily; the others list the valid configs once.
"""
from __future__ import annotations

import random
from collections.abc import Iterator

from compiler_core.space import Space
from tuner_server.search.base import (
    Observation,
    Option,
    SeenConfigs,
    StrategyContext,
    check_batch_size,
    parse_options,
)

OPTIONS: dict[str, tuple] = {
    "shuffle_seed": Option(int, None, "None: the space's own order; an int: that order shuffled with this seed (a "
                                      "job's seed's range)", minimum=0, maximum=2**63 - 1),
    "stride": Option(int, 1, "visit every stride-th config first, then fill in the skipped ones (a stride past the "
                             "space's size is its plain order)", minimum=1, maximum=2**31 - 1),
}


def grid_order(space: Space, shuffle_seed: int | None = None, stride: int = 1) -> Iterator[dict]:
    """Every valid config of `space` once, in grid order."""
    if shuffle_seed is None and stride == 1:
        yield from space
        return
    configs = list(space)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(configs)
    for offset in range(min(stride, len(configs))):
        yield from configs[offset::stride]


class GridSearch:
    """The valid configs in the space's order (optionally shuffled or strided), each once; stops when exhausted."""

    OPTIONS = OPTIONS

    def __init__(self, context: StrategyContext):
        self.options = parse_options(OPTIONS, context.options)
        self.space = context.space
        self._order = grid_order(context.space, self.options["shuffle_seed"], self.options["stride"])
        self._seen = SeenConfigs(o.config for o in context.history)

    def propose(self, n: int) -> list[dict]:
        out = []
        while len(out) < check_batch_size(n):
            config = next(self._order, None)
            if config is None:
                break
            if self._seen.add(config):
                out.append(config)
        return out

    def observe(self, results: list[Observation]) -> None:
        for result in results:
            self._seen.add(result.config)
