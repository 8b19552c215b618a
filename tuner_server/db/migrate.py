"""Alembic, driven from code: `upgrade_to_head(url)` runs at server start (and in tests)."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine

from tuner_server.db.engine import make_engine
from tuner_server.db.leader_lock import SCHEMA, xact_lock

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(url: str) -> Config:
    """A Config pointing at our migrations; the URL travels as an attribute (no ini interpolation of '%')."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["url"] = url
    return config


def upgrade_to_head(url: str) -> None:
    """Create or upgrade the database at `url` to the newest revision."""
    migrate(url, "head")


def migrate(url: str, revision: str, *, down: bool = False) -> None:
    """Upgrade (or with `down`, downgrade) the database at `url` to `revision`."""
    engine = make_engine(url)
    try:
        with migration_transaction(engine) as connection:
            xact_lock(connection, SCHEMA)  # tuner replicas starting together: one migrates, the others then see head
            config = alembic_config(url)
            config.attributes["connection"] = connection
            (command.downgrade if down else command.upgrade)(config, revision)
    finally:
        engine.dispose()


@contextmanager
def migration_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection in one transaction for a migration. On SQLite, foreign keys are not enforced while it runs
    and checked before it commits: batch operations rebuild a table (copy, DROP, rename), and dropping a table
    that other tables' rows reference fails with foreign keys on. The pragma only takes effect outside a
    transaction, so it is set on the driver connection before BEGIN."""
    with engine.connect() as connection:
        sqlite = engine.dialect.name == "sqlite"
        if sqlite:
            connection.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                yield connection
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise RuntimeError(f"the migration left rows with dangling foreign keys: {broken[:5]}")
        finally:
            if sqlite:
                connection.connection.driver_connection.execute("PRAGMA foreign_keys=ON")


def current_revision(url: str) -> str | None:
    from alembic.runtime.migration import MigrationContext

    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
