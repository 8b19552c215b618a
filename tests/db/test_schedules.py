"""Best-schedule version control: the head moves head to head (the CI rule is left to imports), pin, rollback,
as_of, history and diff."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from tests.db.factories import (
    MATMUL,
    T0,
    agent,
    at,
    compare,
    device,
    job,
    measure,
    measure_new,
    open_compares,
    trial,
)
from tuner_server import repo
from tuner_server.db import ScheduleVersion
from tuner_server.repo import schedules

CLASS = "cpu-x86_64-avx2-2c"


def _head(session):
    return schedules.head(MATMUL, CLASS, session=session)


def test_first_ok_trial_becomes_version_1(session):
    ag = agent(session)
    job(session, budget=2)
    (outcome,) = measure(session, ag, [5e-3])
    assert outcome.promoted.version == 1 and outcome.promoted.reason == "improved"
    head = _head(session)
    assert (head.version, head.parent_version, head.trial.median_s) == (1, None, 5e-3)
    assert head.job_id == outcome.trial.job_id


def _improve(session, ag, job_id, median, now):
    """Measure a faster config and let it win its head-to-head challenge (the only way the farm's trials move
    the head): the new version's trial has `median`."""
    current = _head(session).trial.median_s
    measured = measure_new(session, ag, job_id, median, now=now)
    assert measured.promoted is None  # a faster trial alone never moves the head
    won = compare(session, ag, median / current, now=now)
    assert won.status == "accepted" and won.promoted is not None
    return won.promoted


def test_import_rule_only_a_trial_clear_of_the_heads_ci_moves_it(session):
    """`maybe_promote` (imports from another farm, which cannot be timed against the head) keeps the CI rule."""
    dclass = device(session)
    head = trial(session, dclass, {"tile": 1}, median=10e-3)
    assert schedules.maybe_promote(head, session=session, now=at(0)).reason == "import"

    def offered(median, spread, config):
        t = trial(session, dclass, config, median=median)
        t.ci_low_s, t.ci_high_s = median * (1 - spread), median * (1 + spread)
        return schedules.maybe_promote(t, session=session, now=at(1))

    head.ci_low_s, head.ci_high_s = 9.5e-3, 10.5e-3
    assert offered(9.7e-3, 0.05, {"tile": 2}) is None  # median 9.7 inside the head's CI
    assert offered(9.4e-3, 0.08, {"tile": 3}) is None  # 9.4 < 9.5 but its CI high 10.15 > 10
    assert offered(20e-3, 0.01, {"tile": 4}) is None
    clear = offered(9.2e-3, 0.05, {"tile": 5})  # 9.2 < 9.5 and CI high 9.66 < 10
    assert (clear.version, clear.parent_version, clear.reason) == (2, 1, "import")


def test_a_faster_trial_only_challenges_and_a_won_comparison_moves_the_head(session):
    ag = agent(session)
    j = job(session, budget=6, n_configs=0)
    measure_new(session, ag, j.id, 10e-3, now=at(0))
    slower = measure_new(session, ag, j.id, 20e-3, now=at(1))
    assert slower.promoted is None and open_compares(session, j.id) == []
    faster = measure_new(session, ag, j.id, 9e-3, spread=0.0, now=at(2))  # even with a zero-width CI
    assert faster.promoted is None and _head(session).version == 1
    (challenge,) = open_compares(session, j.id)
    assert challenge.candidate_trial_id == faster.trial.id and challenge.purpose == "challenge"
    won = compare(session, ag, 0.9, now=at(3))
    assert (won.promoted.version, won.promoted.parent_version, won.promoted.reason) == (2, 1, "improved")
    assert _head(session).trial.median_s == 9e-3


def test_pin_blocks_promotion_and_unpin_releases_it(session):
    ag = agent(session)
    j = job(session, budget=5, n_configs=0)
    measure_new(session, ag, j.id, 10e-3, now=at(0))
    pinned = schedules.pin(MATMUL, CLASS, 1, session=session, author="ops", now=at(1))
    assert (pinned.version, pinned.reason, pinned.pinned) == (2, "pin", True)
    faster = measure_new(session, ag, j.id, 1e-3, now=at(2))
    assert faster.promoted is None and _head(session).version == 2
    assert open_compares(session, j.id) == []  # a pinned key is not even challenged
    with pytest.raises(repo.Conflict, match="pinned"):
        schedules.rollback(MATMUL, CLASS, 1, session=session, author="ops")
    unpinned = schedules.pin(MATMUL, CLASS, None, session=session, author="ops", now=at(3))
    assert (unpinned.version, unpinned.pinned) == (3, False)
    assert _improve(session, ag, j.id, 0.5e-3, now=at(4)).version == 4


def test_rollback_appends_a_new_version_pointing_at_the_old_trial(session):
    ag = agent(session)
    j = job(session, budget=2, n_configs=0)
    measure_new(session, ag, j.id, 10e-3, now=at(0))
    _improve(session, ag, j.id, 5e-3, now=at(10))
    v1 = schedules.version(MATMUL, CLASS, 1, session=session)
    back = schedules.rollback(MATMUL, CLASS, 1, session=session, author="alice", message="v2 breaks on big K",
                              now=at(20))
    assert (back.version, back.parent_version, back.reason, back.author) == (3, 2, "rollback", "alice")
    assert back.trial_id == v1.trial_id and _head(session).version == 3
    assert session.scalar(select(func.count()).select_from(ScheduleVersion)) == 3  # nothing rewritten
    assert schedules.version(MATMUL, CLASS, 2, session=session).trial.median_s == 5e-3
    with pytest.raises(repo.Conflict):
        schedules.rollback(MATMUL, CLASS, 3, session=session, author="alice")
    with pytest.raises(repo.NotFound):
        schedules.rollback(MATMUL, CLASS, 9, session=session, author="alice")


def test_as_of_returns_the_head_at_each_moment(session):
    ag = agent(session)
    j = job(session, budget=3, n_configs=0)
    measure_new(session, ag, j.id, 10e-3, now=at(100))
    _improve(session, ag, j.id, 5e-3, now=at(200))
    _improve(session, ag, j.id, 2e-3, now=at(300))

    def version_at(seconds):
        row = schedules.as_of(MATMUL, CLASS, at(seconds), session=session)
        return row.version if row else None

    assert [version_at(s) for s in (99, 100, 150, 199.999, 200, 250, 300, 10_000)] == [None, 1, 1, 1, 2, 2, 3, 3]


def test_history_is_newest_first_and_paginated(session):
    ag = agent(session)
    j = job(session, budget=4, n_configs=0)
    measure_new(session, ag, j.id, 8e-3, now=at(0))
    for i, median in enumerate([4e-3, 2e-3, 1e-3]):
        _improve(session, ag, j.id, median, now=at(i + 1))
    page = schedules.history(MATMUL, CLASS, session=session, limit=3)
    assert page.total == 4 and [v.version for v in page.items] == [4, 3, 2]
    assert [v.version for v in schedules.history(MATMUL, CLASS, session=session, limit=3, offset=3).items] == [1]


def test_diff_lists_changed_knobs_and_the_median_ratio(session):
    ag = agent(session)
    job(session, budget=2)  # configs {"tile": 1}, {"tile": 2}
    measure(session, ag, [8e-3])
    measure(session, ag, [2e-3], now=at(1))
    assert compare(session, ag, 0.25, now=at(2)).promoted.version == 2
    d = schedules.diff(MATMUL, CLASS, 1, 2, session=session)
    assert d.changed == {"tile": (1, 2)} and d.median_ratio == pytest.approx(0.25)
    assert schedules.diff(MATMUL, CLASS, 2, 2, session=session).changed == {}


def test_queries_on_unknown_keys(session):
    assert schedules.head("softmax(rows=4,cols=4)", CLASS, session=session) is None
    assert schedules.as_of("softmax(rows=4,cols=4)", CLASS, T0, session=session) is None
    assert schedules.history("softmax(rows=4,cols=4)", CLASS, session=session).total == 0
    with pytest.raises(repo.NotFound):
        schedules.version(MATMUL, CLASS, 1, session=session)
    with pytest.raises(repo.InvalidRequest):
        schedules.head("not a key", CLASS, session=session)
