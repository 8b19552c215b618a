"""Results are idempotent by (task, attempt): duplicates ignored, stale or foreign results rejected."""
from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import func, select

from tests.db.factories import T0, agent, at, job, ok
from tuner_server import repo
from tuner_server.db import Task, Trial


def _trials(session) -> int:
    return session.scalar(select(func.count()).select_from(Trial))


def test_accepted_then_duplicate_is_ignored(session):
    ag = agent(session)
    j = job(session, budget=2)
    (t,) = repo.lease_tasks(ag.id, 1, session=session, now=T0)
    first = repo.record_result(ag.id, ok(t, 2e-3), session=session, now=at(1))
    assert first.status == "accepted" and first.trial.median_s == 2e-3
    assert session.get(Task, t.task_id).state == "done"
    again = repo.record_result(ag.id, ok(t, 9e-3), session=session, now=at(2))
    assert again.status == "duplicate" and again.trial.id == first.trial.id
    assert _trials(session) == 1
    assert repo.job_progress(j.id, session=session).completed == 1


def test_result_from_another_agent_or_unknown_task_is_rejected(session):
    owner, other = agent(session, "owner"), agent(session, "other")
    job(session, budget=1)
    (t,) = repo.lease_tasks(owner.id, 1, session=session, now=T0)
    assert repo.record_result(other.id, ok(t, 1e-3), session=session, now=at(1)).status == "rejected"
    ghost = replace(ok(t, 1e-3), task_id="00000000-0000-0000-0000-000000000000")
    assert repo.record_result(owner.id, ghost, session=session, now=at(1)).status == "rejected"
    wrong_attempt = replace(ok(t, 1e-3), attempt=7)
    assert repo.record_result(owner.id, wrong_attempt, session=session, now=at(1)).status == "rejected"
    assert _trials(session) == 0
    assert repo.record_result(owner.id, ok(t, 1e-3), session=session, now=at(2)).status == "accepted"


def test_result_for_a_cancelled_task_is_rejected_and_nothing_measured_is_deleted(session):
    ag = agent(session)
    j = job(session, budget=3)
    done, pending, _ = repo.lease_tasks(ag.id, 3, session=session, now=T0)
    repo.record_result(ag.id, ok(done, 1e-3), session=session, now=at(1))
    repo.cancel_job(j.id, session=session, now=at(2))
    assert repo.record_result(ag.id, ok(pending, 1e-3), session=session, now=at(3)).status == "rejected"
    assert _trials(session) == 1
    states = session.scalars(select(Task.state).where(Task.job_id == j.id)).all()
    assert sorted(states) == ["cancelled", "cancelled", "done"]


def test_results_count_in_progress_and_never_end_the_job(session):
    ag = agent(session)
    j = job(session, budget=3)
    a, b, c = repo.lease_tasks(ag.id, 3, session=session, now=T0)
    repo.record_result(ag.id, ok(a, 3e-3), session=session, now=at(1))
    repo.record_result(ag.id, ok(b, 1e-3, status="WRONG_ANSWER"), session=session, now=at(2))
    progress = repo.job_progress(j.id, session=session)
    assert (progress.completed, progress.verified, progress.failed, progress.leased) == (2, 1, 1, 1)
    assert progress.best.median_s == 3e-3  # a wrong answer is never best, however fast
    assert j.state == "running"
    repo.record_result(ag.id, ok(c, 2e-3), session=session, now=at(3))
    assert (j.state, j.finished_at, j.phase) == ("running", None, "search")  # the driver's final phase ends it
    progress = repo.job_progress(j.id, session=session)
    # 2 ms looks faster than the 3 ms head: a challenge is queued, apart from the MEASURE counts
    assert (progress.completed, progress.queued, progress.leased, progress.comparing) == (3, 0, 0, 1)
    assert progress.best.median_s == 2e-3  # by its own measurement
    assert repo.list_trials(session=session, job_id=j.id).total == 3


def test_unknown_status_is_an_error(session):
    ag = agent(session)
    job(session, budget=1)
    (t,) = repo.lease_tasks(ag.id, 1, session=session, now=T0)
    with pytest.raises(repo.InvalidRequest, match="unknown trial status"):
        repo.record_result(ag.id, replace(ok(t, 1e-3), status="FAST"), session=session)
