"""knob_walk's unseen draws: the fast sampler draws exactly what drawing each knob with `rng.choice` and keeping the
valid unseen configs would (the same seed, the same configs), on knobs whose names are not in sorted order."""
from __future__ import annotations

import random

from compiler_core.space import Constraint, Knob, Space
from tuner_server.search.knob_walk import config_id, draw_unseen

SPACE = Space((Knob("tile", (1, 2, 4, 8, 16)), Knob("order", ("ij", "ji")), Knob("block", (8, 16, 32)),
               Knob("alpha", (True, False))),
              (Constraint("tile * block <= 256", lambda c: c["tile"] * c["block"] <= 256),))


def drawn_by_choice(space: Space, seen: set[tuple], rng: random.Random, n: int) -> list[dict]:
    """The sampler written plainly (the test's oracle)."""
    out, keys = [], set()
    for _ in range(20 * n + 64):
        if len(out) == n:
            break
        config = {k.name: rng.choice(k.choices) for k in space.knobs}
        key = config_id(config)
        if key not in keys and key not in seen and space.is_valid(config):
            out.append(config)
            keys.add(key)
    return out


def test_draws_match_the_plain_sampler_draw_for_draw():
    for seed in range(20):
        seen = {config_id(c) for c in drawn_by_choice(SPACE, set(), random.Random(100 + seed), 7)}
        fast_rng, plain_rng = random.Random(seed), random.Random(seed)
        fast, plain = draw_unseen(SPACE, seen, fast_rng, 12), drawn_by_choice(SPACE, seen, plain_rng, 12)
        assert fast == plain and [list(c) for c in fast] == [list(c) for c in plain]  # knob order too
        assert fast_rng.random() == plain_rng.random()  # the generator is left where the plain one leaves it


def test_draws_are_valid_distinct_and_unseen():
    seen = {config_id({"tile": 1, "order": "ij", "block": 8, "alpha": True})}
    drawn = draw_unseen(SPACE, seen, random.Random(0), 100)
    ids = [config_id(c) for c in drawn]
    assert len(set(ids)) == len(ids) and not seen & set(ids) and all(SPACE.is_valid(c) for c in drawn)
    assert len(drawn) == 5 * 3 * 2 * 2 - 2 * 2 - 1  # every valid unseen config (tile 16 with block 32 is not one)
