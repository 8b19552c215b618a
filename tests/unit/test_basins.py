"""The basin population's moves on their own: sweeps of each basin's best in turn, and configs far from every best."""
from __future__ import annotations

import random

import numpy as np

from compiler_core.space import Knob, Space
from tuner_server.search.basins import Neighbourhoods, far_from, sweeps, two_knob_neighbours
from tuner_server.search.knob_walk import config_id, draw_unseen, hamming

SPACE = Space([Knob(f"k{i}", tuple(range(4))) for i in range(6)])
A = {f"k{i}": 0 for i in range(6)}
B = {f"k{i}": 3 for i in range(6)}


def by_knob_sum(configs: list[dict]) -> np.ndarray:
    """A score that prefers small knob values (and refuses configs whose k5 is 2: a config it may not score)."""
    return np.array([-np.inf if c["k5"] == 2 else -sum(c.values()) for c in configs], dtype=float)


def test_sweeps_take_each_basin_in_turn_and_skip_what_was_seen():
    seen = {config_id(A), config_id(B), config_id(A | {"k0": 1})}
    out = sweeps([A, B], Neighbourhoods(SPACE), seen, by_knob_sum, slots=4, min_distance=2)
    assert len(out) == 4
    assert [hamming(c, A) == 1 for c in out] == [True, False, True, False]  # round-robin, the first basin first
    assert all(hamming(c, B) == 1 for c in out[1::2])
    assert config_id(A | {"k0": 1}) not in {config_id(c) for c in out}
    assert all(c["k5"] != 2 for c in out)  # what the score refuses is never proposed
    assert all(hamming(a, b) >= 2 for i, a in enumerate(out) for b in out[:i])
    best_of_b = max((c for c in Neighbourhoods(SPACE).unseen(B, set())), key=lambda c: by_knob_sum([c])[0])
    assert out[1] == best_of_b


def test_sweeps_stop_when_every_basin_is_swept():
    near = Neighbourhoods(SPACE)
    seen = {config_id(c) for c in near.unseen(A, set())}
    assert sweeps([A], near, seen, by_knob_sum, slots=8, min_distance=0) == []
    assert sweeps([A], near, set(), by_knob_sum, slots=0, min_distance=0) == []


def test_far_from_keeps_its_distance_from_every_best_and_takes_the_best_scored():
    rng = random.Random(0)
    drawn: list[int] = []

    def draw(k: int) -> list[dict]:
        drawn.append(k)
        return draw_unseen(SPACE, set(), rng, k)

    out = far_from([A, B], draw, by_knob_sum, slots=3, distance=3, min_distance=2)
    assert drawn == [32 * 3 + 32]
    assert 1 <= len(out) <= 3
    assert all(hamming(c, A) >= 3 and hamming(c, B) >= 3 and c["k5"] != 2 for c in out)
    assert out == sorted(out, key=lambda c: sum(c.values()))  # best by the score first
    assert far_from([A], draw, by_knob_sum, slots=0, distance=3, min_distance=2) == []


def test_two_knob_neighbours_are_every_valid_config_two_knobs_away():
    def no_k0_three(c: dict) -> bool:
        return c["k0"] != 3

    ring = two_knob_neighbours(SPACE, A, no_k0_three)
    assert all(hamming(c, A) == 2 and c["k0"] != 3 for c in ring)
    assert len({config_id(c) for c in ring}) == len(ring)
    # 15 knob pairs of 3 x 3 other values, less the 5 pairs with k0 of 3 other values of which one is refused
    assert len(ring) == 15 * 9 - 5 * 3


def test_a_swept_local_optimum_offers_its_two_knob_ring_until_pairs_were_seen():
    near = Neighbourhoods(SPACE, pairs=3)
    one = near.unseen(A, set())
    assert all(hamming(c, A) == 1 for c in one)
    seen = {config_id(c) for c in one}
    ring = near.unseen(A, seen)
    assert ring and all(hamming(c, A) == 2 for c in ring)
    seen |= {config_id(c) for c in ring[:2]}
    assert len(near.unseen(A, seen)) == len(ring) - 2
    seen.add(config_id(ring[2]))
    assert near.unseen(A, seen) == []  # three of its ring seen: done
    assert Neighbourhoods(SPACE).unseen(A, {config_id(c) for c in one}) == []  # pairs 0: never


def test_sweeps_of_a_ring_take_only_what_the_score_rates_above_the_optimum_itself():
    near = Neighbourhoods(SPACE, pairs=50)
    C = {f"k{i}": 1 for i in range(6)}
    seen = {config_id(c) for c in near.unseen(C, set())} | {config_id(C)}

    def lower_sum(configs: list[dict]) -> np.ndarray:
        return np.array([-sum(c.values()) for c in configs], dtype=float)

    out = sweeps([C], near, seen, lower_sum, slots=8, min_distance=0)
    assert out and all(hamming(c, C) == 2 and sum(c.values()) < sum(C.values()) for c in out)
    assert sweeps([A], Neighbourhoods(SPACE, pairs=50), {config_id(c) for c in Neighbourhoods(SPACE).unseen(A, set())},
                  lower_sum, slots=8, min_distance=0) == []  # nothing in A's ring beats A: a true local optimum
