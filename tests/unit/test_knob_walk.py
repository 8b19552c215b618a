"""Random unseen draws read the seeded stream in one fixed way: every seeded search's proposals depend on it. Config
ids are the farm's config identity; a diverse pick scans its candidates a bounded number of times."""
from __future__ import annotations

import random

from compiler_core.space import Constraint, Knob, Space, config_key
from tuner_server.search.knob_walk import config_id, draw_unseen, hamming, pick_diverse

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


def test_config_ids_tell_apart_what_config_keys_and_the_space_tell_apart():
    """True == 1 and 1.0 == 1 in Python; a config key (what the database stores) and `Space.is_valid` tell them
    apart, and so does the in-memory id every strategy's seen set holds."""
    configs = [{"vec": 1, "tile": 16}, {"vec": True, "tile": 16}, {"vec": 1.0, "tile": 16}, {"tile": 16, "vec": 1}]
    assert len({config_key(c) for c in configs}) == len({config_id(c) for c in configs}) == 3
    assert config_id(configs[0]) == config_id(configs[3])  # knob order does not matter
    space = Space((Knob("vec", (1, 2)), Knob("tile", (16,))))
    assert [space.is_valid(c) for c in configs] == [True, False, False, True]
    seen = {config_id(configs[1]), config_id(configs[2])}  # told the True and 1.0 configs: vec=1 is still unseen
    drawn = draw_unseen(space, seen, random.Random(0), 5)
    assert sorted(c["vec"] for c in drawn) == [1, 2] and all(type(c["vec"]) is int for c in drawn)


class Scans(list):
    """A ranked list that counts how often it is scanned, and fails once that passes `limit`."""

    def __init__(self, items, limit: int):
        super().__init__(items)
        self.scans, self.limit = 0, limit

    def __iter__(self):
        self.scans += 1
        assert self.scans <= self.limit, f"scanned {self.scans} times"
        return super().__iter__()


def test_a_diverse_pick_scans_at_most_knobs_plus_one_times_whatever_the_distance():
    """Two configs differ in at most all their knobs, so a larger distance means that many: relaxing it one step a
    scan from 10^12 would never end."""
    ranked = [c for c in SPACE if c["alpha"] < 2][:12]
    knobs = len(SPACE.knobs)
    for n in (1, 5, 40):
        expected = pick_diverse(ranked, n, knobs)
        for huge in (knobs + 1, 64, 10**12):
            scanned = Scans(ranked, limit=knobs + 2)  # the knob count's scans, and one for the knobs themselves
            assert pick_diverse(scanned, n, huge) == expected
    picked = pick_diverse(ranked, 3, 2)
    assert all(hamming(a, b) >= 2 for i, a in enumerate(picked) for b in picked[i + 1:])
    assert pick_diverse(ranked, 3, 10**12, taken=ranked[:1])[0] not in ranked[:1]
