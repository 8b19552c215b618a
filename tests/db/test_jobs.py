"""Job creation checks, listing, cancelling and enqueueing."""
from __future__ import annotations

import dataclasses
import re

import pytest
from sqlalchemy import func, select

from tests.db.factories import MATMUL, SOFTMAX, T0, agent, at, cuda_fingerprint, job, ok
from tuner_server import measure_policy, repo
from tuner_server.db import Job, Task, Workload
from tuner_server.repo import JobLimits, JobSpec, pass_reads


def _create(session, **overrides):
    spec = {"workload_key": MATMUL, "device_selector": "cpu", "trial_budget": 10, **overrides}
    return repo.create_job(JobSpec(**spec), session=session, limits=JobLimits(max_trials=100, max_dim=4096))


@pytest.mark.parametrize("overrides, message", [
    ({"trial_budget": 0}, "trial_budget must be between 1 and 100"),
    ({"trial_budget": 101}, "trial_budget must be between 1 and 100"),
    ({"workload_key": "matmul(M=64,N=64)"}, "missing param K"),
    ({"workload_key": "nosuchop(M=1)"}, "bad workload"),
    ({"workload_key": "matmul(M=8192,N=64,K=64)"}, "M=8192 exceeds the limit 4096"),
    ({"priority": 5000}, "priority"),
])
def test_creation_errors_name_the_problem(session, overrides, message):
    with pytest.raises(repo.InvalidRequest, match=message):
        _create(session, **overrides)


def test_unknown_device_class_lists_the_known_ones(session):
    with pytest.raises(repo.InvalidRequest, match="none registered yet"):
        _create(session, device_selector="cuda-nvidia-a100-sm80")
    agent(session, "g", cuda_fingerprint())
    agent(session, "c")
    with pytest.raises(repo.InvalidRequest) as err:
        _create(session, device_selector="cuda-nvidia-a100-sm80")
    assert "cpu-x86_64-avx2-2c, cuda-nvidia-h100-80gb-hbm3-sm90" in str(err.value)
    assert _create(session, device_selector="cuda-nvidia-h100-80gb-hbm3-sm90").state == "queued"


def test_unknown_strategy_when_a_table_is_given(session):
    with pytest.raises(repo.InvalidRequest, match="known: grid, random"):
        repo.create_job(JobSpec(MATMUL, "cpu", 5, strategy="magic"), session=session,
                        known_strategies=frozenset({"random", "grid"}))


def test_created_job_is_persisted_with_its_canonical_workload(session):
    j = _create(session, workload_key="matmul(M=64,N=64,K=64)", seed=7, measure_options={"min_repeats": 5})
    got = repo.get_job(j.id, session=session)
    assert (got.workload.key, got.state, got.seed, got.phase) == (MATMUL, "queued", 7, "search")
    assert got.measure_options == {**measure_policy.DEFAULTS["cpu"], "min_repeats": 5}  # stored fully resolved
    assert got.workload.flops == 2 * 64 ** 3
    with pytest.raises(repo.NotFound):
        repo.get_job("missing", session=session)


def test_measure_options_are_resolved_per_device_kind(session):
    cpu = _create(session)
    agent(session, "g", cuda_fingerprint())
    cuda = _create(session, device_selector="cuda", measure_options={"warmup": 0, "flush_cache": False,
                                                                      "max_contention": None})
    assert cpu.measure_options == measure_policy.DEFAULTS["cpu"]
    assert cuda.measure_options == {**measure_policy.DEFAULTS["cuda"], "warmup": 0, "flush_cache": False}
    assert set(cuda.measure_options) == set(measure_policy.FIELDS)  # every option, None counting as unset


@pytest.mark.parametrize("options, field", [
    ({"warmups": 1}, "warmups"),
    ({"min_repeats": True}, "measure.min_repeats"),
    ({"min_repeats": 4.0}, "measure.min_repeats"),
    ({"flush_cache": 1}, "measure.flush_cache"),
    ({"target_rel_ci": 0.0}, "measure.target_rel_ci"),
    ({"min_time_s": float("nan")}, "measure.min_time_s"),
    ({"min_repeats": 50, "max_repeats": 10}, "measure.min_repeats (50) exceeds measure.max_repeats (10)"),
])
def test_bad_measure_options_are_refused_and_nothing_is_stored(session, options, field):
    with pytest.raises(repo.InvalidRequest, match=re.escape(field)):
        _create(session, measure_options=options)
    session.flush()
    assert session.scalar(select(func.count()).select_from(Job)) == 0
    assert session.scalar(select(func.count()).select_from(Workload)) == 0


def test_list_jobs_filters_and_paginates(session):
    ids = [job(session, budget=1, now=at(i)).id for i in range(5)]
    other = job(session, budget=1, key=SOFTMAX, now=at(10))
    page = repo.list_jobs(session=session, limit=2)
    assert page.total == 6 and [j.id for j in page.items] == [other.id, ids[4]]
    assert [j.id for j in repo.list_jobs(session=session, limit=2, offset=4).items] == [ids[1], ids[0]]
    assert [j.id for j in repo.list_jobs(session=session, workload_key=SOFTMAX).items] == [other.id]
    repo.cancel_job(ids[0], session=session)
    assert [j.id for j in repo.list_jobs(session=session, state="cancelled").items] == [ids[0]]
    with pytest.raises(repo.InvalidRequest):
        repo.list_jobs(session=session, state="sleeping")


def test_cancel_only_open_jobs(session):
    j = job(session, budget=1)
    assert repo.cancel_job(j.id, session=session, now=at(1)).finished_at == at(1)
    with pytest.raises(repo.Conflict, match="cancelled"):
        repo.cancel_job(j.id, session=session)
    with pytest.raises(repo.Conflict):
        repo.enqueue_configs(j.id, [{"tile": 99}], session=session)


def test_enqueue_skips_known_configs_and_respects_the_budget(session):
    j = job(session, budget=4, n_configs=2)  # tiles 1, 2
    created = repo.enqueue_configs(j.id, [{"tile": 1}, {"tile": 3}, {"tile": 3}, {"tile": 4}, {"tile": 5}],
                                   session=session, now=T0)
    tasks = [session.get(Task, task_id) for task_id in created]
    # positions after the job's two: the order agents lease them in
    assert [(t.config, t.position, t.state, t.kind, t.attempt, t.created_at) for t in tasks] == [
        ({"tile": 3}, 3, "queued", "MEASURE", 1, T0), ({"tile": 4}, 4, "queued", "MEASURE", 1, T0)]
    assert repo.enqueue_configs(j.id, [{"tile": 6}], session=session) == []
    assert repo.job_progress(j.id, session=session).queued == 4
    with pytest.raises(repo.InvalidRequest):
        repo.enqueue_configs(j.id, ["not a dict"], session=session)


def test_open_job_ids_come_highest_priority_first_then_oldest(session):
    low, high, older_high = job(session, priority=0, now=at(1)), job(session, priority=5, now=at(3)), \
        job(session, priority=5, now=at(2))
    done = job(session, priority=9, now=at(0))
    repo.finish_job(done.id, session=session, state="done", now=at(4))
    assert pass_reads.open_job_ids(session.connection(), limit=10) == [older_high.id, high.id, low.id]
    assert pass_reads.open_job_ids(session.connection(), limit=2) == [older_high.id, high.id]


def test_job_progress_without_the_best_trial_counts_the_same(session):
    j, a = job(session, budget=4), agent(session)
    for task, median in zip(repo.lease_tasks(a.id, 2, session=session, now=at(1)), (2e-3, 1e-3), strict=True):
        repo.record_result(a.id, ok(task, median), session=session, now=at(2))
    full, counts = repo.job_progress(j.id, session=session), repo.job_progress(j.id, session=session, with_best=False)
    assert full.best.median_s == 1e-3 and counts.best is None
    assert dataclasses.replace(full, best=None) == counts and (counts.completed, counts.queued) == (2, 2)


def test_finish_job(session):
    j = job(session, budget=3)
    done = repo.finish_job(j.id, session=session, state="failed", error="space exhausted", now=at(3))
    assert (done.state, done.error, done.finished_at) == ("failed", "space exhausted", at(3))
    assert repo.job_progress(j.id, session=session).queued == 0
