"""PostgreSQL advisory locks that let several tuner processes share one database: the leader lock, its fence, and
the locks that serialise start-up work (migrations, tokens). Every key lives here, in one namespace.

- LEADER: held, session-level, by the elected replica's election connection (`try_lead`); while that session lives,
  nobody else can take it. PostgreSQL releases it the moment the session ends (process killed: at once; host or
  network lost: when the server's TCP keepalives give up, see `connect`).
- FENCE: every transaction of a leader's term takes it *shared* (`check_fence`) and then checks that LEADER is still
  held by that term's backend, else raises `LeadershipLost`. A newly elected leader takes it *exclusive* once
  (`barrier`) before it starts its work: so it waits for every transaction a deposed leader may still have in
  flight, and any later transaction of the deposed term fails its check. Two terms' transactions never interleave,
  whatever the clocks and timeouts do.
- SCHEMA, TOKENS: transaction-level locks around migrations and the start-up token registration, so replicas
  started at the same time on an empty database do not race (`xact_lock`; nothing on SQLite).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

if TYPE_CHECKING:  # PostgreSQL deployments only: an embedded SQLite farm runs without the driver
    import psycopg

from tuner_server.db.engine import normalize_url

NAMESPACE = 0x7466  # 'tf': the first key of every (int, int) advisory lock of tunefarm
LEADER, FENCE, SCHEMA, TOKENS = 1, 2, 3, 4
WAKE_CHANNEL = "tunefarm_wake"  # followers NOTIFY it; the leader LISTENs and wakes its job driver

# Whether backend `pid` holds LEADER ((int, int) keys show as classid, objid with objsubid 2 in pg_locks).
_HOLDS_LEADER = text("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = :ns "
                     "AND objid = :key AND objsubid = 2 AND granted AND pid = :pid)")


class LeadershipLost(Exception):
    """A transaction of a leader's term ran after the term ended (another replica leads, or is about to)."""


def is_postgres(bind: Connection | Session) -> bool:
    connectable = bind.get_bind() if isinstance(bind, Session) else bind
    return connectable.dialect.name == "postgresql"


def xact_lock(bind: Connection | Session, key: int) -> None:
    """Hold advisory lock `key` until the current transaction ends (waits for another holder); no-op on SQLite."""
    if is_postgres(bind):
        bind.execute(text("SELECT pg_advisory_xact_lock(:ns, :key)"), {"ns": NAMESPACE, "key": key})


def check_fence(connection: Connection, leader_pid: int) -> None:
    """The first statements of every transaction of a leader's term (see the module docstring): two statements, so
    the check surely runs after the shared lock is granted."""
    connection.execute(text("SELECT pg_advisory_xact_lock_shared(:ns, :key)"), {"ns": NAMESPACE, "key": FENCE})
    held = connection.execute(_HOLDS_LEADER, {"ns": NAMESPACE, "key": LEADER, "pid": leader_pid}).scalar()
    if not held:
        raise LeadershipLost(f"this replica's leader term (election backend {leader_pid}) has ended")


def election_timeouts(check_s: float) -> dict[str, int]:
    """Server-side TCP settings of an election session, in PostgreSQL's units (s, ms). The server drops a silent
    session after idle + count x interval (>= 5 check intervals, rounded up); its holder notices a dead connection
    within a check interval plus the client's tcp_user_timeout (2 intervals): it always steps down first."""
    return {"tcp_keepalives_idle": math.ceil(4 * check_s), "tcp_keepalives_interval": math.ceil(check_s),
            "tcp_keepalives_count": 2, "tcp_user_timeout": math.ceil(5000 * check_s)}


def connect(database_url: str, check_s: float, application_name: str) -> psycopg.Connection:
    """A dedicated autocommit connection for the election, with client and server keepalives tuned to `check_s`."""
    import psycopg  # PostgreSQL deployments only (see above)

    engine = create_engine(normalize_url(database_url), poolclass=NullPool)
    try:
        cargs, cparams = engine.dialect.create_connect_args(engine.url)
    finally:
        engine.dispose()
    timeout = max(1, math.ceil(2 * check_s))
    conn = psycopg.connect(*cargs, **cparams, autocommit=True, connect_timeout=timeout,
                           application_name=application_name[:63], keepalives=1,
                           keepalives_idle=max(1, math.ceil(check_s)), keepalives_interval=max(1, math.ceil(check_s)),
                           keepalives_count=2, tcp_user_timeout=int(2000 * check_s))
    try:
        for name, value in election_timeouts(check_s).items():
            conn.execute("SELECT set_config(%s, %s, false)", (name, str(value)))
    except BaseException:
        conn.close()
        raise
    return conn


def try_lead(conn: psycopg.Connection) -> bool:
    """Take LEADER for this session if nobody holds it (never waits)."""
    return bool(conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (NAMESPACE, LEADER)).fetchone()[0])


def holds_lead(conn: psycopg.Connection) -> bool:
    """Whether this session still holds LEADER (also proves the connection is alive)."""
    query = ("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND objid = %s "
             "AND objsubid = 2 AND granted AND pid = pg_backend_pid())")
    return bool(conn.execute(query, (NAMESPACE, LEADER)).fetchone()[0])


def backend_pid(conn: psycopg.Connection) -> int:
    return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])


def barrier(conn: psycopg.Connection, timeout_s: float) -> bool:
    """Wait (up to `timeout_s`) until no transaction of an earlier term holds FENCE; False on timeout."""
    import psycopg

    conn.execute("SELECT set_config('lock_timeout', %s, false)", (str(max(1, int(timeout_s * 1000))),))
    try:
        conn.execute("SELECT pg_advisory_lock(%s, %s)", (NAMESPACE, FENCE))
    except psycopg.errors.LockNotAvailable:
        return False
    finally:
        conn.execute("SELECT set_config('lock_timeout', '0', false)")
    conn.execute("SELECT pg_advisory_unlock(%s, %s)", (NAMESPACE, FENCE))
    return True


def release_lead(conn: psycopg.Connection) -> None:
    conn.execute("SELECT pg_advisory_unlock(%s, %s)", (NAMESPACE, LEADER))


def listen(conn: psycopg.Connection) -> None:
    conn.execute(f"LISTEN {WAKE_CHANNEL}")


def notify(conn: psycopg.Connection) -> None:
    conn.execute(f"NOTIFY {WAKE_CHANNEL}")
