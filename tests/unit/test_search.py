"""Search strategies: no repeats, only valid configs, exact exhaustion, bounded work, determinism, restart, options."""
from __future__ import annotations

import random

import pytest

from compiler_core import config_key, cpu_target, get_space, make_workload
from compiler_core.space import Constraint, Knob, Space
from tuner_server.replay import run_strategy, table_from_trials
from tuner_server.search import (
    STRATEGIES,
    Observation,
    Option,
    SearchStrategy,
    StrategyContext,
    best,
    check_options,
    describe_strategies,
    make_strategy,
    parse_options,
    random_search,
)
from tuner_server.search.knob_walk import config_id
from tuner_server.search.listing import LIST_LIMIT, UnseenDraws, listing_cost

SMALL = Space(
    knobs=(Knob("tile", (8, 16, 32, 64)), Knob("unroll", (1, 2, 4)), Knob("simd", (0, 1))),
    constraints=(Constraint("tile x unroll <= 128", lambda c: c["tile"] * c["unroll"] <= 128),
                 Constraint("simd needs tile >= 16", lambda c: not c["simd"] or c["tile"] >= 16)),
)
ONE = Space(knobs=(Knob("a", (1, 2, 3)), Knob("b", (0, 1))),
            constraints=(Constraint("only a=2, b=1", lambda c: c == {"a": 2, "b": 1}),))
REAL = get_space(make_workload("elementwise", rows=64, cols=64, expr="relu(x)"), cpu_target(isa="avx2"))
VARIANTS = [("random", {}), ("grid", {}), ("grid", {"stride": 3}), ("grid", {"shuffle_seed": 7}),
            ("grid", {"shuffle_seed": 7, "stride": 4})]
SPACES = {"small": SMALL, "real": REAL}


def strategy(variant, space, seed=0, history=()):
    name, options = variant
    return make_strategy(name, StrategyContext(space, seed=seed, options=dict(options), history=list(history)))


def drain(s, batch, total=None):
    """The configs `s` proposes in batches of `batch`, until it returns [] (or `total` are in)."""
    out = []
    while (total is None or len(out) < total) and (proposals := s.propose(batch)):
        assert len(proposals) <= batch
        out.extend(proposals)
    return out


def keys(configs):
    return [config_key(c) for c in configs]


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
@pytest.mark.parametrize("space_name", SPACES)
def test_valid_no_repeats_and_exact_exhaustion(variant, space_name):
    space = SPACES[space_name]
    s = strategy(variant, space)
    assert isinstance(s, SearchStrategy)
    proposed = drain(s, 5)
    assert all(space.is_valid(c) for c in proposed)
    assert len(set(keys(proposed))) == len(proposed)
    assert sorted(keys(proposed)) == sorted(keys(space))
    assert s.propose(5) == [] and s.propose(1) == []


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_budget_larger_than_the_space_returns_fewer(variant):
    s = strategy(variant, REAL)
    assert sorted(keys(s.propose(1000))) == sorted(keys(REAL)) and s.propose(1000) == []


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_space_with_exactly_one_valid_config(variant):
    s = strategy(variant, ONE)
    assert s.propose(10) == [{"a": 2, "b": 1}]
    assert s.propose(10) == []


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_all_invalid_space_returns_nothing_with_bounded_work(variant):
    calls = []
    never = Constraint("never", lambda c: calls.append(1) is not None)
    space = Space(knobs=(Knob("x", tuple(range(50))), Knob("y", tuple(range(40)))), constraints=(never,))
    s = strategy(variant, space)
    assert s.propose(10) == [] and s.propose(10) == []
    assert len(calls) <= random_search.MAX_MISSES + 2 * space.size
    assert strategy(variant, Space(knobs=(Knob("x", (1, 2)), Knob("y", ())))).propose(4) == []  # empty product


def test_random_on_a_product_too_large_to_list_stays_bounded():
    calls = []
    huge = tuple(Knob(f"k{i}", tuple(range(100))) for i in range(4))
    invalid = Space(knobs=huge, constraints=(Constraint("never", lambda c: calls.append(1) is not None),))
    assert invalid.size > LIST_LIMIT
    assert strategy(("random", {}), invalid).propose(3) == []
    assert len(calls) <= random_search.MAX_MISSES_UNLISTED
    proposed = drain(strategy(("random", {}), Space(knobs=huge)), 4, 2000)
    assert len(set(keys(proposed))) == 2000


@pytest.mark.parametrize("variant", [("random", {}), ("grid", {}), ("ga", {}), ("bo", {}), ("model", {})], ids=str)
def test_a_replay_table_over_a_vast_product_is_searched_to_its_last_config(variant):
    # 300 recorded configs of 2^24: random draws from the product almost never hit one, so a strategy must deal from
    # the table's own listing (listing_cost), not give up because the product is too large to walk
    rng = random.Random(5)
    picked = {tuple(rng.randrange(2) for _ in range(24)) for _ in range(300)}
    table = table_from_trials({"name": "sparse"}, [
        {"config": {f"k{i}": v for i, v in enumerate(bits)}, "median_s": 1e-4 * (1 + sum(bits))} for bits in picked])
    assert table.space.size == 1 << 24
    measured = run_strategy(table, variant[0], budget=len(table) + 8, batch=32, options=variant[1])
    assert len({config_key(o.config) for o in measured}) == len(measured) == len(table)


def test_drawing_many_configs_from_a_sparse_listable_space_walks_no_more_than_a_listing_would():
    # 60,000 configs in the product, 10 % valid: 5,000 distinct draws by rejection would take over 100,000 tries;
    # once the tries match the listing's walk (60,000), listing the space is cheaper, and the draw comes from it
    calls = []
    sparse = Constraint("10 % valid", lambda c: calls.append(1) is None and (c["a"] + c["b"]) % 10 == 0)
    space = Space(knobs=(Knob("a", tuple(range(300))), Knob("b", tuple(range(200)))), constraints=(sparse,))
    assert space.size == 60_000 and listing_cost(space) <= LIST_LIMIT
    drawn = UnseenDraws(space, set(), random.Random(0)).draw(5_000)
    assert len(calls) <= 2 * space.size  # the capped draws, then one walk of the product
    assert len({config_id(c) for c in drawn}) == 5_000 and all(space.is_valid(c) for c in drawn)


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_same_seed_same_sequence(variant):
    a, b = strategy(variant, REAL, seed=3), strategy(variant, REAL, seed=3)
    assert [a.propose(4) for _ in range(3)] == [b.propose(4) for _ in range(3)]


def test_random_depends_on_the_seed_and_grid_follows_the_space_order():
    assert drain(strategy(("random", {}), REAL, seed=1), 4) != drain(strategy(("random", {}), REAL, seed=2), 4)
    assert drain(strategy(("grid", {}), REAL, seed=1), 4) == list(REAL)
    ordered = list(SMALL)
    assert strategy(("grid", {"stride": 3}), SMALL).propose(len(ordered[::3])) == ordered[::3]
    assert drain(strategy(("grid", {"shuffle_seed": 1}), REAL), 4) != list(REAL)


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_rebuilt_from_history_continues_as_if_it_had_observed_it(variant):
    first = strategy(variant, REAL, seed=5)
    done = first.propose(7) + first.propose(3)
    statuses = ["OK", "COMPILE_ERROR", "TIMEOUT", "WRONG_ANSWER", "AGENT_LOST"]
    history = [Observation(c, 1e-3 * i if i % 2 else None, statuses[i % 5]) for i, c in enumerate(done)]
    rebuilt = strategy(variant, REAL, seed=5, history=history)
    told = strategy(variant, REAL, seed=5)
    told.observe(history)
    rest = drain(rebuilt, 4)
    assert rest == drain(told, 4)
    assert not set(keys(rest)) & set(keys(done))
    assert sorted(keys(rest + done)) == sorted(keys(REAL))


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_configs_observed_between_proposals_are_not_proposed(variant):
    rare = Space(knobs=(Knob("x", tuple(range(100))), Knob("y", tuple(range(100)))),
                 constraints=(Constraint("x == y < 3", lambda c: c["x"] == c["y"] < 3),))  # random lists it
    s = strategy(variant, rare)
    first = s.propose(1)
    rest = [c for c in rare if c not in first]
    s.observe([Observation(rest[0], 0.5, "TIMEOUT")])
    assert s.propose(5) == rest[1:] and s.propose(5) == []


OUTSIDE_SMALL = [  # OK results of configs outside SMALL, faster than any inside: a surrogate fed them would crash or
    {"tile": 128, "unroll": 1, "simd": 0},  # a value not among the knob's choices
    {"tile": 16, "unroll": 1},  # a knob missing
    {"tile": 16, "unroll": 1, "simd": 0, "vec": 4},  # a knob the space does not have
    {"tile": 16, "unroll": 1, "simd": True},  # True == 1 in Python, but not the config with simd=1
    {"tile": 16, "unroll": 2.0, "simd": 1},  # nor is 2.0 unroll=2
    {"tile": 64, "unroll": 4, "simd": 1},  # the knobs' choices, breaking a constraint
]


@pytest.mark.parametrize("name", STRATEGIES)
@pytest.mark.parametrize("when", ["history", "observed"])
def test_results_outside_the_space_count_as_seen_and_inform_nothing(name, when):
    """The ask/tell contract: a result of any config may be told; one outside the space is only seen. Every
    strategy still walks the whole space, each config once (a config told with True is not the one with 1)."""
    told = [Observation(c, 1e-9) for c in OUTSIDE_SMALL]
    s = make_strategy(name, StrategyContext(SMALL, seed=2, history=told if when == "history" else []))
    if when == "observed":
        s.observe(told)
    proposed = []
    while batch := s.propose(3):
        proposed += batch
        s.observe([Observation(c, 1e-3 * (1 + c["tile"] / 64 + c["unroll"] / 4 + c["simd"])) for c in batch])
        s.observe(told[:1])  # told again between rounds: still nothing to learn
    assert sorted(keys(proposed)) == sorted(keys(SMALL))


@pytest.mark.parametrize("name", STRATEGIES)
def test_batch_size_checks(name):
    s = make_strategy(name, StrategyContext(SMALL))
    assert s.propose(0) == []
    with pytest.raises(ValueError, match="non-negative int"):
        s.propose(-1)


def test_best_ignores_failures_and_missing_runtimes():
    obs = [Observation({"a": 1}, 0.1, "WRONG_ANSWER"), Observation({"a": 2}, None, "OK"),
           Observation({"a": 3}, 0.5), Observation({"a": 4}, 0.3), Observation({"a": 5}, 0.3)]
    assert best(obs).config == {"a": 4}
    assert best([]) is None and best(obs[:2]) is None
    with pytest.raises(ValueError, match="unknown trial status 'FAST'; known: OK, COMPILE_ERROR"):
        Observation({"a": 1}, 0.1, "FAST")


# ---- options -----------------------------------------------------------------------------------------------------
def test_unknown_strategy_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown search strategy 'anneal'; known: bo, ga, grid, model, random"):
        make_strategy("anneal", StrategyContext(SMALL))


@pytest.mark.parametrize("options, message", [
    ({"strid": 2}, r"unknown option\(s\) 'strid'; known: shuffle_seed, stride"),
    ({"stride": "3"}, r"option 'stride' must be int, got str '3'"),
    ({"stride": True}, r"option 'stride' must be int, got bool True"),
    ({"stride": 0}, r"option 'stride'=0 must be at least 1"),
    ({"stride": None}, r"option 'stride' must not be None"),
    ({"shuffle_seed": 1.5}, r"option 'shuffle_seed' must be int"),
    ({"shuffle_seed": -1}, r"option 'shuffle_seed'=-1 must be at least 0"),
    ({"stride": 2**62}, r"option 'stride'=4611686018427387904 must be at most 2147483647"),
])
def test_grid_option_errors_name_the_problem(options, message):
    with pytest.raises(ValueError, match=message):
        make_strategy("grid", StrategyContext(SMALL, options=options))
    with pytest.raises(ValueError, match=message):
        check_options("grid", options)


def test_options_defaults_choices_and_several_problems_at_once():
    assert check_options("grid", None) == {"shuffle_seed": None, "stride": 1}
    assert check_options("grid", {"shuffle_seed": None, "stride": 2}) == {"shuffle_seed": None, "stride": 2}
    with pytest.raises(ValueError, match=r"unknown option\(s\) 'stride'; known: \(none\)"):
        check_options("random", {"stride": 2})
    table = {"mode": Option(str, "fast", "how", choices=("fast", "slow")), "eps": (float, 0.1, "exploration")}
    assert parse_options(table, {"eps": 1}) == {"mode": "fast", "eps": 1.0}
    with pytest.raises(ValueError, match=r"'mode'='medium' not allowed; allowed values: 'fast', 'slow'"):
        parse_options(table, {"mode": "medium"})
    with pytest.raises(ValueError, match=r"unknown option\(s\) 'x', 'y'; known: eps, mode; option 'eps' must be"):
        parse_options(table, {"x": 1, "y": 2, "eps": "big"})
    with pytest.raises(ValueError, match="must be a mapping"):
        parse_options(table, [("eps", 1.0)])


@pytest.mark.parametrize("strategy, options, message", [
    ("model", {"trust_memory": 2.0}, r"option 'trust_memory'=2.0 must be at most 1.0"),
    ("model", {"epsilon": 1.5, "sweep": 3}, r"'sweep'=3 must be at most 1.0; option 'epsilon'=1.5 must be at most 1.0"),
    ("model", {"members": 100_000}, r"option 'members'=100000 must be at most 32"),
    ("model", {"late_candidates": 10**11}, r"option 'late_candidates'=100000000000 must be at most 32768"),
    ("model", {"min_distance": 10**12}, r"option 'min_distance'=1000000000000 must be at most 64"),
    ("model", {"basin_distance": 10**6}, r"option 'basin_distance'=1000000 must be at most 64"),
    ("model", {"kappa": 1e308}, r"option 'kappa'=1e\+308 must be at most 100.0"),
    ("bo", {"candidates": 10**9}, r"option 'candidates'=1000000000 must be at most 65536"),
    ("ga", {"popsize": 10**6}, r"option 'popsize'=1000000 must be at most 4096"),
])
def test_shares_and_a_rounds_work_are_bounded_when_a_job_is_submitted(strategy, options, message):
    with pytest.raises(ValueError, match=message):  # check_options: what job submission runs, before any space
        check_options(strategy, options)
    at_the_bound = {name: Option(*STRATEGIES[strategy].OPTIONS[name]).maximum for name in options}
    assert check_options(strategy, at_the_bound)  # the bound itself is allowed


def test_describe_strategies_lists_every_strategy_with_its_options():
    described = describe_strategies()
    assert set(described) == set(STRATEGIES)
    assert described["grid"]["options"]["stride"] == {
        "type": "int", "default": 1, "optional": False, "minimum": 1, "maximum": 2**31 - 1,
        "doc": "visit every stride-th config first, then fill in the skipped ones (a stride past the space's size is "
               "its plain order)"}
    assert described["random"]["options"] == {} and described["random"]["doc"]
    assert described["model"]["options"]["sweep"]["maximum"] == 1.0  # what the REST docs show of a bound
