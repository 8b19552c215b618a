"""Recording results: idempotent by (task_id, attempt); a result for a lease someone else took over is rejected."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from tuner_server.db.models import TRIAL_STATUSES, Agent, Comparison, Task, Trial
from tuner_server.db.types import utcnow
from tuner_server.repo.comparisons import after_trial, record_comparison
from tuner_server.repo.errors import InvalidRequest, NotFound
from tuner_server.repo.records import RecordOutcome, TrialReport
from tuner_server.repo.tasks import reclaim, reclaimable
from tuner_server.repo.trials import append_trial


def record_result(agent_id: str, report: TrialReport, *, session: Session,
                  now: datetime | None = None) -> RecordOutcome:
    """Append the trial (MEASURE) or the comparison (COMPARE), mark the task done, and let the result act on the
    head (repo/comparisons.py: a faster trial earns a comparison; a won comparison moves the head).

    - accepted: first report of an attempt the agent still holds, or held until its lease expired and nobody has
      leased the task since (a tuner restart or a database outage kept the agent out; its result still counts);
    - duplicate: this agent already reported this (task, attempt) — ignored, not counted twice;
    - rejected: the lease is gone (re-leased to anyone, done, lost, cancelled, another agent's) or the task is
      unknown.
    """
    now = now or utcnow()
    if report.status not in TRIAL_STATUSES:
        raise InvalidRequest(f"unknown trial status {report.status!r}; one of {', '.join(TRIAL_STATUSES)}")
    agent = session.get(Agent, agent_id)
    if agent is None:
        raise NotFound(f"no agent {agent_id}")
    task = session.get(Task, report.task_id, with_for_update=True)
    if task is None:
        return RecordOutcome("rejected", report.task_id, reason="unknown task")
    row_type = Comparison if task.kind == "COMPARE" else Trial
    earlier = session.scalar(select(row_type).where(row_type.task_id == task.id, row_type.attempt == report.attempt))
    if earlier is not None:
        if earlier.agent_id == agent.id:
            return RecordOutcome("duplicate", task.id, **{"comparison" if task.kind == "COMPARE" else "trial": earlier})
        return RecordOutcome("rejected", task.id, reason=f"attempt {report.attempt} is already closed")
    if reclaimable(task, agent.id) and task.attempt == report.attempt + 1:
        reclaim(task)
    if task.state != "leased" or task.agent_id != agent.id or task.attempt != report.attempt:
        why = f"lease not held: task is {task.state}, attempt {task.attempt}, agent {task.agent_id}"
        return RecordOutcome("rejected", task.id, reason=why)
    if task.kind == "COMPARE" and len(report.baseline_samples_s) != len(report.samples_s):
        raise InvalidRequest(f"a COMPARE result pairs every sample: {len(report.samples_s)} samples but "
                             f"{len(report.baseline_samples_s)} baseline samples")
    job = task.job
    task.state, task.lease_deadline = "done", None
    if task.kind == "COMPARE":
        comparison, promoted = record_comparison(task, agent, report, session=session, now=now)
        return RecordOutcome("accepted", task.id, promoted=promoted, comparison=comparison)
    trial = append_trial(
        session=session, workload=job.workload, device_class=agent.device_class, config=task.config,
        codegen_version=report.codegen_version or agent.codegen_version, status=report.status, created_at=now,
        task_id=task.id, attempt=task.attempt, job_id=job.id, agent_id=agent.id, samples=report.samples_s,
        median_s=report.median_s, ci_low_s=report.ci_low_s, ci_high_s=report.ci_high_s,
        error=report.error or None, compile_s=report.compile_s, max_abs_error=report.max_abs_error,
        contention=report.contention, noisy=report.noisy, threads=report.threads, cpus=report.cpus,
    )
    promoted = after_trial(trial, job, session=session, now=now)
    return RecordOutcome("accepted", task.id, trial=trial, promoted=promoted)
