"""Two tuner replicas over one PostgreSQL, with agents on both: kill -9 of the leader mid-job.

Replica A starts first and leads (its /health says leader); replica B, started on the same database with the same
tokens, follows: it serves REST and gRPC, but its job driver never runs (its driver-pass count stays 0 on its
/metrics). Two agents register through A (their gRPC target lists A first, then B, as a client-side fallback) and
two through B only. The job is created through B, the follower, and A's driver queues it (woken through
PostgreSQL NOTIFY). Mid-job, with trials recorded and leases held by A's agents, A is killed with SIGKILL:
- B takes the lead within one lease period (the election's check interval is lease / 8);
- A's agents carry on through B with the sessions they had (no re-registration), their leases intact;
- the job ends with EXACTLY its budget of trials, all verified, one per task, no (task, attempt) or config twice,
  nothing recorded before the kill lost; the head moved only through head-to-head wins;
- A, restarted, comes back as a follower.
"""
from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.farm.farm_support import FAST_MEASURE, MATMUL, Farm, wait_until
from tests.farm.schedule_checks import check_head_moved_only_head_to_head, key_state
from tests.farm.test_farm_faults import agent_id, check_exact_budget, leased_to, reconnected

LEASE_S = 4
REPLICA_ENV = {"TUNEFARM_LEASE_SECONDS": str(LEASE_S), "TUNEFARM_AGENT_LOST_AFTER_S": str(LEASE_S),
               "TUNEFARM_HEARTBEAT_INTERVAL_S": "0.5"}
BUDGET = 48  # enough that a poll slowed by a loaded host still sees the job mid-way


def second_replica(first: Farm) -> Farm:
    """Another tuner process on `first`'s database, with its tokens, on ports and a directory of its own."""
    other = Farm(first.root / "replica-b", first.database_url, first.tracker, env=first.env)
    other.admin_token, other.admin_token_file = first.admin_token, first.admin_token_file
    other.enrolment_token, other.enrolment_token_file = first.enrolment_token, first.enrolment_token_file
    other.agent_plugins = first.agent_plugins
    return other


def health(farm: Farm) -> dict:
    return httpx.get(farm.url + "/health", timeout=5).json()


def metric(farm: Farm, name: str) -> float:
    text = httpx.get(farm.url + "/metrics", headers={"Authorization": f"Bearer {farm.admin_token}"}, timeout=5).text
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert found, f"{name} not in /metrics"
    return float(found.group(1))


@pytest.mark.postgres
def test_leader_killed_mid_job_the_follower_takes_over(farm):
    a = farm(agents=0, backend="postgres", env=REPLICA_ENV)
    wait_until(lambda: health(a)["role"] == "leader", "replica A to lead", 30, 0.1)
    b = second_replica(a)
    b.start_server()
    assert health(b)["role"] == "follower" and health(b)["replica"] != health(a)["replica"]

    via_a = a.add_agent("agent-a0", ("--server", f"ipv4:127.0.0.1:{a.grpc_port},127.0.0.1:{b.grpc_port}"))
    a.add_agent("agent-a1", ("--server", f"ipv4:127.0.0.1:{a.grpc_port},127.0.0.1:{b.grpc_port}"))
    b.add_agent("agent-b0")
    b.add_agent("agent-b1")
    a.wait_for_agents({"agent-a0", "agent-a1", "agent-b0", "agent-b1"})
    for name in ("agent-a0", "agent-a1"):
        assert f"agent {name} (" in a.server.tail(1_000_000), f"{name} did not register through A"
    for name in ("agent-b0", "agent-b1"):
        assert f"agent {name} (" in b.server.tail(1_000_000), f"{name} did not register through B"
    a_agents = [agent_id(a, "agent-a0"), agent_id(a, "agent-a1")]

    with b.client() as c:  # through the follower
        job = c.create_job("matmul", MATMUL, "cpu", BUDGET, seed=11, measure=FAST_MEASURE)
    wait_until(lambda: len(a.trials(job.id)) >= 4 and any(leased_to(a, job.id, x) for x in a_agents),
               "trials recorded and leases held by A's agents", 60, 0.05, on_poll=a.tracker.snapshot,
               diagnostics=lambda: a.logs() + b.logs())
    assert health(b)["role"] == "follower" and metric(b, "tunefarm_driver_tick_seconds_count") == 0
    assert metric(a, "tunefarm_leader") == 1 and metric(b, "tunefarm_leader") == 0

    a.kill_server()
    killed_at = time.monotonic()
    before = {t.id for t in a.trials(job.id)}
    assert len(before) < BUDGET - 4, "the job was nearly done before the kill"
    wait_until(lambda: health(b)["role"] == "leader", "replica B to take the lead", LEASE_S, 0.05,
               diagnostics=b.logs)
    took_over_s = time.monotonic() - killed_at
    assert "is now the leader" in b.server.tail(1_000_000)

    trials = check_exact_budget(b, job.id, BUDGET)
    assert before <= {t.id for t in trials}, "a trial recorded before the kill was lost"
    check_head_moved_only_head_to_head(key_state(b, job.workload, b.device_class()))
    assert metric(b, "tunefarm_driver_tick_seconds_count") > 0
    since = time.time() - 2
    wait_until(lambda: reconnected(a, since) and reconnected(b, since), "every agent, A's too, to heartbeat through B",
               20, on_poll=b.tracker.snapshot, diagnostics=b.logs)
    assert [agent_id(b, "agent-a0"), agent_id(b, "agent-a1")] == a_agents, "A's agents registered again"
    assert via_a.alive() and via_a.tail(1_000_000).count("registered as ") == 1

    a.start_server()  # the old leader comes back as a follower
    assert health(a)["role"] == "follower" and health(b)["role"] == "leader"
    print(f"failover: B led {took_over_s:.2f} s after the kill (lease {LEASE_S} s)")
