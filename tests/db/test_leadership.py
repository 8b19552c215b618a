"""Leader election among tuner replicas (tuner_server/leadership.py, db/leader_lock.py) on a real PostgreSQL.

The elections are real (threads with their own connections, advisory locks, LISTEN/NOTIFY); only the duties they
start are a recording stand-in for the job driver and keeper. A leader's session is ended with
pg_terminate_backend, as PostgreSQL ends it when the process is killed. Checked: one leader at a time; a follower
takes over within a few check intervals of the leader's session ending, and at once after a graceful stop (whose
duties stop before the successor's start); a deposed term's open transaction holds the successor at the fence and
its later transactions fail; a follower's wake() reaches the leader's driver; SQLite has its sole leader; replicas
starting together migrate an empty database once and create one admin token.
"""
from __future__ import annotations

import threading
import time

import psycopg
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, func, select, text

from tests.db.pg_cluster import create_database
from tests.farm.farm_support import wait_until
from tuner_server.db import ApiToken, current_revision, make_engine, make_session_factory, session_scope
from tuner_server.db.leader_lock import LeadershipLost
from tuner_server.db.migrate import alembic_config, upgrade_to_head
from tuner_server.leadership import MAX_CHECK_S, Election, SoleLeader, check_interval, elect
from tuner_server.main import ensure_tokens
from tuner_server.settings import Settings

CHECK_S = 0.2
_counter = iter(range(1_000_000))


class RecordingDuties:
    """Stands in for a term's job driver and keeper: records start/stop in a shared log, counts wake-ups."""

    def __init__(self, name: str, sessions, events: list):
        self.name, self.sessions, self.events = name, sessions, events
        self.wakes = 0

    def start(self) -> None:
        self.events.append((self.name, "start"))

    def stop(self) -> None:
        self.events.append((self.name, "stop"))

    def wake(self) -> None:
        self.wakes += 1


@pytest.fixture
def pg_url(pg_cluster) -> str:
    return create_database(pg_cluster, f"tf_lead_{next(_counter)}")


@pytest.fixture
def replicas(pg_url):
    """`make(name)` -> a started Election over pg_url whose duties are RecordingDuties; all stopped at the end."""
    engine = make_engine(pg_url)
    events: list = []
    made: list[Election] = []
    duties: dict[str, list[RecordingDuties]] = {}

    def make(name: str) -> Election:
        def new_duties(sessions):
            duties.setdefault(name, []).append(RecordingDuties(name, sessions, events))
            return duties[name][-1]
        election = Election(pg_url, engine, new_duties, check_s=CHECK_S, replica=name)
        election.start()
        made.append(election)
        return election

    make.events, make.duties = events, duties
    yield make
    for election in made:
        election.stop()
    engine.dispose()


def terminate(pg_url: str, pid: int) -> None:
    """End a backend as PostgreSQL does when its client process dies."""
    with psycopg.connect(pg_url.replace("+psycopg", ""), autocommit=True) as conn:
        assert conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]


def leader(*elections: Election) -> Election | None:
    leaders = [e for e in elections if e.role == "leader"]
    assert len(leaders) <= 1, [e.replica for e in leaders]
    return leaders[0] if leaders else None


@pytest.mark.postgres
def test_one_leader_and_a_follower_takes_over_when_its_session_dies(replicas, pg_url):
    a = replicas("a")
    wait_until(lambda: a.role == "leader", "the first replica to lead", 10, 0.02)
    b = replicas("b")
    for _ in range(int(6 * CHECK_S / 0.02)):  # b keeps trying and never leads while a's session lives
        assert leader(a, b) is a
        time.sleep(0.02)
    assert replicas.events == [("a", "start")]

    lost_at = time.monotonic()
    terminate(pg_url, a.backend_pid)
    wait_until(lambda: b.role == "leader", "the follower to take over", 10, 0.01)
    assert time.monotonic() - lost_at < 5 * CHECK_S + 1.0
    wait_until(lambda: ("a", "stop") in replicas.events, "the old leader to step down", 10, 0.02)
    assert replicas.events.count(("b", "start")) == 1 and replicas.events.count(("a", "start")) == 1
    for _ in range(int(4 * CHECK_S / 0.02)):  # a is back on the database as a follower
        assert leader(a, b) is b
        time.sleep(0.02)


@pytest.mark.postgres
def test_a_graceful_stop_hands_over_after_its_duties_stopped(replicas):
    a = replicas("a")
    wait_until(lambda: a.role == "leader", "a to lead", 10, 0.02)
    b = replicas("b")
    a.stop()
    assert a.role == "follower"
    wait_until(lambda: b.role == "leader", "b to take over", 10, 0.01)
    assert replicas.events == [("a", "start"), ("a", "stop"), ("b", "start")]


@pytest.mark.postgres
def test_a_deposed_terms_transaction_holds_the_successor_and_then_fails(replicas, pg_url):
    a = replicas("a")
    wait_until(lambda: a.role == "leader", "a to lead", 10, 0.02)
    old_sessions = replicas.duties["a"][0].sessions
    with session_scope(old_sessions) as s:  # the fence lets the term's transactions through
        assert s.execute(text("SELECT 1")).scalar() == 1
    in_flight = old_sessions()
    in_flight.execute(text("SELECT 1"))  # a transaction of a's term, open (as a driver pass mid-way)
    b = replicas("b")
    terminate(pg_url, a.backend_pid)
    wait_until(lambda: ("a", "stop") in replicas.events, "a to step down", 10, 0.02)
    for _ in range(int(5 * CHECK_S / 0.02)):  # a is back as a follower by now: neither may start a new term
        assert leader(a, b) is None, "a new term began while a transaction of the old term was still open"
        time.sleep(0.02)
    in_flight.commit()
    in_flight.close()
    # whichever replica wins the lock next leads the new term (a, reconnected, competes with b)
    successor = wait_until(lambda: leader(a, b), "a new term to begin once the old transaction ended", 10, 0.01)
    assert replicas.events.count(("a", "start")) + replicas.events.count(("b", "start")) == 2
    with pytest.raises(LeadershipLost, match="has ended"), session_scope(old_sessions) as s:
        s.execute(text("SELECT 1"))
    with session_scope(replicas.duties[successor.replica][-1].sessions) as s:
        assert s.execute(text("SELECT 1")).scalar() == 1


@pytest.mark.postgres
def test_a_followers_wake_reaches_the_leaders_driver(replicas):
    a = replicas("a")
    wait_until(lambda: a.role == "leader", "a to lead", 10, 0.02)
    b = replicas("b")
    time.sleep(2 * CHECK_S)  # b has its connection
    duties = replicas.duties["a"][0]
    before = duties.wakes
    b.wake()
    wait_until(lambda: duties.wakes > before, "a NOTIFY from the follower to wake the leader's driver", 5, 0.01)
    for _ in range(50):  # a burst of wake-ups is coalesced, and none is lost
        b.wake()
    settled = duties.wakes
    wait_until(lambda: duties.wakes > settled, "the burst to arrive", 5, 0.01)
    assert duties.wakes - settled <= 50
    a.wake()
    assert duties.wakes >= settled + 2


def test_sqlite_has_its_sole_leader(tmp_path):
    url = f"sqlite:///{tmp_path / 'tunefarm.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    events: list = []
    made: list[RecordingDuties] = []

    def new_duties(s):
        made.append(RecordingDuties("only", s, events))
        return made[-1]

    leadership = elect(Settings(database_url=url), engine, sessions, new_duties)
    assert isinstance(leadership, SoleLeader)
    leadership.start()
    assert leadership.role == "leader" and made[0].sessions is sessions and events == [("only", "start")]
    leadership.wake()
    assert made[0].wakes == 1
    leadership.stop()
    assert events == [("only", "start"), ("only", "stop")]
    engine.dispose()


def test_the_check_interval_keeps_failover_inside_a_lease():
    assert check_interval(Settings()) == MAX_CHECK_S  # 60 s leases: every 2 s
    assert check_interval(Settings(lease_seconds=4)) == 0.5
    assert check_interval(Settings(lease_seconds=4, leader_check_s=0.1)) == 0.1


@pytest.mark.postgres
def test_replicas_starting_together_migrate_once_and_make_one_admin_token(pg_url, tmp_path):
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def start_replica() -> None:
        try:
            barrier.wait()
            upgrade_to_head(pg_url)
            engine = make_engine(pg_url)
            try:
                ensure_tokens(Settings(database_url=pg_url, data_dir=tmp_path), make_session_factory(engine))
            finally:
                engine.dispose()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start_replica, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "replicas starting together blocked each other"
    assert not errors, errors
    engine = create_engine(pg_url)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(ApiToken).where(ApiToken.scope == "admin")).scalar() == 1
    engine.dispose()
    assert current_revision(pg_url) == ScriptDirectory.from_config(alembic_config(pg_url)).get_current_head()
