"""Shared by the REST API tests: a seeded farm (tokens, a CPU agent, a finished job whose 3 trials made 3 schedule
versions head to head and whose final phase re-measured them), a test double for the job driver, authenticated
request helpers, and a row counter."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from fastapi.testclient import TestClient
from sqlalchemy import func, select

import compiler_core as cc
from tests.db.factories import CPU_TARGET, agent, at, compare, lease_compare, paired_report
from tuner_server import repo
from tuner_server.api.app import create_app
from tuner_server.db import Base, Task, session_scope
from tuner_server.repo import JobSpec, comparisons
from tuner_server.settings import Settings

ADMIN = "tf_test_admin_token_0123456789"
READER = "tf_test_read_token_0123456789"
CPU_CLASS = "cpu-x86_64-avx2-2c"  # what tests/db/factories.cpu_fingerprint() derives
MATMUL = {"M": 64, "N": 64, "K": 64, "dtype": "float32"}
MATMUL_KEY = "matmul(M=64,N=64,K=64,dtype=float32)"
MATMUL_QUERY = "op=matmul&M=64&N=64&K=64&dtype=float32&device=" + CPU_CLASS
MEDIANS = (3e-4, 2e-4, 1e-4)  # each faster, each winning its challenge: versions 1, 2, 3 at at(10), at(20), at(30)


class RecordingDriver:
    """Test double for tuner_server.driver.JobDriver: only records wake() calls."""

    def __init__(self):
        self.wakes = 0

    def wake(self) -> None:
        self.wakes += 1


@dataclass
class Farm:
    client: TestClient
    driver: RecordingDriver
    factory: object
    settings: Settings
    seeded: dict = field(default_factory=dict)

    def get(self, path: str, token: str | None = READER, **kw):
        return self.client.get(path, headers=_auth(token), **kw)

    def post(self, path: str, token: str | None = ADMIN, **kw):
        return self.client.post(path, headers={**_auth(token), **kw.pop("headers", {})}, **kw)

    def delete(self, path: str, token: str | None = ADMIN, **kw):
        return self.client.delete(path, headers=_auth(token), **kw)

    def rows(self) -> dict[str, int]:
        """Rows per table: equal before and after a refused request means it wrote nothing."""
        with self.factory() as s:
            return {t.name: s.scalar(select(func.count()).select_from(t)) for t in Base.metadata.sorted_tables}


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def valid_configs(n: int) -> list[dict]:
    """n distinct configs valid for the CPU class's target (so the source can be regenerated)."""
    w, target = cc.parse_key(MATMUL_KEY), CPU_TARGET
    configs = [cc.default_config(w, target)]
    for c in cc.get_space(w, target).sample(random.Random(0), 4 * n):
        if cc.config_key(c) not in {cc.config_key(x) for x in configs}:
            configs.append(c)
    return configs[:n]


def seed(factory) -> dict:
    """The seeded job measures three configs, each faster; each wins its challenge at once (versions 1, 2, 3 at
    at(10), at(20), at(30)); then its final phase re-measures the other two against the head, with numpy (2e-4 s)
    timed in the same rounds, and it ends."""
    with session_scope(factory) as s:
        repo.register_token("admin", "admin", ADMIN, session=s)
        repo.register_token("reader", "read", READER, session=s)
        ag = agent(s, now=at(0))
        job = repo.create_job(JobSpec(MATMUL_KEY, "cpu", len(MEDIANS)), session=s, now=at(0))
        configs = valid_configs(len(MEDIANS))  # configs[0] is the untuned default
        trials = []
        for i, median in enumerate(MEDIANS):
            now = at(10 * (i + 1))
            repo.enqueue_configs(job.id, [configs[i]], session=s, now=now)  # queued one by one: none ahead of a compare
            (task,) = repo.lease_tasks(ag.id, 1, session=s, now=now)
            report = repo.TrialReport(task.task_id, task.attempt, "OK", samples_s=(median,) * 3, median_s=median,
                                      ci_low_s=median * 0.99, ci_high_s=median * 1.01,
                                      codegen_version=cc.codegen_version())
            trials.append(repo.record_result(ag.id, report, session=s, now=now).trial.id)
            if i:
                won = compare(s, ag, median / MEDIANS[i - 1], now=now, baseline_s=MEDIANS[i - 1],
                              codegen=cc.codegen_version())
                assert won.promoted.version == i + 1
        job.phase = "final"  # what the job driver does once the budget is spent (driver._final)
        for i in range(1, 10):
            now = at(30 + i)
            if not comparisons.final_step(job, session=s, now=now):
                break
            task = lease_compare(s, ag, now)
            candidate = MEDIANS[trials.index(s.get(Task, task.task_id).candidate_trial_id)]
            report = paired_report(task, candidate / MEDIANS[-1], baseline_s=MEDIANS[-1], reference_s=2e-4,
                                   codegen=cc.codegen_version())
            assert repo.record_result(ag.id, report, session=s, now=now).comparison.outcome == "kept"
        repo.finish_job(job.id, session=s, state="done", now=at(40))
        return {"job_id": job.id, "agent_id": ag.id, "trials": trials, "configs": configs}


def make_farm(factory, **settings) -> Farm:
    config = Settings(database_url="sqlite://", **settings)
    driver = RecordingDriver()
    app = create_app(config, factory, driver)
    farm = Farm(TestClient(app), driver, factory, config)
    farm.seeded = seed(factory)
    return farm
