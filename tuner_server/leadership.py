"""Which tuner process runs the farm's singleton work (the job driver and the class-model keeper): exactly one.

Every replica serves REST and gRPC; all their state is in the database. The singleton work of a *term* is a
`LeaderDuties` (a fresh driver and keeper, whose in-memory caches are rebuilt from the database, over sessions
fenced to the term), started when this process is elected and stopped when it steps down.

- SQLite (embedded, one process): `SoleLeader`, the leader from start to stop.
- PostgreSQL: `Election`, a thread on a dedicated connection. A follower tries `pg_try_advisory_lock` every
  `check_s`; the one that gets it waits at the fence barrier (db/leader_lock.py), then starts its duties. The leader
  listens for wake-ups there (followers NOTIFY when a job was created or tasks were leased or reported, so the
  driver reacts at once wherever the request landed) and checks every `check_s` that its session still holds the
  lock. A leader that loses its connection stops its duties before anything else; its session's lock is freed by
  PostgreSQL at once when the process dies, or after the server's keepalives give up (>= 5 check intervals) when
  the host or network does, so a follower takes over within about one check interval of a crash. Fencing makes it
  safe even if a deposed leader's thread lags: its transactions fail once another term has begun.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker

from tuner_server import metrics
from tuner_server.class_models import ClassModels
from tuner_server.db import leader_lock, make_session_factory
from tuner_server.driver import JobDriver

if TYPE_CHECKING:  # PostgreSQL deployments only: an embedded SQLite farm runs without the driver
    import psycopg

log = logging.getLogger(__name__)

MAX_CHECK_S = 2.0  # the default check interval: lease_seconds / 8, at most this
NOTIFY_GAP_S = 0.05  # a burst of wake-ups on a follower becomes one NOTIFY per this


class Duties(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def wake(self) -> None: ...


class LeaderDuties:
    """One term's singleton work: the class-model keeper and the job driver, over the term's sessions."""

    def __init__(self, settings, sessions: sessionmaker[Session], feature_pool=None):
        self.class_models = ClassModels(sessions, pool=feature_pool, interval_s=settings.class_model_interval_s)
        self.driver = JobDriver(sessions, settings, class_models=self.class_models, feature_pool=feature_pool)

    def start(self) -> None:
        self.class_models.start()
        self.driver.start()

    def stop(self) -> None:
        self.driver.stop()
        self.class_models.stop()

    def wake(self) -> None:
        self.driver.wake()


def check_interval(settings) -> float:
    """How often followers try to take the lead and the leader checks its hold: TUNEFARM_LEADER_CHECK_S, else
    lease_seconds / 8 capped at MAX_CHECK_S (failover well inside one lease period)."""
    configured = getattr(settings, "leader_check_s", None)
    return configured if configured else min(MAX_CHECK_S, settings.lease_seconds / 8)


def replica_name() -> str:
    return f"{socket.gethostname()}/{os.getpid()}"


def _set_role(role: str, replica: str, why: str, level: int = logging.INFO) -> None:
    metrics.LEADER.set(1 if role == "leader" else 0)
    metrics.LEADER_TRANSITIONS.labels(role=role).inc()
    if role == "follower":
        metrics.JOBS.clear()  # the jobs gauge is the leader's; a follower shows none rather than a stale one
    log.log(level, "replica %s is now the %s (%s)", replica, role, why)


def _one_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:240]


class SoleLeader:
    """The only tuner on an embedded (SQLite) database: the leader from start to stop."""

    role = "leader"

    def __init__(self, sessions: sessionmaker[Session], make_duties: Callable[[sessionmaker[Session]], Duties]):
        self.replica = replica_name()
        self._sessions, self._make_duties = sessions, make_duties
        self._duties: Duties | None = None

    def start(self) -> None:
        self._duties = self._make_duties(self._sessions)
        self._duties.start()
        _set_role("leader", self.replica, "the only tuner of an embedded database")

    def stop(self) -> None:
        if self._duties is not None:
            self._duties.stop()
            self._duties = None
        metrics.LEADER.set(0)

    def wake(self) -> None:
        if self._duties is not None:
            self._duties.wake()


def fenced_sessions(engine: Engine, leader_pid: int) -> sessionmaker[Session]:
    """Sessions whose every transaction first passes the term's fence (db/leader_lock.check_fence)."""
    factory = make_session_factory(engine)

    @event.listens_for(factory, "after_begin")
    def _fence(_session, _transaction, connection) -> None:
        leader_lock.check_fence(connection, leader_pid)

    return factory


class Election:
    """Leader election among replicas over PostgreSQL (see the module docstring); `role` is 'leader' or
    'follower'. All transitions happen in the election thread."""

    def __init__(self, database_url: str, engine: Engine, make_duties: Callable[[sessionmaker[Session]], Duties], *,
                 check_s: float, replica: str | None = None):
        self.replica = replica or replica_name()
        self.role = "follower"
        self.check_s = check_s
        self.backend_pid: int | None = None  # of the election session while leading
        self._url, self._engine, self._make_duties = database_url, engine, make_duties
        self._duties: Duties | None = None
        self._conn: psycopg.Connection | None = None
        self._stop, self._wake_wanted = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None
        self._unreachable = False

    # ---- what the process uses ------------------------------------------------------------------------------
    def start(self) -> None:
        metrics.LEADER.set(0)
        self._thread = threading.Thread(target=self._run, name="tunefarm-election", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Step down (duties stopped, then the lock released: a follower takes over at once) and end the thread."""
        self._stop.set()
        self._wake_wanted.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def wake(self) -> None:
        """Something changed that the driver should see soon: wake ours, or NOTIFY the leader's."""
        duties = self._duties
        if duties is not None:
            duties.wake()
        else:
            self._wake_wanted.set()

    # ---- the election thread --------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                import psycopg  # here only: PostgreSQL deployments have the driver, an embedded SQLite farm need not

                try:
                    if self._conn is None:
                        self._conn = leader_lock.connect(self._url, self.check_s, f"tunefarm {self.replica}")
                        if self._unreachable:
                            log.info("leader election: the database answers again")
                        self._unreachable = False
                    self._lead() if self.role == "leader" else self._follow()
                except (psycopg.Error, OSError, leader_lock.LeadershipLost) as exc:
                    self._disconnected(exc)
                except Exception as exc:  # noqa: BLE001 - e.g. duties that failed to start: never end the thread
                    log.exception("leader election: unexpected failure")
                    self._disconnected(exc)
        finally:
            self._step_down("stopping")
            self._close()

    def _follow(self) -> None:
        if leader_lock.try_lead(self._conn):
            pid = leader_lock.backend_pid(self._conn)
            if not leader_lock.barrier(self._conn, timeout_s=self.check_s):
                leader_lock.release_lead(self._conn)  # a deposed term's transaction is still open: next time
                return
            leader_lock.listen(self._conn)
            self._duties = self._make_duties(fenced_sessions(self._engine, pid))
            self.role, self.backend_pid = "leader", pid  # set first: a failed start steps down (stops what started)
            self._duties.start()
            _set_role("leader", self.replica, f"holds the advisory lock, election backend {pid}")
            return
        deadline = time.monotonic() + self.check_s
        while not self._stop.is_set() and (left := deadline - time.monotonic()) > 0:
            if self._wake_wanted.wait(left) and not self._stop.is_set():
                self._wake_wanted.clear()
                leader_lock.notify(self._conn)
                self._stop.wait(NOTIFY_GAP_S)

    def _lead(self) -> None:
        for _ in self._conn.notifies(timeout=self.check_s):
            self._duties.wake()
            if self._stop.is_set():
                return
        if not leader_lock.holds_lead(self._conn):
            raise leader_lock.LeadershipLost("the election session no longer holds the leader lock")

    def _disconnected(self, exc: Exception) -> None:
        """The election connection failed: step down first (a leader), then retry after a check interval. One log
        line per outage."""
        self._step_down(f"lost its election session: {_one_line(exc)}", logging.WARNING)
        self._close()
        if not self._unreachable:
            log.warning("leader election: cannot use the database (%s); retrying every %.2f s", _one_line(exc),
                        self.check_s)
            self._unreachable = True
        self._stop.wait(self.check_s)

    def _step_down(self, why: str, level: int = logging.INFO) -> None:
        if self.role != "leader":
            return
        duties, self._duties = self._duties, None
        if duties is not None:
            duties.stop()  # before the lock can be released by us
        self.role, self.backend_pid = "follower", None
        _set_role("follower", self.replica, why, level)

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is gone either way
                pass


def elect(settings, engine: Engine, sessions: sessionmaker[Session],
          make_duties: Callable[[sessionmaker[Session]], Duties]) -> SoleLeader | Election:
    """The leadership of this process: an Election over PostgreSQL, the SoleLeader on SQLite."""
    if engine.dialect.name != "postgresql":
        return SoleLeader(sessions, make_duties)
    return Election(settings.database_url, engine, make_duties, check_s=check_interval(settings))
