"""Out-of-range and hostile input at the REST edge, on SQLite and PostgreSQL: each probe that once was a 500
(OverflowError on SQLite, DataError on PostgreSQL, a zone conversion past year 9999, a NUL in text) is a 4xx
naming the field, and writes nothing; the OpenAPI documents the bounds and the error bodies actually sent; imports
are checked for plausibility line by line; exports are strict JSON; an admin can pin past an implausible head."""
from __future__ import annotations

import json
from urllib.parse import quote

import pytest

import compiler_core as cc
from tests.cpu.rest_support import CPU_CLASS, MATMUL, MATMUL_KEY, MATMUL_QUERY, make_farm
from tests.db.conftest import db_engine, db_url, session_factory  # noqa: F401  (fixtures)
from tests.db.factories import CPU_TARGET, at
from tuner_server import repo, strict_json
from tuner_server.db import Trial, session_scope
from tuner_server.repo import schedules
from tuner_server.repo.trials import append_trial

BEYOND_64_BITS = 2**64 + 1
BEYOND_32_BITS = 2**31  # past the Integer columns (versions) on PostgreSQL


@pytest.fixture
def farm(session_factory):  # noqa: F811
    return make_farm(session_factory)


def _key(**extra) -> dict:
    return {"op": "matmul", "params": MATMUL, "device": CPU_CLASS, **extra}


def _get_probes(farm) -> list[tuple[str, str]]:
    job_id = farm.seeded["job_id"]
    return [(path, field) for n in (BEYOND_64_BITS, BEYOND_32_BITS) for path, field in [
        (f"/v1/jobs?offset={n}", "query.offset"),
        (f"/v1/jobs/{job_id}/trials?offset={n}", "query.offset"),
        (f"/v1/best/history?{MATMUL_QUERY}&offset={n}", "query.offset"),
        (f"/v1/best/keys?offset={n}", "query.offset"),
        (f"/v1/agents?offset={n}", "query.offset"),
        (f"/v1/devices?offset={n}", "query.offset"),
        (f"/v1/ops?offset={n}", "query.offset"),
        (f"/v1/best?{MATMUL_QUERY}&version={n}", "query.version"),
        (f"/v1/best/diff?{MATMUL_QUERY}&v1={n}&v2=1", "query.v1"),
        (f"/v1/best/diff?{MATMUL_QUERY}&v1=1&v2={n}", "query.v2"),
        (f"/v1/best?op=matmul&M={n}&N=64&K=64&device={CPU_CLASS}", "query.M"),
    ]] + [
        (f"/v1/best?{MATMUL_QUERY}&as_of={quote('0001-01-01T00:00:00+01:00')}", "as_of="),
        (f"/v1/best?{MATMUL_QUERY}&as_of=9999-12-31T23:59:59-01:00", "as_of="),
        ("/v1/jobs/ab%00c", "path.job_id"),
        ("/v1/jobs?device_class=cpu-x%00", "query.device_class"),
        (f"/v1/best?{MATMUL_QUERY.replace('op=matmul', 'op=elementwise')}&expr=x%00", "query.expr"),
    ]


def test_out_of_range_queries_are_422_naming_the_field(farm):
    before = farm.rows()
    for path, field in _get_probes(farm):
        response = farm.get(path)
        assert response.status_code == 422, (path, response.text)
        body = response.json()
        assert set(body) == {"error", "detail"} and field in body["error"], (path, body)
    assert farm.rows() == before


def test_the_largest_allowed_offset_is_an_empty_page(farm):
    assert farm.get("/v1/jobs?offset=2147483647").json()["items"] == []
    assert farm.get(f"/v1/best/history?{MATMUL_QUERY}&offset=2147483647").json()["total"] == 3


def test_out_of_range_bodies_are_422_or_400_naming_the_field(farm):
    job = {"op": "matmul", "params": MATMUL, "device": "cpu", "trials": 2}
    probes = [
        ("/v1/best/rollback", _key(to_version=BEYOND_64_BITS), 422, "body.to_version"),
        ("/v1/best/rollback", _key(to_version=BEYOND_32_BITS), 422, "body.to_version"),
        ("/v1/best/pin", _key(version=BEYOND_64_BITS), 422, "body.version"),
        ("/v1/best/pin", _key(version=True), 422, "body.version"),
        ("/v1/best/pin", _key(version=1, message="a\u0000b"), 400, "NUL character"),
        ("/v1/best/pin", _key(version=1, params={**MATMUL, "M": BEYOND_64_BITS}), 422, "body.params.M"),
        ("/v1/jobs", {**job, "trials": BEYOND_64_BITS}, 422, "body.trials"),
        ("/v1/jobs", {**job, "seed": BEYOND_64_BITS}, 422, "body.seed"),
        ("/v1/jobs", {**job, "priority": BEYOND_64_BITS}, 422, "body.priority"),
        ("/v1/jobs", {**job, "strategy": "grid", "strategy_options": {"stride": BEYOND_64_BITS}}, 422,
         "body.strategy_options.stride"),
        ("/v1/tokens", {"name": "ci\u0000reader"}, 400, "NUL character"),
    ]
    before = farm.rows()
    for path, body, status, field in probes:
        response = farm.post(path, json=body)
        assert response.status_code == status, (path, body, response.text)
        assert field in response.json()["error"], (path, response.json())
    assert farm.rows() == before


@pytest.mark.parametrize("text, words", [
    ('"strategy_options": {"epsilon": NaN}', "NaN is not JSON"),
    ('"measure": {"min_time_s": Infinity}', "Infinity is not JSON"),
    ('"measure": {"min_time_s": 1e999}', "beyond a double's range"),
])
def test_a_body_with_non_finite_numbers_is_malformed(farm, text, words):
    body = '{"op": "matmul", "params": {"M": 64, "N": 64, "K": 64}, "device": "cpu", "trials": 2, ' + text + "}"
    before = farm.rows()
    response = farm.post("/v1/jobs", content=body.encode(), headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and words in response.json()["error"], response.text
    assert farm.rows() == before and farm.driver.wakes == 0


def test_a_405_allows_every_method_of_the_path(farm):
    assert farm.client.put("/v1/jobs").headers["allow"] == "GET, HEAD, POST"
    job = farm.client.options(f"/v1/jobs/{farm.seeded['job_id']}")
    assert job.status_code == 405 and job.headers["allow"] == "DELETE, GET, HEAD"
    assert "allowed: DELETE, GET, HEAD" in job.json()["error"]


def test_the_openapi_documents_bounds_params_and_the_error_body_sent(farm):
    spec = farm.get("/openapi.json", token=None).json()
    assert "HTTPValidationError" not in json.dumps(spec)  # FastAPI's own 422 body is never sent
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/ErrorBody"), (method, path, status)
            for param in operation.get("parameters", []):
                schema = param["schema"].get("anyOf", [param["schema"]])[0]
                if schema.get("type") == "integer":
                    assert "maximum" in schema and "minimum" in schema, (method, path, param["name"])
    assert "401" in spec["paths"]["/metrics"]["get"]["responses"]
    for path in ("/v1/best", "/v1/best/history", "/v1/best/diff"):
        names = {p["name"] for p in spec["paths"][path]["get"]["parameters"]}
        assert {"op", "device", "M", "N", "K", "dtype", "rows", "cols", "expr", "batch", "stride", "heads", "seq_q",
                "seq_kv", "head_dim", "causal"} <= names, path
    best = {p["name"]: p["schema"] for p in spec["paths"]["/v1/best"]["get"]["parameters"]}
    assert best["as_of"]["format"] == "date-time" and best["op"]["enum"] == sorted(cc.OPS)
    causal = best["causal"].get("anyOf", [best["causal"]])[0]
    assert (causal["minimum"], causal["maximum"]) == (0, 1)
    pin = spec["components"]["schemas"]["PinRequest"]["properties"]
    assert "trial_id" in pin and pin["version"]["anyOf"][0]["maximum"] == 2**31 - 1


# ---- imports and exports ---------------------------------------------------------------------------------------
def _export_lines(farm) -> list[dict]:
    return [json.loads(line) for line in farm.get(f"/v1/export?workload={MATMUL_KEY}").text.splitlines()]


def _faster_copy(lines: list[dict], **changes) -> list[dict]:
    """The export with its last trial 10x faster and new (so it imports and would become the head), changed."""
    out = [dict(r) for r in lines]
    last = max(i for i, r in enumerate(out) if r["type"] == "trial")
    t = out[last]
    t.update(median_s=t["median_s"] / 10, ci_low_s=t["ci_low_s"] / 10, ci_high_s=t["ci_high_s"] / 10,
             samples=[x / 10 for x in t["samples"]], created_at=at(100).isoformat())
    t.update(changes)
    return out


def _body(records: list[dict]) -> bytes:
    return "\n".join(json.dumps(r) for r in records).encode()


def test_a_plausible_faster_import_becomes_the_head(farm):
    response = farm.post("/v1/import", content=_body(_faster_copy(_export_lines(farm))))
    assert response.status_code == 200 and response.json()["versions"] == 1, response.text


@pytest.mark.parametrize("changes, words", [
    ({"median_s": -0.001, "ci_low_s": None, "ci_high_s": None}, "median_s must be > 0"),
    ({"samples": [-1e-5]}, "samples[0] must be > 0"),
    ({"median_s": 1.0}, "outside its samples' range"),
    ({"ci_low_s": 1.0}, "does not hold median_s"),
    ({"status": "COMPILE_ERROR"}, "a COMPILE_ERROR trial was not timed"),
    ({"samples": []}, "an OK trial has its samples and median_s"),
    ({"codegen_version": ""}, "codegen_version must be"),
    ({"created_at": "0001-01-01T00:00:00+01:00"}, "created_at '0001-01-01T00:00:00+01:00' must be between"),
    ({"created_at": "9999-12-31T23:59:59-01:00"}, "must be between"),
    ({"created_at": "2999-01-01T00:00:00+00:00"}, "is in the future"),
])
def test_an_implausible_import_is_refused_naming_its_line_and_writes_nothing(farm, changes, words):
    records = _faster_copy(_export_lines(farm), **changes)
    line = 1 + max(i for i, r in enumerate(records) if r["type"] == "trial")
    before = farm.rows()
    response = farm.post("/v1/import", content=_body(records))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert f"line {line}: trial" in error and words in error, error
    assert farm.rows() == before


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_import_is_refused_naming_its_line(farm, value):
    records = _faster_copy(_export_lines(farm))
    line = 1 + max(i for i, r in enumerate(records) if r["type"] == "trial")
    body = _body(records).decode().splitlines()
    body[line - 1] = body[line - 1].replace('"median_s": ', f'"median_s": {value}, "was": ', 1)
    before = farm.rows()
    response = farm.post("/v1/import", content="\n".join(body).encode())
    assert response.status_code == 422 and f"line {line}: " in response.json()["error"], response.text
    assert farm.rows() == before


def test_out_of_range_numbers_in_an_import_are_refused(farm):
    records = _export_lines(farm)
    version = next(i for i, r in enumerate(records) if r["type"] == "schedule_version")
    for changes, words in [({"version": BEYOND_64_BITS}, "version must be between 1 and 2147483647"),
                           ({"parent_version": BEYOND_64_BITS}, "parent_version must be between"),
                           ({"created_at": "0001-01-01T00:00:00+01:00"}, "must be between")]:
        bad = [dict(r, **changes) if i == version else r for i, r in enumerate(records)]
        response = farm.post("/v1/import", content=_body(bad))
        assert response.status_code == 422 and f"line {version + 1}: schedule_version" in response.json()["error"]
        assert words in response.json()["error"], response.json()


def _legacy_nan_trial(farm) -> str:
    """A trial stored before imports were checked: a NaN median (SQLite kept it; PostgreSQL's float8 can too)."""
    with session_scope(farm.factory) as s:
        workload = repo.find_workload(MATMUL_KEY, session=s)
        row = append_trial(session=s, workload=workload, device_class=CPU_CLASS, config={"legacy": 1},
                           codegen_version="cg-old", status="OK", created_at=at(50), samples=[1e-3],
                           median_s=float("nan"))
        return row.id


def test_exports_and_reads_are_strict_json_even_over_old_nan_rows(farm):
    trial_id = _legacy_nan_trial(farm)
    exported = farm.get("/v1/export")
    assert exported.status_code == 200
    records = [strict_json.loads(line) for line in exported.text.splitlines()]  # no bare NaN anywhere
    assert next(r for r in records if r.get("id") == trial_id)["median_s"] is None
    with session_scope(farm.factory) as s:
        s.get(Trial, trial_id).job_id = farm.seeded["job_id"]
    trials = farm.get(f"/v1/jobs/{farm.seeded['job_id']}/trials")
    assert trials.status_code == 200 and "NaN" not in trials.text


# ---- pinning past an implausible head --------------------------------------------------------------------------
def _implausible_head(farm) -> str:
    """A negative median that became the head before imports were checked: no measured trial can beat it."""
    with session_scope(farm.factory) as s:
        workload = repo.find_workload(MATMUL_KEY, session=s)
        bad = append_trial(session=s, workload=workload, device_class=CPU_CLASS, config={"bad": 1},
                           codegen_version="cg-old", status="OK", created_at=at(60), samples=[1e-4],
                           median_s=-0.001)
        assert schedules.maybe_promote(bad, session=s, author="old-import").version == 4
        return bad.id


def test_an_admin_pins_a_verified_trial_over_an_implausible_head(farm):
    bad = _implausible_head(farm)
    good = farm.seeded["trials"][2]
    refused = farm.post("/v1/best/pin", json=_key(version=None, trial_id=bad))
    assert refused.status_code == 409 and "cannot be the head" in refused.json()["error"]
    both = farm.post("/v1/best/pin", json=_key(version=3, trial_id=good))
    assert both.status_code == 422 and "not both" in both.json()["error"]
    assert farm.post("/v1/best/pin", json=_key(version=None, trial_id="no-such-trial")).status_code == 404
    other = farm.post("/v1/best/pin", json={**_key(version=None, trial_id=good), "params": {**MATMUL, "K": 32}})
    assert other.status_code == 404 and "no trial" in other.json()["error"]
    pinned = farm.post("/v1/best/pin", json=_key(version=None, trial_id=good, message="replace the bad import"))
    assert pinned.status_code == 201, pinned.text
    assert (pinned.json()["version"], pinned.json()["reason"], pinned.json()["pinned"]) == (5, "pin", True)
    head = farm.get(f"/v1/best?{MATMUL_QUERY}").json()
    assert (head["trial_id"], head["median_s"], head["head_pinned"]) == (good, 1e-4, True)
    unpinned = farm.post("/v1/best/pin", json=_key(version=None))
    assert unpinned.status_code == 201 and unpinned.json()["trial_id"] == good


# ---- lone surrogates: refused where they are read, never echoed into a 500 --------------------------------------
LONE = "\ud800"  # json.dumps writes it as the escape "\ud800": valid JSON syntax, no Unicode character
_JOB = {"op": "matmul", "params": {"M": 64, "N": 64, "K": 64}, "device": "cpu", "trials": 2}


@pytest.mark.parametrize("path, body, where", [
    ("/v1/jobs", {**_JOB, "op": LONE}, "op:"),
    ("/v1/jobs", {**_JOB, "device": LONE}, "device:"),
    ("/v1/jobs", {**_JOB, "strategy": LONE}, "strategy:"),
    ("/v1/jobs", {**_JOB, "strategy": "grid", "strategy_options": {LONE: 1}}, "strategy_options."),
    ("/v1/jobs", {**_JOB, "strategy": "grid", "strategy_options": {"order": LONE}}, "strategy_options.order"),
    ("/v1/jobs", {**_JOB, "params": {"M": 64, "N": 64, "K": 64, LONE: 1}}, "params."),
    ("/v1/jobs", {**_JOB, "params": {"M": 64, "N": 64, "K": 64, "dtype": LONE}}, "params.dtype"),
    ("/v1/jobs", {**_JOB, "op": "elementwise", "params": {"rows": 8, "cols": 8, "expr": "x" + LONE}}, "params.expr"),
    ("/v1/jobs", {**_JOB, LONE: 1}, "'\\ud800'"),
    ("/v1/tokens", {"name": "ci" + LONE}, "name:"),
    ("/v1/best/pin", _key(version=1, message=LONE), "message:"),
    ("/v1/best/rollback", _key(to_version=1, message=LONE), "message:"),
])
def test_a_lone_surrogate_in_any_string_is_a_400_naming_the_field(farm, path, body, where):
    before = farm.rows()
    response = farm.post(path, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert "lone UTF-16 surrogate" in error and where in error, error
    assert farm.rows() == before and farm.driver.wakes == 0


@pytest.mark.parametrize("changes, words", [
    ({"codegen_version": LONE}, "codegen_version: a lone UTF-16 surrogate"),
    ({"config": {"mr": LONE}}, "config.mr: a lone UTF-16 surrogate"),
])
def test_a_lone_surrogate_in_an_import_is_refused_naming_its_line(farm, changes, words):
    records = _faster_copy(_export_lines(farm), **changes)
    line = 1 + max(i for i, r in enumerate(records) if r["type"] == "trial")
    before = farm.rows()
    response = farm.post("/v1/import", content=_body(records))
    assert response.status_code == 422, response.text
    assert f"line {line}: {words}" in response.json()["error"], response.json()
    assert farm.rows() == before


# ---- imported configs must be configs of the op's space --------------------------------------------------------
IMPORTED_TRIAL = "0f8fad5b-d9cb-469f-a165-70867728950e"  # its id in the exporting farm


def _trial_and_head(config: dict) -> bytes:
    """One trial at this server's codegen_version and a schedule_version that makes it the head of MATMUL_KEY."""
    trial = {"type": "trial", "id": IMPORTED_TRIAL, "workload": MATMUL_KEY, "device_class": CPU_CLASS, "config": config,
             "codegen_version": cc.codegen_version(), "status": "OK", "samples": [1e-6], "median_s": 1e-6,
             "created_at": at(100).isoformat()}
    version = {"type": "schedule_version", "workload": MATMUL_KEY, "device_class": CPU_CLASS, "version": 1,
               "trial": IMPORTED_TRIAL, "reason": "improved", "created_at": at(100).isoformat()}
    return _body([trial, version])


@pytest.mark.parametrize("config, words", [
    ({"bogus_knob": 7}, ["unknown knob(s) bogus_knob", "missing knob(s) mr"]),
    ({**cc.default_config(cc.parse_key(MATMUL_KEY), CPU_TARGET), "mr": 5}, ["mr=5 not in"]),
    ({**cc.default_config(cc.parse_key(MATMUL_KEY), CPU_TARGET), "mr": "6"}, ["mr='6' not in"]),
])
def test_an_import_of_a_config_outside_the_space_is_refused_whole(farm, config, words):
    before = farm.rows()
    response = farm.post("/v1/import", content=_trial_and_head(config))
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert f"line 1: trial '{IMPORTED_TRIAL}'" in error and "not in the space of" in error, error
    assert all(word in error for word in words), error
    assert farm.rows() == before
    head = farm.get(f"/v1/best?{MATMUL_QUERY}&include_source=true")
    assert head.status_code == 200 and head.json()["version"] == 3


def test_an_import_of_a_config_of_an_older_family_of_the_space_is_accepted(farm):
    config = cc.default_config(cc.parse_key(MATMUL_KEY), CPU_TARGET)
    del config["b_source"]  # stored before the knob existed: the template still builds it (its config_space)
    response = farm.post("/v1/import", content=_trial_and_head(config))
    assert response.status_code == 200 and response.json()["versions"] == 1, response.text
    head = farm.get(f"/v1/best?{MATMUL_QUERY}&include_source=true")
    assert head.status_code == 200 and head.json()["reason"] == "import" and head.json()["source"], head.text


# ---- measure options that cannot fit in the task's budget -------------------------------------------------------
@pytest.mark.parametrize("measure, words", [
    ({"max_time_s": 600.0, "timeout_s": 1.0}, ["measure.max_time_s (600.0)", "measure.timeout_s (1.0)"]),
    ({"timeout_s": 1.0}, ["measure.max_time_s (2.0, the cpu default)", "measure.timeout_s (1.0)"]),
    ({"max_time_s": 5.0, "timeout_s": 5.0}, ["must be below"]),
])
def test_sampling_longer_than_the_task_budget_is_refused_naming_both(farm, measure, words):
    before = farm.rows()
    response = farm.post("/v1/jobs", json={**_JOB, "measure": measure})
    assert response.status_code == 422, response.text
    assert all(word in response.json()["error"] for word in words), response.json()
    assert farm.rows() == before
    fits = farm.post("/v1/jobs", json={**_JOB, "measure": {**measure, "max_time_s": 0.5}})
    assert fits.status_code == 201, fits.text


# ---- what the OpenAPI and /v1/ops say ---------------------------------------------------------------------------
def test_the_openapi_documents_405_everywhere_and_415_for_json_bodies(farm):
    spec = farm.get("/openapi.json", token=None).json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            refused = operation["responses"].get("405")
            assert refused is not None and "Allow" in refused.get("headers", {}), (method, path)
            if "application/json" in operation.get("requestBody", {}).get("content", {}):
                assert "415" in operation["responses"], (method, path)
    limits = spec["components"]["schemas"]["OpsLimits"]["properties"]
    assert {"max_tensor_elements", "max_dim", "max_trials_per_job"} <= set(limits)


def test_ops_expose_the_per_tensor_element_cap(farm):
    limits = farm.get("/v1/ops").json()["limits"]
    assert limits == {"max_tensor_elements": 1 << 28, "max_dim": farm.settings.max_dim,
                      "max_trials_per_job": farm.settings.max_trials_per_job}
    over = farm.get(f"/v1/best?op=transpose&rows=65536&cols=65536&device={CPU_CLASS}")
    assert over.status_code == 422 and str(limits["max_tensor_elements"]) in over.json()["error"], over.text
