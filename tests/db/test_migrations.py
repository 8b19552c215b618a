"""Alembic: an empty database upgrades to head, the migrations match the models exactly (no drift), and 0003 (the
measurement protocol) goes down to 0002 and up again with data in place."""
from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from tests.db.conftest import BACKENDS, new_database_url
from tests.db.factories import agent, at, compare, job, measure
from tuner_server.db import (
    Base,
    current_revision,
    make_engine,
    make_session_factory,
    session_scope,
    upgrade_to_head,
)
from tuner_server.db.migrate import alembic_config, migrate


@pytest.fixture(params=BACKENDS)
def empty_url(request, tmp_path_factory):
    return new_database_url(request.param, request, tmp_path_factory)


def test_upgrade_empty_database_to_head_then_no_drift(empty_url):
    assert current_revision(empty_url) is None
    upgrade_to_head(empty_url)
    head = ScriptDirectory.from_config(alembic_config(empty_url)).get_current_head()
    assert current_revision(empty_url) == head
    upgrade_to_head(empty_url)  # idempotent: a restarted server runs it again
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn:
            assert set(Base.metadata.tables) <= set(inspect(conn).get_table_names())
            context = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()


def test_a_single_linear_history():
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert len(script.get_heads()) == 1
    assert [r.revision for r in script.walk_revisions()][-1] == "0001"


def _columns(conn, table: str) -> set[str]:
    return {c["name"] for c in inspect(conn).get_columns(table)}


def _checks(conn, table: str) -> set[str]:
    return {c["name"] for c in inspect(conn).get_check_constraints(table)}


def _populate_protocol_rows(url: str) -> None:
    """A job with a verified trial, a challenge and its comparison: rows in every table 0003 touches."""
    engine = make_engine(url)
    try:
        with session_scope(make_session_factory(engine)) as s:
            ag = agent(s)
            job(s, budget=2)
            measure(s, ag, [9e-3, 3e-3], now=at(1))
            assert compare(s, ag, 1 / 3, now=at(2)).comparison.outcome == "promoted"
    finally:
        engine.dispose()


def test_0003_downgrades_to_0002_keeping_the_data_and_upgrades_again(empty_url):
    upgrade_to_head(empty_url)
    _populate_protocol_rows(empty_url)
    migrate(empty_url, "0002", down=True)
    assert current_revision(empty_url) == "0002"
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn:
            assert "comparisons" not in inspect(conn).get_table_names()
            assert not _columns(conn, "tasks") & {"kind", "purpose", "candidate_trial_id", "baseline_trial_id",
                                                   "time_reference"}
            assert not _columns(conn, "trials") & {"contention", "noisy", "threads", "cpus"}
            assert "phase" not in _columns(conn, "jobs")
            assert _checks(conn, "tasks") == {"ck_tasks_state"}  # a rebuilt SQLite table keeps its other checks
            counts = {t: conn.scalar(text(f"SELECT count(*) FROM {t}")) for t in ("jobs", "tasks", "trials")}
            assert counts == {"jobs": 1, "tasks": 3, "trials": 2}
    finally:
        engine.dispose()
    upgrade_to_head(empty_url)
    engine = make_engine(empty_url)
    try:
        with engine.connect() as conn:
            assert _checks(conn, "tasks") == {"ck_tasks_state", "ck_tasks_kind"}
            assert conn.execute(text("SELECT DISTINCT phase FROM jobs")).scalars().all() == ["search"]
            assert set(conn.execute(text("SELECT kind FROM tasks")).scalars()) == {"MEASURE"}  # the default
            assert conn.scalar(text("SELECT count(*) FROM trials WHERE contention IS NULL")) == 2
            assert conn.scalar(text("SELECT count(*) FROM comparisons")) == 0
    finally:
        engine.dispose()


def test_0003_constrains_task_kinds_and_comparison_outcomes(empty_url):
    upgrade_to_head(empty_url)
    _populate_protocol_rows(empty_url)
    engine = make_engine(empty_url)
    try:
        for statement in ("UPDATE tasks SET kind = 'PROFILE'", "UPDATE comparisons SET outcome = 'won'",
                          "UPDATE comparisons SET purpose = 'whim'"):
            with pytest.raises(IntegrityError), engine.begin() as conn:
                conn.execute(text(statement))
        with engine.begin() as conn, pytest.raises(IntegrityError):  # one comparison per (task, attempt)
            conn.execute(text("INSERT INTO comparisons SELECT 'x', task_id, attempt, job_id, workload_id, "
                              "device_class, agent_id, candidate_trial_id, baseline_trial_id, purpose, outcome, "
                              "codegen_version, candidate_samples, baseline_samples, reference_samples, "
                              "reference_name, ratio, ratio_ci_low, ratio_ci_high, contention, noisy, threads, error, "
                              "created_at FROM comparisons"))
    finally:
        engine.dispose()
