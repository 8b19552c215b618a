"""The job driver on SQLite, no network: budgets, no duplicates, exhaustion, restart, sweeps, the thread, and the
search outside transactions, with a FakeAgent test double (failures: test_driver_failures.py; the final phase:
test_driver_final_phase.py)."""
# ruff: noqa: F811 - the tests take the imported `sessions` and `settings` fixtures as arguments
from __future__ import annotations

import sqlite3
import threading
import time
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

import compiler_core as cc
from tests.unit.driver_support import (  # noqa: F401 - settings and sessions are fixtures
    BIG,
    CPU,
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
    run_to_end,
    sessions,
    settings,
)
from tuner_server import repo
from tuner_server.db import Task, Trial, session_scope
from tuner_server.driver import JobDriver, TickSummary, derive_seed
from tuner_server.repo import pass_reads
from tuner_server.search import STRATEGIES
from tuner_server.search.random_search import RandomSearch
from tuner_server.settings import Settings
from tuner_server.targets import pick_device_class


def test_a_job_gets_exactly_its_budget_of_tasks_and_finishes(sessions, settings):
    agent = new_agent(sessions)
    job_id = new_job(sessions, budget=20)
    driver = JobDriver(sessions, settings)
    first = driver.tick(at(1))
    _, keys, _ = job_state(sessions, job_id)
    assert first.enqueued == len(keys) == 8  # MIN_QUEUED with one agent, not the whole budget at once
    job = run_to_end(sessions, driver, agent, job_id)
    job, keys, trials = job_state(sessions, job_id)
    assert (job.state, job.phase, len(keys), len(set(keys)), trials) == ("done", "final", 20, 20, 20)
    finals = compare_tasks(sessions, job_id, "final")
    assert finals and all(t.state == "done" for t in finals)  # it ended after its final comparisons, not before
    assert driver.tick(at(500)).enqueued == 0  # a done job gets nothing more


def test_the_queue_scales_with_active_agents_and_never_passes_the_budget(sessions, settings):
    for i in range(5):
        new_agent(sessions, f"a{i}")
    new_job(sessions, budget=30)
    driver = JobDriver(sessions, settings)
    assert driver.tick(at(1)).enqueued == 20  # 4 per active agent
    assert driver.tick(at(2)).enqueued == 0  # still queued: nothing more
    small_budget = new_job(sessions, budget=7)
    driver.tick(at(3))
    _, keys, _ = job_state(sessions, small_budget)
    assert len(keys) == 7


def test_a_small_space_is_exhausted_and_the_job_finishes(sessions, settings):
    agent = new_agent(sessions)
    for strategy in ("random", "grid"):
        job_id = new_job(sessions, key=SMALL, budget=1000, strategy=strategy)
        job = run_to_end(sessions, JobDriver(sessions, settings), agent, job_id)
        job, keys, trials = job_state(sessions, job_id)
        assert (job.state, len(keys), len(set(keys)), trials) == ("done", 20, 20, 20), strategy
        assert job.error is None


@pytest.mark.parametrize("strategy", ["random", "grid"])
def test_a_restarted_driver_resumes_without_duplicates(sessions, settings, strategy):
    agent = new_agent(sessions)
    job_id = new_job(sessions, budget=25, strategy=strategy)
    first = JobDriver(sessions, settings)
    first.tick(at(1))
    assert measure(sessions, agent, at(1), limit=5) == 5
    first.tick(at(2))
    with session_scope(sessions) as s:  # some tasks in flight when the tuner "dies"
        assert len(repo.lease_tasks(agent, 3, session=s, now=at(2))) == 3
    del first
    second = JobDriver(sessions, settings)  # a new process: only the database survives
    job = run_to_end(sessions, second, agent, job_id, start=3)
    job, keys, trials = job_state(sessions, job_id)
    assert (job.state, len(keys), len(set(keys)), trials) == ("done", 25, 25, 25)


def test_every_trial_reaches_the_strategy_even_out_of_order(sessions, settings, monkeypatch):
    monkeypatch.setattr("tuner_server.driver.OBSERVE_SLACK", 0)  # force the full re-read path
    agent = new_agent(sessions)
    job_id = new_job(sessions, budget=20)
    driver = JobDriver(sessions, settings)
    driver.tick(at(1))
    measure(sessions, agent, at(10), limit=3)
    driver.tick(at(11))
    measure(sessions, agent, at(5), limit=2)  # stamped before trials the driver has already seen
    driver.tick(at(12))
    with session_scope(sessions) as s:
        ids = set(s.scalars(select(Trial.id).where(Trial.job_id == job_id)).all())
    assert len(ids) == 5 and driver._plans[job_id].observed == ids


def test_seeds_are_concrete(sessions, settings):
    new_agent(sessions)
    unseeded, seeded = new_job(sessions), new_job(sessions, key=SMALL, seed=7)
    JobDriver(sessions, settings).tick(at(1))
    assert job_state(sessions, unseeded)[0].seed == derive_seed(unseeded) >= 0
    assert job_state(sessions, seeded)[0].seed == 7


def test_same_seed_same_proposals(sessions, settings):
    new_agent(sessions)
    first = new_job(sessions, seed=11)
    JobDriver(sessions, settings).tick(at(1))
    second, other_seed = new_job(sessions, seed=11), new_job(sessions, seed=12)
    JobDriver(sessions, settings).tick(at(2))
    keys = {j: sorted(job_state(sessions, j)[1]) for j in (first, second, other_seed)}
    assert keys[first] == keys[second] != keys[other_seed] and len(keys[first]) == 8


def test_a_kind_selector_waits_for_an_agent_then_pins_its_class(sessions, settings):
    job_id = new_job(sessions)
    driver = JobDriver(sessions, settings)
    assert driver.tick(at(1)).enqueued == 0
    job, keys, _ = job_state(sessions, job_id)
    assert (job.state, job.device_class, keys) == ("queued", None, [])
    new_agent(sessions, now=at(2))
    assert driver.tick(at(2)).enqueued == 8
    assert job_state(sessions, job_id)[0].device_class == CPU_CLASS


def test_an_agent_of_an_earlier_run_does_not_draw_a_kind_selector_to_its_class(sessions, settings):
    """A farm restarted on a host whose device class changed (an ISA level added): its old agent is still 'active'
    in the database during the restarted driver's grace window, silent for hours. A job submitted before the new
    agent registers waits for it instead of pinning the old class, which no agent will ever lease for again."""
    with session_scope(sessions) as s:
        wider = dict(CPU, isa_flags=["avx2", "fma", "avx512f"], target=cc.cpu_target(isa="avx512", cores=2).to_dict())
        stale = repo.register_agent(wider, "before-the-upgrade", "cg0", session=s, now=at(-7200)).agent
    job_id = new_job(sessions)
    driver = JobDriver(sessions, settings)
    assert driver.tick(at(1)).enqueued == 0 and job_state(sessions, job_id)[0].device_class is None
    live = new_agent(sessions, now=at(2))
    assert driver.tick(at(2)).enqueued == 8
    assert job_state(sessions, job_id)[0].device_class == CPU_CLASS != stale.device_class
    with session_scope(sessions) as s:  # within the grace window: neither is marked lost yet
        assert {a.id for a in repo.list_agents(session=s, status="active")} == {stale.id, live}


def test_expired_leases_and_silent_agents_are_swept(sessions, settings):
    agent = new_agent(sessions)
    job_id = new_job(sessions, budget=10)
    driver = JobDriver(sessions, settings)
    driver.tick(at(1))
    with session_scope(sessions) as s:
        leased = repo.lease_tasks(agent, 2, session=s, now=at(1))
    summary = driver.tick(at(1 + settings.lease_seconds + 1))
    assert summary.requeued == 2 and summary.lost_agents == 1  # silent for 62 s > 30 s
    with session_scope(sessions) as s:
        rows = s.scalars(select(Task).where(Task.id.in_([t.task_id for t in leased]))).all()
        assert {(r.state, r.attempt) for r in rows} == {("queued", 2)}
        assert repo.get_agent(agent, session=s).status == "lost"
    assert job_state(sessions, job_id)[0].state == "running"


def test_sweeps_run_at_most_every_sweep_gap_and_the_gap_follows_short_leases(sessions, settings):
    agent = new_agent(sessions)
    new_job(sessions, budget=20)
    driver = JobDriver(sessions, settings)
    assert driver.sweep_gap_s == 2.0  # 60 s leases, 30 s silences: the gap's own cap
    driver.tick(at(0))
    with session_scope(sessions) as s:
        repo.lease_tasks(agent, 2, session=s, now=at(0), lease_seconds=0.5)
    assert driver.tick(at(1)).requeued == 0  # expired, but the last sweep was 1 s ago
    assert driver.tick(at(2)).requeued == 2
    assert driver.tick(at(1)).requeued == 0  # a clock that went back sweeps at once (nothing left to requeue)
    short = Settings(database_url=settings.database_url, lease_seconds=1, agent_lost_after_s=30)
    assert JobDriver(sessions, short).sweep_gap_s == 1 / 8


def test_the_drivers_reads_do_not_wait_for_the_sqlite_write_lock(sessions, settings):
    new_agent(sessions)
    job_id = new_job(sessions, budget=20)
    driver = JobDriver(sessions, settings)
    driver.tick(at(1))  # the job's strategy is cached: later passes read only what it has not seen
    holder = sqlite3.connect(settings.database_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing (its busy timeout would hold a writer 30 s)
    try:
        start = time.monotonic()
        jobs, active = driver._scan(at(1))
        view = driver._read(job_id, active)
        waited_s = time.monotonic() - start
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert jobs == [job_id] and active == {CPU_CLASS: 1}
    assert view.progress.queued == 8 and view.trials == [] and waited_s < 5


def test_a_sweep_takes_the_write_lock_only_when_a_lease_expired_or_an_agent_fell_silent(sessions, settings):
    agent = new_agent(sessions)
    new_job(sessions, budget=20)
    driver = JobDriver(sessions, settings)
    driver.tick(at(0))
    with session_scope(sessions) as s:
        repo.lease_tasks(agent, 2, session=s, now=at(0))  # deadlines at 60 s
        repo.lease_tasks(agent, 0, session=s, now=at(35))  # a lease of nothing still says the agent is alive
    holder = sqlite3.connect(settings.database_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing (its busy timeout would hold a writer 30 s)
    try:
        start = time.monotonic()
        driver._sweep(at(40), idle := TickSummary())  # past the restart grace, no lease expired, nobody silent
        waited_s = time.monotonic() - start
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (idle.requeued, idle.lost_agents) == (0, 0) and waited_s < 5
    driver._sweep(at(70), due := TickSummary())  # both leases expired, the agent silent for 35 s
    assert (due.requeued, due.lost_agents) == (2, 1)
    with session_scope(sessions) as s:
        assert repo.get_agent(agent, session=s).status == "lost"


def test_the_thread_survives_errors_and_wake_runs_a_pass(sessions, settings, monkeypatch):
    new_agent(sessions, now=datetime.now(UTC))
    driver = JobDriver(sessions, settings, interval_s=60, min_gap_s=0)
    passes = []
    real_tick = driver.tick

    def counting_tick(now=None):
        passes.append(now)
        if len(passes) == 1:
            raise RuntimeError("injected: the first pass dies")
        return real_tick(now)

    monkeypatch.setattr(driver, "tick", counting_tick)
    driver.start()
    try:
        wait_until(lambda: len(passes) == 1)
        job_id = new_job(sessions)
        driver.wake()
        wait_until(lambda: len(job_state(sessions, job_id)[1]) == 8)
        assert driver._loop._thread.is_alive()
    finally:
        driver.stop()
    assert driver._loop._thread is None and not any(t.name == "tunefarm-job-driver" for t in threading.enumerate())


def test_the_search_runs_outside_any_transaction(sessions, settings, monkeypatch):
    proposing, release = threading.Event(), threading.Event()

    class SlowSearch(RandomSearch):  # a stand-in for a model-guided strategy that thinks for a while
        def propose(self, n):
            proposing.set()
            assert release.wait(10)
            return super().propose(n)

    monkeypatch.setitem(STRATEGIES, "slow", SlowSearch)
    new_agent(sessions)
    job_id = new_job(sessions, strategy="slow")
    driver = JobDriver(sessions, settings)
    ticking = threading.Thread(target=driver.tick, args=(at(1),))
    ticking.start()
    try:
        assert proposing.wait(10)
        start = time.monotonic()
        new_agent(sessions, "a2", now=at(1))  # a write: on SQLite it would wait for a transaction held meanwhile
        blocked_s = time.monotonic() - start
    finally:
        release.set()
        ticking.join()
    assert blocked_s < 5 and len(job_state(sessions, job_id)[1]) == 8


def wait_until(predicate, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_helpers():
    assert pick_device_class("cpu", {"cuda-x-sm90": 3, "cpu-a-avx2-2c": 1, "cpu-b-avx2-4c": 1}) == "cpu-a-avx2-2c"
    assert pick_device_class("cpu", {"cpu-a-avx2-2c": 1, "cpu-b-avx2-4c": 2}) == "cpu-b-avx2-4c"
    assert pick_device_class("cuda", {"cpu-a-avx2-2c": 1}) is None
    assert pick_device_class("cpu-z-base-1c", {}) == "cpu-z-base-1c"
    assert derive_seed("x") == derive_seed("x") != derive_seed("y")


def test_a_model_job_learns_from_other_workloads_of_its_device_class(sessions, settings, monkeypatch):
    agent = new_agent(sessions)
    first = new_job(sessions, key=SMALL, budget=6)
    run_to_end(sessions, JobDriver(sessions, settings), agent, first)
    seen = []
    real = STRATEGIES["model"]

    def spy(context):
        seen.append(context)
        return real(context)

    monkeypatch.setitem(STRATEGIES, "model", spy)
    second = new_job(sessions, key="transpose(rows=16,cols=8,dtype=float32)", budget=2, strategy="model")
    new_agent(sessions, name="a2", now=at(500))  # the first agent has gone silent by now
    JobDriver(sessions, settings).tick(at(500))
    (context,) = seen
    assert len(context.transfer) == 6
    assert {t.workload_key for t in context.transfer} == {SMALL} and all(t.status == "OK" for t in context.transfer)
    with session_scope(sessions) as s:
        assert repo.job_progress(second, session=s).queued > 0


def test_a_restarted_driver_gives_agents_a_silence_window_before_marking_them_lost(sessions, settings):
    agent = new_agent(sessions)
    new_job(sessions, budget=4)
    restarted = JobDriver(sessions, settings)
    assert restarted.tick(at(100)).lost_agents == 0  # down for 100 s: the agent could not heartbeat
    with session_scope(sessions) as s:
        assert repo.get_agent(agent, session=s).status == "active"
    assert restarted.tick(at(100 + settings.agent_lost_after_s + 1)).lost_agents == 1


def test_job_trials_after_loads_only_the_unknown_ones_oldest_first(sessions, settings):
    agent = new_agent(sessions)
    job_id = new_job(sessions, budget=20)
    JobDriver(sessions, settings).tick(at(1))
    measure(sessions, agent, at(10), limit=3)
    measure(sessions, agent, at(5), limit=2)  # committed later, stamped earlier
    with session_scope(sessions) as s:
        order = [t.id for t in repo.list_trials(session=s, job_id=job_id).items]
        c = s.connection()
        assert [t.id for t in pass_reads.job_trials_after(c, job_id, 0, set())] == order
        assert [t.id for t in pass_reads.job_trials_after(c, job_id, 1, {order[2]})] == [order[1], *order[3:]]
        assert pass_reads.job_trials_after(c, job_id, 0, set(order)) == []
        assert pass_reads.job_trials_after(c, job_id, 5, set()) == []
        first = pass_reads.job_trials_after(c, job_id, 0, set())[0]
        trial = repo.get_trial(first.id, session=s)
        assert (first.config, first.median_s, first.status) == (trial.config, trial.median_s, trial.status)


# ---- the final phase: the top trials re-measured head to head before the job ends --------------------------------
