"""Database outages told apart from bugs: which driver errors mean "retry later", and one log line per outage.

`unavailable(exc)` says whether a failure is the database's state rather than the request's or the code's:

- OUTAGE: the database cannot be reached or used at all: no connection to be had (refused, timed out, or refused
  by the server for whatever reason: the one log line says which), a connection lost or invalidated, the server
  shutting down or starting up, a SQLite file that cannot be opened, an I/O error, a full disk;
- BUSY: it is there but could not serve this in time: a SQLite lock held past the busy timeout, a PostgreSQL lock,
  deadlock or serialization conflict, too many connections, a cancelled statement, the pool exhausted;
- None: anything else (a constraint, a missing table, a bug), which stays the caller's to report.

REST answers both with 503 and Retry-After, gRPC with UNAVAILABLE, and the background loops back off; none of
them logs a traceback for it. `watch_outages(engine)` logs one line when an outage starts and one when the
database answers again, whoever noticed it (a request, an agent's call, the job driver).
"""
from __future__ import annotations

import logging
import sqlite3
import threading
import time

from sqlalchemy import Engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

log = logging.getLogger(__name__)

OUTAGE, BUSY = "outage", "busy"
RETRY_AFTER_S = {OUTAGE: 2, BUSY: 1}  # what clients are told to wait (REST Retry-After)

# PostgreSQL SQLSTATEs (https://www.postgresql.org/docs/current/errcodes-appendix.html), by class or exact code.
_PG_OUTAGE = ("08", "57P01", "57P02", "57P03", "53100", "53200", "58")
_PG_BUSY = ("40", "53300", "55P03", "57014")
# SQLite primary result codes: BUSY 5, LOCKED 6, IOERR 10, FULL 13, CANTOPEN 14.
_SQLITE_OUTAGE, _SQLITE_BUSY = {10, 13, 14}, {5, 6}
_SQLITE_MESSAGES = {"unable to open database file": OUTAGE, "disk i/o error": OUTAGE,
                    "database or disk is full": OUTAGE, "database is locked": BUSY, "database table is locked": BUSY}


def _is_driver_error(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.Error) or type(exc).__module__.split(".")[0] == "psycopg"


def _driver_kind(orig: BaseException | None) -> str | None:
    """OUTAGE/BUSY/None for a DBAPI (driver) exception."""
    if orig is None:
        return None
    if isinstance(orig, sqlite3.Error) and getattr(orig, "sqlite_errorcode", None) is not None:
        code = orig.sqlite_errorcode & 0xFF  # the primary code of an extended one (SQLITE_IOERR_READ: IOERR)
        return OUTAGE if code in _SQLITE_OUTAGE else BUSY if code in _SQLITE_BUSY else None
    if type(orig).__module__.split(".")[0] == "psycopg":
        import psycopg  # only PostgreSQL deployments have it; an exception of its own means it is there

        sqlstate = getattr(orig, "sqlstate", None)
        if sqlstate is None:  # raised by the client: cannot connect, or the connection broke
            return OUTAGE if isinstance(orig, psycopg.OperationalError) else None
        return OUTAGE if sqlstate.startswith(_PG_OUTAGE) else BUSY if sqlstate.startswith(_PG_BUSY) else None
    return _SQLITE_MESSAGES.get(str(orig).strip().lower())  # no code to read: only SQLite's plain messages


def unavailable(exc: BaseException) -> str | None:
    """OUTAGE, BUSY or None (see the module docstring); looks through the exception's causes and contexts (a
    rollback that failed after the first error, a wrapper)."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, PoolTimeout):
            return BUSY
        if isinstance(exc, DBAPIError):
            if exc.connection_invalidated:
                return OUTAGE
            kind = _driver_kind(exc.orig)
            if kind is not None:
                return kind
        elif _is_driver_error(exc) and (kind := _driver_kind(exc)) is not None:
            return kind
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def reason(exc: BaseException) -> str:
    """A short, credential-free account of a driver error for a log line (its first line, the class name)."""
    orig = getattr(exc, "orig", None) or exc
    first = str(orig).strip().splitlines()[0] if str(orig).strip() else ""
    return f"{type(orig).__name__}: {first[:200]}" if first else type(orig).__name__


class OutageLog:
    """The state of one engine's database as its users last saw it: logs a line when an outage starts and one when
    a statement succeeds again, never one per failed call."""

    def __init__(self, name: str):
        self.name = name
        self.down_since: float | None = None
        self.failures = 0
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> None:
        """A call met an outage (the caller decided it is one)."""
        with self._lock:
            self.failures += 1
            if self.down_since is not None:
                return
            self.down_since = time.monotonic()
        log.error("database %s unavailable (%s): requests get 503 and agents UNAVAILABLE, background work backs "
                  "off, until it answers again", self.name, reason(exc))

    def answered(self) -> None:
        if self.down_since is None:  # the common case: one attribute read per statement
            return
        with self._lock:
            if self.down_since is None:
                return
            down_s, failures = time.monotonic() - self.down_since, self.failures
            self.down_since, self.failures = None, 0
        log.warning("database %s available again after %.1f s (%d failed attempts meanwhile)", self.name, down_s,
                    failures)


def watch_outages(engine: Engine, outages: OutageLog | None = None) -> OutageLog:
    """Attach an OutageLog to `engine` (`outages`: one already watching another engine on the same database, which
    then logs each outage once for both); returns it.

    An outage invalidates the pool (as a lost connection does), and only a statement on a connection opened after
    the outage began ends it: at the edges of an outage, connections that opened before it may still answer for a
    moment (a server shutting down ends its sessions one by one), which is not the database being back."""
    outages = outages or OutageLog(engine.url.render_as_string(hide_password=True))

    @event.listens_for(engine, "connect")
    def _on_connect(_dbapi_conn, record) -> None:
        record.info["opened_at"] = time.monotonic()

    @event.listens_for(engine, "handle_error")
    def _on_error(context) -> None:
        if context.is_pre_ping:  # a stale pooled connection: the pool reconnects, nothing is down yet
            return
        error = context.sqlalchemy_exception or context.original_exception
        if context.is_disconnect or unavailable(error) == OUTAGE:
            context.is_disconnect = True  # every connection of the pool is replaced before it is used again
            outages.failed(error)

    @event.listens_for(engine, "after_cursor_execute")
    def _on_statement(conn, *_args) -> None:
        down_since = outages.down_since
        if down_since is not None and conn.info.get("opened_at", down_since) > down_since:
            outages.answered()

    return outages
