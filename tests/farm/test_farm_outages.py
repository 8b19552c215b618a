"""Outages in a real farm (tuner and agents as processes on loopback, real PostgreSQL), and what they must not cost.

(a) PostgreSQL stopped for 10 s mid-job (`pg_ctl stop -m fast` on a cluster of the test's own, then started again)
    while a client polls GET /v1/jobs/{id} and GET /v1/jobs on ONE keep-alive connection: no 500 (503 with
    Retry-After and the documented body while it is down), the connection is never dropped, the tuner logs the
    outage in one line and the recovery in one (no traceback), the agents ride it out (same processes) and the job
    ends with exactly its budget: nothing lost, nothing twice.
(b) the tuner killed (-9) while the agents hold leases and restarted after the leases ran out: the agents measure on
    meanwhile; back, they take their leases back and their results count. Nothing is measured twice: every
    measurement an agent started became a done task (none rejected, cancelled or re-leased), on SQLite and
    PostgreSQL.
"""
from __future__ import annotations

import http.client
import json
import re
import threading
import time
from collections import Counter

import pytest
from sqlalchemy import select

from tests.db.pg_cluster import create_database, find_bin_dir, start_cluster
from tests.farm.farm_support import FAST_MEASURE, MATMUL, Farm, wait_until
from tests.farm.test_farm_faults import check_exact_budget
from tuner_server.db.models import Task

OUTAGE_S = 10.0
BUDGET = 16


class Poller(threading.Thread):
    """GET /v1/jobs/{id} and GET /v1/jobs in turn, continuously, on one keep-alive HTTP connection; counts the
    statuses, the answers that closed the connection, 503s without Retry-After or the documented body, and the
    times of the first and last 503."""

    def __init__(self, farm: Farm, job_id: str, gap_s: float = 0.02):
        super().__init__(name="poller", daemon=True)
        self.port, self.token, self.paths, self.gap_s = farm.rest_port, farm.admin_token, [f"/v1/jobs/{job_id}",
                                                                                            "/v1/jobs"], gap_s
        self.statuses: Counter[int] = Counter()
        self.closed = 0  # answers after which the server closed the connection
        self.broken: list[str] = []  # requests that got no HTTP answer at all
        self.bad_503: list[str] = []
        self.server_errors: list[str] = []
        self.first_503 = self.last_503 = None
        self.halt = threading.Event()

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Authorization": f"Bearer {self.token}"}
        n = 0
        while not self.halt.is_set():
            path = self.paths[n % 2]
            n += 1
            try:
                conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.broken.append(f"{path}: {exc!r}")
                conn.close()
                time.sleep(0.1)
                continue
            self.statuses[response.status] += 1
            if response.status == 503:
                self._check_503(response, body)
            elif response.status >= 500:
                self.server_errors.append(f"{path}: {response.status} {body[:300]!r}")
            if conn.sock is None:  # http.client closes its side when the answer says Connection: close
                self.closed += 1
            time.sleep(self.gap_s)
        conn.close()

    def _check_503(self, response, body: bytes) -> None:
        now = time.monotonic()
        self.first_503 = self.first_503 or now
        self.last_503 = now
        parsed = json.loads(body)
        if not (response.getheader("Retry-After", "").isdigit() and set(parsed) == {"error", "detail"}):
            self.bad_503.append(f"{dict(response.getheaders())} {parsed}")


@pytest.fixture
def own_pg_cluster():
    """A PostgreSQL cluster of this test's own: stopping it must not touch the session's shared one."""
    if find_bin_dir() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not installed")
    cluster = start_cluster()
    yield cluster
    cluster.stop()


def log_lines(text: str, pattern: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(pattern, line)]


@pytest.mark.postgres
def test_postgresql_stopped_mid_job_gives_503s_not_500s_and_the_job_completes(own_pg_cluster, farm):
    f = farm(agents=2, database_url=create_database(own_pg_cluster, "tf_outage"))
    agent_pids = [a.pid for a in f.agents]
    created = time.monotonic()
    with f.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", BUDGET, seed=11, measure=FAST_MEASURE)
    poller = Poller(f, job.id)
    poller.start()
    wait_until(lambda: len(f.trials(job.id)) >= 3, "a few trials before the outage", 90, 0.1,
               on_poll=f.tracker.snapshot, diagnostics=f.logs)
    before = {t.id for t in f.trials(job.id)}
    stopped = time.monotonic()
    own_pg_cluster.stop_server("fast")
    time.sleep(OUTAGE_S)
    own_pg_cluster.start_server()
    restarted = time.monotonic()
    try:
        trials = check_exact_budget(f, job.id, BUDGET)
        finished = time.monotonic()
        time.sleep(0.5)  # a few more polls of the finished job
    finally:
        poller.halt.set()
        poller.join(30)
    assert before <= {t.id for t in trials}, "a trial recorded before the outage was lost"
    assert not poller.server_errors and set(poller.statuses) <= {200, 503}, (poller.statuses, poller.server_errors)
    assert poller.statuses[503] > 0, "the outage never reached the REST API"
    assert stopped <= poller.first_503 and poller.last_503 <= restarted + 5.0, "503s outside the outage"
    assert not poller.bad_503, poller.bad_503[:3]
    assert (poller.closed, poller.broken) == (0, []), "the keep-alive connection was dropped"

    tuner_log = f.server.tail(10_000_000)
    assert len(log_lines(tuner_log, r"availability: database .* unavailable")) == 1, f.logs()
    assert len(log_lines(tuner_log, r"availability: database .* available again")) == 1, f.logs()
    assert "Traceback" not in tuner_log, f.logs(20_000)
    assert [a.pid for a in f.agents] == agent_pids and all(a.alive() for a in f.agents)
    assert any("UNAVAILABLE" in a.tail(10_000_000) for a in f.agents), "no agent call met the outage"
    print(f"\nPostgreSQL down {restarted - stopped:.1f} s: {poller.statuses[503]} x 503, "
          f"{poller.statuses[200]} x 200, 0 x 500; first 503 {poller.first_503 - stopped:.2f} s after the stop, "
          f"last {poller.last_503 - restarted:+.2f} s after the start; job of {BUDGET} trials done "
          f"{finished - created:.1f} s after it was created ({finished - restarted:.1f} s after the restart)")


RESTART_ENV = {"TUNEFARM_LEASE_SECONDS": "3", "TUNEFARM_HEARTBEAT_INTERVAL_S": "0.5",
               "TUNEFARM_AGENT_LOST_AFTER_S": "20"}
DOWN_S = 5.0  # longer than a lease: every lease held at the kill has expired when the tuner is back
# Each task measured for about 0.15 s or more: with FAST_MEASURE a 64^3 job of 16 trials is over in about 3 s on
# an idle host, and on a busy one the poll below could miss the moment both agents held leases.
RESTART_MEASURE = {**FAST_MEASURE, "min_time_s": 0.15, "max_time_s": 0.3, "max_repeats": 100_000}


def held_leases(farm: Farm, job_id: str) -> dict[str, tuple[str, int]]:
    with farm.db() as s:
        rows = s.execute(select(Task.id, Task.agent_id, Task.attempt).where(Task.job_id == job_id,
                                                                           Task.state == "leased")).all()
    return {task_id: (agent, attempt) for task_id, agent, attempt in rows}


def test_a_tuner_restart_wastes_no_measurement(farm, backend):
    f = farm(agents=2, backend=backend, env=RESTART_ENV)
    with f.client() as c:
        job = c.create_job("matmul", MATMUL, "cpu", BUDGET, seed=12, measure=RESTART_MEASURE)
    wait_until(lambda: len(f.trials(job.id)) >= 3 and len({a for a, _ in held_leases(f, job.id).values()}) == 2,
               "both agents to hold leases, a few trials in", 90, 0.02, on_poll=f.tracker.snapshot,
               diagnostics=f.logs)
    f.kill_server()
    held = held_leases(f, job.id)
    time.sleep(DOWN_S)
    restarted_at = time.time()
    f.start_server()
    trials = check_exact_budget(f, job.id, BUDGET)

    started = Counter(task_id for a in f.agents
                      for task_id in re.findall(r"measuring task (\S+):", a.tail(10_000_000)))
    with f.db() as s:
        done = set(s.scalars(select(Task.id).where(Task.job_id == job.id, Task.state == "done")).all())
    twice = {task_id: n for task_id, n in started.items() if n > 1}
    assert not twice, f"measured more than once: {twice}\n{f.logs()}"
    assert set(started) == done, f"measured but not counted: {set(started) - done}\n{f.logs()}"
    assert not log_lines(f.server.tail(10_000_000), "rejected a result"), f.logs()
    kept = [t for t in trials if t.task_id in held and (t.agent_id, t.attempt) == held[t.task_id]
            and t.created_at.timestamp() >= restarted_at]
    assert kept, f"no result measured across the restart was reported after it: {held}"
    print(f"\n{backend}: {len(held)} leases held at the kill, {len(kept)} results measured across the restart "
          f"accepted, {sum(started.values())} measurements started for {len(done)} done tasks, 0 re-measured")

