"""Alembic: an empty database upgrades to head, and the migrations match the models exactly (no drift)."""
from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from tests.db.conftest import BACKENDS, new_database_url
from tuner_server.db import Base, current_revision, make_engine, upgrade_to_head
from tuner_server.db.migrate import alembic_config


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
