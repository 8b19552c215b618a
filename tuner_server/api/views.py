"""ORM rows and repository records -> public schemas. Called while the request's session is open."""
from __future__ import annotations

import dataclasses

import compiler_core as cc
from tuner_server.api import schemas as s
from tuner_server.db.models import Agent, Job, ScheduleVersion, Trial, Workload
from tuner_server.repo import DeviceSummary, JobProgress, VersionDiff


def throughput(workload: Workload, median_s: float | None) -> dict[str, float | None]:
    """GFLOP/s and GB/s of a runtime from the workload's flop and byte counts (None where unknown)."""
    if not median_s or median_s <= 0:
        return {"gflops": None, "gbps": None}
    return {"gflops": workload.flops / median_s / 1e9 if workload.flops else None,
            "gbps": workload.bytes / median_s / 1e9 if workload.bytes else None}


def trial_public(trial: Trial, workload: Workload) -> s.TrialPublic:
    return s.TrialPublic(
        id=trial.id, job_id=trial.job_id, task_id=trial.task_id, attempt=trial.attempt, workload=workload.key,
        device_class=trial.device_class, agent_id=trial.agent_id, config=trial.config,
        codegen_version=trial.codegen_version, status=trial.status, samples=list(trial.samples or ()),
        median_s=trial.median_s, ci_low_s=trial.ci_low_s, ci_high_s=trial.ci_high_s, error=trial.error,
        compile_s=trial.compile_s, max_abs_error=trial.max_abs_error, created_at=trial.created_at,
        **throughput(workload, trial.median_s))


def progress_public(progress: JobProgress, workload: Workload) -> s.JobProgressPublic:
    best = trial_public(progress.best, workload) if progress.best is not None else None
    return s.JobProgressPublic(trial_budget=progress.trial_budget, completed=progress.completed,
                               verified=progress.verified, failed=progress.failed, queued=progress.queued,
                               leased=progress.leased, best=best)


def job_public(job: Job, progress: JobProgress | None = None) -> s.JobPublic:
    w = job.workload
    return s.JobPublic(
        id=job.id, workload=w.key, op=w.op, params=w.params, device_selector=job.device_selector,
        device_class=job.device_class, state=job.state, error=job.error, trial_budget=job.trial_budget,
        strategy=job.strategy, strategy_options=job.strategy_options, priority=job.priority, seed=job.seed,
        measure_options=job.measure_options, created_by=job.created_by, created_at=job.created_at,
        started_at=job.started_at, finished_at=job.finished_at,
        progress=progress_public(progress, w) if progress is not None else None)


def _version_fields(v: ScheduleVersion) -> dict:
    t, w = v.trial, v.workload
    return dict(workload=w.key, device_class=v.device_class, version=v.version, parent_version=v.parent_version,
                reason=v.reason, pinned=v.pinned, author=v.author, job_id=v.job_id, message=v.message,
                created_at=v.created_at, trial_id=t.id, config=t.config, codegen_version=t.codegen_version,
                median_s=t.median_s, ci_low_s=t.ci_low_s, ci_high_s=t.ci_high_s, **throughput(w, t.median_s))


def version_public(v: ScheduleVersion) -> s.VersionPublic:
    return s.VersionPublic(**_version_fields(v))


def best_public(v: ScheduleVersion, head: ScheduleVersion | None, target: cc.Target,
                source: str | None = None) -> s.BestPublic:
    """`head`: the key's current head; its `pinned` is the key's pin state (every pin/unpin appends a version)."""
    return s.BestPublic(**_version_fields(v), op=v.workload.op, params=v.workload.params,
                        head_version=head.version if head else None, head_pinned=bool(head and head.pinned),
                        target=s.TargetPublic(**dataclasses.asdict(target)), source=source)


def diff_public(d: VersionDiff, workload_key: str, device_class: str) -> s.DiffPublic:
    return s.DiffPublic(workload=workload_key, device_class=device_class, from_version=d.from_version,
                        to_version=d.to_version, changed=d.changed, median_ratio=d.median_ratio)


def agent_public(a: Agent) -> s.AgentPublic:
    return s.AgentPublic(id=a.id, name=a.name, status=a.status, codegen_version=a.codegen_version,
                         registered_at=a.registered_at, last_heartbeat=a.last_heartbeat)


def device_public(d: DeviceSummary, agents: list[Agent]) -> s.DevicePublic:
    return s.DevicePublic(device_class=d.device_class, kind=d.kind,
                          status="online" if d.active_agents else "offline", active_agents=d.active_agents,
                          agents=[agent_public(a) for a in agents], fingerprint=d.fingerprint,
                          first_seen=d.first_seen)
