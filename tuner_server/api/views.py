"""ORM rows and repository records -> public schemas. Called while the request's session is open."""
from __future__ import annotations

import compiler_core as cc
from tuner_server.api import schemas as s
from tuner_server.db.models import Agent, Comparison, Job, ScheduleVersion, Task, Trial, Workload
from tuner_server.repo import DeviceSummary, JobCurve, JobProgress, ScheduleKeySummary, VersionDiff
from tuner_server.repo.comparisons import JobResult, Paired


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
        rel_ci=trial.rel_ci, contention=trial.contention, noisy=trial.noisy, threads=trial.threads, cpus=trial.cpus,
        **throughput(workload, trial.median_s))


def progress_public(progress: JobProgress, workload: Workload) -> s.JobProgressPublic:
    best = trial_public(progress.best, workload) if progress.best is not None else None
    return s.JobProgressPublic(trial_budget=progress.trial_budget, completed=progress.completed,
                               verified=progress.verified, failed=progress.failed, queued=progress.queued,
                               leased=progress.leased, best=best, phase=progress.phase,
                               comparing=progress.comparing)


def _paired(p: Paired | None) -> s.PairedPublic | None:
    return s.PairedPublic(ratio=p.ratio, ci_low=p.low, ci_high=p.high) if p is not None else None


def result_public(r: JobResult | None) -> s.JobResultPublic | None:
    if r is None:
        return None
    return s.JobResultPublic(head_trial_id=r.head.id, config=r.head.config, head_median_s=r.head_s,
                             reference=r.reference_name, reference_median_s=r.reference_s,
                             speedup_vs_reference=_paired(r.vs_reference), speedup_vs_default=_paired(r.vs_default),
                             comparisons=r.comparisons, noisy=r.noisy)


def comparison_public(c: Comparison) -> s.ComparisonPublic:
    return s.ComparisonPublic(id=c.id, job_id=c.job_id, purpose=c.purpose, outcome=c.outcome,
                              candidate_trial_id=c.candidate_trial_id, baseline_trial_id=c.baseline_trial_id,
                              ratio=c.ratio, ratio_ci_low=c.ratio_ci_low, ratio_ci_high=c.ratio_ci_high,
                              rounds=len(c.candidate_samples or ()),
                              timed_s=sum(c.candidate_samples or ()) + sum(c.baseline_samples or ())
                              + sum(c.reference_samples or ()), reference=c.reference_name,
                              contention=c.contention, noisy=c.noisy, error=c.error, created_at=c.created_at)


def job_public(job: Job, progress: JobProgress | None = None, result: JobResult | None = None) -> s.JobPublic:
    w = job.workload
    return s.JobPublic(
        id=job.id, workload=w.key, op=w.op, params=w.params, device_selector=job.device_selector,
        device_class=job.device_class, state=job.state, error=job.error, trial_budget=job.trial_budget,
        strategy=job.strategy, strategy_options=job.strategy_options, priority=job.priority, seed=job.seed,
        measure_options=job.measure_options, created_by=job.created_by, created_at=job.created_at,
        started_at=job.started_at, finished_at=job.finished_at, phase=job.phase,
        start_model=s.StartModelPublic(**job.start_model) if job.start_model else None,
        progress=progress_public(progress, w) if progress is not None else None, result=result_public(result))


def _version_fields(v: ScheduleVersion) -> dict:
    t, w = v.trial, v.workload
    return dict(workload=w.key, device_class=v.device_class, version=v.version, parent_version=v.parent_version,
                reason=v.reason, pinned=v.pinned, author=v.author, job_id=v.job_id, message=v.message,
                created_at=v.created_at, trial_id=t.id, config=t.config, codegen_version=t.codegen_version,
                median_s=t.median_s, ci_low_s=t.ci_low_s, ci_high_s=t.ci_high_s, **throughput(w, t.median_s))


def version_public(v: ScheduleVersion) -> s.VersionPublic:
    return s.VersionPublic(**_version_fields(v))


def best_public(v: ScheduleVersion, head: ScheduleVersion | None, target: cc.Target | None,
                source: str | None = None) -> s.BestPublic:
    """`head`: the key's current head; its `pinned` is the key's pin state (every pin/unpin appends a version)."""
    return s.BestPublic(**_version_fields(v), op=v.workload.op, params=v.workload.params,
                        head_version=head.version if head else None, head_pinned=bool(head and head.pinned),
                        target=s.TargetPublic(**target.to_dict()) if target else None, source=source)


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


def agent_leases_public(a: Agent, leases: list[Task]) -> s.AgentLeasesPublic:
    return s.AgentLeasesPublic(**agent_public(a).model_dump(), device_class=a.device_class,
                               leases=[s.LeasePublic(task_id=t.id, job_id=t.job_id, kind=t.kind,
                                                     workload=t.job.workload.key, lease_deadline=t.lease_deadline)
                                       for t in leases])


def curve_point(t: Trial, workload: Workload) -> s.CurvePoint:
    return s.CurvePoint(trial_id=t.id, created_at=t.created_at, status=t.status, median_s=t.median_s,
                        ci_low_s=t.ci_low_s, ci_high_s=t.ci_high_s, config=t.config,
                        **throughput(workload, t.median_s))


def curve_public(job: Job, curve: JobCurve, limit: int) -> s.CurvePublic:
    w = job.workload
    return s.CurvePublic(job_id=job.id, workload=w.key, state=job.state, phase=job.phase,
                         trial_budget=job.trial_budget, points=[curve_point(t, w) for t in curve.trials],
                         total=curve.total, limit=limit,
                         default=curve_point(curve.default, w) if curve.default is not None else None,
                         reference=curve.reference_name, reference_median_s=curve.reference_s)


def schedule_key_public(k: ScheduleKeySummary) -> s.ScheduleKeyPublic:
    return s.ScheduleKeyPublic(workload=k.workload_key, op=k.op, params=k.params, device_class=k.device_class,
                               head_version=k.head_version, pinned=k.pinned, updated_at=k.updated_at)
