"""The background loops (job driver, class-model keeper) ride out a database outage: a pass that finds the database
unavailable fails quietly (no traceback; the engine logs the outage once), the next waits longer, the first pass
that succeeds restores the interval; after an outage the driver's restart grace starts again, so agents that could
not reach the farm meanwhile are neither marked lost nor robbed of their leases. Real SQLite errors (a database
file that cannot be opened), no network."""
from __future__ import annotations

import logging
import threading

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from tests.unit.driver_support import at, new_agent, new_job, settings  # noqa: F401  (a fixture)
from tuner_server import repo
from tuner_server.background import PeriodicThread, backoff_s
from tuner_server.db import Task, make_engine, make_session_factory, session_scope, upgrade_to_head
from tuner_server.driver import JobDriver


def test_backoff_doubles_from_the_interval_up_to_the_cap():
    assert [backoff_s(2.0, n, 15.0) for n in range(6)] == [2.0, 2.0, 4.0, 8.0, 15.0, 15.0]
    assert backoff_s(30.0, 3, 15.0) == 30.0  # never shorter than the interval


def unreachable_error(tmp_path) -> OperationalError:
    engine = make_engine(f"sqlite:///{tmp_path / 'no' / 'dir' / 'tf.db'}")
    try:
        with pytest.raises(OperationalError) as caught, engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    finally:
        engine.dispose()
    return caught.value


def test_a_loop_backs_off_quietly_while_the_database_is_down_and_recovers(tmp_path, caplog):
    outage = unreachable_error(tmp_path)
    down_passes, passes, done = 3, [], threading.Event()

    def step():
        passes.append(len(passes))
        if len(passes) <= down_passes:
            raise outage
        if len(passes) == down_passes + 1:
            raise RuntimeError("injected bug")  # any other failure keeps its traceback
        done.set()

    loop = PeriodicThread(step, "test-loop", interval_s=0.01, max_backoff_s=0.04)
    caplog.set_level(logging.DEBUG, "tuner_server.background")
    loop.start()
    try:
        assert done.wait(10)
    finally:
        loop.stop()
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1 and "injected bug" in str(tracebacks[0].exc_info[1])
    quiet = [r.getMessage() for r in caplog.records if "database unavailable" in r.getMessage()]
    assert [m.split("(pass ")[1] for m in quiet] == ["1 in a row)", "2 in a row)", "3 in a row)"]
    assert loop.unavailable_passes == 0


def test_a_driver_pass_that_finds_the_database_down_ends_and_restarts_the_grace(tmp_path, settings, caplog):  # noqa: F811
    directory = tmp_path / "db"
    directory.mkdir()
    url = f"sqlite:///{directory / 'tf.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    agent = new_agent(sessions)
    new_job(sessions, budget=4)
    driver = JobDriver(sessions, settings)
    driver.tick(at(1))
    with session_scope(sessions) as s:
        (lease,) = repo.lease_tasks(agent, 1, session=s, lease_seconds=10, now=at(1))
    directory.rename(tmp_path / "away")  # the database goes away (a pooled connection would keep the file open)
    engine.dispose()
    with pytest.raises(OperationalError):
        driver.tick(at(50))
    assert not [r for r in caplog.records if r.exc_info]
    (tmp_path / "away").rename(directory)
    # back at t=100: the agent was silent for 99 s and its lease ran out at t=11, but it could not reach the farm
    # while the database was down: the grace starts again, so it is not lost and its lease waits for it
    summary = driver.tick(at(100))
    assert (summary.lost_agents, summary.requeued) == (0, 0)
    with session_scope(sessions) as s:
        assert s.get(Task, lease.task_id).state == "leased"
    summary = driver.tick(at(100 + settings.agent_lost_after_s + 1))
    assert (summary.lost_agents, summary.requeued) == (1, 1)
    engine.dispose()
