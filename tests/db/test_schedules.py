"""Best-schedule version control: the CI promotion rule, pin, rollback, as_of, history and diff."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from tests.db.factories import MATMUL, T0, agent, at, job, measure, ok
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


def test_only_a_faster_trial_clear_of_the_heads_ci_moves_it(session):
    ag = agent(session)
    job(session, budget=5)
    measure(session, ag, [10e-3], spread=0.05)  # head CI [9.5, 10.5] ms
    overlapping, = measure(session, ag, [9.7e-3], spread=0.05, now=at(1))  # median 9.7 inside the head's CI
    assert overlapping.promoted is None and _head(session).version == 1
    wide, = measure(session, ag, [9.4e-3], spread=0.08, now=at(1))  # median 9.4 < 9.5 but CI high 10.15 > 10
    assert wide.promoted is None and _head(session).version == 1
    slower, = measure(session, ag, [20e-3], now=at(2))
    assert slower.promoted is None
    clear, = measure(session, ag, [9.2e-3], spread=0.05, now=at(3))  # 9.2 < 9.5 and CI high 9.66 < 10
    assert clear.promoted.version == 2 and clear.promoted.parent_version == 1
    assert _head(session).trial.median_s == 9.2e-3


def test_a_wrong_answer_never_becomes_head(session):
    ag = agent(session)
    job(session, budget=1)
    (t,) = repo.lease_tasks(ag.id, 1, session=session, now=T0)
    outcome = repo.record_result(ag.id, ok(t, 1e-6, status="WRONG_ANSWER"), session=session, now=at(1))
    assert outcome.promoted is None and _head(session) is None


def test_pin_blocks_promotion_and_unpin_releases_it(session):
    ag = agent(session)
    job(session, budget=3)
    measure(session, ag, [10e-3])
    pinned = schedules.pin(MATMUL, CLASS, 1, session=session, author="ops", now=at(1))
    assert (pinned.version, pinned.reason, pinned.pinned) == (2, "pin", True)
    faster, = measure(session, ag, [1e-3], now=at(2))
    assert faster.promoted is None and _head(session).version == 2
    with pytest.raises(repo.Conflict, match="pinned"):
        schedules.rollback(MATMUL, CLASS, 1, session=session, author="ops")
    unpinned = schedules.pin(MATMUL, CLASS, None, session=session, author="ops", now=at(3))
    assert (unpinned.version, unpinned.pinned) == (3, False)
    again, = measure(session, ag, [0.5e-3], now=at(4))
    assert again.promoted.version == 4


def test_rollback_appends_a_new_version_pointing_at_the_old_trial(session):
    ag = agent(session)
    job(session, budget=2)
    measure(session, ag, [10e-3])
    measure(session, ag, [5e-3], now=at(10))
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
    job(session, budget=3)
    measure(session, ag, [10e-3], now=at(100))
    measure(session, ag, [5e-3], now=at(200))
    measure(session, ag, [2e-3], now=at(300))
    def version_at(seconds):
        row = schedules.as_of(MATMUL, CLASS, at(seconds), session=session)
        return row.version if row else None

    assert [version_at(s) for s in (99, 100, 150, 199.999, 200, 250, 300, 10_000)] == [None, 1, 1, 1, 2, 2, 3, 3]


def test_history_is_newest_first_and_paginated(session):
    ag = agent(session)
    job(session, budget=4)
    for i, median in enumerate([8e-3, 4e-3, 2e-3, 1e-3]):
        measure(session, ag, [median], now=at(i))
    page = schedules.history(MATMUL, CLASS, session=session, limit=3)
    assert page.total == 4 and [v.version for v in page.items] == [4, 3, 2]
    assert [v.version for v in schedules.history(MATMUL, CLASS, session=session, limit=3, offset=3).items] == [1]


def test_diff_lists_changed_knobs_and_the_median_ratio(session):
    ag = agent(session)
    job(session, budget=2)  # configs {"tile": 1}, {"tile": 2}
    measure(session, ag, [8e-3])
    measure(session, ag, [2e-3], now=at(1))
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
