"""A hostile agent against the tuner's gRPC server on loopback (the generated stubs, and raw bytes where the stubs
cannot send what it sends): every bad request is INVALID_ARGUMENT naming what is wrong, never INTERNAL or a traceback;
nothing it sends is stored; and what it may store, the farm's export, imports again."""
from __future__ import annotations

import logging

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from grpc_health.v1 import health_pb2

import compiler_core as cc
from tests.cpu import test_rpc_servicer
from tests.cpu.test_rpc_servicer import MATMUL, TOKEN, _paired, ok, refused
from tunefarm_proto import tunefarm_pb2 as pb
from tuner_server import repo
from tuner_server.db import make_engine, make_session_factory, session_scope, upgrade_to_head
from tuner_server.repo import plausible

farm = test_rpc_servicer.farm  # the fixture: a tuner's gRPC server on loopback over a fresh SQLite database
SERVICE = "/tunefarm.v1.AgentService/"
PLACEHOLDER = "\x7f~\x7f"  # three one-byte characters, replaced on the wire by three bytes that are not UTF-8 text
NOT_UTF8 = [b"\xed\xa0\x80", b"\xff\xff\xff"]  # a lone surrogate (U+D800) as UTF-8 encodes it; bytes never in UTF-8
REQUESTS = {"Register": pb.RegisterRequest, "Heartbeat": pb.HeartbeatRequest, "LeaseTasks": pb.LeaseRequest,
            "ReportResults": pb.ReportRequest}


def string_paths(descriptor, prefix=()) -> list[tuple[str, ...]]:
    """Every string field of a message type, nested and repeated ones included, as a path of field names."""
    paths = []
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_STRING:
            paths.append((*prefix, field.name))
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            paths.extend(string_paths(field.message_type, (*prefix, field.name)))
    return paths


def with_placeholder(cls, path: tuple[str, ...]):
    """A `cls` message whose field at `path` (in the first element of each repeated field on the way) holds
    PLACEHOLDER."""
    message = cls()
    node = message
    for name in path[:-1]:
        child = getattr(node, name)
        node = child.add() if hasattr(child, "add") else child
    if hasattr(value := getattr(node, path[-1]), "append"):
        value.append(PLACEHOLDER)
    else:
        setattr(node, path[-1], PLACEHOLDER)
    return message


def raw_call(channel, method: str, data: bytes):
    call = channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
    with pytest.raises(grpc.RpcError) as info:
        call(data, timeout=10)
    return info.value


CASES = [(method, path) for method, cls in REQUESTS.items() for path in string_paths(cls.DESCRIPTOR)]


def test_the_cases_cover_every_string_field():
    paths = {path for _, path in CASES}
    assert {("device", "target", "arch"), ("results", "error"), ("held_task_ids",), ("agent_id",)} <= paths


@pytest.mark.parametrize("bad", NOT_UTF8, ids=["surrogate", "0xff"])
def test_invalid_utf8_in_any_string_field_is_invalid_argument(farm, bad, caplog):
    before = farm.snapshot()
    for method, path in CASES:
        data = with_placeholder(REQUESTS[method], path).SerializeToString()
        assert data.count(PLACEHOLDER.encode()) == 1
        err = raw_call(farm.channel, SERVICE + method, data.replace(PLACEHOLDER.encode(), bad))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, path, err.details())
        assert err.details().startswith("request: not a valid message") and "UTF-8" in err.details()
    health = health_pb2.HealthCheckRequest(service=PLACEHOLDER).SerializeToString()
    err = raw_call(farm.channel, "/grpc.health.v1.Health/Check", health.replace(PLACEHOLDER.encode(), bad))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Exception deserializing" not in caplog.text and "DecodeError" not in caplog.text
    assert farm.snapshot() == before
    assert farm.register().agent_id  # the server still serves


def test_bytes_that_are_no_message_are_invalid_argument(farm):
    err = raw_call(farm.channel, SERVICE + "Register", b"\x0a\xff\xff\xff\xff")  # a length past the end
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "RegisterRequest" in err.details()


def register(farm, device: pb.DeviceFingerprint):
    return farm.stub.Register(pb.RegisterRequest(enrolment_token=TOKEN, agent_name="hostile", device=device,
                                                 codegen_version=cc.codegen_version()))


def test_register_refuses_a_target_the_code_generator_cannot_use(farm):
    """The audit's: a 3-byte vector ISA became class cpu-x86_64-sse4_2-1c and its job's driver divided by zero."""
    sse = cc.cpu_target(isa="sse", cores=1)
    bad = pb.DeviceFingerprint(kind="cpu", model="m", arch="x86_64", isa_flags=["sse4_2"], compute_units=1,
                               target=pb.Target(**{**sse.to_dict(), "vector_bytes": 3}))
    err = refused(register, farm, bad)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith("device.target.vector_bytes:")
    assert "16" in err.details()
    avx512 = pb.DeviceFingerprint(kind="cpu", model="m", arch="x86_64", isa_flags=["avx2"], compute_units=1,
                                  target=pb.Target(**cc.cpu_target(isa="avx512", cores=1).to_dict()))
    err = refused(register, farm, avx512)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith("device.isa_flags:")
    h100 = cc.cuda_target("sm_90a", sm_count=132)
    cuda = pb.DeviceFingerprint(kind="cuda", model="H100", arch="smx", compute_units=132,
                                target=pb.Target(**h100.to_dict()))
    err = refused(register, farm, cuda)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith("device.arch:")
    with session_scope(farm.sessions) as s:
        assert repo.list_agents(session=s) == [] and repo.list_devices(session=s) == []


def implausible(task: pb.Task, samples, median, **fields) -> pb.TrialResult:
    return pb.TrialResult(task_id=task.task_id, attempt=task.attempt, status=pb.OK, samples_s=samples,
                          median_s=median, codegen_version=cc.codegen_version(), max_abs_error=0.0, **fields)


def test_ok_results_with_timings_that_cannot_be_real_are_refused_and_store_nothing(farm):
    reg = farm.register()
    farm.job_with_tasks(budget=2)
    slow, fast = farm.lease(reg, 2)
    before = farm.snapshot()
    for samples, median in (([0.0, 0.0, 0.0], 1e-9), ([1.0, 1.0], 1e-9)):
        err = refused(farm.report, reg, [implausible(slow, samples, median)])
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith("results[0]:"), \
            err.details()
        assert farm.snapshot() == before
    farm.report(reg, [ok(slow, 2e-3), ok(fast, 1e-3)])
    (compare,) = farm.lease(reg, 1)
    assert compare.kind == pb.COMPARE
    before = farm.snapshot()
    zero = implausible(compare, [0.0] * 8, 1e-9, baseline_samples_s=[1e-3] * 8)  # "0.000x the time"
    err = refused(farm.report, reg, [zero])
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith("results[0]:")
    assert farm.snapshot() == before  # the head did not move
    with session_scope(farm.sessions) as s:
        assert repo.schedules.head(MATMUL, reg.device_class, session=s).trial.task_id == slow.task_id
    assert list(farm.report(reg, [_paired(compare, 0.5)]).accepted_task_ids) == [compare.task_id]


def test_a_long_compiler_error_is_stored_so_that_the_export_imports_again(farm, tmp_path):
    reg = farm.register()
    farm.job_with_tasks(budget=2)
    first, second = farm.lease(reg, 2)
    error = "x.c:1: error: " + "e" * 30_000 + " the end"
    farm.report(reg, [ok(first), pb.TrialResult(task_id=second.task_id, attempt=1, status=pb.COMPILE_ERROR,
                                                 error=error)])
    with session_scope(farm.sessions) as s:
        lines = list(repo.export_jsonl(session=s))
    url = f"sqlite:///{tmp_path / 'other.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    try:
        with session_scope(make_session_factory(engine)) as s:
            counts = repo.import_jsonl(lines, session=s, author="test")
            stored = [t.error for t in repo.list_trials(session=s, limit=10).items if t.status == "COMPILE_ERROR"]
    finally:
        engine.dispose()
    assert counts.trials == 2
    assert len(stored[0]) == plausible.MAX_ERROR_CHARS and stored[0].endswith(" the end")


def test_a_refused_request_logs_no_traceback(farm, caplog):
    caplog.set_level(logging.INFO)
    data = pb.RegisterRequest(agent_name=PLACEHOLDER).SerializeToString().replace(PLACEHOLDER.encode(), NOT_UTF8[0])
    raw_call(farm.channel, SERVICE + "Register", data)
    assert "Traceback" not in caplog.text
