"""Engine and sessions. Repository functions flush but never commit: wrap each request in `session_scope`.

Three kinds of session share one engine: `make_session_factory` (read-write; on SQLite every transaction takes the
write lock at BEGIN), `read_only_sessions` (transactions that only read, which take no lock at all) and
`statement_sessions` (reads without a common snapshot: autocommit on PostgreSQL).
"""
from __future__ import annotations

import math
import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from tuner_server.db.availability import OutageLog, watch_outages

SQLITE_BUSY_TIMEOUT_MS = 30_000
# Connections kept open (plus SQLAlchemy's 10 overflow): REST's database slots (api/app.py) and most of the gRPC
# workers (rpc/server.py), the driver and the model keeper at once. An overflow connection is closed when returned:
# on PostgreSQL each is a new backend process, which at 100 concurrent reads with the default 5 cost more than them.
POOL_SIZE = 20
READ_ONLY = "tunefarm_read_only"  # execution option of the engine behind read_only_sessions
WAIT_LIMIT = "tunefarm_wait_limit_s"  # execution option set by bound_waits
STATEMENT_TIMEOUT = "tunefarm_statement_timeout"  # DBAPI connection info: the timeout it runs under now (ms)
STATEMENT_TIMEOUT_STEP_MS = 100
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
    (`SELECT ... FOR UPDATE SKIP LOCKED`) instead. Sessions from `read_only_sessions` begin with a plain (deferred)
    `BEGIN` under `PRAGMA query_only`: a WAL snapshot that neither waits for the writer nor holds it up. On a SQLite
    file they come from a second pool whose connections are read-only for good (`_sqlite_readers`): after a flip of
    `query_only` a pooled connection ran its next statements slower, as if prepared again (queueing a batch after
    a read: its INSERT 0.15 -> 0.27 ms; with a pool of their own, 0.18).
    """
    url = normalize_url(url)
    if make_url(url).get_backend_name() != "sqlite":
        # pre-ping: a pooled connection a PostgreSQL restart broke is replaced at checkout, never handed out
        connect_args = {} if "connect_timeout" in make_url(url).query else {"connect_timeout": PG_CONNECT_TIMEOUT_S}
        engine = create_engine(url, echo=echo, pool_pre_ping=True, connect_args=connect_args, pool_size=POOL_SIZE)
        watch_outages(engine)

        # A statement (lock waits included) of a transaction with a WAIT_LIMIT fails past the limit. The timeout is
        # set per connection, and only when it changes (limits rounded up to STATEMENT_TIMEOUT_STEP_MS), instead of
        # a SET LOCAL round trip in every transaction: one in seven of a busy tuner's round trips at 64 agents.
        @event.listens_for(engine, "begin")
        def _postgres_begin(conn):
            limit = conn.get_execution_options().get(WAIT_LIMIT)
            wanted = "DEFAULT" if limit is None else str(STATEMENT_TIMEOUT_STEP_MS * math.ceil(
                max(1.0, limit * 1000) / STATEMENT_TIMEOUT_STEP_MS))  # DEFAULT: the database's or role's own
            info = conn.connection.info
            if info.get(STATEMENT_TIMEOUT, "DEFAULT") != wanted:
                info.pop(STATEMENT_TIMEOUT, None)  # unknown until the SET is in
                conn.exec_driver_sql(f"SET statement_timeout = {wanted}")
                info[STATEMENT_TIMEOUT] = wanted

        @event.listens_for(engine, "rollback")
        def _postgres_rollback(conn):
            # a rolled-back transaction takes its SET with it: the connection's timeout is not known any more (an
            # invalidated connection is replaced by a new one, which starts from the default)
            if not conn.invalidated:
                conn.connection.info[STATEMENT_TIMEOUT] = None

        return engine
    engine = create_engine(url, echo=echo, pool_size=POOL_SIZE)
    outages = watch_outages(engine)
    in_memory = make_url(url).database in (None, "", ":memory:")
    if not in_memory:
        _READERS[engine] = _sqlite_readers(url, echo, engine, outages)

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

    writers = WriterQueue()

    @event.listens_for(engine, "begin")
    def _sqlite_begin(conn):
        read_only = bool(conn.get_execution_options().get(READ_ONLY))
        info = conn.connection.info  # per DBAPI connection: a pragma is sent only when its value changes
        if info.get("query_only", False) != read_only:
            conn.exec_driver_sql(f"PRAGMA query_only={'ON' if read_only else 'OFF'}")
            info["query_only"] = read_only
        busy_ms = _sqlite_wait_limit(conn)
        if read_only:
            conn.exec_driver_sql("BEGIN")
            return
        writers.enter(info, busy_ms / 1000)
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            writers.leave(info)
            raise

    @event.listens_for(engine, "commit")
    @event.listens_for(engine, "rollback")
    def _sqlite_end(conn):
        writers.leave(conn.connection.info)

    @event.listens_for(engine, "checkin")
    @event.listens_for(engine, "invalidate")
    @event.listens_for(engine, "close")
    def _sqlite_gone(_dbapi_conn, record, *_exc):  # returned, invalidated or closed mid-transaction
        writers.leave(record.info)

    return engine


class WriterQueue:
    """SQLite admits one writer at a time. Threads of this process that wait for it inside SQLite poll with sleeps
    of up to 100 ms (its busy handler), so under load (64 agents) some waited seconds while later ones cut in. So
    this process's writers queue here first, on a lock that is handed over at once, and reach BEGIN IMMEDIATE one at
    a time: SQLite's own waiting is left to other processes. Held from BEGIN IMMEDIATE until the transaction's
    commit or rollback (or the connection's return to the pool); a connection records that it holds it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def enter(self, info: dict, timeout_s: float) -> None:
        if info.get("writer"):
            return
        if not self._lock.acquire(timeout=timeout_s):
            raise OperationalError("BEGIN IMMEDIATE", None, sqlite3.OperationalError("database is locked"))
        info["writer"] = True

    def leave(self, info: dict) -> None:
        if info.pop("writer", False):
            self._lock.release()


def _sqlite_wait_limit(conn) -> int:
    """Set the connection's busy timeout to its transaction's WAIT_LIMIT (`bound_waits`; none: the default), sent
    only when it changes; returns it in ms."""
    limit = conn.get_execution_options().get(WAIT_LIMIT)
    busy_ms = SQLITE_BUSY_TIMEOUT_MS if limit is None else max(1, int(limit * 1000))
    info = conn.connection.info
    if info.get("busy_ms", SQLITE_BUSY_TIMEOUT_MS) != busy_ms:
        conn.exec_driver_sql(f"PRAGMA busy_timeout={busy_ms}")
        info["busy_ms"] = busy_ms
    return busy_ms


_READERS: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()  # a SQLite file's reader pool


def _sqlite_readers(url: str, echo: bool, writer: Engine, outages: OutageLog) -> Engine:
    """A second engine on the SQLite file whose connections only read (`PRAGMA query_only` from their start) and
    begin deferred: read-only sessions and statement reads never flip a pooled writer connection. Disposed with
    `writer`; its outages are the writer's (`outages`: one log line per outage of the file)."""
    readers = create_engine(url, echo=echo, pool_size=POOL_SIZE)
    watch_outages(readers, outages)

    @event.listens_for(readers, "connect")
    def _reader_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # BEGIN is sent by _reader_begin
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA query_only=ON")
        cursor.close()

    @event.listens_for(readers, "begin")
    def _reader_begin(conn):
        _sqlite_wait_limit(conn)
        conn.exec_driver_sql("BEGIN")

    @event.listens_for(writer, "engine_disposed")
    def _writer_disposed(_engine):
        readers.dispose()

    return readers


def _read_engine(engine: Engine) -> Engine:
    """Where `engine`'s read-only work runs: its reader pool on a SQLite file, else itself."""
    return _READERS.get(engine, engine)


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def bound_waits(session: Session, seconds: float) -> None:
    """Fail this session's transaction rather than wait more than `seconds` on the database: on SQLite for the write
    lock (busy timeout), on PostgreSQL in any one statement (statement_timeout, lock waits included); the failure
    is an OperationalError that db/availability.py calls BUSY. Call it before the session's first statement."""
    session.connection(execution_options={WAIT_LIMIT: seconds})


def statement_engine(factory: sessionmaker[Session]) -> Engine:
    """`factory`'s engine (and pool) for a few reads that need no common snapshot (each sees the latest commits, as
    READ COMMITTED gives anyway): on PostgreSQL in autocommit, without the BEGIN and COMMIT round trips that cost a
    hot read as much as its queries; on SQLite read-only (a deferred BEGIN under `PRAGMA query_only` costs nothing
    there). For a Connection: a Session costs more than a one-statement read."""
    engine = factory.kw["bind"]
    if engine.dialect.name != "postgresql":
        return _read_engine(engine).execution_options(**{READ_ONLY: True})
    return engine.execution_options(isolation_level="AUTOCOMMIT", **{READ_ONLY: True})


def read_only_sessions(factory: sessionmaker[Session]) -> sessionmaker[Session]:
    """Sessions over `factory`'s engine (and pool) whose transactions only read: on SQLite a deferred `BEGIN` (no
    write lock: readers never queue behind leasing or reporting) with `PRAGMA query_only`; on PostgreSQL `READ ONLY`
    transactions (a transaction, not autocommit: exports stream through a server-side cursor). A write in one fails
    loudly instead of silently taking a lock."""
    engine = factory.kw["bind"]
    options = {READ_ONLY: True}
    if engine.dialect.name == "postgresql":
        options["postgresql_readonly"] = True
    return sessionmaker(_read_engine(engine).execution_options(**options), expire_on_commit=False,
                        info={READ_ONLY: True})


def statement_sessions(factory: sessionmaker[Session]) -> sessionmaker[Session]:
    """Sessions over `statement_engine(factory)`, for a few ORM reads that need no common snapshot (the job driver's
    pass): on PostgreSQL each statement in autocommit (under READ COMMITTED a transaction's statements see
    different snapshots anyway, so its BEGIN and COMMIT were two round trips for nothing); on SQLite as
    `read_only_sessions`, where a write fails loudly (PostgreSQL ignores READ ONLY in autocommit)."""
    return sessionmaker(statement_engine(factory), expire_on_commit=False, info={READ_ONLY: True})


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
