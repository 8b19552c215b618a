"""The job driver's final phase: when a job's budget is spent, its top trials and its untuned default are re-measured
head to head against the head, one comparison at a time, before the job ends (a FakeAgent test double measures)."""
# ruff: noqa: F811 - the tests take the imported `sessions` and `settings` fixtures as arguments
from __future__ import annotations

import pytest
from sqlalchemy import select

import compiler_core as cc
from tests.unit.driver_support import (  # noqa: F401 - settings and sessions are fixtures
    CPU_CLASS,
    CPU_TARGET,
    SMALL,
    T0,
    at,
    compare_tasks,
    job_state,
    measure,
    new_agent,
    new_job,
    sessions,
    settings,
)
from tests.unit.fake_agent import FakeAgent
from tuner_server import repo
from tuner_server.db import Job, Task, Trial, session_scope
from tuner_server.driver import JobDriver
from tuner_server.repo import JobSpec, comparisons
from tuner_server.repo.comparisons import Paired

SMALL_DEFAULT = cc.default_config(cc.parse_key(SMALL), CPU_TARGET)


def final_phase_run(sessions, settings, seconds, *, budget=6, recheck_top=2, reference_s=2e-3, jitter=0.002):
    """Run a SMALL job to its end with a FakeAgent timing configs by `seconds`, checking at every tick of the
    final phase that at most one final comparison is open and that the job waits for it."""
    agent = new_agent(sessions)
    job_id = new_job(sessions, key=SMALL, budget=budget, measure_options={"recheck_top": recheck_top})
    fake = FakeAgent(sessions, agent, seconds, reference_s=reference_s, codegen=cc.codegen_version(), jitter=jitter)
    driver = JobDriver(sessions, settings)
    for round_ in range(100):
        now = at(1 + round_)
        driver.tick(now)
        job, keys, trials = job_state(sessions, job_id)
        if job.state not in ("queued", "running"):
            return job_id, fake
        open_finals = [t for t in compare_tasks(sessions, job_id, "final") if t.state in ("queued", "leased")]
        if job.phase == "final":
            assert trials == budget and len(open_finals) <= 1
            if open_finals:  # the job waits for it: another pass queues nothing and does not end the job
                queued = len(compare_tasks(sessions, job_id))
                assert driver.tick(now).enqueued == 0 and job_state(sessions, job_id)[0].state == "running"
                assert len(compare_tasks(sessions, job_id)) == queued
        else:
            assert not open_finals
        fake.run(now)
    pytest.fail("the job never finished")


def _head_and_trials(sessions, job_id):
    with session_scope(sessions) as s:
        head = repo.schedules.head(SMALL, CPU_CLASS, session=s)
        trials = s.scalars(select(Trial).where(Trial.job_id == job_id, Trial.status == "OK")
                           .order_by(Trial.median_s, Trial.id)).all()
        job = s.get(Job, job_id)
        return head.trial, trials, comparisons.job_result(job, session=s)


def slow_default(config: dict) -> float:
    return 6.5e-3 if config == SMALL_DEFAULT else FakeAgent.hashed(config)


def fast_default(config: dict) -> float:
    return 0.5e-3 if config == SMALL_DEFAULT else FakeAgent.hashed(config)


def test_a_spent_budget_enters_the_final_phase_and_ends_after_its_compares(sessions, settings):
    seconds = slow_default
    job_id, fake = final_phase_run(sessions, settings, seconds, recheck_top=2)
    job, keys, trials = job_state(sessions, job_id)
    assert (job.state, job.phase, job.error, trials) == ("done", "final", None, 6)
    head, ok_trials, result = _head_and_trials(sessions, job_id)
    assert seconds(head.config) == min(seconds(t.config) for t in ok_trials)  # compares found the fastest
    # every final candidate (the 2 fastest distinct configs and the default) was compared with the final head
    top = []
    for t in ok_trials:
        if t.config_key not in [x.config_key for x in top] and len(top) < 2:
            top.append(t)
    default = next(t for t in ok_trials if t.config == SMALL_DEFAULT)
    expected = {t.id for t in [*top, default] if t.config_key != head.config_key}
    finals = compare_tasks(sessions, job_id, "final")
    against_head = {t.candidate_trial_id for t in finals if t.baseline_trial_id == head.id}
    assert expected <= against_head and all(t.state == "done" and t.time_reference for t in finals)
    assert ("COMPARE", "final") in fake.handled
    # the job's result: the head re-measured, the reference and the default paired with it round by round
    assert result.head.id == head.id and result.head_s == pytest.approx(seconds(head.config))
    assert (result.reference_name, result.reference_s) == ("numpy", pytest.approx(2e-3))
    assert result.vs_reference.ratio == pytest.approx(2e-3 / seconds(head.config))
    assert result.vs_default.ratio == pytest.approx(6.5e-3 / seconds(head.config))
    assert result.vs_default.low <= result.vs_default.ratio <= result.vs_default.high
    assert result.comparisons == len([t for t in finals if t.state == "done"]) and result.noisy is False


def test_an_inconclusive_final_comparison_gets_one_second_look(sessions, settings):
    """Candidates 3 % faster than the default head, timed with +-10 % jitter: each first look is inconclusive (the
    median says faster, the interval reaches past 1 - min_gain), so each pair is compared once more, never a third
    time, and the job still ends."""
    def near(config: dict) -> float:
        return 1e-3 if config == SMALL_DEFAULT else 0.97e-3

    job_id, _ = final_phase_run(sessions, settings, near, recheck_top=2, jitter=0.05)
    job, _, _ = job_state(sessions, job_id)
    head, _, _ = _head_and_trials(sessions, job_id)
    assert job.state == "done" and head.config == SMALL_DEFAULT
    per_pair: dict[tuple[str, str], int] = {}
    for t in compare_tasks(sessions, job_id, "final"):
        per_pair[(t.candidate_trial_id, t.baseline_trial_id)] = per_pair.get((t.candidate_trial_id,
                                                                              t.baseline_trial_id), 0) + 1
    assert per_pair and set(per_pair.values()) == {2}


def test_the_default_as_head_reports_a_speed_up_of_one(sessions, settings):
    job_id, _ = final_phase_run(sessions, settings, fast_default, recheck_top=3)
    head, _, result = _head_and_trials(sessions, job_id)
    assert head.config == SMALL_DEFAULT and result.head.id == head.id
    assert result.vs_default == Paired(1.0, 1.0, 1.0)
    assert result.vs_reference.ratio == pytest.approx(2e-3 / 0.5e-3)


def test_with_recheck_top_0_the_job_ends_with_its_budget(sessions, settings):
    job_id, fake = final_phase_run(sessions, settings, FakeAgent.hashed, recheck_top=0)
    job, _, trials = job_state(sessions, job_id)
    assert (job.state, job.phase, trials) == ("done", "final", 6)
    assert compare_tasks(sessions, job_id, "final") == [] and ("COMPARE", "final") not in fake.handled
    assert _head_and_trials(sessions, job_id)[2] is None  # nothing re-measured: no head-to-head result


def test_a_job_without_a_verified_trial_ends_without_compares(sessions, settings):
    agent = new_agent(sessions)
    job_id = new_job(sessions, key=SMALL, budget=3)
    driver = JobDriver(sessions, settings)
    for round_ in range(5):
        driver.tick(at(1 + round_))
        measure(sessions, agent, at(1 + round_), status="WRONG_ANSWER")
    job, _, trials = job_state(sessions, job_id)
    assert (job.state, trials) == ("done", 3) and compare_tasks(sessions, job_id) == []


def test_a_stale_heads_config_is_measured_first_and_revalidates_it(sessions, settings):
    stale = {"tile": 64, "order": "write", "simd": 0}
    old_agent = new_agent(sessions, "old")
    with session_scope(sessions) as s:  # a head measured by another code generator
        old_job = repo.create_job(JobSpec(SMALL, "cpu", 1), session=s, now=T0)
        repo.enqueue_configs(old_job.id, [stale], session=s, now=T0)
    FakeAgent(sessions, old_agent, codegen="cg-old").run(at(0))
    job_id = new_job(sessions, key=SMALL, budget=4)
    JobDriver(sessions, settings).tick(at(1))
    with session_scope(sessions) as s:
        first = s.scalars(select(Task).where(Task.job_id == job_id).order_by(Task.position).limit(2)).all()
        assert [t.config for t in first] == [stale, SMALL_DEFAULT]
        repo.cancel_job(old_job.id, session=s)  # its final comparison would take the next lease (the older job)
    FakeAgent(sessions, old_agent, codegen=cc.codegen_version()).run(at(2), limit=1)
    with session_scope(sessions) as s:
        head = repo.schedules.head(SMALL, CPU_CLASS, session=s)
        assert (head.version, head.reason, head.trial.codegen_version) == (2, "revalidated", cc.codegen_version())
