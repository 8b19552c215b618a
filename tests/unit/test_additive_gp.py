"""The additive GP of the joint rounds: its best config takes each knob's best value from configs that never combined
them (which neither the smooth nor the fitted GP's mean does on the same data), it knows where it measured, its
noise follows the data, and the portfolio weighs it (a quarter of the joint rounds' say) only when told to."""
from __future__ import annotations

import itertools
import random

import numpy as np

from compiler_core.space import Knob, Space
from tuner_server.search import portfolio as portfolio_module
from tuner_server.search.additive_gp import AdditiveFeatures, AdditiveGP
from tuner_server.search.base import Observation, parse_options
from tuner_server.search.gaussian_process import KnobCoordinates, joint_ei_batch
from tuner_server.search.knob_walk import config_id
from tuner_server.search.listing import UnseenDraws
from tuner_server.search.model_guided_options import GP_UNTIL, JOINT_UNTIL, OPTIONS
from tuner_server.search.portfolio import JOINT_WEIGHTS, Portfolio

SIZES = (5, 4, 6, 3, 5, 4)  # 7,200 configs
SPACE = Space(tuple(Knob(f"k{i}", tuple(range(n))) for i, n in enumerate(SIZES)) + (Knob("fixed", (1,)),))
INDICES = np.array(list(itertools.product(*(range(n) for n in SIZES))), dtype=np.int16)
FEATURES = AdditiveFeatures(SPACE)


def additive_runtimes(seed: int) -> np.ndarray:
    """exp(a sum of one random effect per knob value): a basin's log-runtime grows with each knob off its centre."""
    rng = np.random.default_rng(seed)
    effects = [rng.uniform(0, 0.4, size=n) for n in SIZES]
    return 1e-4 * np.exp(sum(e[INDICES[:, k]] for k, e in enumerate(effects)))


def test_features_are_each_knobs_coordinate_one_hot_code_and_squared_coordinate():
    F = FEATURES.at(INDICES[:50])
    knobs, choices = len(SIZES), sum(SIZES)  # the one-choice knob is left out, as KnobCoordinates does
    assert F.shape == (50, knobs + choices + knobs)
    coordinates = KnobCoordinates(SPACE).at(INDICES[:50])
    assert np.allclose(F[:, :knobs], coordinates) and np.allclose(F[:, -knobs:], coordinates ** 2)
    assert (F[:, knobs:knobs + choices].sum(axis=1) == knobs).all()  # one value of each knob


def test_its_best_config_combines_each_knobs_best_value_from_configs_that_never_did():
    for seed in range(3):
        y = additive_runtimes(seed)
        best = int(np.argmin(y))
        sample = np.random.default_rng(seed).choice(len(y), size=60, replace=False)
        sample = sample[sample != best]
        near = [i for i in sample if (INDICES[i] != INDICES[best]).sum() <= 1]
        assert not near  # no measured config is the optimum or one knob from it
        gp = AdditiveGP(FEATURES.at(INDICES[sample]), y[sample])
        mean = gp.posterior(FEATURES.at(INDICES))[0]
        assert int(np.argmin(mean)) == best, seed


def test_it_is_surest_where_it_measured_and_fits_the_noise_the_data_has():
    y = additive_runtimes(5)
    sample = np.random.default_rng(5).choice(len(y), size=80, replace=False)
    gp = AdditiveGP(FEATURES.at(INDICES[sample]), y[sample])
    others = np.setdiff1d(np.arange(len(y)), sample)[:500]
    _, var_measured, _ = gp.posterior(FEATURES.at(INDICES[sample]))
    _, var_others, _ = gp.posterior(FEATURES.at(INDICES[others]))
    assert var_measured.mean() < var_others.mean()
    noisy = AdditiveGP(FEATURES.at(INDICES[sample]), np.random.default_rng(6).lognormal(size=len(sample)))
    assert gp.noise < noisy.noise  # runtimes with no knob effect at all: explained as noise


def test_it_joins_a_believer_batch_beside_another_model():
    y = additive_runtimes(7)
    sample = np.random.default_rng(7).choice(len(y), size=40, replace=False)
    gp = AdditiveGP(FEATURES.at(INDICES[sample]), y[sample])
    C = FEATURES.at(INDICES)
    picks = joint_ei_batch([gp], [C], 8, 0.01)
    assert len(set(picks)) == 8 and not set(picks) & set(sample.tolist())
    assert picks == gp.ei_batch(C, 8, 0.01)


def test_the_joint_rounds_weigh_it_only_with_joint_additive(monkeypatch):
    models = []

    def counting(gps, frames, k, xi, combine=None, weights=None):
        models.append((len(gps), weights))
        return joint_ei_batch(gps, frames, k, xi, combine, weights)
    monkeypatch.setattr(portfolio_module, "joint_ei_batch", counting)
    configs = [dict(zip([k.name for k in SPACE.knobs], (*(int(v) for v in row), 1), strict=True)) for row in INDICES]
    y = additive_runtimes(8)
    measured = random.Random(8).sample(range(len(configs)), 16)
    observed = [Observation(configs[i], float(y[i])) for i in measured]
    for flag, used in ((True, (3, JOINT_WEIGHTS)), (False, (2, None))):
        rng, seen = random.Random(0), {config_id(o.config) for o in observed}
        options = parse_options(OPTIONS, {"joint_until": JOINT_UNTIL, "gp_until": GP_UNTIL, "joint_additive": flag})
        picks = Portfolio(SPACE, options, rng, UnseenDraws(SPACE, seen, rng)).picks(observed, 8, seen, [], {})
        assert len({config_id(c) for c in picks}) == 8 and models[-1] == used
