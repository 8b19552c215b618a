"""A population of distinct basins among the measured configs, and the one-knob sweeps that deepen each of them.

A search that only follows its best config settles in one basin; the optimum may sit in another that only a few
measured configs touch (a combination of knob values the optimum and its neighbours share). `basin_bests` keeps the
best config of each of up to k basins: the fastest measured config, then the next fastest ones that differ from every
one kept in at least `distance` knobs. Sweeping a basin measures unmeasured one-knob neighbours of its best config; a
basin whose best has none left is a local optimum, fully swept.
"""
from __future__ import annotations

from collections.abc import Iterable

from compiler_core.space import Space
from tuner_server.search.base import OK, Observation
from tuner_server.search.knob_walk import config_id, hamming, neighbours

TOP = 64  # fastest configs looked at for basin bests (the rest are slower than every basin's best anyway)


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
    """Valid one-knob neighbours of configs, listed once per config (validity checks cost microseconds each)."""

    def __init__(self, space: Space, is_valid=None):
        self.space, self.is_valid = space, is_valid
        self._of: dict[tuple, list[dict]] = {}

    def unseen(self, config: dict, seen: set[tuple]) -> list[dict]:
        key = config_id(config)
        if key not in self._of:
            self._of[key] = [c for c, _ in neighbours(self.space, config, self.is_valid)]
        return [c for c in self._of[key] if config_id(c) not in seen]
