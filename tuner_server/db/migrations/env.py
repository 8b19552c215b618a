"""Alembic environment: the models' metadata; a connection handed in by `upgrade_to_head`, or a URL.

From the command line: `alembic -c tuner_server/db/alembic.ini -x url=sqlite:///./tunefarm.db upgrade head`
(or `revision --autogenerate -m ...`).
"""
from __future__ import annotations

from alembic import context

from tuner_server.db.engine import make_engine
from tuner_server.db.migrate import migration_transaction
from tuner_server.db.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.attributes.get("url") or context.get_x_argument(as_dictionary=True).get("url")
    if not url:
        raise SystemExit("no database URL: pass -x url=... (or call tuner_server.db.upgrade_to_head)")
    return url


def _configure_and_run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure_and_run(connection)
        return
    engine = make_engine(_url())
    try:
        with migration_transaction(engine) as conn:
            _configure_and_run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
