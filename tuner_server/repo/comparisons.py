"""Head-to-head re-measurement: how the head of a (workload, device class) moves, and what a job reports as best.

A verified trial that looks faster than the head does not replace it: it earns a COMPARE task, which an agent
runs by timing candidate and head interleaved (ABAB...) in one worker. The head moves when the whole 95 % CI of
the paired candidate/head ratio lies below 1. When a job's budget is spent it re-measures its fastest trials
(and the untuned default) against the head the same way, one at a time, the reference library timed in the same
rounds; the last of those comparisons is the job's reported result.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

import compiler_core as cc
from compiler_core.stats import paired_ratios, summarize
from tuner_server import measure_policy
from tuner_server.db.models import Agent, Comparison, Job, ScheduleHead, Task, Trial
from tuner_server.db.types import utcnow
from tuner_server.repo import schedules
from tuner_server.repo.records import TrialReport
from tuner_server.targets import target_for_class

MAX_OPEN_CHALLENGES = 1  # per job; the final phase re-measures the top trials anyway
FINAL_ROUNDS = 2  # final comparisons of one pair: a second look when the first was inconclusive
OPEN_TASK_STATES = ("queued", "leased")


@dataclass(frozen=True)
class Paired:
    ratio: float
    low: float
    high: float


@dataclass(frozen=True)
class JobResult:
    """A finished job's best, re-measured head to head. Ratios are times over the head's (>1: the head is faster)."""
    head: Trial
    head_s: float  # the head's median in the last final comparison
    reference_name: str | None
    reference_s: float | None
    vs_reference: Paired | None  # reference time / head time, paired per round
    vs_default: Paired | None  # the untuned default's time / head time, paired per round
    comparisons: int  # final comparisons run
    noisy: bool  # the last one could not tighten its interval or saw contention


def _option(job: Job, name: str):
    return measure_policy.of_job(job.measure_options, job.device_class)[name]


def paired(a, b) -> Paired | None:
    """Median and 95 % CI of a[i]/b[i]; None without pairs. A ratio beyond a double's range (a baseline sample
    of ~1e-320 s) is no measurement: it is left out, so no infinity reaches the database."""
    ratios = [r for r in paired_ratios(a, b) if math.isfinite(r)]
    if not ratios:
        return None
    return Paired(*summarize(ratios))


def compare_key(purpose: str, candidate: Trial, baseline: Trial, round_: int = 1) -> str:
    return f"{purpose} {candidate.id} vs {baseline.id}" + (f" #{round_}" if round_ > 1 else "")


def open_compares(job_id: str, *, session: Session, purpose: str | None = None) -> int:
    where = [Task.job_id == job_id, Task.kind == "COMPARE", Task.state.in_(OPEN_TASK_STATES)]
    if purpose is not None:
        where.append(Task.purpose == purpose)
    return session.scalar(select(func.count()).select_from(Task).where(*where)) or 0


def enqueue_compare(job: Job, candidate: Trial, baseline: Trial, purpose: str, *, session: Session,
                    now: datetime | None = None, round_: int = 1) -> Task | None:
    """Queue candidate vs baseline for `job` (None if this pair was already compared for this purpose and round)."""
    key = compare_key(purpose, candidate, baseline, round_)
    if session.scalar(select(Task.id).where(Task.job_id == job.id, Task.config_key == key)) is not None:
        return None
    position = (session.scalar(select(func.max(Task.position)).where(Task.job_id == job.id)) or 0) + 1
    task = Task(job_id=job.id, config=dict(candidate.config), config_key=key, position=position, attempt=1,
                state="queued", kind="COMPARE", purpose=purpose, candidate_trial_id=candidate.id,
                baseline_trial_id=baseline.id, time_reference=_option(job, "time_reference")
                and purpose == "final", created_at=now or utcnow())
    session.add(task)
    session.flush()
    return task


def after_trial(trial: Trial, job: Job, *, session: Session, now: datetime) -> schedules.ScheduleVersion | None:
    """What a verified trial of `job` does to the head: becomes it (no head yet, or it re-validates the head's own
    config under a new code generator), challenges it (looks faster: a COMPARE task), or nothing."""
    if trial.status != "OK" or trial.median_s is None:
        return None
    # Most trials at most challenge the head: read it unlocked, so the reports of one key do not queue on its pointer
    # row; lock the pointer (and decide again under the lock) only where the head may move here.
    pointer = session.get(ScheduleHead, (trial.workload_id, trial.device_class))
    current = schedules.head_of(session, pointer) if pointer is not None else None
    if current is None or current.trial.codegen_version != trial.codegen_version:
        pointer = schedules.lock_pointer(session, trial.workload_id, trial.device_class, now)
        current = schedules.head_of(session, pointer)
    if current is None:
        return schedules.append_version(session, pointer, trial, reason="improved", now=now, job_id=job.id,
                                        message="first verified schedule")
    if pointer.pinned:
        return None
    head = current.trial
    if head.codegen_version != trial.codegen_version:
        if head.config_key == trial.config_key:
            return schedules.append_version(session, pointer, trial, reason="revalidated", now=now, job_id=job.id,
                                            message=f"same config re-measured under codegen {trial.codegen_version} "
                                                    f"(was {head.codegen_version})")
        return None  # a trial competes only with heads of its own code generator; see final_step
    if trial.median_s < head.median_s and open_compares(job.id, session=session, purpose="challenge") < \
            MAX_OPEN_CHALLENGES:
        enqueue_compare(job, trial, head, "challenge", session=session, now=now)
    return None


def record_comparison(task: Task, agent: Agent, report: TrialReport, *, session: Session,
                      now: datetime) -> tuple[Comparison, schedules.ScheduleVersion | None]:
    """Store a COMPARE task's result; move the head if the candidate won and the baseline is still the head."""
    job = task.job
    candidate, baseline = session.get(Trial, task.candidate_trial_id), session.get(Trial, task.baseline_trial_id)
    stats = paired(report.samples_s, report.baseline_samples_s) if report.status == "OK" else None
    row = Comparison(task_id=task.id, attempt=task.attempt, job_id=job.id, workload_id=candidate.workload_id,
                     device_class=candidate.device_class, agent_id=agent.id, candidate_trial_id=candidate.id,
                     baseline_trial_id=baseline.id, purpose=task.purpose, outcome="failed",
                     codegen_version=report.codegen_version or agent.codegen_version,
                     candidate_samples=list(report.samples_s), baseline_samples=list(report.baseline_samples_s),
                     reference_samples=list(report.reference_samples_s), reference_name=report.reference_name or None,
                     contention=report.contention, noisy=report.noisy, threads=report.threads,
                     error=report.error or None, created_at=now)
    promoted = None
    if stats is not None:
        row.ratio, row.ratio_ci_low, row.ratio_ci_high = stats.ratio, stats.low, stats.high
        row.outcome, promoted = _decide(candidate, baseline, stats, job, session=session, now=now)
    session.add(row)
    session.flush()
    return row, promoted


def _decide(candidate: Trial, baseline: Trial, stats: Paired, job: Job, *, session: Session,
            now: datetime) -> tuple[str, schedules.ScheduleVersion | None]:
    if candidate.id == baseline.id or stats.high >= 1.0 - _option(job, "min_gain"):
        return "kept", None
    pointer = schedules.lock_pointer(session, candidate.workload_id, candidate.device_class, now)
    current = schedules.head_of(session, pointer)
    if pointer.pinned:
        return "kept", None
    if current is None or current.trial_id != baseline.id:
        if current is not None and current.trial_id != candidate.id:  # the head moved meanwhile: ask again
            enqueue_compare(job, candidate, current.trial, "final" if job.phase == "final" else "challenge",
                            session=session, now=now)
        return "stale", None
    message = (f"head to head: {stats.ratio:.3f}x the time of version {current.version} "
               f"(95% CI {stats.low:.3f}-{stats.high:.3f})")
    return "promoted", schedules.append_version(session, pointer, candidate, reason="improved", now=now,
                                                job_id=job.id, message=message)


# ---- the final phase -----------------------------------------------------------------------------------------
def final_candidates(job: Job, *, session: Session) -> list[Trial]:
    """The job's fastest verified trials (one per config, `recheck_top` of them) and its untuned default; none when
    recheck_top is 0 (the job then ends with its budget, without a final phase)."""
    top = _option(job, "recheck_top")
    if top <= 0:
        return []
    rows = session.scalars(select(Trial).where(Trial.job_id == job.id, Trial.status == "OK")
                           .order_by(Trial.median_s, Trial.id)).all()
    picked: dict[str, Trial] = {}
    for trial in rows:
        if len(picked) >= top:
            break
        picked.setdefault(trial.config_key, trial)
    default = default_trial(job, rows, session)
    if default is not None:
        picked.setdefault(default.config_key, default)
    return list(picked.values())


def default_trial(job: Job, rows: list[Trial], session: Session) -> Trial | None:
    """The trial among `rows` that measured the untuned default config of the job's class (None if none did)."""
    try:
        target = target_for_class(job.device_class, session=session)
        key = cc.config_key(cc.default_config(cc.parse_key(job.workload.key), target))
    except (ValueError, LookupError):
        return None
    return next((t for t in rows if t.config_key == key), None)


def final_step(job: Job, *, session: Session, now: datetime) -> bool:
    """Queue the next final comparison; False when every candidate has been compared with the current head.
    A head from another code generator that no trial of the job re-validated gives way to the job's fastest
    verified trial first (reason 'revalidated')."""
    candidates = final_candidates(job, session=session)
    if not candidates:
        return False
    pointer = schedules.lock_pointer(session, job.workload_id, job.device_class, now)
    current = schedules.head_of(session, pointer)
    fastest = candidates[0]
    if current is None:
        current = schedules.append_version(session, pointer, fastest, reason="improved", now=now, job_id=job.id,
                                           message="first verified schedule")
    elif current.trial.codegen_version != fastest.codegen_version and not pointer.pinned:
        message = (f"the head's codegen {current.trial.codegen_version} is superseded and the job did not verify its "
                   f"config again: its fastest verified trial takes over")
        current = schedules.append_version(session, pointer, fastest, reason="revalidated", now=now, job_id=job.id,
                                           message=message)
    head = current.trial
    others = [t for t in candidates if t.config_key != head.config_key]
    for candidate in others or [head]:
        rounds = _final_rounds(job, candidate, head, session=session)
        if rounds is not None:
            enqueue_compare(job, candidate, head, "final", session=session, now=now, round_=rounds + 1)
            return True
    return False


def _final_rounds(job: Job, candidate: Trial, head: Trial, *, session: Session) -> int | None:
    """How many final comparisons of candidate vs head ran, when one more is due: none ran yet, or the only one
    was inconclusive (its median says faster by more than min_gain, its interval does not) and a second, longer
    look decides. None when the pair is settled."""
    tasks = session.scalars(select(Task.id).where(Task.job_id == job.id, Task.purpose == "final",
                                                  Task.candidate_trial_id == candidate.id,
                                                  Task.baseline_trial_id == head.id)).all()
    if not tasks:
        return 0
    if len(tasks) >= FINAL_ROUNDS:
        return None
    rows = session.scalars(select(Comparison).where(Comparison.task_id.in_(tasks))
                           .order_by(Comparison.created_at, Comparison.id)).all()
    if len(rows) < len(tasks):
        return None  # still running (or lost: nothing to learn from it)
    gain = _option(job, "min_gain")
    last = rows[-1]
    undecided = last.outcome == "kept" and last.ratio is not None and last.ratio < 1.0 - gain <= last.ratio_ci_high
    return len(tasks) if undecided else None


def job_result(job: Job, *, session: Session) -> JobResult | None:
    """What the job reports as its best: the head as its last final comparison timed it, with the reference and
    the untuned default as ratios paired with it (None before the final phase measured anything)."""
    finals = [c for c in list_comparisons(job.id, session=session)
              if c.purpose == "final" and c.outcome in ("kept", "promoted")]  # a stale one timed a former head
    if not finals:
        return None
    last = finals[-1]
    won = last.outcome == "promoted"
    head_id = last.candidate_trial_id if won else last.baseline_trial_id
    head_samples = last.candidate_samples if won else last.baseline_samples
    vs_reference = paired(last.reference_samples, head_samples) if last.reference_samples else None
    # the default may be the head itself (then never a candidate: final_step compares the others against it)
    default = default_trial(job, [session.get(Trial, head_id), *(session.get(Trial, c.candidate_trial_id)
                                                                   for c in finals)], session)
    vs_default = None
    if default is not None and default.id == head_id:
        vs_default = Paired(1.0, 1.0, 1.0)
    elif default is not None:
        against_head = [c for c in finals if c.candidate_trial_id == default.id and c.baseline_trial_id == head_id]
        if against_head:
            vs_default = paired(against_head[-1].candidate_samples, against_head[-1].baseline_samples)
    return JobResult(session.get(Trial, head_id), summarize(head_samples)[0], last.reference_name,
                     summarize(last.reference_samples)[0] if last.reference_samples else None, vs_reference,
                     vs_default, len(finals), bool(last.noisy))


def list_comparisons(job_id: str, *, session: Session) -> list[Comparison]:
    return list(session.scalars(select(Comparison).where(Comparison.job_id == job_id)
                                .order_by(Comparison.created_at, Comparison.id)))
