"""The model-guided strategy's surrogate portfolio: the GP's share follows the surrogate that ranked the latest
batches better, its fit stays bounded, and the strategy that uses it stays deterministic under a seed."""
from __future__ import annotations

import itertools
import math
import random
import zlib

import numpy as np
import pytest

from compiler_core.space import Knob, Space
from tuner_server.replay import context_for, run_strategy
from tuner_server.search import make_strategy
from tuner_server.search.base import Observation, parse_options
from tuner_server.search.gaussian_process import GaussianProcess, KnobCoordinates, joint_ei_batch
from tuner_server.search.knob_walk import config_id
from tuner_server.search.listing import UnseenDraws
from tuner_server.search.model_guided_options import GP_UNTIL, JOINT_UNTIL, OPTIONS
from tuner_server.search.portfolio import Portfolio
from tuner_server.search.surrogate_trust import rank_correlation
from tuner_server.synthetic_spaces import SyntheticSpec, synthetic_table

SPACE = Space((Knob("a", tuple(range(8))), Knob("b", tuple(range(8))), Knob("c", tuple(range(6)))))
CONFIGS = [dict(zip("abc", v, strict=True)) for v in itertools.product(range(8), range(8), range(6))]


def smooth(c: dict) -> float:
    """A bowl over the knobs' positions: what a GP on knob coordinates models well."""
    return 1e-3 * math.exp(((c["a"] - 5) / 4) ** 2 + ((c["b"] - 2) / 4) ** 2 + ((c["c"] - 3) / 3) ** 2)


def rough(c: dict) -> float:
    """Runtimes unrelated to the knobs' positions (a hash): no smooth surrogate ranks them."""
    return 1e-3 * (1 + zlib.crc32(repr(sorted(c.items())).encode()) / 2 ** 32)


def portfolio(**options) -> tuple[Portfolio, set[tuple]]:
    """A portfolio with the model-guided strategy's options as a job without a transfer model resolves them."""
    rng, seen = random.Random(0), set()
    resolved = parse_options(OPTIONS, {"joint_until": JOINT_UNTIL, "gp_until": GP_UNTIL, "gp_regrow": 0.0} | options)
    return Portfolio(SPACE, resolved, rng, UnseenDraws(SPACE, seen, rng)), seen


def trust_after_batches(runtime, ensemble_scores, batches: int = 6) -> Portfolio:
    """Drive a portfolio as the strategy does: fit (picks), predict a batch with both surrogates, measure it (past the
    joint rounds, where the shares follow the trust)."""
    p, seen = portfolio(joint_until=0)
    rng = random.Random(1)
    observed = [Observation(c, runtime(c)) for c in rng.sample(CONFIGS, 16)]
    seen.update(config_id(o.config) for o in observed)
    for _ in range(batches):
        p.picks(observed, 4, seen, [], {})
        batch = rng.sample([c for c in CONFIGS if config_id(c) not in seen], 8)
        p.predicted(batch, np.array([ensemble_scores(c) for c in batch]))
        for c in batch:
            seen.add(config_id(c))
            result = Observation(c, runtime(c))
            p.measured(result)
            observed.append(result)
    return p


def test_a_smooth_space_gives_the_gp_the_slots_over_an_uninformed_ensemble():
    noise = random.Random(2)
    p = trust_after_batches(smooth, lambda c: noise.random())
    assert p.judge.updates == 6
    assert p.trust["gp"] > 0.5 > p.trust["ensemble"]
    assert p.shares(16)["gp"] > 0.7  # logistic of the gap over trust_temperature (1.0)


def test_a_rough_space_gives_the_ensemble_the_slots_when_it_ranks_the_batches():
    p = trust_after_batches(rough, lambda c: -math.log(rough(c)))  # the ensemble knows the runtimes exactly
    assert p.trust["ensemble"] > 0.99 > p.trust["gp"]
    # the GP ranks hashed runtimes only by chance: its rank correlation over a few batches of 8 strays by +-0.4
    assert p.shares(16)["gp"] < 0.4
    p, seen = portfolio(trust_temperature=0.2, joint_until=0)
    observed = [Observation(c, rough(c)) for c in CONFIGS[:40]]
    p.trust.update(gp=0.0, ensemble=1.0)
    assert p.picks(observed, 8, seen, [], {}) == []  # round(0.007 * 8) == 0: the ensemble fills the batch
    p.trust.update(gp=1.0, ensemble=0.0)
    assert len(p.picks(observed, 8, seen, [], {})) == 8


def test_rank_correlation_averages_ties_and_ranks_failures_lowest():
    assert rank_correlation(np.array([1.0, 2.0, 3.0]), np.array([-math.inf, 0.0, 5.0])) == 1.0
    assert rank_correlation(np.array([3.0, 2.0, 1.0]), np.array([1.0, 2.0, 3.0])) == -1.0
    assert rank_correlation(np.ones(4), np.arange(4.0)) == 0.0  # a constant surrogate ranks nothing
    assert rank_correlation(np.array([1.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0])) == pytest.approx(0.8660254)


def test_failures_rank_slowest_in_the_trust():
    p, seen = portfolio()
    observed = [Observation(c, smooth(c)) for c in CONFIGS[::7]]
    p.picks(observed, 4, seen, [], {})
    batch = [c for c in CONFIGS[1::7]][:8]
    truth = [-math.log(smooth(c)) for c in batch]
    worst = int(np.argmin(truth))
    p.predicted(batch, np.array([t if i != worst else 1e9 for i, t in enumerate(truth)]))  # ranks it best
    for i, c in enumerate(batch):
        p.measured(Observation(c, None, "COMPILE_ERROR") if i == worst else Observation(c, smooth(c)))
    assert p.judge.updates == 1 and 0 < p.trust["ensemble"] < 1  # its top-ranked config failed: not a perfect rank


def test_the_gp_is_fitted_on_a_bounded_set_and_only_early():
    p, seen = portfolio(gp_points=64, gp_until=300, gp_settle=300, gp_candidates=100)
    observed = [Observation(c, smooth(c)) for c in random.Random(3).sample(CONFIGS, 200)]
    picks = p.picks(observed, 8, seen, [], {})
    assert len(picks) == round(p.shares(len(observed))["gp"] * 8) == 4  # nothing known yet: half the slots
    assert len(p._gp.X) == 64
    fastest = sorted(observed, key=lambda o: o.median_s)[:32]
    fitted = {tuple(row[:3]) for row in p._gp.X}  # the coordinates (the one-hot codes follow them)
    assert all(tuple(p.coords.point(o.config)) in fitted for o in fastest)
    latest = observed[-1]
    assert tuple(p.coords.point(latest.config)) in fitted
    candidates, indices = p._candidates(seen | {config_id(o.config) for o in observed}, [], 100)
    assert len(candidates) == len(indices) == 100
    assert (p.coords.at(indices) == p.coords.points(candidates)).all()
    p, seen = portfolio(gp_until=100, smooth=0.0)
    assert p.picks(observed, 8, seen, [], {}) == [] and p._gp is None  # past gp_until: no fitted GP at all


def test_the_first_rounds_score_more_candidates_at_a_bounded_cost():
    p, seen = portfolio(gp_until=128, gp_candidates=40)
    assert p._scorable(40, 128) == p._scorable(40, 250) == 40  # from gp_settle (128) on: the option's number
    assert p._scorable(40, 64) == 160  # half the points: four times the candidates, the same cost
    assert p._scorable(40, 16) == p._scorable(40, 2) == 8 * 40  # bounded
    scored = []
    candidates = p._candidates

    def counted(skip, pool, cap):
        out = candidates(skip, pool, cap)
        scored.append(len(out[0]))
        return out
    p._candidates = counted
    observed = [Observation(c, smooth(c)) for c in random.Random(4).sample(CONFIGS, 16)]
    seen.update(config_id(o.config) for o in observed)
    p.picks(observed, 8, seen, [], {})
    assert scored == [8 * 40]  # 16 points: the whole 8x sample (of 368 unseen configs)


def test_gp_picks_are_unseen_and_not_taken():
    p, seen = portfolio()
    observed = [Observation(c, smooth(c)) for c in CONFIGS[::5]]
    seen.update(config_id(o.config) for o in observed)
    taken = [CONFIGS[1], CONFIGS[2]]
    picks = p.picks(observed, 8, seen, taken, {})
    keys = {config_id(c) for c in picks}
    assert len(keys) == len(picks) == 4
    assert not keys & (seen | {config_id(c) for c in taken})


SYNTH = synthetic_table(SyntheticSpec("basins", seed=7, configs=600, knobs=8))


def test_model_guided_with_the_portfolio_is_deterministic_under_a_seed():
    runs = [[config_id(o.config) for o in run_strategy(SYNTH, "model", 96, seed=s)] for s in (5, 5, 6)]
    assert runs[0] == runs[1] != runs[2]
    without = [config_id(o.config) for o in run_strategy(SYNTH, "model", 96, seed=5,
                                                         options={"gp_until": 0, "smooth": 0.0})]
    assert without != runs[0]  # the GP proposes part of the batches


def test_past_gp_until_the_smooth_gp_keeps_its_least_share_of_the_slots():
    observed = [Observation(c, smooth(c)) for c in random.Random(4).sample(CONFIGS, 160)]
    p, seen = portfolio(gp_until=100, smooth=0.25, trust_temperature=0.2, smooth_candidates=50)
    seen.update(config_id(o.config) for o in observed)
    p.trust.update(smooth=0.0, ensemble=1.0)  # the ensemble ranks better: the floor is what the smooth GP keeps
    picks = p.picks(observed, 8, seen, [], {})
    assert p._gp is None and p._smooth is not None  # the fitted GP's time is over; the smooth one's is not
    assert len(picks) == 2 and not {config_id(c) for c in picks} & seen
    assert len(p._smooth.X) == 160 and p.options["smooth_points"] >= 160
    p.trust.update(smooth=1.0, ensemble=0.0)
    assert p.shares(len(observed))["smooth"] > 0.99  # a smooth GP that ranks better takes more than its floor
    p, seen = portfolio(gp_until=100, smooth=0.0)
    assert p.picks(observed, 8, seen, [], {}) == [] and p._smooth is None  # no floor: the ensemble's slots


def test_from_gp_settle_the_fitted_gp_shares_the_slots_with_the_smooth_gp_and_refits_its_kernel_less_often():
    rng = random.Random(8)
    observed = [Observation(c, smooth(c)) for c in rng.sample(CONFIGS, 120)]
    p, seen = portfolio(gp_settle=40, gp_refit=16, gp_until=200, smooth=0.25, trust_temperature=0.05, joint_until=0)
    seen.update(config_id(o.config) for o in observed)
    fits = []
    for n in (24, 32, 40, 48, 56, 64):  # each round's observations, as a job's batches bring them
        p.picks(observed[:n], 8, seen, [], {})
        fits.append(p._kernel_fitted_on)
        assert len(p._gp.X) == n  # the posterior takes in every observation every round
    assert fits == [24, 32, 32, 48, 48, 64]  # every round before gp_settle (40), then every gp_refit (16)
    p.trust.update(gp=1.0, smooth=0.0, ensemble=0.0)  # the fitted GP ranks best: all but the smooth GP's floor
    assert p.shares(39) == pytest.approx({"gp": 1.0, "smooth": 0.0}, abs=1e-4)
    assert p.shares(40) == pytest.approx({"gp": 0.75, "smooth": 0.25})
    assert p.shares(200) == {"gp": 0.0, "smooth": 0.5}  # past gp_until the fitted GP retires: two left, equal trust


def test_before_gp_settle_gp_regrow_spaces_the_kernel_fits_by_the_growth_of_the_observations():
    observed = [Observation(c, smooth(c)) for c in random.Random(9).sample(CONFIGS, 80)]
    fits = {}
    for regrow in (0.0, 0.25):
        p, seen = portfolio(gp_regrow=regrow, codes_from=0, joint_until=0)  # codes from the start: one set of columns
        seen.update(config_id(o.config) for o in observed)
        fits[regrow] = []
        for n in range(8, 81, 8):
            p.picks(observed[:n], 8, seen, [], {})
            fits[regrow].append(p._kernel_fitted_on)
            assert len(p._gp.X) == n  # the posterior takes in every observation every round
    assert fits[0.0] == list(range(8, 81, 8))  # every round
    assert fits[0.25] == [8, 16, 24, 32, 40, 40, 56, 56, 72, 72]  # again once a quarter more were observed


def test_the_smooth_gp_earns_trust_on_a_smooth_space_once_it_predicts():
    observed = [Observation(c, smooth(c)) for c in random.Random(5).sample(CONFIGS, 120)]
    p, seen = portfolio(gp_until=100, smooth=0.25)
    seen.update(config_id(o.config) for o in observed)
    noise = random.Random(6)
    for _ in range(3):
        p.picks(observed, 8, seen, [], {})
        batch = random.Random(len(observed)).sample([c for c in CONFIGS if config_id(c) not in seen], 8)
        p.predicted(batch, np.array([noise.random() for _ in batch]))  # an ensemble that knows nothing
        for c in batch:
            seen.add(config_id(c))
            p.measured(result := Observation(c, smooth(c)))
            observed.append(result)
    assert p.judge.updates == 3 and p.trust["smooth"] > 0.5 > p.trust["ensemble"]
    assert p.shares(len(observed))["smooth"] > 0.6


def test_smooth_trust_lets_three_surrogates_share_the_first_rounds():
    p, _ = portfolio(smooth_trust=True, joint_until=0)
    assert p.shares(0) == pytest.approx({"gp": 1 / 3, "smooth": 1 / 3})  # nothing known: a third each
    p, _ = portfolio()
    assert p.shares(48) == {"gp": 0.5, "smooth": 0.0}  # by default the smooth GP waits for gp_settle


def test_the_smooth_gp_hands_one_believer_batch_out_over_rounds():
    observed = [Observation(c, smooth(c)) for c in random.Random(7).sample(CONFIGS, 160)]
    p, seen = portfolio(gp_until=100, smooth=0.25, smooth_batch=8, trust_temperature=0.2)
    seen.update(config_id(o.config) for o in observed)
    p.trust.update(smooth=0.0, ensemble=1.0)
    first = p.picks(observed, 8, seen, [], {})
    queued = list(p._queue)
    assert len(first) == 2 and len(queued) == 6  # one batch of 8 picked; 2 handed out, 6 kept for later rounds
    seen.update(config_id(c) for c in first)
    seen.add(config_id(queued[0]))  # measured meanwhile (proposed by another part of the batch): dropped
    second = p.picks(observed, 8, seen, [queued[1]], {})  # taken by this batch already: dropped too
    assert second == queued[2:4] and p._queue == queued[4:]


def test_the_last_phase_gives_the_smooth_gp_its_share_whatever_the_trust_and_fresh_picks_each_round():
    observed = [Observation(c, smooth(c)) for c in random.Random(9).sample(CONFIGS, 160)]
    p, seen = portfolio(gp_until=100, late_from=150, late_smooth=0.5, late_batch=3, smooth=0.25, smooth_batch=8,
                        trust_temperature=0.2)
    seen.update(config_id(o.config) for o in observed)
    p.trust.update(smooth=0.0, ensemble=1.0)  # the ensemble ranks better: before the last phase, the floor only
    assert p.shares(149) == pytest.approx({"gp": 0.0, "smooth": 0.25})
    assert p.shares(150) == p.shares(400) == {"gp": 0.0, "smooth": 0.5}  # from late_from on: exactly late_smooth
    first = p.picks(observed, 8, seen, [], {})
    assert len(first) == 4 and p._queue == []  # a batch of max(4, late_batch): nothing left over for later rounds
    p, _ = portfolio(gp_until=300, late_from=150)
    assert p.shares(200)["gp"] > 0  # the fitted GP has not retired: the last phase waits for gp_until
    p, _ = portfolio(gp_until=100, late_from=0, trust_temperature=0.2)
    p.trust.update(smooth=0.0, ensemble=1.0)
    assert p.shares(400) == pytest.approx({"gp": 0.0, "smooth": 0.25})  # late_from 0: never, the floor as before


EFFECTS = {knob: random.Random(knob).sample(range(8), 8) for knob in "abc"}  # each value's own cost, in no order


def categorical(c: dict) -> float:
    """Runtimes that add a cost per knob value with no order among the values (which algorithm, which layout)."""
    return 1e-3 * math.exp(sum(0.3 * EFFECTS[knob][c[knob]] for knob in "abc"))


def test_one_hot_codes_put_every_changed_value_at_one_distance_beside_the_coordinates():
    coords, codes = KnobCoordinates(SPACE), KnobCoordinates(SPACE, onehot=0.25)
    configs = [dict(a=0, b=0, c=0), dict(a=1, b=0, c=0), dict(a=7, b=0, c=0)]
    points = codes.points(configs)
    assert codes.columns == 3 + 8 + 8 + 6 and points.shape == (3, codes.columns)
    assert np.array_equal(points[:, :3], coords.points(configs))  # the coordinates come first, unchanged
    hot = points[:, 3:]
    assert np.all(hot.sum(axis=1) == pytest.approx(3 * 0.25))  # one code per knob
    assert np.linalg.norm(hot[0] - hot[1]) == np.linalg.norm(hot[0] - hot[2])  # a near and a far value alike
    assert np.array_equal(codes.point(configs[2]), points[2])


def predict_and_measure(p: Portfolio, seen: set, observed: list, runtime, rng: random.Random, batches: int) -> None:
    for _ in range(batches):
        p.picks(observed, 4, seen, [], {})
        batch = rng.sample([c for c in CONFIGS if config_id(c) not in seen], 8)
        p.predicted(batch, np.zeros(len(batch)))
        for c in batch:
            seen.add(config_id(c))
            p.measured(result := Observation(c, runtime(c)))
            observed.append(result)


@pytest.mark.parametrize("codes_from, sees_codes", [(0, True), (1000, False)])
def test_one_hot_codes_let_the_fitted_gp_rank_values_that_have_no_order(codes_from, sees_codes):
    p, seen = portfolio(codes_from=codes_from, gp_until=1000)
    rng = random.Random(8)
    observed = [Observation(c, categorical(c)) for c in rng.sample(CONFIGS, 24)]
    seen.update(config_id(o.config) for o in observed)
    predict_and_measure(p, seen, observed, categorical, rng, 6)
    assert len(p._gp.X[0]) == (p.codes.columns if sees_codes else 3)
    # per-value costs in no order: with the codes the GP models them, on coordinates alone it sees a rough function
    assert (p.trust["gp"] > 0.85) == sees_codes


def test_the_fitted_gp_sees_the_codes_from_codes_from_observations_on():
    p, seen = portfolio(codes_from=40)
    rng = random.Random(9)
    observed = [Observation(c, smooth(c)) for c in rng.sample(CONFIGS, 32)]
    seen.update(config_id(o.config) for o in observed)
    predict_and_measure(p, seen, observed, smooth, rng, 1)
    assert len(p._gp.X[0]) == 3 and len(p._hyper.lengthscales) == 3  # 32 observations: coordinates only
    predict_and_measure(p, seen, observed, smooth, rng, 1)
    p.picks(observed, 4, seen, [], {})
    assert len(observed) == 48 and len(p._gp.X[0]) == p.codes.columns  # from 40 on: coordinates and codes
    assert len(p._hyper.lengthscales) == p.codes.columns
    p, _ = portfolio(codes_from=0, gp_kernel="fixed")
    assert not p._sees_codes(100)  # the fixed kernel is the BO reference's, on coordinates


def test_the_codes_from_the_start_run_the_strategy_deterministically():
    runs = [[config_id(o.config) for o in run_strategy(SYNTH, "model", 64, seed=5, options={"codes_from": 0})]
            for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0] != [config_id(o.config) for o in run_strategy(SYNTH, "model", 64, seed=5)]


def test_the_first_rounds_give_every_slot_to_the_joint_expected_improvement():
    p, seen = portfolio()
    observed = [Observation(c, smooth(c)) for c in random.Random(10).sample(CONFIGS, 16)]
    seen.update(config_id(o.config) for o in observed)
    assert p.shares(16) == p.shares(47) == {"gp": 1.0, "smooth": 0.0}  # joint_until 48: the GPs take every slot
    picks = p.picks(observed, 8, seen, [], {})
    assert len(picks) == len({config_id(c) for c in picks}) == 8 and not {config_id(c) for c in picks} & seen
    p, seen = portfolio(joint_until=0)
    seen.update(config_id(o.config) for o in observed)
    assert len(p.picks(observed, 8, seen, [], {})) == 4  # without: the fitted GP's share by trust (half, unknown)


def test_joint_expected_improvement_of_one_gp_is_its_own_and_two_gps_each_get_their_best():
    rng = np.random.default_rng(0)
    X, C = rng.random((20, 3)), rng.random((300, 3))
    low_a = np.exp(((X - 0.2) ** 2).sum(1))  # fastest near (0.2, 0.2, 0.2)
    low_b = np.exp(((X - 0.8) ** 2).sum(1))  # ... near (0.8, 0.8, 0.8)
    a, b = GaussianProcess(X, low_a, 0.5), GaussianProcess(X, np.log(low_b), 0.5)
    assert joint_ei_batch([a], [C], 6, 0.01) == a.ei_batch(C, 6, 0.01)
    assert joint_ei_batch([a, a], [C, C], 6, 0.01) == a.ei_batch(C, 6, 0.01)  # a model twice: the same picks
    picks = joint_ei_batch([a, b], [C, C], 2, 0.01)
    assert set(picks) == {a.ei_batch(C, 1, 0.01)[0], b.ei_batch(C, 1, 0.01)[0]}  # each believes the other's pick
    assert joint_ei_batch([a, b], [C, C], 4, 0.01, lambda eis: eis[1]) == b.ei_batch(C, 4, 0.01)  # told how to combine
    assert joint_ei_batch([a, b], [C, C], 4, 0.01, weights=(1.0, 0.0)) == a.ei_batch(C, 4, 0.01)  # b has no say
    assert joint_ei_batch([a, b], [C, C], 4, 0.01, weights=(0.5, 0.5)) == joint_ei_batch([a, b], [C, C], 4, 0.01)


def test_a_batch_goes_out_fastest_predicted_first_while_the_gp_is_fitted():
    p, seen = portfolio()
    observed = [Observation(c, smooth(c)) for c in random.Random(5).sample(CONFIGS, 40)]
    seen.update(config_id(o.config) for o in observed)
    p.picks(observed, 4, seen, [], {})
    batch = random.Random(6).sample([c for c in CONFIGS if config_id(c) not in seen], 8)
    assert p.fastest_first(batch) == batch  # nothing predicted yet: as proposed
    p.predicted(batch, np.zeros(len(batch)))
    means = p._gp.posterior(p._frame(p._sees_codes(p._fitted_on)).points(batch))[0]
    ordered = p.fastest_first(batch)
    assert ordered == [batch[i] for i in np.argsort(means, kind="stable")]
    assert smooth(ordered[0]) <= np.median([smooth(c) for c in batch])  # the bowl: the GP's first is among the fast
    retired, seen = portfolio(gp_until=10, smooth=0.25)  # past gp_until only the smooth GP predicts: order kept
    retired.picks(observed, 4, seen, [], {})
    retired.predicted(batch, np.zeros(len(batch)))
    assert retired._gp is None and retired.fastest_first(batch) == batch


def test_the_strategy_orders_its_batches_unless_told_not_to():
    table = synthetic_table(SyntheticSpec("smooth", seed=3, configs=2000, knobs=9))
    runs = {}
    for fastest_first in (True, False):
        strategy = make_strategy("model", context_for(table, seed=2, options={"own_features": "knobs",
                                                                              "fastest_first": fastest_first}))
        batches = []
        for _ in range(4):
            batch = strategy.propose(8)
            predicted = [strategy._portfolio.judge.predicted.get(config_id(c), (math.nan,))[0] for c in batch]
            batches.append((batch, predicted))
            strategy.observe([table.measure(c) for c in batch])
        runs[fastest_first] = batches
    first, *later = runs[True]
    assert all(math.isnan(v) for v in first[1])  # space-filling, before any model: nothing to order by
    for _batch, predicted in later:
        assert not any(math.isnan(v) for v in predicted) and predicted == sorted(predicted, reverse=True)
    second = [sorted(map(config_id, run[1][0])) for run in (runs[True], runs[False])]
    assert second[0] == second[1]  # the same configs; only their order may differ
