"""The job driver's reads of every pass, as statements built once and run over a Connection, not a Session.

Every pass reads the open jobs and the active agents, then, per job, its row, its counts and the trials its strategy
has not seen yet. Through a Session, with the statements built per call (ORM entities, identity map, cache keys),
those reads cost the tuner more CPU than the queries themselves; here each is one compiled, cached statement.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, Row, bindparam, func, select

from tuner_server.db.models import JOB_OPEN_STATES, JOB_STATES, Agent, Job, Task, Trial, Workload
from tuner_server.repo.errors import NotFound
from tuner_server.repo.sweep_rules import agent_silent, lease_expired

_jobs, _trials, _agents, _workloads = Job.__table__, Trial.__table__, Agent.__table__, Workload.__table__
_tasks = Task.__table__

_OPEN_JOBS = (select(_jobs.c.id).where(_jobs.c.state.in_(JOB_OPEN_STATES))
              .order_by(_jobs.c.priority.desc(), _jobs.c.created_at, _jobs.c.id).limit(bindparam("limit")))
_ACTIVE_AGENTS = (select(_agents.c.device_class, func.count())
                  .where(_agents.c.status == "active", _agents.c.last_heartbeat >= bindparam("heard_since"))
                  .group_by(_agents.c.device_class))
_JOB = (select(_jobs.c.id, _jobs.c.state, _jobs.c.phase, _jobs.c.seed, _jobs.c.device_selector, _jobs.c.device_class,
               _jobs.c.strategy, _jobs.c.strategy_options, _jobs.c.trial_budget,
               _workloads.c.key.label("workload_key"))
        .join(_workloads, _workloads.c.id == _jobs.c.workload_id).where(_jobs.c.id == bindparam("job_id")))
_JOB_STATES = select(_jobs.c.state, func.count()).group_by(_jobs.c.state)
_EXPIRED_LEASE = select(_tasks.c.id).where(lease_expired(bindparam("now"))).limit(1)  # the sweep's writes' rules
_SILENT_AGENT = select(_agents.c.id).where(agent_silent(bindparam("silent_since"))).limit(1)
_TRIAL_IDS = (select(_trials.c.id).where(_trials.c.job_id == bindparam("job_id"))
              .order_by(_trials.c.created_at, _trials.c.id).offset(bindparam("offset")))
_TRIALS = (select(_trials.c.id, _trials.c.config, _trials.c.median_s, _trials.c.status)
           .where(_trials.c.id.in_(bindparam("ids", expanding=True))))


def open_job_ids(connection: Connection, *, limit: int) -> list[str]:
    """The ids of up to `limit` queued or running jobs, highest priority first, then oldest (the driver's order)."""
    return list(connection.execute(_OPEN_JOBS, {"limit": limit}).scalars())


def active_agents_by_class(connection: Connection, heard_since: datetime) -> dict[str, int]:
    """Active agents heard from since `heard_since` per device class, counted by the database. An agent's status
    alone is not enough: for a silence window after a tuner starts, no agent is marked lost (the driver's grace),
    and an agent of an earlier run of the farm, silent for hours, must not draw a job to its device class."""
    return dict(connection.execute(_ACTIVE_AGENTS, {"heard_since": heard_since}).tuples().all())


def job_state_counts(connection: Connection) -> dict[str, int]:
    """Jobs per state (every state, zeros included), in one query."""
    counts = dict.fromkeys(JOB_STATES, 0)
    counts.update(connection.execute(_JOB_STATES).tuples().all())
    return counts


def sweep_has_work(connection: Connection, now: datetime, silent_since: datetime | None) -> bool:
    """Whether a sweep would change anything: a lease past its deadline at `now`, or (`silent_since` given) an active
    agent not heard from since then (`sweep_rules`, as the writes define them). The sweep's write transaction (on
    SQLite, the database's one write lock) is taken only then. Neither can appear between this read and the sweep:
    new leases end in the future and heartbeats only move forward."""
    if connection.execute(_EXPIRED_LEASE, {"now": now}).first() is not None:
        return True
    return silent_since is not None and \
        connection.execute(_SILENT_AGENT, {"silent_since": silent_since}).first() is not None


def job_row(connection: Connection, job_id: str) -> Row:
    """What a pass needs of the job: id, state, phase, seed, device_selector, device_class, strategy,
    strategy_options, trial_budget and its workload_key."""
    row = connection.execute(_JOB, {"job_id": job_id}).first()
    if row is None:
        raise NotFound(f"no job {job_id}")
    return row


def job_trials_after(connection: Connection, job_id: str, offset: int, known: set[str]) -> Sequence[Row]:
    """The job's trials from the `offset`-th on (oldest first), less those whose ids are in `known`, as rows of
    (id, config, median_s, status): the ids are read first and only the unknown trials loaded (the driver re-reads
    a few trials behind the last it saw every pass, and already has them)."""
    ids = connection.execute(_TRIAL_IDS, {"job_id": job_id, "offset": offset}).scalars().all()
    wanted = [i for i in ids if i not in known]
    if not wanted:
        return []
    rows = {row.id: row for row in connection.execute(_TRIALS, {"ids": wanted})}
    return [rows[i] for i in wanted if i in rows]
