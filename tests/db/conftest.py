"""Fixtures: every test taking `session` runs on SQLite and on a real PostgreSQL.

One PostgreSQL cluster per test session (tests/db/pg_cluster.py); each test module gets a fresh database
migrated to head (SQLite: a fresh file), and every table is emptied before each test.
"""
from __future__ import annotations

import itertools

import pytest
from sqlalchemy import text

from tests.db.pg_cluster import create_database
from tuner_server.db import Base, make_engine, make_session_factory, upgrade_to_head

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
_counter = itertools.count()


def new_database_url(backend: str, request, tmp_path_factory) -> str:
    """An empty database (nothing migrated yet) on `backend`."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('db') / 'tunefarm.db'}"
    return create_database(request.getfixturevalue("pg_cluster"), f"tf_{next(_counter)}")


@pytest.fixture(scope="module", params=BACKENDS)
def db_url(request, tmp_path_factory):
    url = new_database_url(request.param, request, tmp_path_factory)
    upgrade_to_head(url)
    return url


@pytest.fixture(scope="module")
def db_engine(db_url):
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def backend(db_engine) -> str:
    return db_engine.dialect.name


@pytest.fixture
def session_factory(db_engine):
    tables = [t.name for t in reversed(Base.metadata.sorted_tables)]
    with db_engine.begin() as conn:
        if db_engine.dialect.name == "postgresql":
            conn.execute(text(f"TRUNCATE {', '.join(tables)} CASCADE"))
        else:
            for table in tables:
                conn.execute(text(f"DELETE FROM {table}"))
    return make_session_factory(db_engine)


@pytest.fixture
def session(session_factory):
    with session_factory() as s:
        yield s
        s.rollback()
