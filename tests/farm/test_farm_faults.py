"""Faults in a real farm: agents and the tuner killed with SIGKILL mid-job, and kernels that crash, hang or lie.

(a) kill -9 of one of two agents while it holds leases: its leases come back within 20 s (lease 3 s, agent lost
    after 3 s), the agent is marked lost, its tasks are measured again (attempt >= 2) by the survivor, and the job
    ends with EXACTLY its budget of trials, all verified, with no duplicate (task_id, attempt) and no duplicate
    config; the victim's sandbox worker and builders exit by themselves (the process tracker checks at teardown).
(b) kill -9 of the tuner mid-job, restarted on the same database and ports: the agents (same processes) notice,
    back off and reconnect by themselves; the job resumes and ends with exactly its budget, all verified, no
    duplicates, nothing recorded before the kill lost. (With the 3 s agent timeout used here the restart grace is
    short: an agent that comes back after it finds its leases re-queued and takes back those nobody leased
    meanwhile; a result for one that was re-leased is rejected and measured again, which the exact-budget check
    covers. test_farm_outages.py checks that with a grace long enough nothing is measured twice.)
(c) an agent with the TEST DOUBLE plugin tests.fault_plugin (the tuner loads it too, to validate op `fault`):
    fault(mode=segfault) -> RUNTIME_ERROR naming SIGSEGV, fault(mode=hang) with a 2 s timeout -> TIMEOUT,
    fault(mode=wrong) -> WRONG_ANSWER; the same agent process then measures a matmul job normally; the wrong
    answer never becomes a head (404, empty history) while fault(mode=ok) does.
"""
from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from tests.farm.farm_support import FAST_MEASURE, MATMUL, Farm, wait_until
from tunefarm_client import TunefarmError
from tuner_server.db.models import Agent, Task

SHORT_LEASES = {"TUNEFARM_LEASE_SECONDS": "3", "TUNEFARM_AGENT_LOST_AFTER_S": "3",
                "TUNEFARM_HEARTBEAT_INTERVAL_S": "0.5"}
BUDGET = 16
REQUEUE_WITHIN_S = 20  # lease 3 s + silent 3 s + a driver pass (2 s), with room for a loaded machine


def agent_id(farm: Farm, name: str) -> str:
    with farm.db() as s:
        return s.scalars(select(Agent.id).where(Agent.name == name).order_by(Agent.registered_at.desc())).first()


def leased_to(farm: Farm, job_id: str, agent: str) -> list[Task]:
    with farm.db() as s:
        return list(s.scalars(select(Task).where(Task.job_id == job_id, Task.agent_id == agent,
                                                 Task.state == "leased")).all())


def check_exact_budget(farm: Farm, job_id: str, budget: int):
    """The job is done with exactly `budget` trials, all OK, one per task, no (task, attempt) or config twice."""
    job = farm.wait_job(job_id, timeout_s=150)
    assert job.state == "done", (job.state, job.error, farm.logs())
    trials = farm.trials(job_id)
    assert len(trials) == budget, [(t.status, t.error) for t in trials]
    assert {t.status for t in trials} == {"OK"}, [(t.status, t.error) for t in trials if t.status != "OK"]
    assert len({(t.task_id, t.attempt) for t in trials}) == budget
    assert len({t.task_id for t in trials}) == budget
    assert len({t.config_key for t in trials}) == budget
    with farm.client() as c:
        progress = c.job(job_id).progress
    assert (progress.completed, progress.verified, progress.queued, progress.leased) == (budget, budget, 0, 0)
    return trials


def test_agent_killed_mid_job(farm, backend):
    f = farm(agents=2, backend=backend, env=SHORT_LEASES)
    victim, survivor = f.agents
    victim_id, survivor_id = agent_id(f, victim.name), agent_id(f, survivor.name)
    with f.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", BUDGET, seed=7, measure=FAST_MEASURE)
    wait_until(lambda: len(leased_to(f, job.id, victim_id)) >= 2, "the victim to hold leases", 60,
               0.05, on_poll=f.tracker.snapshot, diagnostics=f.logs)
    f.kill_agent(victim)
    # Measurements only: a COMPARE task (a trial that looked faster than the head challenges it) leaves no trial.
    orphaned = {t.id for t in leased_to(f, job.id, victim_id) if t.kind == "MEASURE"}
    assert orphaned, "the victim held no measurement lease when it died"
    wait_until(lambda: not leased_to(f, job.id, victim_id), "the dead agent's leases to be re-queued",
               REQUEUE_WITHIN_S, 0.2, on_poll=f.tracker.snapshot, diagnostics=f.logs)

    trials = check_exact_budget(f, job.id, BUDGET)
    redone = [t for t in trials if t.task_id in orphaned]
    assert len(redone) == len(orphaned)
    assert all(t.attempt >= 2 and t.agent_id == survivor_id for t in redone), \
        [(t.attempt, t.agent_id) for t in redone]
    with f.client() as c:
        status = {a.id: a.status for d in c.devices().items for a in d.agents}
    assert status[victim_id] == "lost" and status[survivor_id] == "active"
    assert survivor.alive()


def test_tuner_killed_and_restarted_mid_job(farm, backend):
    f = farm(agents=2, backend=backend, env=SHORT_LEASES)
    agent_pids = [a.pid for a in f.agents]
    with f.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", BUDGET, seed=8, measure=FAST_MEASURE)
    wait_until(lambda: 3 <= len(f.trials(job.id)) <= BUDGET - 6, "a few trials before the kill", 60, 0.05,
               on_poll=f.tracker.snapshot, diagnostics=f.logs)
    f.kill_server()
    before = {t.id for t in f.trials(job.id)}
    time.sleep(1.0)  # the agents notice: their calls fail and they back off
    restarted_at = time.time()
    f.start_server()

    trials = check_exact_budget(f, job.id, BUDGET)
    assert len(before) < BUDGET and before <= {t.id for t in trials}, "a trial recorded before the kill was lost"
    after_restart = [t for t in trials if t.created_at.timestamp() >= restarted_at]
    assert after_restart, "no trial recorded after the restart"
    assert [a.pid for a in f.agents] == agent_pids and all(a.alive() for a in f.agents)
    for agent in f.agents:  # each noticed the tuner was gone...
        assert "failed: UNAVAILABLE" in agent.tail(1_000_000).replace("register failed", ""), agent.name
    wait_until(lambda: reconnected(f, restarted_at), "both agents to be back (active, heartbeating)", 20,
               on_poll=f.tracker.snapshot, diagnostics=f.logs)  # ...and came back by itself
    assert {t.agent_id for t in after_restart} <= {agent_id(f, a.name) for a in f.agents}


def reconnected(farm: Farm, since: float) -> bool:
    """Every agent process's latest registration is active and has been heard from since `since`."""
    with farm.db() as s:
        rows = [s.scalars(select(Agent).where(Agent.name == a.name).order_by(Agent.registered_at.desc())).first()
                for a in farm.agents]
    return all(r.status == "active" and r.last_heartbeat.timestamp() >= since for r in rows)


def fault_job(client, mode: str, **measure):
    return client.create_job("fault", {"mode": mode, "n": 64}, "cpu", 1, measure={**FAST_MEASURE, **measure})


def test_faulty_kernels_are_classified_and_the_agent_keeps_serving(farm):
    plugin = ("tests.fault_plugin",)
    f = farm(agents=1, server_plugins=plugin, agent_plugins=plugin)
    agent = f.agents[0]
    dclass = f.device_class()
    with f.client() as c:
        jobs = {mode: fault_job(c, mode, **({"timeout_s": 2.0} if mode == "hang" else {})).id
                for mode in ("segfault", "hang", "wrong", "ok")}
        for mode, job_id in jobs.items():
            assert f.wait_job(job_id, timeout_s=90).state == "done", mode
        results = {mode: f.trials(job_id) for mode, job_id in jobs.items()}
        assert {mode: [t.status for t in ts] for mode, ts in results.items()} == {
            "segfault": ["RUNTIME_ERROR"], "hang": ["TIMEOUT"], "wrong": ["WRONG_ANSWER"], "ok": ["OK"]}
        assert "SIGSEGV" in results["segfault"][0].error
        assert "timeout" in results["hang"][0].error.lower()
        assert results["wrong"][0].max_abs_error == pytest.approx(1.0)
        assert agent.alive()

        matmul = c.create_job("matmul", MATMUL, "cpu", 4, seed=9, measure=FAST_MEASURE)
        assert f.wait_job(matmul.id).state == "done"
        assert [t.status for t in f.trials(matmul.id)] == ["OK"] * 4
        assert agent.alive() and agent_id(f, agent.name) == results["ok"][0].agent_id  # never re-registered

        with pytest.raises(TunefarmError) as refused:
            c.best("fault", {"mode": "wrong", "n": 64}, dclass)
        assert refused.value.status == 404
        assert c.history("fault", {"mode": "wrong", "n": 64}, dclass).total == 0
        assert c.best("fault", {"mode": "ok", "n": 64}, dclass).trial_id == results["ok"][0].id
