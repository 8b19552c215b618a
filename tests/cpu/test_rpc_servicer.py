"""The tuner's AgentService on a real gRPC server on loopback, called through a real channel with the generated stubs:
authentication, field validation (status codes, messages, database untouched), the lease/report round trip,
idempotent reports, heartbeats, health, and errors that never leave as UNKNOWN."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

import compiler_core as cc
from tunefarm_proto import tunefarm_pb2 as pb
from tunefarm_proto import tunefarm_pb2_grpc as pb_grpc
from tuner_server import measure_policy, metrics, repo
from tuner_server.db import (
    ScheduleVersion,
    Task,
    Trial,
    make_engine,
    make_session_factory,
    session_scope,
    upgrade_to_head,
)
from tuner_server.driver import JobDriver
from tuner_server.repo import JobSpec
from tuner_server.rpc.server import build_grpc_server, stop_grpc_server
from tuner_server.settings import Settings
from tuner_server.targets import target_for_class

TOKEN = "test-enrolment-token"
MATMUL = "matmul(M=64,N=64,K=64,dtype=float32)"
CPU_TARGET = pb.Target(**cc.cpu_target(isa="avx2", cores=2).to_dict())
CPU = pb.DeviceFingerprint(kind="cpu", model="AMD EPYC 7B13", arch="x86_64", isa_flags=["avx2", "fma"],
                           compute_units=2, memory_bytes=8 << 30, hostname="test", target=CPU_TARGET)
H100_TARGET = pb.Target(**cc.cuda_target("sm_90a", sm_count=132).to_dict())


class WakeCounter(JobDriver):
    wakes = 0

    def wake(self) -> None:
        self.wakes += 1


@pytest.fixture
def farm(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'tf.db'}", grpc_host="127.0.0.1", grpc_port=0,
                        enrolment_token=TOKEN, lease_seconds=60, heartbeat_interval_s=2,
                        rpc_budget_s=30)  # these tests are about what a call does, not its deadline
    upgrade_to_head(settings.database_url)
    engine = make_engine(settings.database_url)
    sessions = make_session_factory(engine)
    driver = WakeCounter(sessions, settings)
    server = build_grpc_server(settings, sessions, driver)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.bound_port}")
    yield Farm(settings, sessions, driver, pb_grpc.AgentServiceStub(channel), channel)
    channel.close()
    stop_grpc_server(server, 1)
    engine.dispose()


class Farm:
    def __init__(self, settings, sessions, driver, stub, channel):
        self.settings, self.sessions, self.driver, self.stub, self.channel = settings, sessions, driver, stub, channel

    def register(self, name="agent-1") -> pb.RegisterResponse:
        return self.stub.Register(pb.RegisterRequest(enrolment_token=TOKEN, agent_name=name, device=CPU,
                                                     codegen_version=cc.codegen_version(), max_parallel_builds=2))

    def job_with_tasks(self, budget=6) -> str:
        with session_scope(self.sessions) as s:
            job_id = repo.create_job(JobSpec(MATMUL, "cpu", budget), session=s).id
        self.driver.tick()
        return job_id

    def lease(self, reg, n=3) -> list[pb.Task]:
        return list(self.stub.LeaseTasks(pb.LeaseRequest(agent_id=reg.agent_id, session_token=reg.session_token,
                                                         max_tasks=n)).tasks)

    def report(self, reg, results, token=None) -> pb.ReportResponse:
        return self.stub.ReportResults(pb.ReportRequest(agent_id=reg.agent_id, results=results,
                                                        session_token=reg.session_token if token is None else token))

    def snapshot(self):
        with session_scope(self.sessions) as s:
            tasks = sorted((t.id, t.state, t.attempt, t.agent_id) for t in s.scalars(select(Task)))
            return (tasks, s.scalar(select(func.count()).select_from(Trial)),
                    s.scalar(select(func.count()).select_from(ScheduleVersion)))


def ok(task: pb.Task, median=1e-3) -> pb.TrialResult:
    return pb.TrialResult(task_id=task.task_id, attempt=task.attempt, status=pb.OK, samples_s=[median] * 5,
                          median_s=median, ci_low_s=median * 0.99, ci_high_s=median * 1.01,
                          codegen_version=cc.codegen_version(), compile_s=0.2, max_abs_error=1e-6, contention=0.02,
                          threads=2, cpus="0-1")


def refused(call, *args, **kwargs) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call(*args, **kwargs)
    return info.value


def test_register_with_a_wrong_enrolment_token_is_unauthenticated(farm):
    err = refused(farm.stub.Register, pb.RegisterRequest(enrolment_token="nope", agent_name="a", device=CPU,
                                                         codegen_version="cg"))
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED and "enrolment_token" in err.details()
    with session_scope(farm.sessions) as s:
        assert repo.list_agents(session=s) == []


@pytest.mark.parametrize("change, field", [
    ({"device": None}, "device"),
    ({"device": pb.DeviceFingerprint(kind="tpu", arch="x", compute_units=1)}, "device.kind"),
    ({"device": pb.DeviceFingerprint(kind="cpu", arch="x86_64", compute_units=0)}, "device.compute_units"),
    ({"device": pb.DeviceFingerprint(kind="cuda", arch="sm_90", compute_units=132)}, "device.model"),
    ({"device": pb.DeviceFingerprint(kind="cpu", model="m", arch="x86_64", compute_units=2)}, "device.target"),
    ({"device": pb.DeviceFingerprint(kind="cpu", model="m", arch="x86_64", compute_units=2, target=pb.Target(
        **{**cc.cpu_target(isa="avx2", cores=2).to_dict(), "warp_size": 0}))}, "device.target"),
    ({"device": pb.DeviceFingerprint(kind="cpu", model="m", arch="x86_64", compute_units=4, target=CPU_TARGET)},
     "device.target.cores"),
    ({"device": pb.DeviceFingerprint(kind="cpu", model="m", arch="x86_64", compute_units=132, target=H100_TARGET)},
     "device.target.kind"),
    ({"device": pb.DeviceFingerprint(kind="cuda", model="H100", arch="sm_80", compute_units=132, target=H100_TARGET)},
     "device.target.arch"),
    ({"agent_name": ""}, "agent_name"),
    ({"agent_name": "a\x00b"}, "agent_name"),
    ({"device": pb.DeviceFingerprint(kind="cpu", model="m\x00", arch="x86_64", compute_units=2, target=CPU_TARGET)},
     "device.model"),
    ({"codegen_version": "x" * 65}, "codegen_version"),
])
def test_register_names_the_bad_field(farm, change, field):
    fields = {"enrolment_token": TOKEN, "agent_name": "a", "device": CPU, "codegen_version": "cg", **change}
    err = refused(farm.stub.Register, pb.RegisterRequest(**{k: v for k, v in fields.items() if v is not None}))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith(field + ":")


def test_register_refuses_another_codegen_version_unless_allowed(farm):
    request = pb.RegisterRequest(enrolment_token=TOKEN, agent_name="old", device=CPU,
                                 codegen_version="0123456789abcdef")
    err = refused(farm.stub.Register, request)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "0123456789abcdef" in err.details() and cc.codegen_version() in err.details()
    with session_scope(farm.sessions) as s:
        assert repo.list_agents(session=s) == []
    settings = farm.settings.model_copy(update={"allow_codegen_mismatch": True})
    server = build_grpc_server(settings, farm.sessions, None)
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.bound_port}") as channel:
            reg = pb_grpc.AgentServiceStub(channel).Register(request)
        with session_scope(farm.sessions) as s:
            assert repo.get_agent(reg.agent_id, session=s).codegen_version == "0123456789abcdef"
    finally:
        stop_grpc_server(server, 0)


def test_register_lease_report_round_trip_records_trials(farm):
    reg = farm.register()
    assert reg.device_class == "cpu-x86_64-avx2-2c" and reg.lease_seconds == 60 and reg.heartbeat_interval_ms == 2000
    job_id = farm.job_with_tasks(budget=6)
    tasks = farm.lease(reg, 4)
    assert len(tasks) == 4 and {t.job_id for t in tasks} == {job_id} and {t.attempt for t in tasks} == {1}
    with session_scope(farm.sessions) as s:
        space = cc.get_space(cc.parse_key(MATMUL), target_for_class(reg.device_class, session=s))
    for t in tasks:
        assert t.workload_key == MATMUL
        space.validate(json.loads(t.config_json))
        assert t.kind == pb.MEASURE and not t.baseline_config_json and not t.time_reference
        sent = {name: getattr(t.options, name) for name in measure_policy.AGENT_FIELDS}
        assert sent == {name: pytest.approx(measure_policy.DEFAULTS["cpu"][name]) for name in sent}  # all resolved
        assert abs(t.lease_deadline_unix_ms / 1000 - (time.time() + 60)) < 10
    granted, recorded = metrics.LEASES_GRANTED._value.get(), metrics.TRIALS_RECORDED.labels(status="OK")._value.get()
    wakes = farm.driver.wakes
    results = [ok(t, 1e-3 * (i + 1)) for i, t in enumerate(tasks[:3])]
    results.append(pb.TrialResult(task_id=tasks[3].task_id, attempt=1, status=pb.COMPILE_ERROR, samples_s=[1e-3],
                                  median_s=1e-3, error="cc: boom\x00"))  # timings of a failure are not kept
    response = farm.report(reg, results)
    assert sorted(response.accepted_task_ids) == sorted(t.task_id for t in tasks)
    assert not response.duplicate_task_ids and not response.rejected_task_ids
    assert farm.driver.wakes > wakes
    assert metrics.TRIALS_RECORDED.labels(status="OK")._value.get() == recorded + 3
    assert metrics.LEASES_GRANTED._value.get() == granted  # granted before the snapshot was taken
    with session_scope(farm.sessions) as s:
        trials = {t.task_id: t for t in s.scalars(select(Trial))}
        assert len(trials) == 4
        first = trials[tasks[0].task_id]
        assert (first.status, first.samples, first.median_s, first.codegen_version) == ("OK", [1e-3] * 5, 1e-3,
                                                                                       cc.codegen_version())
        assert (first.contention, first.threads, first.cpus, first.noisy) == (0.02, 2, "0-1", False)
        failed = trials[tasks[3].task_id]
        assert (failed.status, failed.samples, failed.median_s, failed.ci_low_s, failed.error) == (
            "COMPILE_ERROR", [], None, None, "cc: boom\ufffd")  # PostgreSQL's text cannot hold the NUL
        head = repo.schedules.head(MATMUL, reg.device_class, session=s)
        assert head.trial_id == first.id  # the first verified result became the head; slower ones challenge nothing
        assert not s.scalars(select(Task).where(Task.kind == "COMPARE")).all()


def _paired(task: pb.Task, ratio: float, rounds: int = 9, baseline_rounds: int | None = None) -> pb.TrialResult:
    base = [1e-3 * (1 + 0.1 * (i % 3 - 1)) for i in range(rounds)]
    cand = [b * ratio * (1 + 0.002 * (i % 5 - 2)) for i, b in enumerate(base)]
    return pb.TrialResult(task_id=task.task_id, attempt=task.attempt, status=pb.OK, samples_s=cand,
                          median_s=sorted(cand)[rounds // 2], ci_low_s=min(cand), ci_high_s=max(cand),
                          baseline_samples_s=base[:baseline_rounds], codegen_version=cc.codegen_version(),
                          contention=0.01, threads=2, cpus="0-1")


def test_a_compare_task_round_trip_moves_the_head_only_when_paired(farm):
    reg = farm.register()
    farm.job_with_tasks(budget=2)
    slow, fast = farm.lease(reg, 2)
    reported = farm.report(reg, [ok(slow, 2e-3), ok(fast, 1e-3)])  # the first is the head; the second challenges it
    assert list(reported.accepted_task_ids) == [slow.task_id, fast.task_id]
    (task,) = farm.lease(reg, 1)
    assert task.kind == pb.COMPARE and not task.time_reference  # a challenge times no reference
    assert (json.loads(task.config_json), json.loads(task.baseline_config_json)) == (
        json.loads(fast.config_json), json.loads(slow.config_json))
    assert task.options.target_rel_ci == measure_policy.DEFAULTS["cpu"]["target_rel_ci"]
    before = farm.snapshot()
    err = refused(farm.report, reg, [_paired(task, 0.5, baseline_rounds=0)])  # no baseline samples at all
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "9 samples but 0 baseline samples" in err.details()
    err = refused(farm.report, reg, [_paired(task, 0.5, baseline_rounds=8)])
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("results[0].baseline_samples_s:") and farm.snapshot() == before
    promotions = metrics.SCHEDULE_PROMOTIONS._value.get()
    response = farm.report(reg, [_paired(task, 0.5)])
    assert list(response.accepted_task_ids) == [task.task_id]
    assert metrics.SCHEDULE_PROMOTIONS._value.get() == promotions + 1
    with session_scope(farm.sessions) as s:
        head = repo.schedules.head(MATMUL, reg.device_class, session=s)
        assert (head.version, head.reason, head.trial.task_id) == (2, "improved", fast.task_id)
        (row,) = repo.comparisons.list_comparisons(head.job_id, session=s)
        assert (row.outcome, row.contention, row.threads) == ("promoted", 0.01, 2)
    again = farm.report(reg, [_paired(task, 0.5)])
    assert list(again.duplicate_task_ids) == [task.task_id]


def test_a_duplicate_report_is_not_counted_twice(farm):
    reg = farm.register()
    farm.job_with_tasks()
    tasks = farm.lease(reg, 2)
    assert len(farm.report(reg, [ok(t) for t in tasks]).accepted_task_ids) == 2
    before = farm.snapshot()
    again = farm.report(reg, [ok(t) for t in tasks])
    assert sorted(again.duplicate_task_ids) == sorted(t.task_id for t in tasks) and not again.accepted_task_ids
    assert farm.snapshot() == before


def _malformed(task: pb.Task) -> list[tuple[pb.TrialResult, str]]:
    def bad(**fields):
        result = ok(task)
        for name, value in fields.items():
            if isinstance(value, list):
                del getattr(result, name)[:]
                getattr(result, name).extend(value)
            else:
                setattr(result, name, value)
        return result

    return [(bad(status=42), "results[0].status"), (bad(status=0), "results[0].status"),
            (bad(samples_s=[1e-3, -1e-3]), "results[0].samples_s[1]"),
            (bad(samples_s=[math.nan]), "results[0].samples_s[0]"), (bad(median_s=math.nan), "results[0].median_s"),
            (bad(median_s=-1.0), "results[0].median_s"), (bad(samples_s=[]), "results[0].samples_s"),
            (bad(attempt=0), "results[0].attempt"), (bad(task_id=""), "results[0].task_id"),
            (bad(ci_low_s=2e-3), "results[0].ci_low_s"), (bad(compile_s=math.inf), "results[0].compile_s"),
            (bad(contention=1.5), "results[0].contention"), (bad(contention=math.nan), "results[0].contention"),
            (bad(threads=-1), "results[0].threads"), (bad(cpus="0\x001"), "results[0].cpus"),
            (bad(samples_s=[1e-3, 1e300]), "results[0].samples_s[1]"), (bad(compile_s=1e9), "results[0].compile_s"),
            (bad(codegen_version="cg\x00"), "results[0].codegen_version"),
            (bad(baseline_samples_s=[1e-3] * 4), "results[0].baseline_samples_s"),
            (bad(reference_samples_s=[1e-3] * 6), "results[0].reference_samples_s")]


def test_malformed_reports_are_invalid_argument_and_change_nothing(farm):
    reg = farm.register()
    farm.job_with_tasks()
    tasks = farm.lease(reg, 2)
    before = farm.snapshot()
    for result, field in _malformed(tasks[0]):
        err = refused(farm.report, reg, [result, ok(tasks[1])])  # the valid second result is not recorded either
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, field
        assert err.details().startswith(field + ":"), (field, err.details())
        assert farm.snapshot() == before, field
    err = refused(farm.report, reg, [])
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith("results:")


def test_wrong_session_unknown_task_and_unleased_config(farm):
    reg, other = farm.register("agent-1"), farm.register("agent-2")
    farm.job_with_tasks(budget=8)
    mine, theirs = farm.lease(reg, 2), farm.lease(other, 1)
    before = farm.snapshot()
    for token in ("wrong-token", ""):
        err = refused(farm.report, reg, [ok(mine[0])], token)
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED
    assert farm.snapshot() == before
    with session_scope(farm.sessions) as s:  # a task still queued: never leased to anyone
        queued = s.scalars(select(Task).where(Task.state == "queued")).first()
    unknown = pb.TrialResult(task_id="00000000-0000-0000-0000-000000000000", attempt=1, status=pb.RUNTIME_ERROR)
    not_leased = pb.Task(task_id=queued.id, attempt=1)
    stale = pb.Task(task_id=mine[1].task_id, attempt=2)
    response = farm.report(reg, [unknown, ok(theirs[0]), ok(not_leased), ok(stale)])
    assert list(response.rejected_task_ids) == [unknown.task_id, theirs[0].task_id, queued.id, mine[1].task_id]
    assert not response.accepted_task_ids and farm.snapshot() == before


def test_lease_validates_max_tasks_and_credentials(farm):
    reg = farm.register()
    for n in (0, -1, 257):
        err = refused(farm.lease, reg, n)
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith("max_tasks:")
    err = refused(farm.stub.LeaseTasks, pb.LeaseRequest(max_tasks=1))
    assert err.code() == grpc.StatusCode.UNAUTHENTICATED and "Register" in err.details()
    empty = farm.stub.LeaseTasks(pb.LeaseRequest(agent_id=reg.agent_id, session_token=reg.session_token, max_tasks=4))
    assert not empty.tasks and empty.retry_after_ms > 0


def test_heartbeat_extends_leases_and_asks_unknown_sessions_to_reregister(farm):
    reg = farm.register()
    farm.job_with_tasks()
    (task,) = farm.lease(reg, 1)
    time.sleep(1.1)
    response = farm.stub.Heartbeat(pb.HeartbeatRequest(agent_id=reg.agent_id, session_token=reg.session_token,
                                                       held_task_ids=[task.task_id, "gone-task"]))
    assert list(response.cancelled_task_ids) == ["gone-task"] and not response.reregister
    with session_scope(farm.sessions) as s:
        deadline = s.get(Task, task.task_id).lease_deadline.timestamp() * 1000
    assert deadline > task.lease_deadline_unix_ms + 500
    stranger = farm.stub.Heartbeat(pb.HeartbeatRequest(agent_id=reg.agent_id, session_token="wrong"))
    assert stranger.reregister


def test_health_service_answers_serving(farm):
    health = health_pb2_grpc.HealthStub(farm.channel)
    for service in ("", "tunefarm.v1.AgentService"):
        assert health.Check(health_pb2.HealthCheckRequest(service=service)).status == \
            health_pb2.HealthCheckResponse.SERVING
    err = refused(health.Check, health_pb2.HealthCheckRequest(service="nope"))
    assert err.code() == grpc.StatusCode.NOT_FOUND


def test_unexpected_errors_leave_as_internal_or_unavailable_never_unknown(farm, monkeypatch):
    reg = farm.register()

    def broken(*args, **kwargs):
        raise RuntimeError("injected bug")

    monkeypatch.setattr(repo, "lease_tasks", broken)
    err = refused(farm.lease, reg, 1)
    assert err.code() == grpc.StatusCode.INTERNAL and "injected" not in err.details()

    def busy(*args, **kwargs):
        raise OperationalError("UPDATE tasks", {}, Exception("database is locked"))

    monkeypatch.setattr(repo, "lease_tasks", busy)
    assert refused(farm.lease, reg, 1).code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_tls(tmp_path, farm):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    settings = farm.settings.model_copy(update={"grpc_tls_cert_file": str(cert), "grpc_tls_key_file": str(key)})
    server = build_grpc_server(settings, farm.sessions, None)
    server.start()
    try:
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        with grpc.secure_channel(f"localhost:{server.bound_port}", credentials) as channel:
            assert pb_grpc.AgentServiceStub(channel).Register(pb.RegisterRequest(
                enrolment_token=TOKEN, agent_name="tls", device=CPU, codegen_version=cc.codegen_version())).agent_id
        with grpc.insecure_channel(f"localhost:{server.bound_port}") as plain:
            err = refused(pb_grpc.AgentServiceStub(plain).Register, pb.RegisterRequest(), timeout=2)
            assert err.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        stop_grpc_server(server, 0)
