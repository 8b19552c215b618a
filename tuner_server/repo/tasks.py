"""Tasks and leases: one (job, config) to measure, leased to one agent until a deadline.

Leasing is concurrency-safe: PostgreSQL picks rows with `SELECT ... FOR UPDATE SKIP LOCKED`, so two agents
never get the same task; SQLite runs each transaction under `BEGIN IMMEDIATE` (see db/engine.py). Which jobs a
lease draws from is the fair share of tuner_server/fair_share.py.
"""
from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Text, and_, bindparam, case, func, insert, literal, or_, select, update
from sqlalchemy.orm import Session, joinedload

import compiler_core as cc
from tuner_server import fair_share, measure_policy
from tuner_server.db.models import JOB_OPEN_STATES, Agent, Job, Task, Trial
from tuner_server.db.types import new_id, utcnow
from tuner_server.device_class import device_kind
from tuner_server.repo.errors import Conflict, InvalidRequest, NotFound
from tuner_server.repo.records import LeasedTask, Requeued
from tuner_server.repo.sweep_rules import lease_expired
from tuner_server.repo.trials import append_trial

DEFAULT_MAX_ATTEMPTS = 3
FRESH_ENOUGH = timedelta(seconds=1)  # a lease refreshes the agent's last_heartbeat when it is older than this


# A proposal's statements, built once: the driver queues a batch every round, and building and caching a statement
# cost more than running it (the ORM's unit of work, too, for a few plain rows).
_LOCK_JOB = (select(Job.state, Job.trial_budget).where(Job.id == bindparam("job_id"))
             .with_for_update(key_share=True))  # as get_job(lock=True): FOR NO KEY UPDATE on PostgreSQL
_MEASURES = (Task.job_id == bindparam("job_id"), Task.kind == "MEASURE")
# The job's task count and which of the batch's keys it holds, in one statement (a round trip fewer per proposal): only
# the batch's keys are looked up (the (job, key) index), so a proposal's cost stays flat as the job grows. The count's
# row has no key.
_QUEUED_AND_KNOWN = (select(func.count(), literal(None, Text)).select_from(Task).where(*_MEASURES)
                     .union_all(select(literal(0), Task.config_key)
                                .where(*_MEASURES, Task.config_key.in_(bindparam("keys", expanding=True)))))


def enqueue_configs(job_id: str, configs: Iterable[dict[str, Any]], *, session: Session,
                    now: datetime | None = None) -> list[str]:
    """Queue configs for an open job; configs already in the job, and any beyond its budget, are skipped. Returns
    the new tasks' ids, in the order they will be leased."""
    configs = list(configs)
    for config in configs:
        if not isinstance(config, dict):
            raise InvalidRequest(f"a config is a dict of knob values, got {type(config).__name__}")
    job = session.execute(_LOCK_JOB, {"job_id": job_id}).one_or_none()
    if job is None:
        raise NotFound(f"no job {job_id}")
    if job.state not in JOB_OPEN_STATES:
        raise Conflict(f"job {job_id} is {job.state}; configs can only be added to queued or running jobs")
    keys = [cc.config_key(config) for config in configs]
    if not keys:
        return []
    rows = session.execute(_QUEUED_AND_KNOWN, {"job_id": job_id, "keys": sorted(set(keys))}).all()
    queued = next(n for n, key in rows if key is None)
    seen = {key for _, key in rows if key is not None}
    room, created_at = job.trial_budget - queued, now or utcnow()
    created: list[dict[str, Any]] = []
    for config, key in zip(configs, keys, strict=True):
        if key in seen:
            continue
        if len(created) >= room:
            break
        seen.add(key)
        created.append({"id": new_id(), "job_id": job_id, "config": dict(config), "config_key": key,
                        "position": queued + len(created) + 1, "attempt": 1, "state": "queued", "kind": "MEASURE",
                        "created_at": created_at})
    if created:
        session.execute(insert(Task), created)
    return [row["id"] for row in created]


def lease_tasks(agent_id: str, max_tasks: int, *, session: Session, lease_seconds: float = 60,
                now: datetime | None = None, share: fair_share.FairShare | None = None) -> list[LeasedTask]:
    """Lease up to `max_tasks` queued tasks of the open jobs that select this agent's device. Each task comes from
    the job furthest behind its fair share of the agents (tuner_server/fair_share.py, weighted by priority; `share`
    is the process's memory of earlier leases, None: judge by the tasks each job holds now), a job's tasks in the
    order they were proposed. How many an agent gets is the caller's (rpc/servicer.py sizes leases by throughput).
    A job's device class is fixed by its first lease ('cpu' and 'cuda' selectors resolve then), so one job never
    mixes device classes."""
    now = now or utcnow()
    agent = session.get(Agent, agent_id)
    if agent is None or agent.status == "gone":
        raise NotFound(f"no active agent {agent_id}")
    if agent.status != "active" or now - agent.last_heartbeat > FRESH_ENOUGH:  # a write per lease costs: not always
        agent.status, agent.last_heartbeat = "active", now
    if max_tasks <= 0:
        return []
    demands = _demands(session, agent)
    order = (share or fair_share.FairShare()).plan(demands, max_tasks, agent.device_class)
    picked = _pick(session, agent.device_class, Counter(order), now)
    deadline = now + timedelta(seconds=lease_seconds)
    leased = []
    for job_id in order:
        job, tasks = picked.get(job_id, (None, None))
        if not tasks:
            continue
        task = tasks.popleft()
        task.state, task.agent_id, task.lease_deadline = "leased", agent.id, deadline
        baseline = session.get(Trial, task.baseline_trial_id) if task.kind == "COMPARE" else None
        options = measure_policy.of_job(job.measure_options, job.device_class)
        if task.purpose == "final":
            options = measure_policy.for_final_comparison(options)
        leased.append(LeasedTask(task.id, task.attempt, job.id, job.workload.key, dict(task.config), options,
                                 deadline, task.kind,
                                 dict(baseline.config) if baseline else None, bool(task.time_reference)))
    session.flush()
    return leased


def _demands(session: Session, agent: Agent) -> list[fair_share.JobDemand]:
    """Tasks queued and held of each open job that selects the agent's device (jobs with neither are left out)."""
    selects_agent = or_(
        Job.device_class == agent.device_class,
        and_(Job.device_class.is_(None),
             Job.device_selector.in_((agent.device_class, device_kind(agent.device_class)))),
    )
    queued = func.sum(case((Task.state == "queued", 1), else_=0))
    held = func.sum(case((Task.state == "leased", 1), else_=0))
    rows = session.execute(select(Job.id, Job.priority, Job.created_at, queued, held)
                           .join(Task, Task.job_id == Job.id)
                           .where(Task.state.in_(("queued", "leased")), Job.state.in_(JOB_OPEN_STATES), selects_agent)
                           .group_by(Job.id, Job.priority, Job.created_at)).all()
    return [fair_share.JobDemand(job_id, priority, int(n_held), int(n_queued), (created_at, job_id))
            for job_id, priority, created_at, n_queued, n_held in rows]


def _pick(session: Session, device_class: str, quotas: Counter, now: datetime) -> dict[str, tuple[Job, deque]]:
    """Per job: (the job, its oldest `quota` queued tasks, locked); a job that belongs to another class is left
    out. Concurrent leases skip each other's rows (SKIP LOCKED), so a job may yield fewer than its quota."""
    jobs = session.scalars(select(Job).where(Job.id.in_(list(quotas))).options(joinedload(Job.workload))).all()
    out = {}
    for job in jobs:
        if _claim_job(session, job, device_class, now) is None:
            continue
        tasks = session.scalars(select(Task).where(Task.job_id == job.id, Task.state == "queued")
                                .order_by(Task.created_at, Task.position, Task.id).limit(quotas[job.id])
                                .with_for_update(skip_locked=True)).all()
        out[job.id] = (job, deque(tasks))
    return out


def requeue_expired(*, session: Session, now: datetime | None = None, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                    heard_since: datetime | None = None) -> Requeued:
    """Leases past their deadline go back to the queue with attempt + 1 (see `release_tasks` for what a late
    result of the old attempt gets); a task whose lease expired `max_attempts` times is lost, with an AGENT_LOST
    trial. `heard_since` (the driver's restart grace): only the leases of agents heard from since then expire (such
    an agent's heartbeat names every task it still holds or has a result for, and so keeps those leases)."""
    now = now or utcnow()
    query = select(Task).where(lease_expired(now))
    if heard_since is not None:
        query = query.where(Task.agent_id.in_(select(Agent.id).where(Agent.last_heartbeat >= heard_since)))
    tasks = session.scalars(query.order_by(Task.id).with_for_update(skip_locked=True)).all()
    return release_tasks(tasks, session=session, now=now, max_attempts=max_attempts, why="lease expired")


def return_leases(agent_id: str, task_ids: Sequence[str], *, session: Session,
                  now: datetime | None = None) -> list[str]:
    """An agent hands back tasks it will not finish (shutdown); they are re-queued at once."""
    tasks = session.scalars(select(Task).where(Task.id.in_(list(task_ids)), Task.agent_id == agent_id,
                                               Task.state == "leased").order_by(Task.id).with_for_update()).all()
    return release_tasks(tasks, session=session, now=now or utcnow(), max_attempts=None, why="returned").requeued


def release_tasks(tasks: Sequence[Task], *, session: Session, now: datetime, max_attempts: int | None,
                  why: str) -> Requeued:
    """Take leased tasks back from their agent: re-queue (attempt + 1) or, out of attempts, mark lost.

    A re-queued task keeps the agent that held it: until another lease takes it, that agent's result for the old
    attempt is still accepted and its heartbeat takes the lease back (results.py, agents.py), so nothing it
    measured meanwhile (a tuner restart, a database outage) is measured again."""
    requeued, lost = [], []
    for task in tasks:
        if max_attempts is not None and task.attempt >= max_attempts:
            _mark_lost(task, session=session, now=now, why=why)
            lost.append(task.id)
        else:
            task.state, task.attempt, task.lease_deadline = "queued", task.attempt + 1, None
            requeued.append(task.id)
    session.flush()
    return Requeued(requeued, lost)


def reclaimable(task: Task, agent_id: str) -> bool:
    """The task's last lease was `agent_id`'s and nobody has leased it since: it expired or was taken back, and
    the task waits, re-queued at the next attempt, for any agent."""
    return task.state == "queued" and task.agent_id == agent_id and task.attempt > 1


def reclaim(task: Task) -> None:
    """Give a `reclaimable` task back to the agent that held it, at the attempt it holds (undoing the re-queue: no
    lease of the next attempt was made, so nothing of it exists); the caller sets the new deadline."""
    task.state, task.attempt = "leased", task.attempt - 1


def _mark_lost(task: Task, *, session: Session, now: datetime, why: str) -> None:
    """A task out of attempts: a MEASURE task leaves an AGENT_LOST trial (it counts against the budget); a lost
    COMPARE task leaves nothing (the head stays; the driver's final phase goes on without it)."""
    job = task.job
    agent = session.get(Agent, task.agent_id) if task.agent_id else None
    task.state, task.lease_deadline = "lost", None
    if task.kind == "COMPARE":
        return
    append_trial(session=session, workload=job.workload, device_class=job.device_class, config=task.config,
                 codegen_version=agent.codegen_version if agent else "", status="AGENT_LOST", created_at=now,
                 task_id=task.id, attempt=task.attempt, job_id=job.id, agent_id=None,
                 error=f"{why} on attempt {task.attempt} (last agent {task.agent_id}); no attempts left")


def _claim_job(session: Session, job: Job, device_class: str, now: datetime) -> Job | None:
    """Fix an unresolved job's device class to this one and mark it running; None if it belongs elsewhere."""
    if job.device_class is None or job.state == "queued":
        session.execute(update(Job).where(Job.id == job.id, Job.device_class.is_(None))
                        .values(device_class=device_class).execution_options(synchronize_session=False))
        session.execute(update(Job).where(Job.id == job.id, Job.state == "queued")
                        .values(state="running", started_at=now).execution_options(synchronize_session=False))
        session.refresh(job)
    if job.device_class != device_class or job.state not in JOB_OPEN_STATES:
        return None
    return job
