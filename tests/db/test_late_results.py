"""Restart without waste: a result for an expired lease counts while nobody else has leased the task, never after.

An agent keeps measuring while the tuner restarts or the database is down; its heartbeats and reports cannot get
through, so its leases expire. Until another lease takes such a task, the agent's heartbeat takes the lease back
and its result is accepted; once the task was re-leased (to anyone), completed or lost, the old attempt is rejected
and nothing is counted twice. On SQLite and PostgreSQL (the `session` fixture), plus a race on both.
"""
from __future__ import annotations

import threading
from dataclasses import replace

from sqlalchemy import func, select

from tests.db.factories import T0, agent, at, job, ok
from tuner_server import repo
from tuner_server.db import Task, Trial, session_scope


def trials_of(session, task_id: str) -> list[tuple[int, str, str]]:
    """(attempt, agent, status) of every trial of the task."""
    rows = session.execute(select(Trial.attempt, Trial.agent_id, Trial.status).where(Trial.task_id == task_id))
    return sorted(tuple(r) for r in rows)


def expire(session, lease, seconds: float = 61) -> None:
    assert repo.requeue_expired(session=session, now=at(seconds)).requeued == [lease.task_id]


def test_a_result_for_an_expired_lease_nobody_re_leased_is_accepted_once(session):
    a1, a2 = agent(session, "a1"), agent(session, "a2")
    j = job(session, budget=1)
    (lease,) = repo.lease_tasks(a1.id, 1, session=session, lease_seconds=60, now=T0)
    expire(session, lease)
    late = repo.record_result(a1.id, ok(lease, 1e-3), session=session, now=at(70))
    assert late.status == "accepted" and late.trial.attempt == 1
    task = session.get(Task, lease.task_id)
    assert (task.state, task.attempt, task.agent_id) == ("done", 1, a1.id)
    assert repo.record_result(a1.id, ok(lease, 2e-3), session=session, now=at(71)).status == "duplicate"
    assert repo.lease_tasks(a2.id, 1, session=session, now=at(72)) == []  # nothing left to measure again
    assert trials_of(session, lease.task_id) == [(1, a1.id, "OK")]
    assert repo.job_progress(j.id, session=session).completed == 1


def test_once_re_leased_to_another_agent_the_old_attempt_is_rejected(session):
    a1, a2 = agent(session, "a1"), agent(session, "a2")
    job(session, budget=1)
    (lease,) = repo.lease_tasks(a1.id, 1, session=session, lease_seconds=60, now=T0)
    expire(session, lease)
    (again,) = repo.lease_tasks(a2.id, 1, session=session, lease_seconds=60, now=at(62))
    assert (again.task_id, again.attempt) == (lease.task_id, 2)
    assert repo.record_result(a1.id, ok(lease, 1e-3), session=session, now=at(63)).status == "rejected"
    assert repo.heartbeat(a1.id, [lease.task_id], session=session, now=at(63)) == [lease.task_id]  # drop it
    # the second lease expires too: the task's last holder is a2 now, so a1's attempt stays rejected
    assert repo.requeue_expired(session=session, now=at(123)).requeued == [lease.task_id]
    assert repo.record_result(a1.id, ok(lease, 1e-3), session=session, now=at(124)).status == "rejected"
    assert repo.record_result(a2.id, ok(again, 2e-3), session=session, now=at(125)).status == "accepted"
    assert trials_of(session, lease.task_id) == [(2, a2.id, "OK")]


def test_once_re_leased_to_the_same_agent_only_the_new_attempt_counts(session):
    a1 = agent(session, "a1")
    job(session, budget=1)
    (lease,) = repo.lease_tasks(a1.id, 1, session=session, lease_seconds=60, now=T0)
    expire(session, lease)
    (again,) = repo.lease_tasks(a1.id, 1, session=session, lease_seconds=60, now=at(62))
    assert again.attempt == 2
    assert repo.record_result(a1.id, ok(lease, 1e-3), session=session, now=at(63)).status == "rejected"
    assert repo.record_result(a1.id, ok(again, 1e-3), session=session, now=at(64)).status == "accepted"
    assert trials_of(session, lease.task_id) == [(2, a1.id, "OK")]


def test_a_completed_or_lost_task_rejects_the_old_attempt(session):
    a1, a2 = agent(session, "a1"), agent(session, "a2")
    job(session, budget=2)
    done, lost = repo.lease_tasks(a1.id, 2, session=session, lease_seconds=60, now=T0)
    assert repo.requeue_expired(session=session, now=at(61), max_attempts=2).requeued == sorted(
        [done.task_id, lost.task_id])
    redone = {t.task_id: t for t in repo.lease_tasks(a2.id, 2, session=session, lease_seconds=60, now=at(62))}
    assert repo.record_result(a2.id, ok(redone[done.task_id], 1e-3), session=session, now=at(63)).status == \
        "accepted"
    assert repo.requeue_expired(session=session, now=at(200), max_attempts=2).lost == [lost.task_id]
    for lease in (done, lost):
        assert repo.record_result(a1.id, ok(lease, 1e-3), session=session, now=at(201)).status == "rejected"
    assert trials_of(session, done.task_id) == [(2, a2.id, "OK")]
    assert trials_of(session, lost.task_id) == [(2, None, "AGENT_LOST")]


def test_a_heartbeat_takes_back_an_expired_lease_nobody_took(session):
    a1, a2 = agent(session, "a1"), agent(session, "a2")
    job(session, budget=2)
    kept, dropped = repo.lease_tasks(a1.id, 2, session=session, lease_seconds=60, now=T0)
    assert len(repo.requeue_expired(session=session, now=at(61)).requeued) == 2
    # the agent still runs `kept` (it holds it); `dropped` it let go of, so it is not in its heartbeat
    assert repo.heartbeat(a1.id, [kept.task_id], session=session, lease_seconds=60, now=at(65)) == []
    task = session.get(Task, kept.task_id)
    assert (task.state, task.attempt, task.agent_id, task.lease_deadline) == ("leased", 1, a1.id, at(125))
    (other,) = repo.lease_tasks(a2.id, 2, session=session, now=at(66))  # only the dropped one is up for grabs
    assert (other.task_id, other.attempt) == (dropped.task_id, 2)
    assert repo.requeue_expired(session=session, now=at(124)).requeued == []  # the taken-back lease runs to t=125
    assert repo.record_result(a1.id, ok(kept, 1e-3), session=session, now=at(100)).status == "accepted"
    assert trials_of(session, kept.task_id) == [(1, a1.id, "OK")]


def test_a_wrong_attempt_or_another_agent_never_takes_a_re_queued_task(session):
    a1, a2 = agent(session, "a1"), agent(session, "a2")
    job(session, budget=1)
    (lease,) = repo.lease_tasks(a1.id, 1, session=session, lease_seconds=60, now=T0)
    expire(session, lease)
    assert repo.record_result(a2.id, ok(lease, 1e-3), session=session, now=at(62)).status == "rejected"
    assert repo.heartbeat(a2.id, [lease.task_id], session=session, now=at(62)) == [lease.task_id]
    future = replace(ok(lease, 1e-3), attempt=2)  # the attempt the next lease would get: nobody holds it
    assert repo.record_result(a1.id, future, session=session, now=at(63)).status == "rejected"
    task = session.get(Task, lease.task_id)
    assert (task.state, task.attempt) == ("queued", 2)
    assert session.scalar(select(func.count()).select_from(Trial)) == 0


def test_the_restart_grace_expires_only_the_leases_of_agents_heard_since(session):
    back, gone = agent(session, "back"), agent(session, "gone")
    job(session, budget=4)
    held = repo.lease_tasks(back.id, 2, session=session, lease_seconds=60, now=T0)
    orphaned = repo.lease_tasks(gone.id, 2, session=session, lease_seconds=60, now=T0)
    restart = at(100)
    repo.heartbeat(back.id, [held[0].task_id], session=session, lease_seconds=60, now=at(101))  # let go of held[1]
    swept = repo.requeue_expired(session=session, now=at(102), heard_since=restart)
    assert swept.requeued == [held[1].task_id]  # `gone` was not heard since the restart: its leases wait
    assert repo.requeue_expired(session=session, now=at(103)).requeued == sorted(t.task_id for t in orphaned)


def test_a_late_result_and_a_new_lease_race_and_exactly_one_wins(session_factory, backend):
    """The report locks the task row; the lease skips locked rows (PostgreSQL) or waits for the write lock
    (SQLite): whichever commits first wins, the other finds the task taken, on every round."""
    rounds = 12
    with session_scope(session_factory) as s:
        a1, a2 = agent(s, "a1").id, agent(s, "a2").id
        job(s, budget=rounds)
        leases = repo.lease_tasks(a1, rounds, session=s, lease_seconds=60, now=T0)
        assert len(repo.requeue_expired(session=s, now=at(61)).requeued) == rounds
    outcomes: dict[str, str] = {}
    releases: list[str] = []
    barrier = threading.Barrier(2)

    def report() -> None:
        barrier.wait()
        for lease in leases:
            with session_scope(session_factory) as s:
                outcomes[lease.task_id] = repo.record_result(a1, ok(lease, 1e-3), session=s, now=at(62)).status

    def lease_again() -> None:
        barrier.wait()
        for _ in range(rounds):
            with session_scope(session_factory) as s:
                releases.extend(t.task_id for t in repo.lease_tasks(a2, 1, session=s, now=at(62)))

    threads = [threading.Thread(target=report), threading.Thread(target=lease_again)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    accepted = {task_id for task_id, status in outcomes.items() if status == "accepted"}
    rejected = {task_id for task_id, status in outcomes.items() if status == "rejected"}
    assert accepted | rejected == {t.task_id for t in leases}
    assert rejected == set(releases) and not accepted & set(releases), (backend, outcomes, releases)
    with session_scope(session_factory) as s:
        rows = s.scalars(select(Task).where(Task.id.in_([t.task_id for t in leases]))).all()
        assert {r.id: (r.state, r.attempt) for r in rows} == {
            r.id: ("done", 1) if r.id in accepted else ("leased", 2) for r in rows}
        assert s.scalar(select(func.count()).select_from(Trial)) == len(accepted)
