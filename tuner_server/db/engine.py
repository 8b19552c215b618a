"""Engine and sessions. Repository functions flush but never commit: wrap each request in `session_scope`."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from tuner_server.db.availability import watch_outages

SQLITE_BUSY_TIMEOUT_MS = 30_000
PG_CONNECT_TIMEOUT_S = 10  # an unreachable host (no RST) fails a request after this, not after the OS's minutes


def normalize_url(url: str) -> str:
    """'postgresql://' and 'postgres://' use psycopg 3; everything else is passed through."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def make_engine(url: str, *, echo: bool = False) -> Engine:
    """An engine for `url`. SQLite gets foreign keys, WAL, a busy timeout and `BEGIN IMMEDIATE` transactions;
    PostgreSQL a connect timeout and pre-ping. Either logs each outage once (db/availability.py).

    `BEGIN IMMEDIATE` makes every SQLite transaction take the write lock when it starts, so a
    read-then-write (leasing tasks, moving a head) is one serialised unit; PostgreSQL uses row locks
    (`SELECT ... FOR UPDATE SKIP LOCKED`) instead.
    """
    url = normalize_url(url)
    if make_url(url).get_backend_name() != "sqlite":
        # pre-ping: a pooled connection a PostgreSQL restart broke is replaced at checkout, never handed out
        connect_args = {} if "connect_timeout" in make_url(url).query else {"connect_timeout": PG_CONNECT_TIMEOUT_S}
        engine = create_engine(url, echo=echo, pool_pre_ping=True, connect_args=connect_args)
        watch_outages(engine)
        return engine
    engine = create_engine(url, echo=echo)
    watch_outages(engine)
    in_memory = make_url(url).database in (None, "", ":memory:")

    @event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # the driver's own BEGIN handling is off; see _sqlite_begin
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
            # WAL with NORMAL sync: commits skip the fsync (a few ms each, several per driver pass); a killed process
            # loses nothing, only an OS crash or power loss may drop the last commits (never corrupts the file).
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _sqlite_begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any exception."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
