"""Leases: selectors, the fair share across jobs, expiry and re-queueing, heartbeats, lost agents, concurrency."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from tests.db.factories import T0, agent, at, cpu_fingerprint, cuda_fingerprint, job, ok
from tuner_server import repo
from tuner_server.db import Task, Trial, session_scope
from tuner_server.repo import pass_reads


def test_lease_marks_tasks_and_resolves_the_job(session):
    ag = agent(session)
    j = job(session, budget=3)
    leased = repo.lease_tasks(ag.id, 2, session=session, lease_seconds=30, now=T0)
    assert len(leased) == 2
    assert {t.attempt for t in leased} == {1}
    assert all(t.lease_deadline == at(30) and t.workload_key == j.workload.key for t in leased)
    assert j.state == "running" and j.device_class == "cpu-x86_64-avx2-2c" and j.started_at == T0
    rows = session.scalars(select(Task).where(Task.id.in_([t.task_id for t in leased]))).all()
    assert {(r.state, r.agent_id) for r in rows} == {("leased", ag.id)}
    assert len(repo.lease_tasks(ag.id, 5, session=session, now=T0)) == 1  # only one left


def test_selectors_match_kind_or_exact_class(session):
    cpu2 = agent(session, "c2")
    cpu4 = agent(session, "c4", cpu_fingerprint(cores=4))
    gpu = agent(session, "g", cuda_fingerprint())
    job(session, budget=1, selector="cuda")
    exact = job(session, budget=1, selector="cpu-x86_64-avx2-4c", key="softmax(rows=8,cols=8)")
    assert repo.lease_tasks(cpu2.id, 5, session=session, now=T0) == []
    got = repo.lease_tasks(cpu4.id, 5, session=session, now=T0)
    assert [t.job_id for t in got] == [exact.id]
    assert len(repo.lease_tasks(gpu.id, 5, session=session, now=T0)) == 1


def test_a_cpu_job_stays_on_the_class_of_its_first_lease(session):
    cpu2 = agent(session, "c2")
    cpu4 = agent(session, "c4", cpu_fingerprint(cores=4))
    job(session, budget=4)
    assert len(repo.lease_tasks(cpu2.id, 1, session=session, now=T0)) == 1
    assert repo.lease_tasks(cpu4.id, 5, session=session, now=T0) == []
    assert len(repo.lease_tasks(cpu2.id, 5, session=session, now=T0)) == 3


def test_jobs_of_equal_priority_take_turns(session):
    ag = agent(session)
    first = job(session, budget=4, now=T0)
    second = job(session, budget=4, key="softmax(rows=8,cols=8)", now=at(10))
    order = [t.job_id for t in repo.lease_tasks(ag.id, 4, session=session, now=at(20))]
    assert order == [first.id, second.id, first.id, second.id]


def test_a_late_job_catches_up_with_the_tasks_others_hold(session):
    a1, a2 = agent(session, "a1"), agent(session, "a2")
    early = job(session, budget=8, now=T0)
    assert {t.job_id for t in repo.lease_tasks(a1.id, 3, session=session, now=at(1))} == {early.id}
    late = job(session, budget=8, key="softmax(rows=8,cols=8)", now=at(10))
    order = [t.job_id for t in repo.lease_tasks(a2.id, 4, session=session, now=at(20))]
    assert order == [late.id, late.id, late.id, early.id]  # 3 held each, then the older job wins the tie


def test_priority_weights_the_share(session):
    ag = agent(session)
    low = job(session, budget=6, now=T0)
    high = job(session, budget=6, key="softmax(rows=8,cols=8)", priority=10, now=at(10))  # weight 2
    order = [t.job_id for t in repo.lease_tasks(ag.id, 6, session=session, now=at(20))]
    assert order == [high.id, high.id, low.id, high.id, high.id, low.id]


def test_expired_lease_is_requeued_and_the_old_attempt_rejected(session):
    a1, a2 = agent(session, "a1"), agent(session, "a2")
    job(session, budget=1)
    (first,) = repo.lease_tasks(a1.id, 1, session=session, lease_seconds=60, now=T0)
    assert repo.requeue_expired(session=session, now=at(59)).requeued == []
    assert repo.requeue_expired(session=session, now=at(61)).requeued == [first.task_id]
    (second,) = repo.lease_tasks(a2.id, 1, session=session, now=at(62))
    assert (second.task_id, second.attempt) == (first.task_id, 2)
    late = repo.record_result(a1.id, ok(first, 1e-3), session=session, now=at(63))
    assert late.status == "rejected"
    assert repo.record_result(a2.id, ok(second, 1e-3), session=session, now=at(64)).status == "accepted"
    assert session.scalar(select(Trial.attempt).where(Trial.task_id == first.task_id)) == 2


def test_a_task_out_of_attempts_is_lost_with_an_agent_lost_trial(session):
    ag = agent(session)
    j = job(session, budget=1)
    for attempt in (1, 2):
        (t,) = repo.lease_tasks(ag.id, 1, session=session, lease_seconds=10, now=at(100 * attempt))
        assert t.attempt == attempt
        result = repo.requeue_expired(session=session, now=at(100 * attempt + 11), max_attempts=2)
    assert result.lost == [t.task_id] and result.requeued == []
    trial = session.scalars(select(Trial).where(Trial.task_id == t.task_id)).one()
    assert (trial.status, trial.attempt) == ("AGENT_LOST", 2)
    progress = repo.job_progress(j.id, session=session)
    assert (progress.completed, progress.queued, progress.leased) == (1, 0, 0)
    assert j.state == "running"  # the budget is spent, but only the driver ends a job (after its final phase)


def test_heartbeat_extends_held_leases_and_names_cancelled_ones(session):
    ag = agent(session)
    j = job(session, budget=2)
    held = repo.lease_tasks(ag.id, 2, session=session, lease_seconds=60, now=T0)
    ids = [t.task_id for t in held]
    assert repo.heartbeat(ag.id, ids + ["no-such-task"], session=session, lease_seconds=60, now=at(50)) == [
        "no-such-task"]
    assert repo.requeue_expired(session=session, now=at(70)).requeued == []  # extended to t=110
    repo.cancel_job(j.id, session=session, now=at(80))
    assert repo.heartbeat(ag.id, ids, session=session, now=at(90)) == sorted(ids)


def test_active_agents_are_counted_per_device_class(session):
    def active(seconds=42.0):  # over the session's connection, as the driver reads (a Connection does not autoflush)
        session.flush()
        return pass_reads.active_agents_by_class(session.connection(), at(seconds) - timedelta(seconds=30))

    quiet, _ = agent(session, "quiet"), agent(session, "chatty")
    agent(session, "gpu", fingerprint=cuda_fingerprint())
    agent(session, "wide", fingerprint=cpu_fingerprint(isa=("avx2", "avx512f")))
    repo.mark_lost_agents(session=session, lost_after_s=30, now=at(40))  # every one silent since T0: all lost
    assert active() == {}
    repo.heartbeat(quiet.id, [], session=session, now=at(41))  # back: active again, alone
    gpu = agent(session, "gpu2", fingerprint=cuda_fingerprint(), now=at(42))
    assert active() == {quiet.device_class: 1, gpu.device_class: 1}
    assert {a.device_class: 1 for a in repo.list_agents(session=session, status="active")} == active()
    assert active(71.5) == {gpu.device_class: 1}  # 30 s on, quiet's last word (41) is too old, gpu2's (42) not


def test_silent_agents_are_marked_lost_and_their_leases_requeued(session):
    quiet, chatty = agent(session, "quiet"), agent(session, "chatty")
    job(session, budget=2)
    (t,) = repo.lease_tasks(quiet.id, 1, session=session, now=T0)
    repo.lease_tasks(chatty.id, 1, session=session, now=T0)
    repo.heartbeat(chatty.id, [], session=session, now=at(25))
    assert repo.mark_lost_agents(session=session, lost_after_s=30, now=at(40)) == [quiet.id]
    assert quiet.status == "lost" and chatty.status == "active"
    task = session.get(Task, t.task_id)
    assert (task.state, task.attempt, task.agent_id) == ("queued", 2, quiet.id)  # re-queued, last held by quiet
    assert repo.heartbeat(quiet.id, [t.task_id], session=session, now=at(41)) == []  # it comes back, still holding
    assert quiet.status == "active"
    assert (task.state, task.attempt, task.agent_id, task.lease_deadline) == ("leased", 1, quiet.id, at(101))


def test_returned_leases_go_straight_back(session):
    ag = agent(session)
    job(session, budget=2)
    leased = repo.lease_tasks(ag.id, 2, session=session, now=T0)
    assert sorted(repo.return_leases(ag.id, [t.task_id for t in leased], session=session)) == sorted(
        t.task_id for t in leased)
    assert {t.attempt for t in repo.lease_tasks(ag.id, 2, session=session, now=at(1))} == {2}


def test_re_registering_retires_the_old_session(session):
    old = agent(session, "box")
    job(session, budget=1)
    (t,) = repo.lease_tasks(old.id, 1, session=session, now=T0)
    new = agent(session, "box", now=at(5))
    assert old.status == "gone" and new.status == "active"
    assert session.get(Task, t.task_id).state == "queued"
    with pytest.raises(repo.NotFound):
        repo.lease_tasks(old.id, 1, session=session, now=at(6))


def test_two_threads_never_lease_one_task_twice(session_factory, backend):
    """PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: BEGIN IMMEDIATE serialises the two sessions."""
    with session_scope(session_factory) as s:
        agents = [agent(s, "t1").id, agent(s, "t2").id]
        job(s, budget=60)
    got: dict[str, list[str]] = {a: [] for a in agents}
    barrier = threading.Barrier(2)

    def worker(agent_id: str) -> None:
        barrier.wait()
        for _ in range(40):
            with session_scope(session_factory) as s:
                got[agent_id] += [t.task_id for t in repo.lease_tasks(agent_id, 3, session=s, now=T0)]

    threads = [threading.Thread(target=worker, args=(a,)) for a in agents]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    everything = got[agents[0]] + got[agents[1]]
    assert len(everything) == len(set(everything)) == 60
    if backend == "postgresql":
        assert got[agents[0]] and got[agents[1]]  # both really ran at once
