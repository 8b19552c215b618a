"""The smooth GP's picks over a listed space by a posterior that grows with the observations (the last phase, or from
`listed_from` on): the same picks as a posterior computed afresh over every config, and the fallbacks."""
from __future__ import annotations

import random

import numpy as np

from tests.unit.test_portfolio import CONFIGS, portfolio, smooth
from tuner_server.search.base import Observation
from tuner_server.search.knob_walk import config_id


def test_the_last_phase_scores_every_config_by_a_growing_posterior_and_picks_as_a_gp_fitted_afresh():
    """Every round of the last phase the smooth GP picks from all unseen configs of a listed space; its posterior is
    extended by the round's observations, and the picks are those of the sampled path scoring every config."""
    order = random.Random(4).sample(CONFIGS, len(CONFIGS))
    late = dict(gp_until=100, late_from=150, late_smooth=0.5, late_batch=3, trust_temperature=0.2)
    grown, seen_grown = portfolio(**late)  # late_candidates: the default, more than the 384 configs
    afresh, seen_afresh = portfolio(**late, late_candidates=0, smooth_candidates=len(CONFIGS))
    observed: list[Observation] = []
    for size in (150, 158, 166, 200):  # rounds of 8, then a larger step
        observed += [Observation(c, smooth(c)) for c in order[len(observed):size]]
        picks = []
        for p, seen in ((grown, seen_grown), (afresh, seen_afresh)):
            seen.update(config_id(o.config) for o in observed)
            picks.append(p.picks(observed, 8, seen, [], {}))
        assert picks[0] == picks[1] and len(picks[0]) == 4
        assert not {config_id(c) for c in picks[0]} & seen_grown
    assert grown._growing is not None and afresh._growing is None
    assert len(grown._growing.posterior.X) == 200  # every observation ran: the posterior holds them all, in order
    capped, seen = portfolio(**late, smooth_points=150)  # past 150 the points are the fastest half and the latest
    seen.update(config_id(o.config) for o in observed)
    assert capped._listed_picks(observed[:150], seen, 4) is not None
    assert capped._listed_picks(observed, seen, 4) is None  # no longer an extension: the sampled picks take over
    assert len(capped.picks(observed, 8, seen, [], {})) == 4
    broken, seen = portfolio(**late)

    def singular(X):
        raise np.linalg.LinAlgError("not positive definite")
    seen.update(config_id(o.config) for o in observed)
    assert broken._listed_picks(observed[:150], seen, 4) is not None
    broken._growing.posterior.extend = singular
    assert len(broken.picks(observed, 8, seen, [], {})) == 4  # the sampled picks, and a fresh posterior next round
    assert broken._growing is None


def test_from_listed_from_the_smooth_gp_scores_every_config_before_the_last_phase_too():
    """`listed_from` brings the growing posterior's picks before the last phase: they are those of the sampled path
    scoring every config, batch after batch; before `listed_from` the sampled path picks."""
    order = random.Random(5).sample(CONFIGS, len(CONFIGS))
    early = dict(gp_until=100, late_from=0, smooth=0.5, smooth_batch=3, trust_temperature=0.2)
    grown, seen_grown = portfolio(**early, listed_from=120)
    afresh, seen_afresh = portfolio(**early, smooth_candidates=len(CONFIGS))
    observed: list[Observation] = []
    for size in (120, 128, 136, 170):
        observed += [Observation(c, smooth(c)) for c in order[len(observed):size]]
        picks = []
        for p, seen in ((grown, seen_grown), (afresh, seen_afresh)):
            seen.update(config_id(o.config) for o in observed)
            p.trust.update(smooth=0.0, ensemble=1.0)  # the floor's share: half of the 8 slots
            picks.append(p.picks(observed, 8, seen, [], {}))
        assert picks[0] == picks[1] and len(picks[0]) == 4
    assert grown._growing is not None and afresh._growing is None
    later, seen = portfolio(**early, listed_from=200)
    seen.update(config_id(o.config) for o in observed)
    assert later._listed_picks(observed, seen, 4) is None  # 170 observations: the sampled path picks
    more = [Observation(c, smooth(c)) for c in order[:200]]
    seen.update(config_id(o.config) for o in more)
    assert later._listed_picks(more, seen, 4) is not None


def test_where_the_smooth_gp_scores_the_listing_it_picks_late_batch_at_a_time():
    """From `listed_from` on a listed space the smooth GP picks `late_batch` configs afresh each round, as in the last
    phase (a growing posterior makes a fresh pick cheap); before it, and on a space not listed, a batch of
    `smooth_batch` is handed out over rounds."""
    observed = [Observation(c, smooth(c)) for c in random.Random(3).sample(CONFIGS, 160)]
    queued = {}
    for name, listed_from, listed in (("listing", 120, True), ("before", 200, True), ("unlisted", 120, False)):
        p, seen = portfolio(gp_until=100, late_from=0, smooth=0.25, smooth_batch=8, late_batch=3,
                            listed_from=listed_from, trust_temperature=0.2)
        if not listed:
            p.draws.valid = None  # as on a space too large to list: the strategy's pool and random draws are scored
        seen.update(config_id(o.config) for o in observed)
        p.trust.update(smooth=0.0, ensemble=1.0)  # the floor's share: 2 of 8 slots
        assert len(p.picks(observed, 8, seen, [], {})) == 2
        queued[name] = len(p._queue)
    assert queued == {"listing": 1, "before": 6, "unlisted": 6}
