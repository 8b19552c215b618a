"""Head-to-head comparisons (repo/comparisons.py): a faster trial earns a COMPARE task; only a comparison whose
paired ratio CI lies below 1 moves the head, and only if its baseline is still the head."""
from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import func, select

from tests.db.factories import (
    MATMUL,
    agent,
    at,
    compare,
    job,
    lease_compare,
    measure,
    measure_new,
    ok,
    open_compares,
    paired_report,
)
from tuner_server import measure_policy, repo
from tuner_server.db import Comparison, Task, Trial
from tuner_server.repo import schedules

CLASS = "cpu-x86_64-avx2-2c"


def _head(session):
    return schedules.head(MATMUL, CLASS, session=session)


def _count(session, model) -> int:
    return session.scalar(select(func.count()).select_from(model))


@pytest.fixture
def challenged(session):
    """A 10 ms head (v1) and a 5 ms trial of the same job whose challenge is queued."""
    ag = agent(session)
    j = job(session, budget=6, n_configs=0)
    head = measure_new(session, ag, j.id, 10e-3, now=at(0))
    fast = measure_new(session, ag, j.id, 5e-3, now=at(1))
    return ag, j, head.trial, fast.trial


def test_the_first_verified_trial_becomes_the_head(session):
    ag = agent(session)
    j = job(session, budget=2, n_configs=0)
    first = measure_new(session, ag, j.id, 4e-3, now=at(0))
    assert (first.promoted.version, first.promoted.reason, first.promoted.message) == (
        1, "improved", "first verified schedule")
    assert open_compares(session, j.id) == []


def test_a_faster_trial_queues_exactly_one_challenge(session):
    ag = agent(session)
    j = job(session, budget=4)  # four configs queued at T0, ahead of any challenge
    (head,) = measure(session, ag, [10e-3], now=at(0))
    (fast,) = measure(session, ag, [5e-3], now=at(1))
    head, fast = head.trial, fast.trial
    assert _head(session).trial_id == head.id  # looking faster is not enough
    (task,) = open_compares(session, j.id)
    assert (task.kind, task.purpose, task.state, task.time_reference) == ("COMPARE", "challenge", "queued", False)
    assert (task.candidate_trial_id, task.baseline_trial_id) == (fast.id, head.id)
    assert task.config_key == f"challenge {fast.id} vs {head.id}" and task.config == fast.config
    measure(session, ag, [2e-3], now=at(2))  # faster still, but one challenge per job is open
    measure(session, ag, [20e-3], now=at(3))  # slower: never a challenge
    assert [t.id for t in open_compares(session, j.id)] == [task.id]
    leased = lease_compare(session, ag, at(4))
    assert (leased.task_id, leased.config, leased.baseline_config) == (task.id, fast.config, head.config)
    assert leased.measure_options == measure_policy.DEFAULTS["cpu"] and leased.time_reference is False
    progress = repo.job_progress(j.id, session=session)
    assert (progress.completed, progress.queued, progress.leased, progress.comparing) == (4, 0, 0, 1)


def test_compare_tasks_do_not_count_toward_the_budget(session):
    ag = agent(session)
    j = job(session, budget=2, n_configs=0)
    measure_new(session, ag, j.id, 10e-3, now=at(0))
    measure_new(session, ag, j.id, 5e-3, now=at(1))  # the budget is spent and a challenge is queued
    assert len(open_compares(session, j.id)) == 1
    assert repo.enqueue_configs(j.id, [{"tile": 99}], session=session) == []
    assert session.scalar(select(func.count()).select_from(Task).where(Task.job_id == j.id)) == 3


def test_a_ratio_ci_below_1_promotes_and_the_version_names_the_ratio(session, challenged):
    ag, j, head, fast = challenged
    won = compare(session, ag, 0.8, now=at(5))
    assert won.status == "accepted" and won.trial is None
    version = won.promoted
    assert (version.version, version.parent_version, version.reason, version.trial_id) == (2, 1, "improved", fast.id)
    assert "0.800x the time of version 1" in version.message and "95% CI 0.79" in version.message
    row = won.comparison
    assert (row.outcome, row.purpose, row.candidate_trial_id, row.baseline_trial_id) == (
        "promoted", "challenge", fast.id, head.id)
    assert row.ratio == pytest.approx(0.8) and row.ratio_ci_low < row.ratio_ci_high < 1
    assert len(row.candidate_samples) == len(row.baseline_samples) == 9 and row.reference_samples == []
    assert _head(session).trial_id == fast.id and open_compares(session, j.id) == []
    assert _count(session, Trial) == 2  # a comparison is not a trial


@pytest.mark.parametrize("ratio, jitter", [(0.99, 0.02), (1.2, 0.002)])
def test_a_ratio_ci_touching_or_above_1_keeps_the_head(session, challenged, ratio, jitter):
    ag, j, head, _ = challenged
    kept = compare(session, ag, ratio, jitter=jitter, now=at(5))
    row = kept.comparison
    assert (kept.promoted, row.outcome) == (None, "kept")
    assert row.ratio_ci_high >= 1 and row.ratio == pytest.approx(ratio, rel=0.05)
    assert _head(session).trial_id == head.id and _head(session).version == 1


def test_a_win_smaller_than_min_gain_keeps_the_head(session, challenged):
    """CI wholly below 1 but not below 1 - min_gain (0.01 by default): equals do not take turns on noise."""
    ag, _, head, _ = challenged
    kept = compare(session, ag, 0.995, jitter=0.001, now=at(5))
    row = kept.comparison
    assert row.ratio_ci_high < 1.0 and row.ratio_ci_high > 0.99
    assert (kept.promoted, row.outcome) == (None, "kept") and _head(session).trial_id == head.id


def test_a_failed_compare_keeps_the_head(session, challenged):
    ag, _, head, _ = challenged
    task = lease_compare(session, ag, at(5))
    failed = repo.record_result(ag.id, repo.TrialReport(task.task_id, task.attempt, "RUNTIME_ERROR",
                                                        error="segfault"), session=session, now=at(5))
    assert failed.status == "accepted" and failed.promoted is None
    assert (failed.comparison.outcome, failed.comparison.ratio, failed.comparison.error) == ("failed", None, "segfault")
    assert _head(session).trial_id == head.id


def test_a_stale_baseline_queues_a_compare_against_the_new_head(session, challenged):
    ag, j, head, fast = challenged
    imported = replace_head_with_an_import(session, median=7e-3)
    outcome = compare(session, ag, 0.5, now=at(5))  # fast beat the old head, which is no longer the head
    assert (outcome.promoted, outcome.comparison.outcome) == (None, "stale")
    assert _head(session).trial_id == imported.id
    (again,) = open_compares(session, j.id)
    assert (again.purpose, again.candidate_trial_id, again.baseline_trial_id) == ("challenge", fast.id, imported.id)
    won = compare(session, ag, 5 / 7, now=at(6))
    assert won.promoted.trial_id == fast.id and won.promoted.parent_version == 2


def replace_head_with_an_import(session, median: float) -> Trial:
    """Another farm's faster trial arrives by import (the CI rule): the head moves under a queued challenge."""
    workload = repo.get_or_create_workload(MATMUL, session=session)
    trial = repo.trials.append_trial(session=session, workload=workload, device_class=CLASS, config={"tile": 77},
                                     codegen_version="cg1", status="OK", created_at=at(4), median_s=median,
                                     ci_low_s=median * 0.99, ci_high_s=median * 1.01)
    assert schedules.maybe_promote(trial, session=session, now=at(4)).reason == "import"
    return trial


def test_a_pinned_key_never_moves_even_when_the_candidate_wins(session, challenged):
    ag, _, head, _ = challenged
    schedules.pin(MATMUL, CLASS, 1, session=session, author="ops", now=at(4))
    outcome = compare(session, ag, 0.5, now=at(5))
    assert (outcome.promoted, outcome.comparison.outcome) == (None, "kept")
    current = _head(session)
    assert (current.version, current.pinned, current.trial_id) == (2, True, head.id)


def test_a_head_of_another_code_generator_is_revalidated_by_its_own_config(session):
    ag = agent(session)
    old_job = job(session, budget=1)  # {"tile": 1}
    (t,) = repo.lease_tasks(ag.id, 1, session=session, now=at(0))
    old = repo.record_result(ag.id, replace(ok(t, 3e-3), codegen_version="cg0"), session=session, now=at(0))
    assert old.promoted.version == 1 and old.trial.codegen_version == "cg0"
    new_job = job(session, budget=2, now=at(1))  # {"tile": 1}, {"tile": 2} under cg1
    faster_other, same = measure(session, ag, [1e-3, 4e-3], now=at(2))[::-1]  # leased tile 1 first
    assert same.trial.config == {"tile": 1} and faster_other.trial.config == {"tile": 2}
    assert faster_other.promoted is None  # another config competes only with heads of its own code generator
    version = same.promoted
    assert (version.version, version.reason, version.trial_id) == (2, "revalidated", same.trial.id)
    assert "cg1" in version.message and "cg0" in version.message
    assert open_compares(session, old_job.id) == open_compares(session, new_job.id) == []


# ---- COMPARE results: idempotent by (task, attempt), only from the lease holder, paired --------------------------
def test_a_compare_result_is_idempotent_by_task_and_attempt(session, challenged):
    ag, _, _, _ = challenged
    task = lease_compare(session, ag, at(5))
    first = repo.record_result(ag.id, paired_report(task, 0.8), session=session, now=at(5))
    again = repo.record_result(ag.id, paired_report(task, 0.4), session=session, now=at(6))
    assert again.status == "duplicate" and again.comparison.id == first.comparison.id and again.promoted is None
    assert _count(session, Comparison) == 1 and _head(session).version == 2
    other = agent(session, "other")
    assert repo.record_result(other.id, paired_report(task, 0.4), session=session, now=at(7)).status == "rejected"


def test_a_compare_result_without_its_lease_is_rejected(session, challenged):
    ag, j, head, _ = challenged
    other = agent(session, "other")
    task = lease_compare(session, ag, at(5))
    assert repo.requeue_expired(session=session, now=at(5 + 61)).requeued == [task.task_id]
    retry = lease_compare(session, other, at(67))  # re-leased: the first agent's attempt is over
    assert retry.attempt == 2
    late = repo.record_result(ag.id, paired_report(task, 0.5), session=session, now=at(70))
    assert late.status == "rejected" and "lease not held" in late.reason
    repo.cancel_job(j.id, session=session, now=at(72))
    cancelled = repo.record_result(other.id, paired_report(retry, 0.5), session=session, now=at(73))
    assert cancelled.status == "rejected"
    assert _count(session, Comparison) == 0 and _head(session).trial_id == head.id


def test_a_late_compare_result_counts_while_nobody_re_leased_its_task(session, challenged):
    ag, _, _, fast = challenged
    task = lease_compare(session, ag, at(5))
    assert repo.requeue_expired(session=session, now=at(5 + 61)).requeued == [task.task_id]
    late = repo.record_result(ag.id, paired_report(task, 0.5), session=session, now=at(70))
    assert late.status == "accepted" and (late.comparison.attempt, late.comparison.outcome) == (1, "promoted")
    assert _head(session).trial_id == fast.id and _count(session, Comparison) == 1


def test_a_compare_result_with_unpaired_samples_is_refused(session, challenged):
    ag, _, _, _ = challenged
    task = lease_compare(session, ag, at(5))
    report = paired_report(task, 0.5)
    with pytest.raises(repo.InvalidRequest, match="9 samples but 8 baseline samples"):
        repo.record_result(ag.id, replace(report, baseline_samples_s=report.baseline_samples_s[:-1]),
                           session=session, now=at(5))
    assert _count(session, Comparison) == 0
    assert session.get(Task, task.task_id).state == "leased"  # the agent may still send a proper result
    assert repo.record_result(ag.id, report, session=session, now=at(6)).promoted.version == 2


def test_a_lost_compare_task_leaves_no_trial_and_no_comparison(session, challenged):
    ag, j, head, _ = challenged
    before = repo.job_progress(j.id, session=session).completed
    for attempt in (1, 2):
        task = lease_compare(session, ag, at(100 * attempt))
        lost = repo.requeue_expired(session=session, now=at(100 * attempt + 61), max_attempts=2)
    assert lost.lost == [task.task_id]
    assert session.get(Task, task.task_id).state == "lost"
    progress = repo.job_progress(j.id, session=session)
    assert (progress.completed, progress.comparing) == (before, 0)
    assert _count(session, Comparison) == 0 and _head(session).trial_id == head.id
