"""A population of distinct basins among the measured configs, and the one-knob sweeps that deepen each of them.

A search that only follows its best config settles in one basin; the optimum may sit in another that only a few
measured configs touch (a combination of knob values the optimum and its neighbours share). `basin_bests` keeps the
best config of each of up to k basins: the fastest measured config, then the next fastest ones that differ from every
one kept in at least `distance` knobs. Sweeping a basin measures unmeasured one-knob neighbours of its best config; a
basin whose best has none left is a local optimum, fully swept. With `pairs` (the strategy's `sweep_pairs`, off by
default) such a local optimum's two-knob neighbours that the score rates above it are swept next
(benchmarks/results/2026-11-29-pair-sweeps/). When the basins swept so far stop improving, the optimum may sit in one
that no measured config touches: `far_from` looks there.

Both choose by a `score` callable (the model-guided strategy's acquisition: higher is better, -inf for a config it
may not score this round), so they know nothing of the models behind it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from compiler_core.space import Space
from tuner_server.search.base import OK, Observation
from tuner_server.search.knob_walk import config_id, hamming, neighbours, pick_diverse

Score = Callable[[list[dict]], np.ndarray]
TOP = 64  # fastest configs looked at for basin bests (the model-guided last phase looks at `late_basin_pool`)


def basin_bests(observations: Iterable[Observation], k: int, distance: int, top: int = TOP) -> list[dict]:
    """Best configs of up to k distinct basins, fastest first (see the module docstring)."""
    measured = sorted((o for o in observations if o.status == OK and o.median_s is not None),
                      key=lambda o: o.median_s)[:top]
    bests: list[dict] = []
    for o in measured:
        if len(bests) == k:
            break
        if all(hamming(o.config, b) >= distance for b in bests):
            bests.append(o.config)
    return bests


class Neighbourhoods:
    """Valid one-knob neighbours of configs, listed once per config (validity checks cost microseconds each), and,
    with `pairs`, the two-knob neighbours of a config whose one-knob ones are all seen: a local optimum under
    one-knob moves is often one only because the config between it and a better one is not in the space (a
    template's constraint, a subsampled table), and the better one is two knobs away."""

    def __init__(self, space: Space, is_valid=None, pairs: int = 0):
        self.space, self.is_valid, self.pairs = space, is_valid, pairs
        self._of: dict[tuple, list[dict]] = {}
        self._pairs_of: dict[tuple, tuple[list[dict], list[tuple]]] = {}  # config id -> its ring and their ids

    def unseen(self, config: dict, seen: set[tuple]) -> list[dict]:
        """Unseen one-knob neighbours of `config`; when none is left, unseen two-knob ones until `pairs` of them
        were seen (the sweep's ranking picks which)."""
        key = config_id(config)
        if key not in self._of:
            self._of[key] = [c for c, _ in neighbours(self.space, config, self.is_valid)]
        one = [c for c in self._of[key] if config_id(c) not in seen]
        if one or self.pairs <= 0:
            return one
        if key not in self._pairs_of:
            ring = two_knob_neighbours(self.space, config, self.is_valid)
            self._pairs_of[key] = ring, [config_id(c) for c in ring]
        ring, keys = self._pairs_of[key]
        if sum(k in seen for k in keys) >= self.pairs:
            return []
        return [c for c, k in zip(ring, keys, strict=True) if k not in seen]


def two_knob_neighbours(space: Space, config: dict, is_valid=None) -> list[dict]:
    """Every valid config that differs from `config` in exactly two knobs."""
    is_valid = space.is_valid if is_valid is None else is_valid
    knobs = [k for k in space.knobs if len(k.choices) > 1]
    out = []
    for i, a in enumerate(knobs):
        for b in knobs[i + 1:]:
            for va in a.choices:
                if va == config[a.name]:
                    continue
                for vb in b.choices:
                    if vb != config[b.name] and is_valid(new := {**config, a.name: va, b.name: vb}):
                        out.append(new)
    return out


def _best_first(configs: list[dict], score: Score) -> list[dict]:
    """`configs` by `score`, best first (ties keep their order), without those it may not score."""
    values = score(configs)
    return [configs[i] for i in np.argsort(-values, kind="stable") if np.isfinite(values[i])]


def sweeps(bests: Sequence[dict], near: Neighbourhoods, seen: set[tuple], score: Score, slots: int,
           min_distance: int) -> list[dict]:
    """Up to `slots` unseen one-knob neighbours of `bests`, the best by `score` of each basin in turn (basins whose
    best has no neighbour left are done), no two of them closer than `min_distance` knobs."""
    if slots <= 0:
        return []
    queues = []
    for best in bests:
        unseen = near.unseen(best, seen)
        if unseen and hamming(unseen[0], best) == 2:
            # two knobs away from a local optimum: only what the model rates above the optimum itself (a basin
            # whose two-knob ring the model rates lower is a true local optimum, and sweeping it wastes the slots)
            values = score([best, *unseen])
            unseen = [c for c, v in zip(unseen, values[1:], strict=True) if v > values[0]]
        if unseen:
            queues.append(_best_first(unseen, score))
    out: list[dict] = []
    while len(out) < slots and any(queues):
        for queue in queues:
            # neighbours of one best that change the same knob are one knob apart: keep the batch diverse
            while queue and any(hamming(queue[0], o) < min_distance for o in out):
                queue.pop(0)
            if queue and len(out) < slots:
                out.append(queue.pop(0))
    return out


def far_from(bests: Sequence[dict], draw: Callable[[int], list[dict]], score: Score, slots: int, distance: int,
             min_distance: int) -> list[dict]:
    """Up to `slots` configs at least `distance` knobs from every one of `bests`: the best by `score` of a random
    `draw` of 32 per slot (and 32 more), no two closer than `min_distance` knobs."""
    if slots <= 0:
        return []
    far = [c for c in draw(32 * slots + 32) if all(hamming(c, b) >= distance for b in bests)]
    return pick_diverse(_best_first(far, score), slots, min_distance) if far else []
