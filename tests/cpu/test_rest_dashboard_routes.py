"""The REST routes the dashboard reads besides the job, best and ops routes: agents with their leases, a job's
tuning curve, the schedule keys, and the caller's scope. On SQLite and PostgreSQL, like test_rest_api.py."""
from __future__ import annotations

import pytest

from tests.cpu.rest_support import ADMIN, CPU_CLASS, MATMUL, MATMUL_KEY, MEDIANS, READER, make_farm, valid_configs
from tests.db.conftest import db_engine, db_url, session_factory  # noqa: F401  (fixtures)
from tuner_server import repo
from tuner_server.db import session_scope


@pytest.fixture
def farm(session_factory):  # noqa: F811
    return make_farm(session_factory, max_trials_per_job=100)


def test_whoami_says_the_tokens_scope_and_refuses_without_one(farm):
    assert farm.get("/v1/whoami", token=READER).json() == {"scope": "read"}
    assert farm.get("/v1/whoami", token=ADMIN).json() == {"scope": "admin"}
    refused = farm.get("/v1/whoami", token=None)
    assert refused.status_code == 401 and refused.json()["error"].startswith("missing bearer token")


def test_agents_show_class_state_heartbeat_and_the_task_they_hold(farm):
    agent_id = farm.seeded["agent_id"]
    idle = farm.get("/v1/agents").json()
    assert idle["total"] == 1
    (agent,) = idle["items"]
    assert (agent["id"], agent["device_class"], agent["status"], agent["leases"]) == (agent_id, CPU_CLASS, "active", [])
    assert agent["last_heartbeat"]
    job_id = farm.post("/v1/jobs", json={"op": "matmul", "params": MATMUL, "device": "cpu", "trials": 2}).json()["id"]
    with session_scope(farm.factory) as s:
        repo.enqueue_configs(job_id, valid_configs(1), session=s)
        (leased,) = repo.lease_tasks(agent_id, 1, session=s)
    (busy,) = farm.get("/v1/agents?status=active").json()["items"]
    (lease,) = busy["leases"]
    assert (lease["task_id"], lease["job_id"], lease["kind"], lease["workload"]) == (
        leased.task_id, job_id, "MEASURE", MATMUL_KEY)
    assert farm.get("/v1/agents?status=lost").json() == {"items": [], "total": 0, "limit": 100, "offset": 0}
    bad = farm.get("/v1/agents?status=sleeping")
    assert bad.status_code == 422 and bad.json()["error"].startswith("invalid request: query.status")


def test_curve_lists_every_trial_in_order_with_the_default_and_the_reference(farm):
    """The seeded job measured configs[0] (the untuned default, 3e-4 s), then two faster ones; numpy (2e-4 s) was
    timed in its final comparisons."""
    job_id, trials = farm.seeded["job_id"], farm.seeded["trials"]
    curve = farm.get(f"/v1/jobs/{job_id}/curve").json()
    assert (curve["job_id"], curve["workload"], curve["state"], curve["total"]) == (job_id, MATMUL_KEY, "done", 3)
    assert [p["trial_id"] for p in curve["points"]] == trials
    assert [p["median_s"] for p in curve["points"]] == list(MEDIANS)
    assert [p["status"] for p in curve["points"]] == ["OK"] * 3
    times = [p["created_at"] for p in curve["points"]]
    assert times == sorted(times) and len(set(times)) == 3
    assert curve["points"][2]["gflops"] == pytest.approx(2 * 64**3 / 1e-4 / 1e9)
    assert (curve["default"]["trial_id"], curve["default"]["config"]) == (trials[0], farm.seeded["configs"][0])
    assert curve["reference"] == "numpy" and curve["reference_median_s"] == pytest.approx(2e-4)
    first = farm.get(f"/v1/jobs/{job_id}/curve?limit=1").json()
    assert ([p["trial_id"] for p in first["points"]], first["total"], first["limit"]) == ([trials[0]], 3, 1)
    assert first["default"]["trial_id"] == trials[0]


def test_curve_of_a_job_not_measured_yet_is_empty_and_bounds_are_enforced(farm):
    job_id = farm.post("/v1/jobs", json={"op": "matmul", "params": MATMUL, "device": "cpu", "trials": 2}).json()["id"]
    curve = farm.get(f"/v1/jobs/{job_id}/curve").json()
    assert (curve["points"], curve["total"], curve["default"], curve["reference"]) == ([], 0, None, None)
    too_many = farm.get(f"/v1/jobs/{job_id}/curve?limit=10001")
    assert too_many.status_code == 422 and too_many.json()["detail"][0]["loc"] == "query.limit"
    missing = farm.get("/v1/jobs/no-such-job/curve")
    assert missing.status_code == 404 and missing.json() == {"error": "no job no-such-job", "detail": None}
    assert farm.get(f"/v1/jobs/{job_id}/curve", token=None).status_code == 401


def test_schedule_keys_list_each_head_with_op_and_params(farm):
    keys = farm.get("/v1/best/keys").json()
    assert keys["total"] == 1
    (key,) = keys["items"]
    assert (key["workload"], key["op"], key["params"], key["device_class"]) == ("matmul(M=64,N=64,K=64,dtype=float32)",
                                                                              "matmul", MATMUL, CPU_CLASS)
    assert (key["head_version"], key["pinned"]) == (3, False)
    pinned = farm.post("/v1/best/pin", json={"op": "matmul", "params": MATMUL, "device": CPU_CLASS, "version": 2})
    assert pinned.status_code == 201, pinned.text
    (key,) = farm.get("/v1/best/keys?op=matmul").json()["items"]
    assert (key["head_version"], key["pinned"]) == (4, True)
    assert farm.get("/v1/best/keys?op=softmax").json()["total"] == 0
    assert farm.get("/v1/best/keys?device=cuda-nvidia-h200-sm90").json()["items"] == []
    assert farm.get("/v1/best/keys?limit=0").status_code == 422
