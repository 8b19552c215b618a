"""Random unseen draws read the seeded stream in one fixed way: every seeded search's proposals depend on it."""
from __future__ import annotations

import random

from compiler_core.space import Constraint, Knob, Space
from tuner_server.search.knob_walk import config_id, draw_unseen

# knobs named out of alphabetical order, so a config's id (sorted by name) differs from its knob order
SPACE = Space((Knob("vec", (1, 2, 4, 8)), Knob("tile", (16, 32, 64)), Knob("order", ("ij", "ji")),
               Knob("alpha", (0, 1, 2, 3, 4))),
              (Constraint("vec * alpha <= 8", lambda c: c["vec"] * c["alpha"] <= 8),))


def reference_draws(space: Space, seen: set[tuple], rng: random.Random, n: int) -> list[dict]:
    """The contract: one `rng.choice` per knob in the space's order per draw, at most 20 n + 64 draws; a draw is kept
    when the space admits it and its id is neither seen nor drawn before."""
    out: list[dict] = []
    for _ in range(20 * n + 64):
        if len(out) == n:
            break
        config = {k.name: rng.choice(k.choices) for k in space.knobs}
        if space.admits(config) and config_id(config) not in seen | {config_id(c) for c in out}:
            out.append(config)
    return out


def test_draws_follow_the_seeded_stream_as_the_contract_says():
    for seed in range(4):
        seen = {config_id(c) for c in reference_draws(SPACE, set(), random.Random(100 + seed), 12)}
        ours, theirs = random.Random(seed), random.Random(seed)
        for n in (1, 5, 40, 200):  # 200: more than the space holds, so the draw limit ends it
            drawn = draw_unseen(SPACE, seen, ours, n)
            assert drawn == reference_draws(SPACE, seen, theirs, n)
            assert all(list(c) == [k.name for k in SPACE.knobs] for c in drawn)  # knobs in the space's order
        assert ours.random() == theirs.random()  # as many numbers taken from the stream
