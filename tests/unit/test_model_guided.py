"""Model-guided search (and every other strategy) against small replay tables: no GPU, no network, no compiler."""
from __future__ import annotations

import collections
import itertools
import math
import random
import statistics

import pytest

import compiler_core as cc
from compiler_core.space import Knob, Space, config_key
from tuner_server.cost_model.featurize import KnobFeatures
from tuner_server.replay import ReplayTable, run_strategy, table_from_trials
from tuner_server.search import STRATEGIES, Observation, StrategyContext, TransferTrial, make_strategy
from tuner_server.search.knob_walk import hamming, pick_diverse, space_filling
from tuner_server.search.model_guided_options import GP_REGROW_TRANSFER, GP_UNTIL, JOINT_UNTIL, REFIT_GROWTH_TRANSFER
from tuner_server.synthetic_spaces import SyntheticSpec, synthetic_table

KNOBS = {"tile": (4, 8, 16, 32, 64), "unroll": (1, 2, 4, 8), "order": ("ij", "ji"), "vec": (1, 2, 4)}


def runtime(c: dict, best_tile: int = 16) -> float:
    """A smooth landscape with one optimum (tile=best_tile, unroll=4, ji, vec=4)."""
    return (1.0 + (math.log2(c["tile"]) - math.log2(best_tile)) ** 2 + (math.log2(c["unroll"]) - 2) ** 2
            + (c["order"] == "ij") * 1.5 + (4 - c["vec"]) * 0.3)


def toy_table(failing=lambda c: False, best_tile: int = 16, name: str = "toy") -> ReplayTable:
    trials = []
    for values in itertools.product(*KNOBS.values()):
        c = dict(zip(KNOBS, values, strict=True))
        bad = failing(c)
        trials.append({"config": c, "median_s": None if bad else runtime(c, best_tile) * 1e-3,
                       "status": "COMPILE_ERROR" if bad else "OK"})
    return table_from_trials({"name": name, "workload_key": None}, trials)


TABLE = toy_table(failing=lambda c: c["tile"] * c["unroll"] > 256)  # 120 configs, some failing


def reach(observed: list[Observation], optimum: float) -> int:
    best = math.inf
    for i, o in enumerate(observed, 1):
        if o.status == "OK":
            best = min(best, o.median_s)
        if best <= optimum * 1.05:
            return i
    return len(observed) + 1


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_replays_within_budget_without_repeats(strategy):
    observed = run_strategy(TABLE, strategy, budget=40, seed=1, batch=8)
    keys = [config_key(o.config) for o in observed]
    assert len(keys) == 40 == len(set(keys))
    assert all(TABLE.space.is_valid(o.config) for o in observed)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_budget_larger_than_the_space_covers_it_once(strategy):
    observed = run_strategy(TABLE, strategy, budget=10 * len(TABLE), seed=2, batch=16)
    assert sorted(config_key(o.config) for o in observed) == sorted(TABLE.results)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_space_with_one_valid_config(strategy):
    table = table_from_trials({}, [{"config": {"tile": 8, "vec": 1}, "median_s": 1e-3, "status": "OK"}])
    search = make_strategy(strategy, StrategyContext(table.space, seed=0))
    assert search.propose(4) == [{"tile": 8, "vec": 1}]
    search.observe([table.measure({"tile": 8, "vec": 1})])
    assert search.propose(4) == []


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_all_failing_space_is_walked_once_then_ends(strategy):
    table = toy_table(failing=lambda c: True)
    observed = run_strategy(table, strategy, budget=1000, seed=0, batch=8)
    assert len(observed) == len(table) and table.optimum is None


def test_never_reproposes_history_or_observed_configs():
    history = [TABLE.measure(c) for c in list(TABLE.space)[:30]]
    search = make_strategy("model", StrategyContext(TABLE.space, seed=4, history=history))
    outside = list(TABLE.space)[-5:]
    search.observe([TABLE.measure(c) for c in outside])  # measured elsewhere, never proposed here
    banned = {config_key(o.config) for o in history} | {config_key(c) for c in outside}
    proposed = []
    while batch := search.propose(7):
        proposed += [config_key(c) for c in batch]
        search.observe([TABLE.measure(c) for c in batch])
    assert len(proposed) == len(set(proposed)) == len(TABLE) - len(banned)
    assert not banned & set(proposed)


def test_deterministic_by_seed():
    runs = [[config_key(o.config) for o in run_strategy(TABLE, "model", 48, seed=s, batch=6)] for s in (5, 5, 6)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_batches_are_diverse():
    # min_distance holds between the ensemble's picks and sweeps; the GPs' picks are spread by their kriging
    # believers instead (tests/unit/test_portfolio.py), so this checks the ensemble's batches without them
    search = make_strategy("model", StrategyContext(TABLE.space, seed=0, options={
        "min_distance": 2, "epsilon": 0.0, "gp_until": 0, "smooth": 0.0}))
    for _ in range(4):
        batch = search.propose(6)
        assert all(hamming(a, b) >= 2 for a, b in itertools.combinations(batch, 2))
        search.observe([TABLE.measure(c) for c in batch])


def test_model_beats_random_on_a_smooth_space():
    optimum = TABLE.optimum
    model = [reach(run_strategy(TABLE, "model", 120, seed=s, batch=4), optimum) for s in range(5)]
    rand = [reach(run_strategy(TABLE, "random", 120, seed=s, batch=4), optimum) for s in range(5)]
    assert statistics.median(model) < statistics.median(rand), (model, rand)


def test_transfer_from_another_table_finds_the_optimum_sooner():
    # a related workload (another shape of the kernel: every runtime 1.7x, nothing failing) where the same tile wins;
    # one whose optimum moves a tile step tells this 120-config toy nothing the job's first rounds do not find as fast
    other = toy_table(name="other")
    transfer = [TransferTrial("other", o.config, 1.7 * o.median_s, o.status) for o in other.results.values()]
    optimum = TABLE.optimum
    cold = [reach(run_strategy(TABLE, "model", 120, seed=s, batch=4), optimum) for s in range(5)]
    warm = [reach(run_strategy(TABLE, "model", 120, seed=s, batch=4, transfer=transfer), optimum) for s in range(5)]
    assert statistics.median(warm) < statistics.median(cold) and statistics.mean(warm) < statistics.mean(cold), \
        (warm, cold)
    no_transfer = run_strategy(TABLE, "model", 12, seed=0, batch=4, options={"transfer": False}, transfer=transfer)
    assert [o.config for o in no_transfer] == [o.config for o in run_strategy(TABLE, "model", 12, seed=0, batch=4)]


def test_a_job_with_a_transfer_model_keeps_the_trust_shares_from_the_first_batch():
    other = toy_table(best_tile=32, name="other")
    transfer = [TransferTrial("other", o.config, o.median_s, o.status) for o in other.results.values()]
    warm = make_strategy("model", StrategyContext(TABLE.space, seed=0, transfer=transfer))
    cold = make_strategy("model", StrategyContext(TABLE.space, seed=0))
    assert warm.options["joint_until"] == 0 and cold.options["joint_until"] == JOINT_UNTIL == 48
    assert warm.options["gp_until"] == warm.options["gp_settle"] == 128 and cold.options["gp_until"] == GP_UNTIL == 256
    assert warm.options["gp_regrow"] == GP_REGROW_TRANSFER == 0.25 and cold.options["gp_regrow"] == 0.0
    assert warm.options["refit_growth"] == REFIT_GROWTH_TRANSFER == 0.4
    assert cold.cheap and cold.options["refit_growth"] == 0.0  # knob features: refitted every round
    told = make_strategy("model", StrategyContext(TABLE.space, seed=0, transfer=transfer, options={"joint_until": 16}))
    assert told.options["joint_until"] == 16  # said explicitly: kept


def test_patience_stops_proposing():
    search = make_strategy("model", StrategyContext(TABLE.space, seed=0, options={"patience": 5}))
    total = 0
    while batch := search.propose(4):
        search.observe([TABLE.measure(c) for c in batch])
        total += len(batch)
    assert search.stopped and total < len(TABLE)


def test_option_errors():
    with pytest.raises(ValueError, match="at most 1"):
        make_strategy("model", StrategyContext(TABLE.space, options={"epsilon": 1.5}))
    with pytest.raises(ValueError, match="objective"):
        make_strategy("model", StrategyContext(TABLE.space, options={"objective": "regression"}))


def test_a_distance_beyond_the_spaces_knobs_counts_as_all_of_them():
    """`min_distance` up to its maximum is accepted and clamped to the space's 4 knobs (two configs differ in no
    more): the batches are those of min_distance 4."""
    def batches(min_distance):
        search = make_strategy("model", StrategyContext(TABLE.space, seed=3, options={"min_distance": min_distance}))
        out = []
        for _ in range(3):
            out.append(search.propose(6))
            search.observe([TABLE.measure(c) for c in out[-1]])
        return search.options["min_distance"], out

    assert batches(64) == batches(4) and batches(64)[0] == 4
    assert batches(3)[0] == 3


def test_large_space_is_annealed_with_a_bounded_feature_budget():
    """A product too large to list: annealing plus random coverage, scored by the model."""
    knobs = tuple(Knob(f"k{i}", tuple(range(10))) for i in range(6))  # 10^6 configs, never listed
    space = Space(knobs)

    def measure(c):
        return Observation(c, 1.0 + sum((v - 7) ** 2 for v in c.values()) * 1e-3)

    search = make_strategy("model", StrategyContext(space, seed=0, options={"feature_budget": 4}))
    observed = []
    for _ in range(12):
        batch = search.propose(8)
        assert len(batch) == 8 and all(space.is_valid(c) for c in batch)
        observed += [measure(c) for c in batch]
        search.observe(observed[-8:])
    assert len({config_key(o.config) for o in observed}) == 96
    first, last = observed[:16], observed[-16:]
    assert statistics.median(o.median_s for o in last) < statistics.median(o.median_s for o in first)


def test_lowered_features_on_a_real_space():
    """With a workload and target the model scores compiler_core's lowered-IR features."""
    w = cc.make_workload("softmax", {"rows": 64, "cols": 256})
    target = cc.cpu_target(isa="avx2", cores=1)
    trials = [{"config": c, "median_s": (1 + (c["vector"] == "simd") + 0.1 * c["accumulators"]) * 1e-4,
               "status": "OK"} for c in cc.get_space(w, target)]
    table = table_from_trials({"workload_key": w.key, "target": {**target.__dict__}}, trials)
    observed = run_strategy(table, "model", 24, seed=0, batch=8, options={"own_features": "lowered"})
    assert len({config_key(o.config) for o in observed}) == 24
    assert min(o.median_s for o in observed) == table.optimum


def _space_filling_plainly(candidates, n, rng, taken=()):
    """space_filling's rule written plainly (Python distances per pair), the reference its arrays must match."""
    pool = list(candidates)
    rng.shuffle(pool)
    chosen, counts = [], collections.Counter(item for c in taken for item in c.items())
    nearest = [min((hamming(c, t) for t in taken), default=len(c) + 1) for c in pool]
    while pool and len(chosen) < max(n, 0):
        merits = [(d, -sum(counts[item] for item in c.items())) for d, c in zip(nearest, pool, strict=True)]
        best = max(range(len(pool)), key=merits.__getitem__)
        pick = pool.pop(best)
        nearest.pop(best)
        chosen.append(pick)
        counts.update(pick.items())
        nearest = [min(d, hamming(c, pick)) for d, c in zip(nearest, pool, strict=True)]
    return chosen


def test_space_filling_follows_its_rule_exactly():
    """Same picks as the plain rule, with ties, repeated values, knobs some configs lack and taken configs."""
    rng = random.Random(7)
    values = [1, 2, 4, True, None, "a", 0.5]
    for _ in range(400):
        knobs = range(rng.randint(0, 5))
        pool, taken = ([{f"k{i}": rng.choice(values) for i in knobs if rng.random() > 0.15} for _ in range(size)]
                       for size in (rng.randint(0, 25), rng.choice([0, 2, 15])))
        n, seed = rng.randint(-1, 10), rng.randint(0, 999)
        assert space_filling(pool, n, random.Random(seed), taken) == \
            _space_filling_plainly(pool, n, random.Random(seed), taken)


def test_knob_walk_helpers():
    configs = list(TABLE.space)
    spread = space_filling(configs, 5, random.Random(0))
    assert len({c["tile"] for c in spread}) == 5  # every tile shows up in five picks
    ranked = sorted(configs, key=lambda c: TABLE.measure(c).median_s or math.inf)
    picked = pick_diverse(ranked, 4, min_distance=3)
    assert all(hamming(a, b) >= 3 for a, b in itertools.combinations(picked, 2))
    assert pick_diverse(ranked[:2], 4, min_distance=4) == ranked[:2]  # relaxed rather than short


# ---- the ensemble, the basin population, the featurizer-cost limits -------------------------------------------------
def test_ensemble_members_disagree_and_their_mean_ranks_well():
    import numpy as np

    from tuner_server.cost_model.ensemble import Ensemble

    configs = list(TABLE.space)
    X = KnobFeatures(TABLE.space)(configs)
    obs = [TABLE.measure(c) for c in configs]
    train = list(range(0, len(configs), 3))
    fit = lambda members: Ensemble(X.shape[1] * ["f"], "regression", 0, members, 40).fit(  # noqa: E731
        X[train], [obs[i].median_s for i in train], [obs[i].status for i in train])
    one, five = fit(1).member_scores(X), fit(5).member_scores(X)
    assert one.shape == (1, len(configs)) and five.shape == (5, len(configs))
    assert float(five.std(axis=0).mean()) > 0.05  # bootstrap resamples: the members disagree
    ok = [i for i, o in enumerate(obs) if o.status == "OK"]
    truth = np.argsort(np.argsort([-obs[i].median_s for i in ok]))
    guess = np.argsort(np.argsort(five.mean(axis=0)[ok]))
    assert np.corrcoef(truth, guess)[0, 1] > 0.7
    again = fit(5).member_scores(X)
    assert np.array_equal(five, again)  # seeded


def test_basin_bests_are_distinct_and_fastest_first():
    from tuner_server.search.basins import basin_bests

    obs = sorted((o for o in TABLE.results.values() if o.status == "OK"), key=lambda o: o.median_s)
    bests = basin_bests(reversed(obs), k=3, distance=3)
    assert bests[0] == obs[0].config and len(bests) == 3
    assert all(hamming(a, b) >= 3 for a, b in itertools.combinations(bests, 2))


def test_sweeps_deepen_every_basin_not_only_the_best():
    """Two measured basins far apart: a batch spends its sweep slots on one-knob neighbours of both bests."""
    table = synthetic_table(SyntheticSpec("basins", seed=5, configs=1200, knobs=8))
    configs = sorted(list(table.space), key=lambda c: table.measure(c).median_s or math.inf)
    first = configs[0]
    second = next(c for c in configs if hamming(c, first) >= 5)
    rest = [c for c in list(table.space)[::40] if hamming(c, first) > 1 and hamming(c, second) > 1]
    history = [table.measure(c) for c in [first, second, *rest]]
    search = make_strategy("model", StrategyContext(table.space, seed=0, history=history,
                                                    options={"sweep": 0.5, "epsilon": 0.0, "basin_distance": 4}))
    batch = search.propose(8)
    assert any(hamming(c, first) == 1 for c in batch) and any(hamming(c, second) == 1 for c in batch), batch
    solo = make_strategy("model", StrategyContext(table.space, seed=0, history=history,
                                                  options={"sweep": 0.5, "epsilon": 0.0, "basins": 1}))
    assert not any(hamming(c, second) == 1 for c in solo.propose(8)[:4])


def test_the_last_phase_sweeps_more_basins_drawn_from_more_configs():
    """From `late_from` observations on (the fitted GP retired), the sweeps' basin bests are up to `late_basins`
    among the `late_basin_pool` fastest configs; before it, up to `basins` among the fastest 64. The wider pool
    finds basins whose best is slower than the 64th fastest config."""
    from tuner_server.search.basins import TOP, basin_bests

    table = synthetic_table(SyntheticSpec("basins", seed=5, configs=1200, knobs=8))
    configs = list(table.space)
    best = min(configs, key=lambda c: table.measure(c).median_s or math.inf)
    near = [c for c in configs if 0 < hamming(c, best) <= 3][:120]  # the best's basin fills most of the fastest 64
    far = [c for c in configs if hamming(c, best) > 3][::4][:180]
    history = [table.measure(c) for c in [best, *near, *far]]
    assert len(history) == 301

    def bests(observed: int, **options) -> list[dict]:
        search = make_strategy("model", StrategyContext(table.space, seed=0, history=history[:observed],
                                                        options={"late_from": 256, "gp_until": 256, **options}))
        return search._bests()

    assert bests(255) == basin_bests(history[:255], 4, 4, TOP)
    late = bests(301)
    assert late == basin_bests(history, 8, 4, 256)
    assert len(late) > len(basin_bests(history, 8, 4, TOP)), "the pool of 256 should hold more basins than the 64"
    assert bests(301, late_basins=4, late_basin_pool=TOP) == basin_bests(history, 4, 4, TOP)
    assert bests(301, late_from=0) == basin_bests(history, 4, 4, TOP)  # no last phase: as before it


def test_a_stalled_search_looks_away_from_every_basin():
    """Once `stall` observations found nothing faster, `explore` of the batch lies `basin_distance` knobs or more
    from every basin best; before that, and without `stall`, the batch is what it was."""
    from tuner_server.search.basins import basin_bests

    table = synthetic_table(SyntheticSpec("basins", seed=5, configs=1200, knobs=8))
    ordered = sorted(list(table.space), key=lambda c: table.measure(c).median_s or math.inf)
    history = [table.measure(c) for c in [ordered[0], *list(table.space)[1::30]]]  # the best first: then a stall
    options = {"epsilon": 0.0, "explore": 0.5, "basin_distance": 4}

    def batch(**extra):
        context = StrategyContext(table.space, seed=0, history=history, options=options | extra)
        return make_strategy("model", context).propose(8)

    bests = basin_bests(history, 4, 4)
    far = [c for c in batch(stall=len(history) - 1) if all(hamming(c, b) >= 4 for b in bests)]
    assert len(far) >= 4, far
    assert batch(stall=len(history)) == batch()  # one observation short of a stall: no change


def test_model_finds_the_needle_of_a_small_needle_space_more_often_than_random():
    table = synthetic_table(SyntheticSpec("needle", seed=9, configs=1500, knobs=9))
    optimum = table.optimum

    def found(strategy):
        return sum(min(o.median_s for o in run_strategy(table, strategy, 150, seed=s, batch=8)
                       if o.status == "OK") == optimum for s in range(4))

    model, rand = found("model"), found("random")
    assert model > rand and model >= 2, (model, rand)


def test_limits_follow_the_featurizers_cost():
    cheap = make_strategy("model", StrategyContext(TABLE.space, seed=0))
    assert cheap.cheap and cheap.options["feature_budget"] > 10_000 and cheap.options["members"] == 5
    w = cc.make_workload("softmax", {"rows": 64, "cols": 256})
    lowered = make_strategy("model", StrategyContext(cc.get_space(w, cc.cpu_target(isa="avx2", cores=1)), seed=0,
                                                     workload_key=w.key, target=cc.cpu_target(isa="avx2", cores=1),
                                                     options={"own_features": "lowered"}))
    assert not lowered.cheap and lowered.options["feature_budget"] == 16 and lowered.options["pool_size"] == 4096
    target = cc.cpu_target(isa="avx2", cores=1)
    both = make_strategy("model", StrategyContext(cc.get_space(w, target), workload_key=w.key, target=target,
                                                  options={"own_features": "both"}))
    config = next(iter(cc.get_space(w, target)))
    row = both.features([config])[0]
    assert len(row) == len(both.features.names) == len(lowered.features.names) + len(cc.get_space(w, target).knobs)
    assert list(row[-len(config):]) == list(KnobFeatures(cc.get_space(w, target))([config])[0])
    given = make_strategy("model", StrategyContext(TABLE.space, options={"feature_budget": 3, "members": 2}))
    assert given.options["feature_budget"] == 3 and given.options["members"] == 2
