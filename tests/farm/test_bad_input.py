"""Bad input against a running tuner process (SQLite): every refusal is a 4xx (REST) or INVALID_ARGUMENT (gRPC)
with a message naming the problem, and the database's row counts (read from the SQLite file, read-only) are the
same after each refused request as before it.

The gRPC part uses a TEST DOUBLE agent (this test, over the real protocol): it registers, leases the one task of a
1-trial job, sends malformed ReportResults for that very lease (each refused, nothing written), then a well-formed
one, which is accepted and adds the trial (so the malformed ones were refused for their content, not their target).
"""
from __future__ import annotations

import math

import grpc
import httpx
import pytest

import compiler_core as cc
from tests.farm.farm_support import MATMUL, Farm, ProcessTracker, wait_until
from tunefarm_proto import tunefarm_pb2 as pb
from tunefarm_proto import tunefarm_pb2_grpc as pb_grpc

READ_TOKEN = "tfr_bad_input_read_token_0123456789"


def job_body(**changes) -> dict:
    body = {"op": "matmul", "params": dict(MATMUL), "device": "cpu", "trials": 4}
    body.update(changes)
    return body


def params(**changes) -> dict:
    return {k: v for k, v in {**MATMUL, **changes}.items() if v is not None}


# (what, request kwargs for httpx, expected status, words the error must contain)
JOB_CASES = [
    ("unknown op", {"json": job_body(op="nosuchop")}, 422, ["nosuchop"]),
    ("missing param", {"json": job_body(params=params(K=None))}, 422, ["missing", "K"]),
    ("extra param", {"json": job_body(params=params(Q=3))}, 422, ["unknown", "Q"]),
    ("non-integer param (text)", {"json": job_body(params=params(M="sixty-four"))}, 422, ["M"]),
    ("non-integer param (float)", {"json": job_body(params=params(M=6.5))}, 422, ["params.M"]),
    ("size zero", {"json": job_body(params=params(N=0))}, 422, ["N"]),
    ("size over the op's bound", {"json": job_body(params=params(N=10**7))}, 422, ["N=10000000"]),
    ("size over the server's max_dim", {"json": job_body(params=params(N=100_000))}, 422, ["N=100000", "65536"]),
    ("trials over the limit", {"json": job_body(trials=10_001)}, 422, ["trials", "10000"]),
    ("trials zero", {"json": job_body(trials=0)}, 422, ["trials"]),
    ("unknown device class", {"json": job_body(device="cpu-nosuch-arch-64c")}, 422,
     ["unknown device", "cpu-nosuch-arch-64c"]),
    ("unknown field", {"json": {**job_body(), "budget": 5}}, 422, ["budget"]),
    ("malformed JSON", {"content": b'{"op": "matmul", "params": {', "headers": {"Content-Type": "application/json"}},
     400, ["malformed JSON"]),
    ("missing token", {"json": job_body(), "token": None}, 401, ["missing bearer token"]),
    ("wrong token", {"json": job_body(), "token": "tfa_not_a_token_of_this_farm_0000"}, 401, ["invalid"]),
    ("read token on a write", {"json": job_body(), "token": READ_TOKEN}, 403, ["admin"]),
]

BEST_CASES = [
    ("unknown op", {"op": "nosuchop", "device": "cpu-x86_64-avx2-2c"}, 422, ["nosuchop"]),
    ("missing param", {**params(K=None), "op": "matmul", "device": "cpu-x86_64-avx2-2c"}, 422, ["missing", "K"]),
    ("extra param", {**params(Q=3), "op": "matmul", "device": "cpu-x86_64-avx2-2c"}, 422, ["Q"]),
    ("non-integer param", {**params(M="x"), "op": "matmul", "device": "cpu-x86_64-avx2-2c"}, 422, ["M"]),
    ("missing device", {**params(), "op": "matmul"}, 422, ["device"]),
    ("unknown device class", {**params(), "op": "matmul", "device": "cpu-nosuch-arch-64c"}, 422,
     ["unknown device class"]),
]


@pytest.fixture(scope="module")
def bad_farm(tmp_path_factory):
    """One tuner process (no agents) for every case of the module; the gRPC test registers a TEST DOUBLE agent."""
    tracker = ProcessTracker()
    root = tmp_path_factory.mktemp("bad-input")
    f = Farm(root, f"sqlite:///{root / 'tunefarm.db'}", tracker, env={"TUNEFARM_READ_TOKEN": READ_TOKEN})
    try:
        f.start_server()
        yield f
    finally:
        f.stop()
        tracker.terminate_all()
        tracker.assert_none_left()


def refused(response: httpx.Response, status: int, words: list[str]) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    for word in words:
        assert word.lower() in (error + str(response.json().get("detail"))).lower(), (word, response.json())


@pytest.mark.parametrize("what,request_kw,status,words", JOB_CASES, ids=[c[0] for c in JOB_CASES])
def test_bad_job_submissions_are_refused_and_write_nothing(bad_farm, what, request_kw, status, words):
    request_kw = dict(request_kw)
    token = request_kw.pop("token", bad_farm.admin_token)
    headers = {**request_kw.pop("headers", {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    before = bad_farm.rows()
    response = httpx.post(bad_farm.url + "/v1/jobs", headers=headers, timeout=30, **request_kw)
    refused(response, status, words)
    assert bad_farm.rows() == before, what


@pytest.mark.parametrize("what,query,status,words", BEST_CASES, ids=[c[0] for c in BEST_CASES])
def test_bad_best_queries_are_refused(bad_farm, what, query, status, words):
    before = bad_farm.rows()
    response = httpx.get(bad_farm.url + "/v1/best", params=query, timeout=30,
                         headers={"Authorization": f"Bearer {READ_TOKEN}"})
    refused(response, status, words)
    assert bad_farm.rows() == before, what


def fingerprint() -> pb.DeviceFingerprint:
    return pb.DeviceFingerprint(kind="cpu", model="TEST DOUBLE CPU", arch="x86_64", isa_flags=["sse2", "avx", "avx2"],
                                compute_units=2, memory_bytes=1 << 30, hostname="bad-input-test",
                                target=pb.Target(**cc.cpu_target(isa="avx2", cores=2).to_dict()))


def ok_result(task: pb.Task, **changes) -> pb.TrialResult:
    fields = {"task_id": task.task_id, "attempt": task.attempt, "status": pb.OK, "samples_s": [1e-5, 1.1e-5, 1.2e-5],
              "median_s": 1.1e-5, "ci_low_s": 1e-5, "ci_high_s": 1.2e-5, "codegen_version": cc.codegen_version(),
              "compile_s": 0.1, "max_abs_error": 0.0}
    fields.update(changes)
    return pb.TrialResult(**fields)


REPORT_CASES = [  # (what, results of the report, words the status details must contain)
    ("no results", lambda t: [], ["results"]),
    ("status unset", lambda t: [ok_result(t, status=pb.TRIAL_STATUS_UNSPECIFIED)], ["results[0].status"]),
    ("unknown status", lambda t: [ok_result(t, status=99)], ["results[0].status", "99"]),
    ("OK without samples", lambda t: [ok_result(t, samples_s=[])], ["samples_s"]),
    ("NaN sample", lambda t: [ok_result(t, samples_s=[1e-5, math.nan])], ["samples_s[1]"]),
    ("negative median", lambda t: [ok_result(t, median_s=-1.0)], ["median_s"]),
    ("CI not around the median", lambda t: [ok_result(t, ci_low_s=2e-5, ci_high_s=3e-5)], ["ci_low_s"]),
    ("attempt zero", lambda t: [ok_result(t, attempt=0)], ["attempt"]),
    ("empty task id", lambda t: [ok_result(t, task_id="")], ["task_id"]),
    ("OK with an infinite error", lambda t: [ok_result(t, max_abs_error=math.inf)], ["max_abs_error"]),
    ("one good, one bad", lambda t: [ok_result(t), ok_result(t, median_s=math.inf)], ["results[1].median_s"]),
]


def test_malformed_reports_are_invalid_argument_and_write_nothing(bad_farm):
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {bad_farm.admin_token}"}) as http:
        job = http.post(bad_farm.url + "/v1/jobs", json=job_body(trials=1)).json()
    with grpc.insecure_channel(f"127.0.0.1:{bad_farm.grpc_port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        reg = stub.Register(pb.RegisterRequest(enrolment_token=bad_farm.enrolment_token, agent_name="test-double",
                                               device=fingerprint(), codegen_version=cc.codegen_version(),
                                               max_parallel_builds=1), timeout=10)
        creds = {"agent_id": reg.agent_id, "session_token": reg.session_token}
        leased = wait_until(lambda: stub.LeaseTasks(pb.LeaseRequest(max_tasks=4, **creds), timeout=10).tasks,
                            "the job's task to be leasable", 30)
        assert len(leased) == 1 and leased[0].job_id == job["id"]
        task = leased[0]
        before = bad_farm.rows()
        for what, results, words in REPORT_CASES:
            with pytest.raises(grpc.RpcError) as failure:
                stub.ReportResults(pb.ReportRequest(results=results(task), **creds), timeout=10)
            assert failure.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (what, failure.value.details())
            assert all(w in failure.value.details() for w in words), (what, failure.value.details())
            assert bad_farm.rows() == before, what
        with pytest.raises(grpc.RpcError) as failure:  # a good report with a wrong session: refused too
            stub.ReportResults(pb.ReportRequest(results=[ok_result(task)], agent_id=reg.agent_id,
                                                session_token="not-the-session"), timeout=10)
        assert failure.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert bad_farm.rows() == before

        answer = stub.ReportResults(pb.ReportRequest(results=[ok_result(task)], **creds), timeout=10)
        assert list(answer.accepted_task_ids) == [task.task_id]
        after = bad_farm.rows()
        assert after["trials"] == before["trials"] + 1 and after["schedule_versions"] == before["schedule_versions"] + 1
