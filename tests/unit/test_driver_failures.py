"""The job driver when a job cannot run: bad strategy options, an error while reading one job, a search that raises
(building its space, observing, proposing) and a database failure while building it, which is retried."""
# ruff: noqa: F811 - the tests take the imported `sessions` and `settings` fixtures as arguments
from __future__ import annotations

import sqlite3

from sqlalchemy.exc import OperationalError

import compiler_core as cc
from tests.unit.driver_support import (  # noqa: F401 - settings and sessions are fixtures
    CPU,
    SMALL,
    T0,
    at,
    job_state,
    new_agent,
    new_job,
    run_to_end,
    sessions,
    settings,
)
from tuner_server import driver as driver_module
from tuner_server import repo
from tuner_server.db import session_scope
from tuner_server.driver import JobDriver
from tuner_server.search.random_search import RandomSearch


def test_bad_strategy_options_fail_the_job_and_spare_the_others(sessions, settings):
    agent = new_agent(sessions)
    bad = new_job(sessions, options={"no_such_option": 1})
    good = new_job(sessions, key=SMALL)
    driver = JobDriver(sessions, settings)
    summary = driver.tick(at(1))
    job = job_state(sessions, bad)[0]
    assert summary.finished == {bad: "failed"} and job.state == "failed" and "no_such_option" in job.error
    assert run_to_end(sessions, driver, agent, good).state == "done"


def test_an_error_in_one_job_is_logged_and_the_pass_goes_on(sessions, settings, monkeypatch, caplog):
    new_agent(sessions)
    broken, fine = new_job(sessions), new_job(sessions, key=SMALL)
    real = repo.pass_reads.job_row

    def flaky(connection, job_id):
        if job_id == broken:
            raise RuntimeError("injected")
        return real(connection, job_id)

    monkeypatch.setattr(repo.pass_reads, "job_row", flaky)
    summary = JobDriver(sessions, settings).tick(at(1))
    assert summary.enqueued == 8 and not summary.finished
    assert job_state(sessions, fine)[1] and not job_state(sessions, broken)[1]
    assert job_state(sessions, broken)[0].state == "queued"  # not failed: a transient error is retried
    assert "injected" in caplog.text


def test_a_search_that_raises_fails_its_job_once_and_spares_the_others(sessions, settings, caplog):
    """A class stored before Register checked targets (a 3-byte vector ISA): its space's default divides by zero.
    The job fails at once with what failed, and the traceback is logged once, not on every pass."""
    broken = {**CPU, "isa_flags": ["sse4_2"], "compute_units": 1,
              "target": {**cc.cpu_target(isa="sse", cores=1).to_dict(), "vector_bytes": 3}}
    with session_scope(sessions) as s:
        dclass = repo.register_agent(broken, "old", "cg1", session=s, now=T0).agent.device_class
    agent = new_agent(sessions)
    bad, good = new_job(sessions, selector=dclass), new_job(sessions, key=SMALL)
    driver = JobDriver(sessions, settings)
    summary = driver.tick(at(1))
    job = job_state(sessions, bad)[0]
    assert summary.finished == {bad: "failed"} and job.state == "failed"
    assert "ZeroDivisionError" in job.error and dclass in job.error
    assert caplog.text.count("Traceback") == 1
    driver.tick(at(2))
    assert caplog.text.count("Traceback") == 1
    assert run_to_end(sessions, driver, agent, good, start=3).state == "done"


def test_a_strategy_whose_proposal_raises_fails_its_job(sessions, settings, monkeypatch):
    new_agent(sessions)
    job_id = new_job(sessions)

    def broken(self, n):
        raise IndexError("injected")

    monkeypatch.setattr(RandomSearch, "propose", broken)
    assert JobDriver(sessions, settings).tick(at(1)).finished == {job_id: "failed"}
    assert "IndexError: injected" in job_state(sessions, job_id)[0].error


def test_a_database_failure_while_building_the_search_is_retried_not_a_failed_job(sessions, settings, monkeypatch):
    new_agent(sessions)
    job_id = new_job(sessions)

    def failing(*args, **kwargs):
        raise OperationalError("SELECT devices", {}, sqlite3.OperationalError("no such table: devices"))

    monkeypatch.setattr(driver_module, "target_for_class", failing)
    driver = JobDriver(sessions, settings)
    assert not driver.tick(at(1)).finished and job_state(sessions, job_id)[0].state == "queued"
    monkeypatch.undo()
    assert driver.tick(at(2)).enqueued == 8
