"""REST API (jobs, ops, devices, auth, errors) through FastAPI's TestClient, on SQLite and PostgreSQL.

The database fixtures come from tests/db/conftest.py: every test runs once per backend (PostgreSQL skips cleanly
when its binaries are missing). Every refused request is checked to leave each table's row count unchanged.
"""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

import compiler_core as cc
from tests.cpu.rest_support import ADMIN, CPU_CLASS, MATMUL, MATMUL_KEY, READER, make_farm
from tests.db.conftest import db_engine, db_url, session_factory  # noqa: F401  (fixtures)
from tuner_server import measure_policy
from tuner_server.api.app import create_app
from tuner_server.db import make_engine, make_session_factory
from tuner_server.settings import Settings

JOB = {"op": "matmul", "params": MATMUL, "device": "cpu", "trials": 8}


@pytest.fixture
def farm(session_factory):  # noqa: F811
    return make_farm(session_factory, max_trials_per_job=100, max_dim=4096, max_request_bytes=4096)


def _job(**changes) -> dict:
    body = {**JOB, **changes}
    return {k: v for k, v in body.items() if v is not None}


def test_health_and_docs_need_no_token(farm):
    health = farm.get("/health", token=None)
    assert health.status_code == 200 and health.json()["database"] == "ok"
    assert health.json()["codegen_version"] == cc.codegen_version()
    assert farm.get("/docs", token=None).status_code == 200
    paths = farm.get("/openapi.json", token=None).json()["paths"]
    for path in ("/v1/ops", "/v1/devices", "/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/trials",
                 "/v1/jobs/{job_id}/comparisons", "/v1/best",
                 "/v1/best/history", "/v1/best/diff", "/v1/best/rollback", "/v1/best/pin", "/v1/export",
                 "/v1/import", "/v1/tokens", "/v1/tokens/{token_id}", "/metrics"):
        assert path in paths


def test_health_is_503_when_the_database_is_unreachable(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")
    response = TestClient(create_app(Settings(), make_session_factory(engine), None)).get("/health")
    assert response.status_code == 503 and response.json()["error"].startswith("database unreachable")


def test_ops_list_params_dtypes_knobs_and_strategies(farm):
    body = farm.get("/v1/ops").json()
    ops = {op["name"]: op for op in body["items"]}
    assert body["total"] == len(cc.OPS) == len(ops)
    matmul = ops["matmul"]
    assert matmul["dtypes"] == ["float32", "float16", "bfloat16"]
    assert all(op["dtypes"] == ["float32", "float16", "bfloat16"] for op in ops.values())
    assert [p["name"] for p in matmul["params"]] == ["M", "N", "K", "dtype"]
    assert {"mr", "nr", "kc"} <= {k["name"] for k in matmul["spaces"]["c"]["knobs"]}
    assert {"BM", "BN", "BK"} <= {k["name"] for k in matmul["spaces"]["cuda"]["knobs"]}
    assert {"random", "grid"} <= set(body["strategies"])
    page = farm.get("/v1/ops?limit=2&offset=1").json()
    assert (len(page["items"]), page["total"], page["offset"]) == (2, len(cc.OPS), 1)


def test_devices_list_classes_with_their_agents(farm):
    body = farm.get("/v1/devices").json()
    assert body["total"] == 1
    (device,) = body["items"]
    assert (device["device_class"], device["kind"], device["status"], device["active_agents"]) == (
        CPU_CLASS, "cpu", "online", 1)
    assert device["agents"][0]["id"] == farm.seeded["agent_id"]
    assert farm.get("/v1/devices?kind=cuda").json()["total"] == 0


def test_create_job_wakes_the_driver_and_shows_progress(farm):
    created = farm.post("/v1/jobs", json=_job(strategy="grid", priority=5, seed=7, measure={"warmup": 1}))
    assert created.status_code == 201, created.text
    job = created.json()
    assert (job["state"], job["workload"], job["trial_budget"], job["strategy"]) == ("queued", MATMUL_KEY, 8, "grid")
    assert job["measure_options"] == {**measure_policy.DEFAULTS["cpu"], "warmup": 1}  # stored fully resolved
    assert job["created_by"] == "rest:admin" and job["phase"] == "search" and job["result"] is None
    assert job["progress"]["queued"] == 0 and job["progress"]["best"] is None
    assert (job["progress"]["phase"], job["progress"]["comparing"]) == ("search", 0)
    assert farm.get(f"/v1/jobs/{job['id']}").json()["measure_options"] == job["measure_options"]
    assert farm.driver.wakes == 1
    listed = farm.get("/v1/jobs?state=queued").json()
    assert listed["total"] == 1 and listed["items"][0]["id"] == job["id"]
    assert farm.get("/v1/jobs").json()["total"] == 2
    assert farm.get("/v1/jobs?limit=1&offset=1").json()["items"][0]["id"] == farm.seeded["job_id"]


def test_finished_job_progress_has_best_with_gflops(farm):
    job = farm.get(f"/v1/jobs/{farm.seeded['job_id']}").json()
    progress = job["progress"]
    assert (job["state"], job["device_class"], job["phase"]) == ("done", CPU_CLASS, "final")
    assert (progress["phase"], progress["comparing"], progress["queued"]) == ("final", 0, 0)
    assert (progress["completed"], progress["verified"], progress["failed"]) == (3, 3, 0)
    best = progress["best"]
    assert best["median_s"] == 1e-4 and best["gflops"] == pytest.approx(2 * 64**3 / 1e-4 / 1e9)
    assert best["gbps"] == pytest.approx(3 * 64 * 64 * 4 / 1e-4 / 1e9)
    trials = farm.get(f"/v1/jobs/{farm.seeded['job_id']}/trials?limit=2&offset=1").json()
    assert trials["total"] == 3 and [t["id"] for t in trials["items"]] == farm.seeded["trials"][1:]
    assert farm.get(f"/v1/jobs/{farm.seeded['job_id']}/trials?status=OK").json()["total"] == 3


def test_finished_job_result_is_the_head_re_measured_head_to_head(farm):
    """The seeded job's final phase compared its other two trials with the head (1e-4 s), numpy (2e-4 s) timed in
    the same rounds; the default (configs[0], 3e-4 s) is one of them."""
    trials = farm.seeded["trials"]
    result = farm.get(f"/v1/jobs/{farm.seeded['job_id']}").json()["result"]
    assert (result["head_trial_id"], result["config"]) == (trials[2], farm.seeded["configs"][2])
    assert result["head_median_s"] == pytest.approx(1e-4) and result["reference_median_s"] == pytest.approx(2e-4)
    assert (result["reference"], result["comparisons"], result["noisy"]) == ("numpy", 2, False)
    assert result["speedup_vs_reference"]["ratio"] == pytest.approx(2.0)
    default = result["speedup_vs_default"]
    assert default["ratio"] == pytest.approx(3.0) and default["ci_low"] <= 3.0 <= default["ci_high"]
    listed = farm.get(f"/v1/jobs/{farm.seeded['job_id']}/comparisons").json()
    assert [(c["purpose"], c["outcome"]) for c in listed] == [("challenge", "promoted")] * 2 + [("final", "kept")] * 2
    assert [(c["candidate_trial_id"], c["baseline_trial_id"]) for c in listed] == [
        (trials[1], trials[0]), (trials[2], trials[1]), (trials[1], trials[2]), (trials[0], trials[2])]
    assert [c["ratio"] for c in listed] == pytest.approx([2 / 3, 1 / 2, 2, 3])
    assert all(c["rounds"] == 9 and c["ratio_ci_low"] <= c["ratio"] <= c["ratio_ci_high"] for c in listed)
    assert [c["reference"] for c in listed] == [None, None, "numpy", "numpy"]
    trial = farm.get(f"/v1/jobs/{farm.seeded['job_id']}/trials?limit=1").json()["items"][0]
    assert trial["rel_ci"] == pytest.approx(0.02) and "contention" in trial and "cpus" in trial


@pytest.mark.parametrize("op, params", [("matmul", {**MATMUL, "dtype": "bfloat16"}),
                                        ("softmax", {"rows": 64, "cols": 100, "dtype": "bfloat16"}),
                                        ("layernorm", {"rows": 64, "cols": 100, "dtype": "float16"})])
def test_half_dtype_jobs_validate_and_keep_their_dtype(farm, op, params):
    created = farm.post("/v1/jobs", json=_job(op=op, params=params))
    assert created.status_code == 201, created.text
    assert created.json()["workload"].endswith(f"dtype={params['dtype']})")


def test_created_job_stores_every_measure_option_and_nothing_when_refused(farm):
    options = {"warmup": 0, "min_repeats": 3, "max_repeats": 50, "min_time_s": 0.01, "max_time_s": 1.0,
               "target_rel_ci": 0.05, "max_contention": 0.2, "timeout_s": 30.0, "flush_cache": False,
               "recheck_top": 0, "min_gain": 0.02, "time_reference": False}
    created = farm.post("/v1/jobs", json=_job(measure=options))
    assert created.status_code == 201, created.text
    assert farm.get(f"/v1/jobs/{created.json()['id']}").json()["measure_options"] == options
    before = farm.rows()
    refused = farm.post("/v1/jobs", json=_job(measure={**options, "min_time_s": 2.0}))
    assert refused.status_code == 422 and "measure.min_time_s (2.0) exceeds measure.max_time_s (1.0)" in \
        refused.json()["error"]
    assert farm.rows() == before


def test_cancel_job_is_admin_only_and_wakes_the_driver(farm):
    job_id = farm.post("/v1/jobs", json=_job()).json()["id"]
    assert farm.delete(f"/v1/jobs/{job_id}", token=READER).status_code == 403
    cancelled = farm.delete(f"/v1/jobs/{job_id}")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    assert farm.driver.wakes == 2
    again = farm.delete(f"/v1/jobs/{job_id}")
    assert again.status_code == 409 and "cancelled" in again.json()["error"]


def test_auth_statuses_and_headers(farm):
    missing = farm.get("/v1/jobs", token=None)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    wrong = farm.get("/v1/jobs", token="tf_not_a_real_token_at_all")
    assert wrong.status_code == 401 and "invalid_token" in wrong.headers["www-authenticate"]
    basic = farm.client.get("/v1/jobs", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert basic.status_code == 401
    assert farm.get("/v1/jobs", token=ADMIN).status_code == 200  # admin may read
    assert farm.get("/metrics", token=None).status_code == 401
    assert farm.get("/metrics").status_code == 200


# (method, path, request kwargs, status, words the error must contain)
BAD = [
    ("post", "/v1/jobs", {"json": _job(op="matmull")}, 422, ["body.op", "'softmax'", "(got 'matmull')"]),
    ("post", "/v1/jobs", {"json": _job(params={"M": 64, "N": 64})}, 422, ["missing param K", "expected M, N, K"]),
    ("post", "/v1/jobs", {"json": _job(params={**MATMUL, "Q": 1})}, 422, ["unknown param(s) Q"]),
    ("post", "/v1/jobs", {"json": _job(params={**MATMUL, "M": "abc"})}, 422, ["body.params.M: 'abc' is a string",
                                                                              "an integer from 1 to 1048576"]),
    *[("post", "/v1/jobs", {"json": _job(params={**MATMUL, "M": text})}, 422,
       [f"body.params.M: {text!r} is a string; M is an integer from 1 to 1048576, sent as a JSON number"])
      for text in ("16", " 16", "+16", "016")],  # compiler_core would read each as 16
    ("post", "/v1/jobs", {"json": _job(params={**MATMUL, "M": 1.5})}, 422, ["body.params.M"]),
    ("post", "/v1/jobs", {"json": _job(params={**MATMUL, "M": 0})}, 422, ["M=0 out of range [1, 1048576]"]),
    ("post", "/v1/jobs", {"json": _job(params={**MATMUL, "M": 8192})}, 422, ["M=8192 exceeds the limit 4096"]),
    ("post", "/v1/jobs", {"json": _job(params={**MATMUL, "dtype": "int8"})}, 422,
     ["unsupported dtype 'int8'", "allowed: float32, float16, bfloat16"]),
    ("post", "/v1/jobs", {"json": _job(trials=101)}, 422, ["trials=101", "limit of 100"]),
    ("post", "/v1/jobs", {"json": _job(trials=0)}, 422, ["body.trials", "greater than or equal to 1"]),
    ("post", "/v1/jobs", {"json": _job(device="cpu-x86_64-avx512f-64c")}, 422, ["unknown device class", CPU_CLASS]),
    ("post", "/v1/jobs", {"json": _job(strategy="annealing")}, 422, ["unknown search strategy", "known: ", "random"]),
    ("post", "/v1/jobs", {"json": _job(strategy_options={"temperature": 2})}, 422, ["unknown option(s)"]),
    ("post", "/v1/jobs", {"json": _job(strategy_options={"trust_memory": 2.0, "members": 10**5})}, 422,
     ["'members'=100000 must be at most 32", "'trust_memory'=2.0 must be at most 1.0"]),  # refused, not failed later
    ("post", "/v1/jobs", {"json": _job(measure={"warmup": -1})}, 422, ["body.measure.warmup",
                                                                       "greater than or equal to 0"]),
    ("post", "/v1/jobs", {"json": _job(measure={"warmups": 1})}, 422,
     ["body.measure.warmups", "'warmups' is not one of warmup, min_repeats"]),
    ("post", "/v1/jobs", {"json": _job(measure={"min_repeats": True})}, 422, ["body.measure.min_repeats"]),
    ("post", "/v1/jobs", {"json": _job(measure={"min_repeats": 4.0})}, 422, ["body.measure.min_repeats"]),
    ("post", "/v1/jobs", {"json": _job(measure={"flush_cache": 1})}, 422, ["body.measure.flush_cache"]),
    ("post", "/v1/jobs", {"json": _job(measure={"target_rel_ci": 2})}, 422, ["body.measure.target_rel_ci",
                                                                                 "less than or equal to 1"]),
    ("post", "/v1/jobs", {"json": _job(measure={"min_repeats": 50, "max_repeats": 10})}, 422,
     ["measure.min_repeats (50) exceeds measure.max_repeats (10)"]),
    ("post", "/v1/jobs", {"json": {**JOB, "colour": "red"}}, 422,
     ["body.colour", "'colour' is not one of op, params, device, trials"]),
    ("post", "/v1/jobs", {"json": _job(priority=5000)}, 422, ["body.priority"]),
    ("post", "/v1/jobs", {"content": b'{"op": "matmul", ', "headers": {"Content-Type": "application/json"}},
     400, ["malformed JSON body"]),
    ("post", "/v1/jobs", {"json": {**JOB, "pad": "x" * 5000}}, 413, ["too large", "4096"]),
    ("post", "/v1/jobs", {"content": lambda: iter([b'{"op": "', b"x" * 3000, b"y" * 3000]),  # chunked
                          "headers": {"Content-Type": "application/json"}}, 413, ["too large"]),
    ("post", "/v1/jobs", {"json": JOB, "token": READER}, 403, ["admin token", "'read'"]),
    ("post", "/v1/jobs", {"json": JOB, "token": None}, 401, ["missing bearer token"]),
    ("get", "/v1/jobs/no-such-job", {}, 404, ["no job no-such-job"]),
    ("get", "/v1/jobs/no-such-job/trials", {}, 404, ["no job no-such-job"]),
    ("get", "/v1/jobs/no-such-job/comparisons", {}, 404, ["no job no-such-job"]),
    ("delete", "/v1/jobs/no-such-job", {}, 404, ["no job no-such-job"]),
    ("get", "/v1/jobs?state=sleeping", {}, 422, ["query.state", "'queued'"]),
    ("get", "/v1/jobs?workload=matmul(M=1)", {}, 422, ["bad workload", "missing param N"]),
    ("get", "/v1/jobs?limit=0", {}, 422, ["query.limit"]),
    ("get", "/v1/no-such-route", {}, 404, ["Not Found"]),
]


@pytest.mark.parametrize(("method", "path", "kwargs", "status", "words"), BAD,
                         ids=[f"{i}-{b[3]}" for i, b in enumerate(BAD)])
def test_bad_requests_say_what_is_wrong_and_change_nothing(farm, method, path, kwargs, status, words):
    before = farm.rows()
    kwargs = {k: v() if callable(v) else v for k, v in kwargs.items()}  # a fresh chunk iterator per run
    response = getattr(farm, method)(path, **kwargs)
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "detail"}
    for word in words:
        assert word in body["error"] or word in str(body["detail"]), (word, body)
    assert farm.rows() == before
    assert farm.driver.wakes == 0


def test_unknown_device_lists_the_known_classes_in_detail(farm):
    response = farm.post("/v1/jobs", json=_job(device="cuda-nvidia-a100-sm80"))
    assert response.status_code == 422
    assert response.json()["detail"] == {"known_device_classes": [CPU_CLASS]}


def test_metrics_count_requests_by_route_template(farm):
    farm.get(f"/v1/jobs/{farm.seeded['job_id']}")
    text = farm.get("/metrics").text
    assert 'tunefarm_http_request_duration_seconds_count{method="GET",route="/v1/jobs/{job_id}",status="200"}' in text
    assert "tunefarm_leases_granted" in text  # the process-wide registry of tuner_server.metrics, shared with gRPC
