"""Engine details: URL normalisation, timezone-aware UTC timestamps on both backends, and read-only sessions."""
from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import event, func, select, text
from sqlalchemy.exc import DBAPIError, OperationalError, StatementError

from tests.db.factories import MATMUL, SOFTMAX
from tuner_server.db import Workload, normalize_url, read_only_sessions, session_scope, statement_sessions
from tuner_server.db.engine import bound_waits, statement_engine
from tuner_server.repo import get_or_create_workload


def test_normalize_url():
    assert normalize_url("postgresql://u:p%40ss@h:5/db") == "postgresql+psycopg://u:p%40ss@h:5/db"
    assert normalize_url("postgres://h/db") == "postgresql+psycopg://h/db"
    assert normalize_url("sqlite:///./tunefarm.db") == "sqlite:///./tunefarm.db"


def test_timestamps_come_back_aware_in_utc(session):
    plus2 = datetime(2026, 3, 1, 14, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    w = get_or_create_workload(MATMUL, session=session)
    w.created_at = plus2
    session.commit()
    session.expire_all()
    got = session.get(Workload, w.id).created_at
    assert got == plus2 and got.tzinfo is not None and got.utcoffset() == timedelta(0)
    assert got == datetime(2026, 3, 1, 12, 30, 0, 123456, tzinfo=UTC)


def test_naive_timestamps_are_refused(session):
    w = get_or_create_workload(MATMUL, session=session)
    w.created_at = datetime(2026, 1, 1)
    with pytest.raises(StatementError, match="naive datetime"):
        session.flush()


def test_a_read_only_session_cannot_write(session_factory):
    reads = read_only_sessions(session_factory)
    with reads() as s:
        s.add(Workload(key="x(n=1)", op="x", params={}))
        with pytest.raises(DBAPIError):
            s.flush()


def test_statement_sessions_read_in_autocommit_on_postgres_and_read_only_on_sqlite(session_factory, backend):
    with statement_sessions(session_factory)() as s:
        if backend == "postgresql":  # no transaction: now() is each statement's own start, not one BEGIN's
            first = s.scalar(text("SELECT now()"))
            time.sleep(0.01)
            assert s.scalar(text("SELECT now()")) > first
            assert s.scalar(text("SELECT txid_current_if_assigned()")) is None
        else:
            assert s.scalar(text("PRAGMA query_only")) == 1
            s.add(Workload(key="x(n=1)", op="x", params={}))
            with pytest.raises(DBAPIError):
                s.flush()


def test_sqlite_reads_never_flip_a_writer_connection(session_factory, backend):
    if backend != "sqlite":
        pytest.skip("SQLite's query_only pragma")
    flips = []

    def watch(_conn, _cursor, statement, *_):
        if "query_only=" in statement:  # a flip, not a look
            flips.append(statement)

    engine = session_factory.kw["bind"]
    event.listen(engine, "before_cursor_execute", watch)
    try:
        for _ in range(3):  # reads and writes in turn, as the job driver's passes do
            with session_scope(read_only_sessions(session_factory)) as s:
                s.scalar(select(func.count()).select_from(Workload))
            with statement_engine(session_factory).connect() as c:
                assert c.scalar(text("PRAGMA query_only")) == 1
            with session_scope(session_factory) as s:
                get_or_create_workload(MATMUL, session=s)
                assert s.scalar(text("PRAGMA query_only")) == 0
    finally:
        event.remove(engine, "before_cursor_execute", watch)
    assert flips == []  # the reads ran on a pool of their own: no writer was flipped


def test_sqlite_readers_and_the_writer_do_not_wait_for_each_other(session_factory, backend):
    """A read-only transaction is a WAL snapshot (deferred BEGIN): the writer commits while it is open, and a
    reader started while the writer holds the write lock answers at once (from the last commit)."""
    if backend != "sqlite":
        pytest.skip("PostgreSQL readers never take locks")
    reads = read_only_sessions(session_factory)
    get_or_create_workload(MATMUL, session=(setup := session_factory()))
    setup.commit()
    setup.close()
    with reads() as reader:
        assert reader.scalar(select(func.count()).select_from(Workload)) == 1  # the snapshot is taken
        wrote = threading.Event()

        def write() -> None:
            with session_scope(session_factory) as s:
                get_or_create_workload(SOFTMAX, session=s)
            wrote.set()

        writer = threading.Thread(target=write)
        writer.start()
        finished = wrote.wait(5.0)  # with a write lock held by the reader this waits out the 30 s busy timeout
        assert reader.scalar(select(func.count()).select_from(Workload)) == 1  # still its snapshot
    writer.join()
    assert finished, "the writer waited for a read-only transaction"
    with session_factory() as writer_session, reads() as reader:
        get_or_create_workload("softmax(rows=8,cols=8,dtype=float32)", session=writer_session)
        writer_session.flush()  # BEGIN IMMEDIATE: this session holds the write lock, uncommitted
        started = time.monotonic()
        assert reader.scalar(select(func.count()).select_from(Workload)) == 2
        assert time.monotonic() - started < 5.0
        writer_session.rollback()


def test_sqlite_writers_of_one_process_queue_in_turn_and_a_failed_one_frees_the_queue(session_factory, backend):
    """Eight threads write at once: all commit (none waits out the busy timeout), and a transaction that fails or
    is abandoned mid-way does not keep the others out."""
    if backend != "sqlite":
        pytest.skip("SQLite's one writer")
    with pytest.raises(DBAPIError), session_scope(session_factory) as s:
        get_or_create_workload(MATMUL, session=s)
        s.flush()
        s.execute(text("SELECT * FROM no_such_table"))  # fails inside the write transaction: rolled back
    abandoned = session_factory()
    get_or_create_workload(SOFTMAX, session=abandoned)
    abandoned.flush()
    abandoned.close()  # closed without commit or rollback: the connection goes back mid-transaction
    keys = [f"softmax(rows={8 * (i + 1)},cols=8,dtype=float32)" for i in range(8)]

    def write(key: str) -> None:
        with session_scope(session_factory) as s:
            get_or_create_workload(key, session=s)

    threads = [threading.Thread(target=write, args=(key,)) for key in keys]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert time.monotonic() - started < 20 and not any(t.is_alive() for t in threads)
    with session_factory() as s:
        assert s.scalar(select(func.count()).select_from(Workload)) == 8


def test_postgres_wait_limits_hold_for_their_own_transactions_only(session_factory, backend):
    """bound_waits cuts a statement past its limit; transactions without one run under the database's own default,
    also on a connection a limited transaction used before (the timeout is kept per connection, so it must be put
    back), and after a limited transaction that failed (its rollback took the SET with it)."""
    if backend != "postgresql":
        pytest.skip("SQLite bounds the wait for its write lock (busy timeout), not statements")
    show = text("SHOW statement_timeout")
    for _ in range(3):  # the pool hands out its connections in turn: each sees every kind of transaction
        cut = session_factory()
        bound_waits(cut, 0.2)
        with pytest.raises(OperationalError, match="statement timeout"):
            cut.execute(text("SELECT pg_sleep(2)"))
        cut.close()
        for commit in (False, True):  # a rolled-back SET is not taken for one still in force
            limited = session_factory()
            bound_waits(limited, 1.55)
            assert limited.scalar(show) == "1600ms"  # rounded up to STATEMENT_TIMEOUT_STEP_MS
            if commit:
                limited.commit()
            limited.close()
        with session_scope(session_factory) as free:
            assert free.scalar(show) == "0"
            assert free.scalar(text("SELECT count(*) FROM pg_sleep(0.25)")) == 1
