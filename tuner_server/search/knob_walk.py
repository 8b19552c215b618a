"""Moves in knob space for model-guided search: mutation, simulated annealing, space-filling and diverse batches.

A config is a dict knob -> value; two configs are `hamming` apart by the number of knobs whose values differ. A
mutation changes one knob to another of its choices and keeps the result only if the space accepts it. Everything
takes an explicit `random.Random`, so a search is reproducible from its seed.
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import numpy as np

from compiler_core.space import Space, config_id, config_id_by

MUTATION_TRIES = 8


def hamming(a: dict, b: dict) -> int:
    return sum(1 for k, v in a.items() if b.get(k) != v)


def mutate(space: Space, config: dict, rng: random.Random, tries: int = MUTATION_TRIES) -> dict | None:
    """`config` with one knob changed to another choice, valid in `space`; None after `tries` invalid draws."""
    knobs = [k for k in space.knobs if len(k.choices) > 1]
    if not knobs:
        return None
    for _ in range(tries):
        knob = rng.choice(knobs)
        value = rng.choice([c for c in knob.choices if c != config[knob.name]])
        new = {**config, knob.name: value}
        if space.is_valid(new):
            return new
    return None


def draw_unseen(space: Space, seen: set[tuple], rng: random.Random, n: int, max_draws: int | None = None) -> list[dict]:
    """Up to n valid configs whose `config_id` is not in `seen`, by rejection from the knobs' product (at most
    20 n + 64 draws, or `max_draws` when fewer, so a space with few valid configs left returns fewer)."""
    out, keys = [], set()
    knobs = [(k.name, k.choices) for k in space.knobs]
    names = sorted({name for name, _ in knobs})
    choice = rng.choice
    tries = 20 * n + 64 if max_draws is None else min(20 * n + 64, max_draws)
    for _ in range(tries):
        if len(out) == n:
            break
        config = {name: choice(choices) for name, choices in knobs}
        if not space.admits(config):  # drawn from the choices; about half of a template's product fails here
            continue
        key = config_id_by(config, names)
        if key not in keys and key not in seen:
            out.append(config)
            keys.add(key)
    return out


def anneal(starts: Sequence[dict], start_scores: np.ndarray, move: Callable[[dict], dict | None],
           score: Callable[[list[dict]], np.ndarray], rng: random.Random, steps: int,
           temperature: float = 1.0) -> list[tuple[dict, float]]:
    """Parallel simulated-annealing chains maximizing `score`, from `starts`; returns every config the chains
    visited with its score (in visiting order, no repeats). A move whose score is -inf is never accepted.
    The temperature falls linearly to 0 and is scaled by the spread of the start scores."""
    points, scores = list(starts), np.asarray(start_scores, dtype=np.float64).copy()
    finite = scores[np.isfinite(scores)]
    scale = float(np.std(finite)) if len(finite) > 1 and np.std(finite) > 0 else 1.0
    visited: dict[tuple, tuple[dict, float]] = {}
    for step in range(steps):
        t = temperature * scale * (1.0 - step / max(steps, 1))
        moves = [(i, m) for i, p in enumerate(points) if (m := move(p)) is not None]
        if not moves:
            break
        new_scores = score([m for _, m in moves])
        for (i, m), s in zip(moves, new_scores, strict=True):
            if not np.isfinite(s):
                continue
            visited.setdefault(config_id(m), (m, float(s)))
            delta = s - scores[i]
            if delta >= 0 or (t > 0 and rng.random() < math.exp(delta / t)):
                points[i], scores[i] = m, s
    return list(visited.values())


def space_filling(candidates: Sequence[dict], n: int, rng: random.Random, taken: Sequence[dict] = ()) -> list[dict]:
    """Up to n of `candidates` spread over knob space: each pick maximizes its minimum Hamming distance to the
    configs already picked or `taken`, then how rarely its knob values occur among them (so every value of every
    knob shows up early, as in a Latin hypercube); ties are broken at random."""
    if n <= 0:
        return []
    pool = list(candidates)
    rng.shuffle(pool)
    if not pool:
        return []
    # knob values as small codes, so that distances and counts are array operations (a Python `hamming` per pair
    # was a tenth of a model-guided proposal); a knob a config lacks reads as None where the other has it, as
    # `hamming` reads it
    names = list(dict.fromkeys(name for c in (*pool, *taken) for name in c))
    codes: list[dict] = [{} for _ in names]
    P, P_has = _coded(pool, names, codes)
    T, T_has = _coded(taken, names, codes)
    counts = [np.zeros(len(index), np.int64) for index in codes]
    for j in range(len(names)):
        np.add.at(counts[j], T[T_has[:, j], j], 1)
    if len(taken):
        nearest = ((P[:, None, :] != T[None, :, :]) & P_has[:, None, :]).sum(2).min(1)
    else:
        nearest = P_has.sum(1) + 1
    columns = np.arange(len(names))
    rarity_scale = (len(taken) + n + 1) * max(len(names), 1) + 1  # more than any count sum: distance decides first
    alive = np.ones(len(pool), bool)
    chosen: list[dict] = []
    while alive.any() and len(chosen) < n:
        seen = np.zeros(len(pool), np.int64)
        for j in columns:
            seen += np.where(P_has[:, j], counts[j][P[:, j]], 0)
        merit = np.where(alive, nearest * rarity_scale - seen, np.iinfo(np.int64).min)
        best = int(np.argmax(merit))  # the first of equals, as the shuffled order breaks ties
        alive[best] = False
        chosen.append(pool[best])
        for j in columns[P_has[best]]:
            counts[j][P[best, j]] += 1
        nearest = np.minimum(nearest, ((P != P[best]) & P_has).sum(1))
    return chosen


def _coded(configs: Sequence[dict], names: list[str], codes: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """configs x names: each value's code (new values get the next code of their knob; a missing knob reads as
    None) and whether the config has the knob."""
    values = np.empty((len(configs), len(names)), np.int64)
    has = np.empty((len(configs), len(names)), bool)
    for j, (name, index) in enumerate(zip(names, codes, strict=True)):
        values[:, j] = [index.setdefault(c.get(name), len(index)) for c in configs]
        has[:, j] = [name in c for c in configs]
    return values, has


def pick_diverse(ranked: Sequence[dict], n: int, min_distance: int, taken: Sequence[dict] = ()) -> list[dict]:
    """The first n of `ranked` (best first) such that any two, and each and any of `taken` (picked before), differ
    in at least `min_distance` knobs; when too few qualify, the distance is relaxed one step at a time. Two configs
    differ in at most as many knobs as the configs have, so a larger `min_distance` counts as that many: at most
    knobs + 1 scans of `ranked`, whatever the distance asked."""
    out: list[dict] = []
    keys: set[tuple] = {config_id(c) for c in taken}
    most = max((len(c) for c in ranked), default=0)  # `hamming(c, o)` counts knobs of c
    for distance in range(min(min_distance, most), -1, -1):
        for config in ranked:
            if len(out) >= n:
                return out
            key = config_id(config)
            if key not in keys and all(hamming(config, o) >= distance for o in (*taken, *out)):
                out.append(config)
                keys.add(key)
    return out


def neighbours(space: Space, config: dict, is_valid: Callable[[dict], bool] | None = None) -> list[tuple[dict, bool]]:
    """Every valid config one knob away from `config`, with whether the knob moved to an adjacent choice (one step
    along its choices); knobs in the space's order, choices in theirs. `config` itself need not be valid.
    `is_valid` (default: the space's constraints) may be a faster membership test of the same space."""
    is_valid = space.is_valid if is_valid is None else is_valid
    out = []
    for knob in space.knobs:
        here = knob.choices.index(config[knob.name]) if config[knob.name] in knob.choices else None
        for i, value in enumerate(knob.choices):
            if i == here:
                continue
            new = {**config, knob.name: value}
            if is_valid(new):
                out.append((new, here is not None and abs(i - here) == 1))
    return out
