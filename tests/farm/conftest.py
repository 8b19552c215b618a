"""The farm tests' fixtures: REAL processes on loopback.

`farm(...)` (a fixture factory) starts a `python -m tuner_server` process over a fresh database (a temp SQLite file,
or a new database on a throwaway PostgreSQL cluster), on free ports, with generated admin and enrolment tokens, and
N `python -m device_agent.main` processes enrolled with a token file. It returns a `Farm` (farm_support.py) that
can kill -9 and restart its processes, gives an HTTP client and read-only database access. At teardown every process
gets SIGTERM (SIGKILL after a grace period) and is reaped, and psutil checks that none of them, nor any process
they started (sandbox workers, build pools), is left.

Backends: a test takes `backend` (parametrized sqlite / postgres) and passes it to `farm(backend=...)`; postgres
runs are marked `postgres` and skip cleanly without the PostgreSQL binaries.
"""
from __future__ import annotations

import itertools

import pytest

from tests.db.pg_cluster import create_database
from tests.farm.farm_support import Farm, ProcessTracker

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
_db_counter = itertools.count()


def create_pg_database(cluster, prefix: str = "tf_farm") -> str:
    """A new, empty database on `cluster`; returns its SQLAlchemy URL."""
    return create_database(cluster, f"{prefix}_{next(_db_counter)}")


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def process_tracker():
    tracker = ProcessTracker()
    yield tracker
    tracker.terminate_all()
    tracker.assert_none_left()


@pytest.fixture
def farm(request, tmp_path_factory, process_tracker):
    """`farm(agents=2, backend="sqlite", env=None, server_plugins=(), agent_plugins=(), database_url=None)`."""
    farms: list[Farm] = []

    def make(agents: int = 2, backend: str = "sqlite", env: dict | None = None, server_plugins=(),
             agent_plugins=(), database_url: str | None = None) -> Farm:
        root = tmp_path_factory.mktemp("farm")
        if database_url is None:
            if backend == "postgres":
                database_url = create_pg_database(request.getfixturevalue("pg_cluster"))
            else:
                database_url = f"sqlite:///{root / 'tunefarm.db'}"
        f = Farm(root, database_url, process_tracker, env=env or {}, server_plugins=tuple(server_plugins),
                 agent_plugins=tuple(agent_plugins))
        farms.append(f)
        f.start_server(wait=False)
        for _ in range(agents):  # started at once: they retry Register (with backoff) until the tuner is up
            f.add_agent()
        f.wait_healthy()
        if agents:
            f.wait_for_agents()
        return f

    yield make
    for f in reversed(farms):
        f.stop()
