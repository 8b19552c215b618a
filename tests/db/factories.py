"""Small builders shared by the database tests (and the REST tests' seeded farm)."""
from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

import compiler_core as cc
from tuner_server import repo
from tuner_server.db import Task, Trial
from tuner_server.device_class import device_class
from tuner_server.repo import JobSpec, TrialReport
from tuner_server.repo.trials import append_trial

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
MATMUL = "matmul(M=64,N=64,K=64,dtype=float32)"
SOFTMAX = "softmax(rows=128,cols=256,dtype=float32)"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def cpu_fingerprint(cores: int = 2, isa=("sse4_2", "avx2", "fma")) -> dict:
    """A CPU agent's fingerprint, with the target an agent of that ISA and core count registers."""
    widest = "avx512bf16" if "avx512_bf16" in isa else "avx512" if "avx512f" in isa else \
        "avx2" if "avx2" in isa else "sse"
    return {"kind": "cpu", "model": "AMD EPYC 7B13", "arch": "x86_64", "isa_flags": list(isa),
            "compute_units": cores, "memory_bytes": 8 << 30,
            "target": cc.cpu_target(isa=widest, cores=cores).to_dict()}


def cuda_fingerprint() -> dict:
    return {"kind": "cuda", "model": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "compute_units": 132,
            "memory_bytes": 80 << 30, "target": H100.to_dict()}


H100 = cc.cuda_target("sm_90a", sm_count=132, l2_bytes=50 << 20)  # what an H100's agent registers
CPU_TARGET = cc.cpu_target(isa="avx2", cores=2)  # what cpu_fingerprint()'s agent registers


def agent(session, name: str = "a1", fingerprint: dict | None = None, now: datetime = T0):
    return repo.register_agent(fingerprint or cpu_fingerprint(), name, "cg1", session=session, now=now).agent


def job(session, budget: int = 4, selector: str = "cpu", key: str = MATMUL, priority: int = 0,
        n_configs: int | None = None, now: datetime = T0):
    """A job with `n_configs` (default: budget) distinct configs queued."""
    j = repo.create_job(JobSpec(key, selector, budget, priority=priority), session=session, now=now)
    repo.enqueue_configs(j.id, [{"tile": 2 ** i} for i in range(budget if n_configs is None else n_configs)],
                         session=session, now=now)
    return j


def ok(task, median: float, spread: float = 0.01, status: str = "OK") -> TrialReport:
    """An OK report with a CI of median * (1 -/+ spread)."""
    return TrialReport(task.task_id, task.attempt, status, samples_s=(median,) * 3, median_s=median,
                       ci_low_s=median * (1 - spread), ci_high_s=median * (1 + spread), codegen_version="cg1")


def measure(session, ag, medians, now: datetime = T0, spread: float = 0.01):
    """Lease one task per median and report it OK; returns the RecordOutcomes."""
    leased = repo.lease_tasks(ag.id, len(medians), session=session, now=now)
    assert len(leased) == len(medians)
    pairs = zip(leased, medians, strict=True)
    return [repo.record_result(ag.id, ok(t, m, spread), session=session, now=now) for t, m in pairs]


def device(session, fingerprint: dict | None = None) -> str:
    """The class of `fingerprint` (default: the CPU one), with its devices row; no agent registered."""
    fingerprint = fingerprint or cpu_fingerprint()
    dclass = device_class(fingerprint)
    repo.ensure_device(dclass, fingerprint, session=session, now=T0)
    return dclass


def trial(session, dclass: str, config: dict, *, key: str = MATMUL, status: str = "OK", median: float = 1e-3,
          now: datetime = T0) -> Trial:
    """A trial appended directly, as an import would (no job, task or agent); a failure has no median."""
    workload = repo.get_or_create_workload(key, session=session)
    return append_trial(session=session, workload=workload, device_class=dclass, config=config,
                        codegen_version="cg1", status=status, created_at=now,
                        median_s=median if status == "OK" else None)


_fresh = itertools.count()


# ---- head-to-head comparisons: what an agent sends back for a COMPARE task ------------------------------------
def paired_report(task, ratio: float, *, baseline_s: float = 1e-3, rounds: int = 9, jitter: float = 0.002,
                  reference_s: float | None = None, status: str = "OK", codegen: str = "cg1") -> TrialReport:
    """A COMPARE report whose per-round candidate/baseline ratios are `ratio * (1 + jitter * (i % 5 - 2))`: with 9
    rounds the ratio's 95 % CI is about ratio * (1 -/+ 2 jitter). Every round is slowed alike (a shared host's
    slow phase hits both), which the pairing cancels; the round factors have median 1, so the baseline's and the
    reference's medians are `baseline_s` and `reference_s` (the reference library timed in the rounds)."""
    base, cand, ref = [], [], []
    for i in range(rounds):
        phase = 1 + 0.1 * (i % 3 - 1)
        base.append(baseline_s * phase)
        cand.append(baseline_s * phase * ratio * (1 + jitter * (i % 5 - 2)))
        if reference_s is not None:
            ref.append(reference_s * phase)
    ordered = sorted(cand)
    return TrialReport(task.task_id, task.attempt, status, samples_s=tuple(cand), median_s=ordered[rounds // 2],
                       ci_low_s=ordered[0], ci_high_s=ordered[-1], codegen_version=codegen,
                       baseline_samples_s=tuple(base), reference_samples_s=tuple(ref),
                       reference_name="numpy" if ref else "", contention=0.01, noisy=False, threads=2, cpus="0-1")


def lease_compare(session, ag, now: datetime = T0):
    """Lease the next task, which must be a COMPARE task (tests queue nothing else ahead of it)."""
    (task,) = repo.lease_tasks(ag.id, 1, session=session, now=now)
    assert task.kind == "COMPARE", task
    return task


def compare(session, ag, ratio: float, now: datetime = T0, **report):
    """Lease the queued COMPARE task and report it with paired samples of `ratio`; returns the RecordOutcome."""
    task = lease_compare(session, ag, now)
    return repo.record_result(ag.id, paired_report(task, ratio, **report), session=session, now=now)


def measure_new(session, ag, job_id: str, median: float, now: datetime = T0, spread: float = 0.01):
    """Queue one more config for the job and measure it at `now` (nothing else may be queued ahead of it)."""
    (created,) = repo.enqueue_configs(job_id, [{"tile": 3, "variant": next(_fresh)}], session=session, now=now)
    (task,) = repo.lease_tasks(ag.id, 1, session=session, now=now)
    assert task.task_id == created, "a COMPARE task was queued ahead: settle it first"
    return repo.record_result(ag.id, ok(task, median, spread), session=session, now=now)


def open_compares(session, job_id: str) -> list[Task]:
    """The job's COMPARE tasks queued or leased, oldest first."""
    return list(session.scalars(select(Task).where(Task.job_id == job_id, Task.kind == "COMPARE",
                                                   Task.state.in_(("queued", "leased"))).order_by(Task.position)))
