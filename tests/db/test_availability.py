"""Outage or bug: real driver errors from SQLite and PostgreSQL sorted into OUTAGE / BUSY / None, and one log line
per outage (start and recovery) however many calls fail meanwhile."""
from __future__ import annotations

import logging

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from tests.db.pg_cluster import create_database
from tests.ports import closed_port
from tuner_server.db import make_engine
from tuner_server.db.availability import BUSY, OUTAGE, unavailable

LOGGER = "tuner_server.db.availability"


def failure(engine, sql: str = "SELECT 1") -> SQLAlchemyError:
    with pytest.raises(SQLAlchemyError) as caught, engine.connect() as conn:
        conn.execute(text(sql))
    return caught.value


def test_sqlite_errors(tmp_path):
    missing = make_engine(f"sqlite:///{tmp_path / 'no' / 'dir' / 'tf.db'}")
    assert unavailable(failure(missing)) == OUTAGE  # unable to open database file
    engine = make_engine(f"sqlite:///{tmp_path / 'tf.db'}")
    assert unavailable(failure(engine, "SELECT * FROM no_such_table")) is None  # a bug, not an outage
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
    assert unavailable(failure(engine, "INSERT INTO t VALUES (1)")) is None  # a constraint
    impatient = create_engine(f"sqlite:///{tmp_path / 'tf.db'}", connect_args={"timeout": 0})
    with engine.connect() as holder:  # BEGIN IMMEDIATE: holds the write lock until it ends
        holder.execute(text("INSERT INTO t VALUES (2)"))
        with pytest.raises(SQLAlchemyError) as locked, impatient.begin() as conn:
            conn.execute(text("INSERT INTO t VALUES (3)"))
    assert "locked" in str(locked.value) and unavailable(locked.value) == BUSY
    for e in (missing, engine, impatient):
        e.dispose()


@pytest.mark.postgres
def test_postgresql_errors(pg_cluster):
    refused = make_engine(f"postgresql://postgres@127.0.0.1:{closed_port()}/tf")
    assert unavailable(failure(refused)) == OUTAGE
    # no connection for whatever reason (here a dropped database) is an outage: the one log line says why
    assert unavailable(failure(make_engine(pg_cluster.url("no_such_database")))) == OUTAGE
    engine = make_engine(create_database(pg_cluster, "tf_availability"))
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
    constraint = failure(engine, "INSERT INTO t VALUES (1)")
    assert isinstance(constraint, IntegrityError) and unavailable(constraint) is None
    assert unavailable(failure(engine, "SET statement_timeout = 1; SELECT pg_sleep(1)")) == BUSY  # cancelled
    with engine.connect() as holder:
        holder.execute(text("LOCK TABLE t IN ACCESS EXCLUSIVE MODE"))
        assert unavailable(failure(engine, "SET lock_timeout = 1; SELECT * FROM t")) == BUSY
        holder.rollback()
    with engine.connect() as victim:  # the server ends the session under it (as a shutdown does): 57P01
        pid = victim.execute(text("SELECT pg_backend_pid()")).scalar()
        with engine.connect() as admin:
            admin.execute(text(f"SELECT pg_terminate_backend({pid})"))
        with pytest.raises(DBAPIError) as terminated:
            victim.execute(text("SELECT 1"))
    assert terminated.value.connection_invalidated and unavailable(terminated.value) == OUTAGE
    with engine.connect() as conn:  # the pool replaced the broken connection
        assert conn.execute(text("SELECT 1")).scalar() == 1
    for e in (refused, engine):
        e.dispose()


def test_one_line_when_an_outage_starts_and_one_when_it_ends(tmp_path, caplog):
    directory = tmp_path / "later"
    engine = make_engine(f"sqlite:///{directory / 'tf.db'}")
    caplog.set_level(logging.INFO, LOGGER)
    for _ in range(5):
        failure(engine)
    directory.mkdir()
    for _ in range(3):
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    failure(engine, "SELECT * FROM no_such_table")  # a bug is not an outage: no line
    directory.rename(tmp_path / "gone")
    engine.dispose()  # the pooled connection kept the old file open: a new one must open it
    failure(engine)
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == LOGGER]
    assert [level for level, _ in lines] == ["ERROR", "WARNING", "ERROR"], lines
    assert "unable to open database file" in lines[0][1] and "503" in lines[0][1]
    assert "available again" in lines[1][1] and "(5 failed attempts meanwhile)" in lines[1][1]
    assert not any(r.exc_info for r in caplog.records)
    engine.dispose()
