"""A job's tuning curve: its trials in the order they were measured, with the untuned default and the reference
library's time to compare them with (the dashboard plots it)."""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from compiler_core.stats import summarize
from tuner_server.db.models import Comparison, Job, Trial
from tuner_server.repo.comparisons import default_trial


@dataclass(frozen=True)
class JobCurve:
    trials: list[Trial]  # oldest first, at most the asked limit
    total: int  # the job's trials, however many were returned
    default: Trial | None  # the trial of the untuned default config, once measured
    reference_name: str | None  # the library timed beside the head in the newest head-to-head comparison
    reference_s: float | None  # its median there


def job_curve(job: Job, *, session: Session, limit: int) -> JobCurve:
    where = (Trial.job_id == job.id,)
    total = session.scalar(select(func.count()).select_from(Trial).where(*where)) or 0
    trials = list(session.scalars(select(Trial).where(*where).order_by(Trial.created_at, Trial.id).limit(limit)))
    # the default may lie beyond `limit`: look for it among every verified trial, not just the page
    verified = list(session.scalars(select(Trial).where(*where, Trial.status == "OK")))
    default = default_trial(job, verified, session) if job.device_class is not None else None
    timed = session.scalars(select(Comparison).where(Comparison.job_id == job.id)
                            .order_by(Comparison.created_at.desc(), Comparison.id.desc())).all()
    with_reference = next((c for c in timed if c.reference_samples), None)
    if with_reference is None:
        return JobCurve(trials, total, default, None, None)
    return JobCurve(trials, total, default, with_reference.reference_name,
                    summarize(with_reference.reference_samples)[0])
