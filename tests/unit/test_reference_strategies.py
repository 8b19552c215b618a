"""The reference strategies (Kernel Tuner's GA and BO, re-implemented): valid, never repeated, seeded, and searching."""
from __future__ import annotations

import random
import statistics

import pytest

from compiler_core.space import Constraint, Knob, Space, config_key
from tuner_server.replay import run_strategy
from tuner_server.search import Observation, StrategyContext, make_strategy
from tuner_server.search.genetic import CROSSOVERS, GeneticAlgorithm
from tuner_server.synthetic_spaces import SyntheticSpec, synthetic_table

CONSTRAINED = Space(
    knobs=(Knob("tile", (4, 8, 16, 32, 64)), Knob("unroll", (1, 2, 4, 8)), Knob("vec", (1, 2, 4)),
           Knob("order", ("ij", "ji"))),
    constraints=(Constraint("tile x unroll <= 128", lambda c: c["tile"] * c["unroll"] <= 128),
                 Constraint("vec 4 needs tile >= 16", lambda c: c["vec"] < 4 or c["tile"] >= 16)),
)
SMOOTH = synthetic_table(SyntheticSpec("smooth", seed=11, configs=1500, knobs=8))
INVALID = synthetic_table(SyntheticSpec("invalid", seed=12, configs=1500, knobs=9))


def runtime(c: dict) -> float:
    return 1.0 + abs(c["tile"] - 16) / 16 + abs(c["unroll"] - 4) / 4 + (c["order"] == "ij") * 0.5 + (4 - c["vec"]) / 8


@pytest.mark.parametrize("name", ["ga", "bo"])
def test_only_valid_configs_never_twice_until_the_space_is_exhausted(name):
    search = make_strategy(name, StrategyContext(CONSTRAINED, seed=3))
    proposed = []
    while batch := search.propose(5):
        assert all(CONSTRAINED.is_valid(c) for c in batch)
        proposed += batch
        search.observe([Observation(c, runtime(c) if c["order"] == "ji" or c["tile"] != 64 else None,
                                    "OK" if c["order"] == "ji" or c["tile"] != 64 else "COMPILE_ERROR")
                        for c in batch])
    keys = [config_key(c) for c in proposed]
    assert len(keys) == len(set(keys)) == len(list(CONSTRAINED))


@pytest.mark.parametrize("name", ["ga", "bo"])
def test_failures_are_measured_once_and_history_is_never_proposed(name):
    history = [INVALID.measure(c) for c in list(INVALID.space)[:40]]
    observed = run_strategy(INVALID, name, 200, seed=1, batch=8)
    keys = [config_key(o.config) for o in observed]
    assert len(keys) == len(set(keys)) == 200
    assert any(o.status != "OK" for o in observed)  # the failing regions are met, and not measured again
    search = make_strategy(name, StrategyContext(INVALID.space, seed=1, history=history))
    banned = {config_key(o.config) for o in history}
    for _ in range(10):
        batch = search.propose(8)
        assert not banned & {config_key(c) for c in batch}
        search.observe([INVALID.measure(c) for c in batch])


@pytest.mark.parametrize("name", ["ga", "bo"])
def test_deterministic_per_seed(name):
    runs = [[config_key(o.config) for o in run_strategy(SMOOTH, name, 80, seed=s, batch=8)] for s in (4, 4, 5)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


@pytest.mark.parametrize("name", ["ga", "bo"])
def test_searching_beats_random_sampling(name):
    """Both use what they measured: after 120 measurements their best is better than random's, over 5 seeds."""
    def best(strategy, seed):
        return min(o.median_s for o in run_strategy(SMOOTH, strategy, 120, seed=seed, batch=8) if o.status == "OK")

    ours = statistics.median(best(name, s) for s in range(5))
    rand = statistics.median(best("random", s) for s in range(5))
    assert ours < rand, (ours, rand)


@pytest.mark.parametrize("method", sorted(CROSSOVERS))
def test_crossover_children_take_each_gene_from_a_parent(method):
    rng = random.Random(0)
    a, b = list("abcdefgh"), list("ABCDEFGH")
    for _ in range(20):
        c, d = CROSSOVERS[method](a, b, rng)
        assert all(x in (p, q) for x, p, q in zip(c, a, b, strict=True))
        assert all({x, y} == {p, q} for x, y, p, q in zip(c, d, a, b, strict=True))  # genes are swapped, not lost
    if method == "disruptive_uniform":
        c, _ = CROSSOVERS[method](a, b, rng)
        assert sum(x != p for x, p in zip(c, a, strict=True)) == 4  # half the differing genes, rounded up


def test_ga_breeds_from_the_fastest_of_a_generation():
    """Rank-biased selection: the generation bred from a measured one sits closer to its fastest members."""
    table = SMOOTH
    gains = []
    for seed in range(4):
        ga = GeneticAlgorithm(StrategyContext(table.space, seed=seed, options={"mutation_chance": 1000}))
        first = ga.propose(26) + ga.propose(26)
        ga.observe([table.measure(c) for c in first])
        second = ga.propose(26)
        ok = lambda cs: [table.measure(c).median_s for c in cs if table.measure(c).status == "OK"]  # noqa: E731
        gains.append(statistics.median(ok(first)) - statistics.median(ok(second)))
    assert statistics.median(gains) > 0, gains


def test_option_errors_name_the_choices():
    with pytest.raises(ValueError, match="allowed values"):
        make_strategy("ga", StrategyContext(CONSTRAINED, options={"method": "three_point"}))
    with pytest.raises(ValueError, match="unknown option"):
        make_strategy("bo", StrategyContext(CONSTRAINED, options={"kernel": "rbf"}))
