"""The tuner answers LeaseTasks and ReportResults within its budget (rpc_budget_s, or 80 % of the agent's deadline):
with fewer tasks or results rather than late, and never leaving a lease the agent will not hear of. Real gRPC on
loopback; the slow database is simulated by slowing the repository calls (or holding SQLite's write lock)."""
# ruff: noqa: F811 - the tests take the imported `farm` fixture as an argument
from __future__ import annotations

import time

import grpc
import pytest

from tests.cpu.test_rpc_servicer import farm, ok  # noqa: F401 - farm is a fixture
from tunefarm_proto import tunefarm_pb2 as pb
from tunefarm_proto import tunefarm_pb2_grpc as pb_grpc
from tuner_server import metrics, repo
from tuner_server.rpc.server import build_grpc_server, stop_grpc_server

BUDGET_S = 0.3


@pytest.fixture
def tight(farm):
    """A second server over the farm's database whose calls have BUDGET_S each; yields its stub."""
    settings = farm.settings.model_copy(update={"rpc_budget_s": BUDGET_S})
    server = build_grpc_server(settings, farm.sessions, farm.driver)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.bound_port}")
    yield pb_grpc.AgentServiceStub(channel)
    channel.close()
    stop_grpc_server(server, 1)


def cut_short(method: str, why: str) -> float:
    return metrics.RPC_CUT_SHORT.labels(method=method, why=why)._value.get()


def lease_request(reg, n: int) -> pb.LeaseRequest:
    return pb.LeaseRequest(agent_id=reg.agent_id, session_token=reg.session_token, max_tasks=n)


def states(farm) -> list[str]:
    return [state for _, state, _, _ in farm.snapshot()[0]]


def test_a_lease_done_too_late_is_rolled_back(farm, tight, monkeypatch):
    reg = farm.register()
    farm.job_with_tasks(budget=4)
    slow_lease = repo.lease_tasks

    def slow(*args, **kwargs):
        leased = slow_lease(*args, **kwargs)
        time.sleep(BUDGET_S + 0.2)
        return leased

    monkeypatch.setattr(repo, "lease_tasks", slow)
    before = cut_short("LeaseTasks", "late")
    response = tight.LeaseTasks(lease_request(reg, 4), timeout=10)
    assert list(response.tasks) == [] and response.retry_after_ms > 0
    assert set(states(farm)) == {"queued"} and cut_short("LeaseTasks", "late") == before + 1
    monkeypatch.setattr(repo, "lease_tasks", slow_lease)
    assert len(farm.lease(reg, 4)) == 4  # the farm's own budget: a loaded host may take longer than BUDGET_S


def test_a_call_with_no_time_left_leases_nothing(farm, tight):
    reg = farm.register()
    farm.job_with_tasks(budget=4)
    try:  # 80 % of 40 ms is under the 50 ms worth starting with: an empty answer (or, on a slow host, no answer)
        assert list(tight.LeaseTasks(lease_request(reg, 4), timeout=0.04).tasks) == []
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    time.sleep(0.2)
    assert set(states(farm)) == {"queued"}


def test_results_past_the_deadline_are_left_for_the_agent_to_send_again(farm, tight, monkeypatch):
    reg = farm.register()
    farm.job_with_tasks(budget=4)
    tasks = farm.lease(reg, 4)
    slow_record = repo.record_result

    def slow(*args, **kwargs):
        outcome = slow_record(*args, **kwargs)
        time.sleep(BUDGET_S / 2 + 0.05)
        return outcome

    monkeypatch.setattr(repo, "record_result", slow)
    results = [ok(t, 1e-3 * (i + 1)) for i, t in enumerate(tasks)]
    first = tight.ReportResults(pb.ReportRequest(agent_id=reg.agent_id, session_token=reg.session_token,
                                                 results=results), timeout=10)
    assert 1 <= len(first.accepted_task_ids) < 4 and not first.rejected_task_ids
    assert first.accepted_task_ids[:] == [t.task_id for t in tasks[:len(first.accepted_task_ids)]]  # in order
    monkeypatch.setattr(repo, "record_result", slow_record)
    again = farm.report(reg, results)
    assert sorted(again.duplicate_task_ids) == sorted(first.accepted_task_ids)
    assert sorted([*again.accepted_task_ids, *first.accepted_task_ids]) == sorted(t.task_id for t in tasks)


def test_a_lease_behind_a_held_sqlite_write_lock_gives_up_within_the_budget(farm, tight):
    reg = farm.register()
    farm.job_with_tasks(budget=4)
    before = cut_short("LeaseTasks", "database wait")
    with farm.sessions() as holder:
        repo.get_or_create_workload("softmax(rows=8,cols=8,dtype=float32)", session=holder)
        holder.flush()  # BEGIN IMMEDIATE: this session holds SQLite's write lock until it ends
        start = time.monotonic()
        response = tight.LeaseTasks(lease_request(reg, 4), timeout=10)
        waited = time.monotonic() - start
        holder.rollback()
    assert list(response.tasks) == [] and waited < 5  # not the 30 s busy timeout of other transactions
    assert cut_short("LeaseTasks", "database wait") == before + 1
    assert len(farm.lease(reg, 4)) == 4  # the farm's own budget: a loaded host may take longer than BUDGET_S
