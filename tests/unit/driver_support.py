"""What the job driver's tests share: a SQLite farm (the `settings` and `sessions` fixtures), a CPU agent, jobs, and a
FakeAgent test double that measures what the driver queued."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

import compiler_core as cc
from tests.unit.fake_agent import FakeAgent
from tuner_server import repo
from tuner_server.db import Job, Task, Trial, make_engine, make_session_factory, session_scope, upgrade_to_head
from tuner_server.repo import JobSpec
from tuner_server.settings import Settings

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
BIG = "matmul(M=64,N=64,K=64,dtype=float32)"  # 73920 valid configs on cpu-x86_64-avx2-2c
SMALL = "transpose(rows=8,cols=8,dtype=float32)"  # 20 valid configs
CPU_TARGET = cc.cpu_target(isa="avx2", cores=2)
CPU = {"kind": "cpu", "model": "AMD EPYC 7B13", "arch": "x86_64", "isa_flags": ["avx2", "fma"], "compute_units": 2,
       "target": CPU_TARGET.to_dict()}
CPU_CLASS = "cpu-x86_64-avx2-2c"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def settings(tmp_path):
    return Settings(database_url=f"sqlite:///{tmp_path / 'tf.db'}", lease_seconds=60, agent_lost_after_s=30,
                    max_task_attempts=3)


@pytest.fixture
def sessions(settings):
    upgrade_to_head(settings.database_url)
    engine = make_engine(settings.database_url)
    yield make_session_factory(engine)
    engine.dispose()


def new_agent(sessions, name="a1", now=T0) -> str:
    with session_scope(sessions) as s:
        return repo.register_agent(CPU, name, "cg1", session=s, now=now).agent.id


def new_job(sessions, key=BIG, budget=20, strategy="random", seed=None, selector="cpu", options=None,
            measure_options=None) -> str:
    with session_scope(sessions) as s:
        spec = JobSpec(key, selector, budget, strategy=strategy, seed=seed, strategy_options=options or {},
                       measure_options=measure_options or {})
        return repo.create_job(spec, session=s, now=T0).id


def measure(sessions, agent_id, now, limit=1000, status="OK") -> int:
    """The agent (a FakeAgent test double) leases up to `limit` tasks and reports each: MEASURE tasks with a
    config's stable synthetic time, COMPARE tasks with paired rounds."""
    return FakeAgent(sessions, agent_id).run(now, limit, status)


def job_state(sessions, job_id):
    """The job, its MEASURE tasks' config keys and its trial count."""
    with session_scope(sessions) as s:
        job = s.get(Job, job_id)
        keys = s.scalars(select(Task.config_key).where(Task.job_id == job_id, Task.kind == "MEASURE")).all()
        trials = s.scalar(select(func.count()).select_from(Trial).where(Trial.job_id == job_id))
        return job, keys, trials


def compare_tasks(sessions, job_id, purpose=None) -> list[Task]:
    with session_scope(sessions) as s:
        where = [Task.job_id == job_id, Task.kind == "COMPARE"]
        if purpose:
            where.append(Task.purpose == purpose)
        return list(s.scalars(select(Task).where(*where).order_by(Task.position)))


def run_to_end(sessions, driver, agent_id, job_id, start=1.0, max_rounds=200):
    for round_ in range(max_rounds):
        now = at(start + round_)
        driver.tick(now)
        job, keys, _ = job_state(sessions, job_id)
        if job.state not in ("queued", "running"):
            return job
        measure(sessions, agent_id, now)
    pytest.fail("the job never finished")
