"""AgentService while the database is down: every call is UNAVAILABLE (which the agent's client reads as
'unreachable': back off and retry, never give up), the outage is logged once and no call logs a traceback; when the
database is back the same server serves again. A real gRPC server on loopback over a real SQLite database whose
directory goes away and comes back."""
from __future__ import annotations

import logging

import grpc
import pytest

import compiler_core as cc
from device_agent.rpc_client import AgentClient, RpcFailure
from tests.cpu.test_rpc_servicer import CPU, TOKEN, ok
from tests.db.factories import cpu_fingerprint
from tunefarm_proto import tunefarm_pb2 as pb
from tunefarm_proto import tunefarm_pb2_grpc as pb_grpc
from tuner_server.db import make_engine, make_session_factory, upgrade_to_head
from tuner_server.rpc.server import build_grpc_server, stop_grpc_server
from tuner_server.settings import Settings

TASK = "0b0c1f7e-0000-4000-8000-000000000000"


@pytest.fixture
def server(tmp_path):
    directory = tmp_path / "db"
    directory.mkdir()
    settings = Settings(database_url=f"sqlite:///{directory / 'tf.db'}", grpc_host="127.0.0.1", grpc_port=0,
                        enrolment_token=TOKEN)
    upgrade_to_head(settings.database_url)
    engine = make_engine(settings.database_url)
    grpc_server = build_grpc_server(settings, make_session_factory(engine), None)
    grpc_server.start()
    yield grpc_server, engine, directory
    stop_grpc_server(grpc_server, 1)
    engine.dispose()


def register(stub) -> pb.RegisterResponse:
    return stub.Register(pb.RegisterRequest(enrolment_token=TOKEN, agent_name="a1", device=CPU,
                                            codegen_version=cc.codegen_version(), max_parallel_builds=2))


def test_every_call_is_unavailable_during_an_outage_and_served_after_it(server, tmp_path, caplog):
    grpc_server, engine, directory = server
    channel = grpc.insecure_channel(f"127.0.0.1:{grpc_server.bound_port}")
    stub = pb_grpc.AgentServiceStub(channel)
    reg = register(stub)
    creds = {"agent_id": reg.agent_id, "session_token": reg.session_token}
    directory.rename(tmp_path / "away")
    engine.dispose()  # pooled connections kept the file open; new ones cannot open it
    caplog.set_level(logging.INFO)
    calls = [lambda: register(stub), lambda: stub.Heartbeat(pb.HeartbeatRequest(**creds)),
             lambda: stub.LeaseTasks(pb.LeaseRequest(**creds, max_tasks=2)),
             lambda: stub.ReportResults(pb.ReportRequest(**creds, results=[ok(pb.Task(task_id=TASK, attempt=1))]))]
    for call in calls * 3:
        with pytest.raises(grpc.RpcError) as refused:
            call()
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert refused.value.details() == "the database is unreachable; retry later"
    client = AgentClient(f"127.0.0.1:{grpc_server.bound_port}")
    with pytest.raises(RpcFailure) as failure:
        client.register(TOKEN, "a2", cpu_fingerprint(), cc.codegen_version(), 2)
    assert failure.value.kind == "unreachable"  # the agent backs off and tries again (device_agent/state.py)
    outage_lines = [r for r in caplog.records if r.name == "tuner_server.db.availability"]
    assert len(outage_lines) == 1 and not [r for r in caplog.records if r.exc_info], caplog.text
    assert not [r for r in caplog.records if r.name == "tuner_server.rpc.servicer"], caplog.text

    (tmp_path / "away").rename(directory)
    assert stub.LeaseTasks(pb.LeaseRequest(**creds, max_tasks=2)).tasks == []  # served again, same session
    assert client.register(TOKEN, "a2", cpu_fingerprint(), cc.codegen_version(), 2).agent_id
    outage_lines = [r.getMessage() for r in caplog.records if r.name == "tuner_server.db.availability"]
    assert len(outage_lines) == 2 and "available again" in outage_lines[1]
    client.close()
    channel.close()
