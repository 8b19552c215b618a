"""HTTP semantics at the REST edge, on SQLite and PostgreSQL: HEAD wherever GET is; JSON bodies only as
application/json, read strictly (UTF-8, no duplicate keys, bounded nesting and numbers), each refusal saying what is
wrong; query strings strict (each parameter once, only declared ones, integers as plain digits), on the route and on
the hot /v1/best path alike. Every refusal writes nothing."""
from __future__ import annotations

import json

import pytest

from tests.cpu.rest_support import CPU_CLASS, MATMUL_QUERY, READER, make_farm
from tests.db.conftest import db_engine, db_url, session_factory  # noqa: F401  (fixtures)

JOB = {"op": "matmul", "params": {"M": 64, "N": 64, "K": 64}, "device": "cpu", "trials": 2}
JOB_TEXT = json.dumps(JOB)
JSON = {"Content-Type": "application/json"}
READ = {"Authorization": f"Bearer {READER}"}


@pytest.fixture
def farm(session_factory):  # noqa: F811
    return make_farm(session_factory)


def _gets(farm) -> list[str]:
    job_id = farm.seeded["job_id"]
    return ["/health", "/v1/ops", "/v1/devices", "/v1/agents", "/v1/jobs", f"/v1/jobs/{job_id}",
            f"/v1/jobs/{job_id}/trials", f"/v1/best?{MATMUL_QUERY}", f"/v1/best/history?{MATMUL_QUERY}",
            "/v1/best/keys", "/v1/export", "/metrics", "/v1/jobs/no-such-job", "/v1/jobs?limit=0"]


def test_head_is_answered_wherever_get_is_with_its_status_and_headers(farm):
    for path in _gets(farm) * 2:  # twice: the second /v1/best is the hot path's kept answer
        got = farm.get(path)
        head = farm.client.head(path, headers=READ)
        assert head.status_code == got.status_code, (path, head.status_code, got.status_code)
        assert head.content == b"", path
        assert head.headers["content-type"] == got.headers["content-type"], path
        if "content-length" in got.headers and path != "/metrics":  # /metrics changes between the two requests
            assert head.headers["content-length"] == got.headers["content-length"], path


def test_head_where_get_is_not_served_is_a_405_listing_the_methods(farm):
    response = farm.client.head("/v1/import", headers=READ)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert farm.client.head("/v1/jobs").headers.get("www-authenticate") == "Bearer"  # 401 as for GET


@pytest.mark.parametrize("content_type, described", [
    ("application/x-www-form-urlencoded", "Content-Type 'application/x-www-form-urlencoded'"),  # curl -d
    ("text/plain", "Content-Type 'text/plain'"),
    (None, "no Content-Type"),
    ("application/json; charset=utf-16", "charset 'utf-16'"),
])
def test_a_json_body_without_its_content_type_is_a_415(farm, content_type, described):
    before = farm.rows()
    headers = {"Content-Type": content_type} if content_type else {}
    response = farm.post("/v1/jobs", content=JOB_TEXT.encode(), headers=headers)
    assert response.status_code == 415, response.text
    body = response.json()
    assert described in body["error"] and "application/json" in body["error"], body
    assert body["detail"] == {"required_content_type": "application/json"}
    assert farm.rows() == before and farm.driver.wakes == 0


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8",
                                          "Application/JSON;charset=\"UTF-8\""])
def test_json_with_or_without_a_utf8_charset_is_taken(farm, content_type):
    response = farm.post("/v1/jobs", content=JOB_TEXT.encode(), headers={"Content-Type": content_type})
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("body, words", [
    (b"\xff" + JOB_TEXT.encode(), ["not UTF-8", "offset 0"]),
    (JOB_TEXT.encode("utf-16"), ["not UTF-8"]),  # json.loads would guess UTF-16 from the bytes
    (JOB_TEXT.encode("utf-32"), ["not UTF-8"]),
    (b"[" * 1000 + b"]" * 1000, ["nested too deeply", "at most 32 levels"]),
    (JOB_TEXT.replace('"trials": 2', '"trials": ' + "1" * 5000).encode(), ["too long", "at most 100 characters"]),
    (JOB_TEXT.replace('"trials": 2', '"trials": 50, "trials": 1').encode(), ["key 'trials' appears twice"]),
    (JOB_TEXT.replace('"M": 64', '"M": 64, "M": 64').encode(), ["key 'M' appears twice"]),
], ids=["not-utf8", "utf16", "utf32", "deep", "long-number", "duplicate-key", "duplicate-nested-key"])
def test_an_unreadable_body_is_a_400_saying_what_is_wrong(farm, body, words):
    before = farm.rows()
    response = farm.post("/v1/jobs", content=body, headers=JSON)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error.startswith("malformed JSON body: ") and all(word in error for word in words), error
    assert farm.rows() == before and farm.driver.wakes == 0


def test_a_duplicate_key_in_an_import_line_is_refused_naming_the_line(farm):
    lines = farm.get("/v1/export").text.splitlines()
    lines[1] = lines[1].replace('"type":', '"type":"workload","type":', 1)
    response = farm.post("/v1/import", content="\n".join(lines).encode())
    assert response.status_code == 422 and "line 2: key 'type' appears twice" in response.json()["error"]


def _query_probes(farm) -> list[tuple[str, str]]:
    job_id = farm.seeded["job_id"]
    best = f"/v1/best?op=matmul&N=64&K=64&device={CPU_CLASS}&M="
    return [
        ("/v1/jobs?state=done&state=cancelled", "'state' given more than once"),
        (f"/v1/jobs/{job_id}/trials?limit=1&limit=2", "'limit' given more than once"),
        ("/v1/ops?limit=5&limit=5", "'limit' given more than once"),
        ("/v1/jobs?sate=done", "query.sate: unknown query parameter; allowed: state, workload, device_class, "
                               "limit, offset"),
        ("/v1/devices?kinds=cpu&x=1", "query.kinds, query.x: unknown query parameters; allowed: kind, limit"),
        (f"/v1/jobs/{job_id}?verbose=1", "query.verbose: unknown query parameter; allowed: none"),
        ("/health?x=1", "query.x: unknown"),
        (best + "64.0", "query.M: '64.0' is not a valid integer"),
        (best + "6_4", "query.M: '6_4' is not a valid integer"),
        (best + "%2064", "query.M: ' 64' is not a valid integer"),
        (best + "%2B64", "query.M: '+64' is not a valid integer"),
        (best + "64%20", "query.M: '64 ' is not a valid integer"),
        (best + "", "query.M: '' is not a valid integer"),
        (best + "-64", "query.M: -64 is out of range: an integer from 1 to 1048576"),
        (best + "064", "query.M: '064' is not a valid integer: an integer from 1 to 1048576, written as only decimal "
                       "digits without '+', spaces or a leading zero"),
        ("/v1/jobs?limit=007", "query.limit: '007' is not a valid integer: an integer from 1 to 1000"),
        ("/v1/jobs?offset=-1", "query.offset: -1 is out of range: an integer from 0 to 2147483647"),
        ("/v1/jobs?limit=1.0", "query.limit: '1.0' is not a valid integer"),
        ("/v1/jobs?offset=%2B0", "query.offset: '+0' is not a valid integer"),
        (f"/v1/best?{MATMUL_QUERY}&version=0x1", "query.version: '0x1' is not a valid integer"),
    ]


def test_query_strings_are_strict_on_every_route(farm):
    assert farm.get(f"/v1/best?{MATMUL_QUERY}").status_code == 200  # the head is kept: the hot path answers next
    before = farm.rows()
    for path, words in _query_probes(farm):
        response = farm.get(path)
        assert response.status_code == 422, (path, response.text)
        assert words in response.json()["error"], (path, response.json())
    assert farm.rows() == before


def test_plain_digits_and_declared_parameters_still_work(farm):
    assert farm.get("/v1/jobs?state=done&limit=7&offset=0").json()["total"] == 1
    assert farm.get(f"/v1/best/history?{MATMUL_QUERY}&limit=2").json()["total"] == 3
