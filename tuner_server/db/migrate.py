"""Alembic, driven from code: `upgrade_to_head(url)` runs at server start (and in tests)."""
from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from tuner_server.db.engine import make_engine

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
        with engine.begin() as connection:
            config = alembic_config(url)
            config.attributes["connection"] = connection
            (command.downgrade if down else command.upgrade)(config, revision)
    finally:
        engine.dispose()


def current_revision(url: str) -> str | None:
    from alembic.runtime.migration import MigrationContext

    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
