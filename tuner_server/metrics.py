"""Prometheus collectors of the tuner process, on one module-level registry: `main` hands REGISTRY to the REST app
(GET /metrics shows it, plus the app's own request-latency histogram); the servicer and the driver count on it.

The registry is ours, not prometheus_client's global default, so /metrics shows only tunefarm's collectors (plus
what the REST app registers on it). `render()` gives the exposition body and its content type. Each replica of a
scaled-out farm counts what it handled: sum the counters over replicas; `tunefarm_leader` says which one leads.
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    start_http_server,
)

from tuner_server.db.models import JOB_STATES

REGISTRY = CollectorRegistry(auto_describe=True)

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

GRPC_LATENCY = Histogram(
    "tunefarm_grpc_request_duration_seconds", "AgentService call handling time by method and status code",
    ["method", "code"], buckets=LATENCY_BUCKETS, registry=REGISTRY)  # REST adds tunefarm_http_request_duration_seconds
TRIALS_RECORDED = Counter(
    "tunefarm_trials_recorded", "Trials accepted from agents, by status", ["status"], registry=REGISTRY)
REPORTED_RESULTS = Counter(
    "tunefarm_reported_results", "Results agents reported, by outcome (accepted|duplicate|rejected)", ["outcome"],
    registry=REGISTRY)
LEASES_GRANTED = Counter("tunefarm_leases_granted", "Tasks leased to agents", registry=REGISTRY)
AGENT_REGISTRATIONS = Counter("tunefarm_agent_registrations", "Successful agent registrations", registry=REGISTRY)
SCHEDULE_PROMOTIONS = Counter(
    "tunefarm_schedule_promotions", "New best-schedule versions created by accepted results", registry=REGISTRY)
TASKS_ENQUEUED = Counter("tunefarm_tasks_enqueued", "Configs the job driver queued as tasks", registry=REGISTRY)
LEASES_EXPIRED = Counter(
    "tunefarm_leases_expired", "Leases that expired or were taken back from lost agents, by outcome (requeued|lost)",
    ["outcome"], registry=REGISTRY)
AGENTS_LOST = Counter("tunefarm_agents_lost", "Agents marked lost after going silent", registry=REGISTRY)
JOBS_FINISHED = Counter("tunefarm_jobs_finished", "Jobs the driver finished, by end state and reason",
                        ["state", "reason"], registry=REGISTRY)
JOBS = Gauge("tunefarm_jobs", "Jobs by state (refreshed by every pass of the leader's driver; followers show none)",
             ["state"], registry=REGISTRY)
RPC_CUT_SHORT = Counter(
    "tunefarm_rpc_cut_short", "LeaseTasks/ReportResults answered with less (or nothing) to stay within the deadline, "
    "by method and why (no time left on arrival | late | database wait)", ["method", "why"], registry=REGISTRY)
DRIVER_TICK = Histogram("tunefarm_driver_tick_seconds", "Time of one job-driver pass", buckets=LATENCY_BUCKETS,
                        registry=REGISTRY)
DRIVER_ERRORS = Counter("tunefarm_driver_errors", "Exceptions caught in a driver pass, by phase", ["phase"],
                        registry=REGISTRY)
LEADER = Gauge("tunefarm_leader", "1 while this replica is the leader (runs the job driver and the class-model "
               "keeper), else 0", registry=REGISTRY)
LEADER_TRANSITIONS = Counter("tunefarm_leader_transitions", "Times this replica became leader or follower",
                             ["role"], registry=REGISTRY)


def set_job_counts(counts: Mapping[str, int]) -> None:
    """Set the jobs-by-state gauge; a state missing from `counts` is 0."""
    for state in JOB_STATES:
        JOBS.labels(state=state).set(counts.get(state, 0))


@contextmanager
def observe_grpc(method: str) -> Iterator[dict]:
    """Time a gRPC call; the body sets `outcome["code"]` (default 'OK') before it ends."""
    outcome = {"code": "OK"}
    start = time.perf_counter()
    try:
        yield outcome
    finally:
        GRPC_LATENCY.labels(method=method, code=outcome["code"]).observe(time.perf_counter() - start)


def serve(host: str, port: int):
    """An unauthenticated listener of its own (TUNEFARM_METRICS_PORT) serving REGISTRY at /metrics, for Prometheus
    scrapes that carry no bearer token; returns the running server (`server_port`, `shutdown()`)."""
    try:
        server, _thread = start_http_server(port, addr=host, registry=REGISTRY)
    except OSError as exc:
        raise OSError(f"cannot listen for metrics on {host}:{port}: {exc.strerror}") from None
    return server


def render() -> tuple[bytes, str]:
    """(body, content type) of the Prometheus text exposition of REGISTRY."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
