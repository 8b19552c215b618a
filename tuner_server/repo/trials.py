"""Trials: the append-only record of every measured (or failed) attempt."""
from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

import compiler_core as cc
from tuner_server.db.models import Trial, Workload
from tuner_server.repo.errors import NotFound
from tuner_server.repo.records import Page
from tuner_server.repo.workloads import find_workload


def content_identity(workload_key: str, device_class: str, config_key: str, codegen_version: str,
                     created_at: datetime, median_s: float | None) -> str:
    """What makes two trials the same measurement in any farm: no task, job or agent ids in it."""
    when = created_at.astimezone(UTC).isoformat(timespec="microseconds")
    fields = [workload_key, device_class, config_key, codegen_version, when,
              None if median_s is None else repr(float(median_s))]
    return hashlib.sha256(json.dumps(fields, separators=(",", ":")).encode()).hexdigest()


def append_trial(*, session: Session, workload: Workload, device_class: str, config: dict[str, Any],
                 codegen_version: str, status: str, created_at: datetime, **measured: Any) -> Trial:
    """Add one trial. `measured` holds the optional columns: task_id, attempt, job_id, agent_id, samples,
    median_s, ci_low_s, ci_high_s, error, compile_s, max_abs_error."""
    config_key = cc.config_key(config)
    content_id = content_identity(workload.key, device_class, config_key, codegen_version, created_at,
                                  measured.get("median_s"))
    measured["samples"] = [float(s) for s in measured.get("samples") or ()]
    trial = Trial(workload_id=workload.id, device_class=device_class, config=dict(config), config_key=config_key,
                  codegen_version=codegen_version, status=status, created_at=created_at, content_id=content_id,
                  **measured)
    session.add(trial)
    session.flush()
    return trial


def get_trial(trial_id: str, *, session: Session) -> Trial:
    trial = session.get(Trial, trial_id)
    if trial is None:
        raise NotFound(f"no trial {trial_id}")
    return trial


def list_trials(*, session: Session, job_id: str | None = None, workload_key: str | None = None,
                device_class: str | None = None, status: str | None = None, limit: int = 100,
                offset: int = 0) -> Page[Trial]:
    """Trials matching every given filter, oldest first."""
    where = []
    if job_id is not None:
        where.append(Trial.job_id == job_id)
    if workload_key is not None:
        where.append(Trial.workload_id == find_workload(workload_key, session=session).id)
    if device_class is not None:
        where.append(Trial.device_class == device_class)
    if status is not None:
        where.append(Trial.status == status)
    total = session.scalar(select(func.count()).select_from(Trial).where(*where)) or 0
    rows = session.scalars(select(Trial).where(*where).order_by(Trial.created_at, Trial.id)
                           .limit(limit).offset(offset)).all()
    return Page(list(rows), total, limit, offset)


def transfer_trials(device_class: str, exclude_workload_key: str, *, session: Session,
                    limit: int = 2000) -> list[tuple[str, Trial]]:
    """The newest `limit` trials of other workloads on `device_class`, as (workload key, trial): what a
    model-guided job learns from before it has measured anything itself."""
    rows = session.execute(
        select(Workload.key, Trial).join(Workload, Trial.workload_id == Workload.id)
        .where(Trial.device_class == device_class, Workload.key != exclude_workload_key)
        .order_by(Trial.created_at.desc(), Trial.id).limit(limit)).all()
    return [(key, trial) for key, trial in rows]
