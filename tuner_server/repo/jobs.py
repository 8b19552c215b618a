"""Jobs: a persisted state machine queued -> running -> done | failed | cancelled."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, String, bindparam, func, literal, select, update
from sqlalchemy.orm import Session

import compiler_core as cc
from tuner_server import measure_policy
from tuner_server.db.models import JOB_OPEN_STATES, JOB_STATES, Device, Job, Task, Trial
from tuner_server.db.types import utcnow
from tuner_server.device_class import device_kind
from tuner_server.repo.errors import Conflict, InvalidRequest, NotFound
from tuner_server.repo.records import JobLimits, JobProgress, JobSpec, Page
from tuner_server.repo.workloads import canonical_workload, find_workload, get_or_create_workload

KINDS = ("cpu", "cuda")
MAX_PRIORITY = 1000
DEFAULT_LIMITS = JobLimits()


def create_job(spec: JobSpec, *, session: Session, limits: JobLimits = DEFAULT_LIMITS,
               known_strategies: frozenset[str] | None = None, now: datetime | None = None) -> Job:
    """Validate `spec` and persist a queued job; InvalidRequest says what is wrong."""
    if not 1 <= spec.trial_budget <= limits.max_trials:
        raise InvalidRequest(f"trial_budget must be between 1 and {limits.max_trials}, got {spec.trial_budget}")
    if known_strategies is not None and spec.strategy not in known_strategies:
        raise InvalidRequest(f"unknown strategy {spec.strategy!r}; known: {', '.join(sorted(known_strategies))}")
    if not -MAX_PRIORITY <= spec.priority <= MAX_PRIORITY:
        raise InvalidRequest(f"priority must be between -{MAX_PRIORITY} and {MAX_PRIORITY}")
    _check_size(canonical_workload(spec.workload_key), limits)
    _check_selector(spec.device_selector, session)
    options = measure_policy.resolve(spec.measure_options, device_kind(spec.device_selector))
    workload = get_or_create_workload(spec.workload_key, session=session)
    job = Job(workload_id=workload.id, device_selector=spec.device_selector, strategy=spec.strategy,
              strategy_options=dict(spec.strategy_options), trial_budget=spec.trial_budget, priority=spec.priority,
              state="queued", created_at=now or utcnow(), created_by=spec.created_by, seed=spec.seed,
              measure_options=options, phase="search")
    session.add(job)
    session.flush()
    return job


def get_job(job_id: str, *, session: Session, lock: bool = False) -> Job:
    """The job; `lock`: for a change of its state, serialised with other lockers. On PostgreSQL the lock is FOR NO
    KEY UPDATE, which does not wait for transactions that only insert rows referencing the job (a trial or a task
    takes FOR KEY SHARE on its job): FOR UPDATE would queue the driver behind every report in flight, and every
    later report behind the driver."""
    job = session.get(Job, job_id, with_for_update={"key_share": True} if lock else None)
    if job is None:
        raise NotFound(f"no job {job_id}")
    return job


def list_jobs(*, session: Session, state: str | None = None, workload_key: str | None = None,
              device_class: str | None = None, limit: int = 50, offset: int = 0) -> Page[Job]:
    """Jobs matching every given filter, newest first."""
    where = []
    if state is not None:
        if state not in JOB_STATES:
            raise InvalidRequest(f"unknown job state {state!r}; one of {', '.join(JOB_STATES)}")
        where.append(Job.state == state)
    if workload_key is not None:
        where.append(Job.workload_id == find_workload(workload_key, session=session).id)
    if device_class is not None:
        where.append(Job.device_class == device_class)
    total = session.scalar(select(func.count()).select_from(Job).where(*where)) or 0
    rows = session.scalars(select(Job).where(*where).order_by(Job.created_at.desc(), Job.id)
                           .limit(limit).offset(offset)).all()
    return Page(list(rows), total, limit, offset)


def open_job_for(workload_key: str, device_class: str, *, session: Session) -> Job | None:
    """The newest queued or running job of the workload on `device_class` (asked for by that class, or fixed to it
    by its first lease); None when there is none or the workload was never seen."""
    try:
        workload = find_workload(workload_key, session=session)
    except NotFound:
        return None
    on_class = (Job.device_class == device_class) | (Job.device_class.is_(None) & (Job.device_selector == device_class))
    return session.scalars(select(Job).where(Job.workload_id == workload.id, Job.state.in_(JOB_OPEN_STATES), on_class)
                           .order_by(Job.created_at.desc(), Job.id).limit(1)).first()


def cancel_job(job_id: str, *, session: Session, now: datetime | None = None) -> Job:
    """Cancel an open job: its queued and leased tasks become cancelled; trials already measured stay."""
    _lock_open_tasks(session, job_id)
    job = get_job(job_id, session=session, lock=True)
    if job.state not in JOB_OPEN_STATES:
        raise Conflict(f"job {job_id} is {job.state}; only queued or running jobs can be cancelled")
    session.execute(update(Task).where(Task.job_id == job.id, Task.state.in_(("queued", "leased")))
                    .values(state="cancelled", lease_deadline=None).execution_options(synchronize_session="fetch"))
    job.state, job.finished_at = "cancelled", now or utcnow()
    session.flush()
    return job


def finish_job(job_id: str, *, session: Session, state: str = "done", error: str | None = None,
               now: datetime | None = None) -> Job:
    """End an open job as done or failed (the scheduler calls this when the space is exhausted or on error)."""
    if state not in ("done", "failed"):
        raise InvalidRequest(f"a job finishes as 'done' or 'failed', not {state!r}")
    _lock_open_tasks(session, job_id)
    job = get_job(job_id, session=session, lock=True)
    if job.state not in JOB_OPEN_STATES:
        raise Conflict(f"job {job_id} is already {job.state}")
    job.state, job.error, job.finished_at = state, error, now or utcnow()
    session.execute(update(Task).where(Task.job_id == job.id, Task.state == "queued")
                    .values(state="cancelled").execution_options(synchronize_session="fetch"))
    session.flush()
    return job


def record_start_model(job_id: str, start: dict | None, *, session: Session) -> None:
    """What the job's strategy was built from: the class model's {"device_class", "version", "trained_on"}, or None
    (no model: the job starts from nothing). Set each time the strategy is built (again after a restart)."""
    session.execute(update(Job).where(Job.id == job_id).values(start_model=start))


# A job's counts in one statement, so one snapshot: on PostgreSQL (READ COMMITTED) two separate counts can straddle a
# result's commit (its trial not counted yet, its task already done), undercounting the job's tasks by one; the
# driver then tries to queue beyond the budget and spins through the whole search space. Built once: the driver
# runs it every pass (over a Connection, tuner_server.repo.pass_reads).
PROGRESS_COUNTS = (
    select(literal("trial", String), Trial.__table__.c.status, func.count())
    .where(Trial.__table__.c.job_id == bindparam("job_id")).group_by(Trial.__table__.c.status)
    .union_all(select(Task.__table__.c.kind, Task.__table__.c.state, func.count())
               .where(Task.__table__.c.job_id == bindparam("job_id"))
               .group_by(Task.__table__.c.kind, Task.__table__.c.state)))


def job_progress(job_id: str, *, session: Session, with_best: bool = True) -> JobProgress:
    """The job's counts (one snapshot) and, `with_best`, its fastest OK trial."""
    job = get_job(job_id, session=session)
    best = session.scalars(select(Trial).where(Trial.job_id == job.id, Trial.status == "OK",
                                               Trial.median_s.is_not(None))
                           .order_by(Trial.median_s, Trial.created_at).limit(1)).first() if with_best else None
    return counted_progress(session, job.id, job.state, job.trial_budget, job.phase, best)


def counted_progress(executor: Session | Connection, job_id: str, state: str, trial_budget: int, phase: str,
                     best: Trial | None = None) -> JobProgress:
    """JobProgress of a job whose row the caller has read, its counts read through `executor`."""
    counts = executor.execute(PROGRESS_COUNTS, {"job_id": job_id}).all()
    by_status = {name: n for kind, name, n in counts if kind == "trial"}
    by_state = {name: n for kind, name, n in counts if kind == "MEASURE"}
    comparing = sum(n for kind, name, n in counts if kind == "COMPARE" and name in ("queued", "leased"))
    completed = sum(by_status.values())
    verified = by_status.get("OK", 0)
    return JobProgress(job_id, state, trial_budget, completed, verified, completed - verified,
                       by_state.get("queued", 0), by_state.get("leased", 0), best, phase, comparing)


def _lock_open_tasks(session: Session, job_id: str) -> None:
    """Lock order everywhere is tasks (by id), then their job: leasing and reporting lock in that order too."""
    session.scalars(select(Task.id).where(Task.job_id == job_id, Task.state.in_(("queued", "leased")))
                    .order_by(Task.id).with_for_update()).all()


def _check_selector(selector: str, session: Session) -> None:
    if selector in KINDS:
        return
    known = session.scalars(select(Device.device_class).order_by(Device.device_class)).all()
    if selector not in known:
        listing = ", ".join(known) if known else "none registered yet"
        raise InvalidRequest(f"unknown device {selector!r}: use 'cpu', 'cuda' or a known device class ({listing})")


def _check_size(w: cc.Workload, limits: JobLimits) -> None:
    for name, value in w.params:
        if isinstance(value, int) and value > limits.max_dim:
            raise InvalidRequest(f"{w.key}: {name}={value} exceeds the limit {limits.max_dim}")
    for spec in cc.get_op(w.op).tensor_specs(w):
        elements = 1
        for extent in spec.shape:
            elements *= int(extent)
        if elements > limits.max_tensor_elements:
            raise InvalidRequest(f"{w.key}: tensor {spec.name} has {elements} elements; limit "
                                 f"{limits.max_tensor_elements}")
