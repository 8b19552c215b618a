"""REST while the database is down: 503 with Retry-After and the documented error body on every route, one log
line for the outage (none per request, no traceback), and service again as soon as the database is back; a
database error that is not an outage stays a 500 with its traceback (a bug must not hide as "retry later").

Real drivers: a SQLite file whose directory does not exist yet, and PostgreSQL refusing connections (nothing
listens on the port). The live farm (a PostgreSQL server stopped mid-job, keep-alive connections, agents and the
job driver riding it out) is tests/farm/test_farm_outages.py.
"""
from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from tests.cpu.rest_support import ADMIN, MATMUL
from tests.ports import closed_port
from tuner_server import repo
from tuner_server.api.app import create_app
from tuner_server.db import make_engine, make_session_factory, session_scope, upgrade_to_head
from tuner_server.settings import Settings

ROUTES = [("GET", "/v1/jobs"), ("GET", "/v1/jobs/0b0c1f7e-0000-4000-8000-000000000000"), ("GET", "/v1/devices"),
          ("GET", "/v1/best/history?op=matmul&M=64&N=64&K=64&dtype=float32&device=cpu-x86_64-avx2-2c"),
          ("POST", "/v1/jobs")]
JOB = {"op": "matmul", "params": MATMUL, "device": "cpu", "trials": 4}


def call(client: TestClient, method: str, path: str):
    return client.request(method, path, headers={"Authorization": f"Bearer {ADMIN}"},
                          json=JOB if method == "POST" else None)


def app_over(url: str) -> TestClient:
    engine = make_engine(url)
    return TestClient(create_app(Settings(), make_session_factory(engine), None), raise_server_exceptions=False)


def assert_unavailable(response) -> None:
    assert response.status_code == 503, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error", "detail"} and "database is unreachable" in body["error"]
    wait = body["detail"]["retry_after_s"]
    assert wait > 0 and response.headers["retry-after"] == str(wait)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_every_route_is_503_with_retry_after_and_one_log_line(backend, tmp_path, caplog):
    url = (f"sqlite:///{tmp_path / 'not' / 'yet' / 'tf.db'}" if backend == "sqlite"
           else f"postgresql://postgres@127.0.0.1:{closed_port()}/tf")
    client = app_over(url)
    caplog.set_level(logging.INFO)
    for _ in range(3):
        for method, path in ROUTES:
            assert_unavailable(call(client, method, path))
    health = client.get("/health")
    assert health.status_code == 503 and health.headers["retry-after"]
    outage_lines = [r for r in caplog.records if r.name == "tuner_server.db.availability"]
    assert len(outage_lines) == 1 and outage_lines[0].levelname == "ERROR", [r.getMessage() for r in outage_lines]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR and r not in outage_lines]
    spec = client.get("/openapi.json").json()["paths"]
    for method, path in ROUTES:
        template = "/v1/jobs/{job_id}" if path.startswith("/v1/jobs/") else path.split("?")[0]
        assert "503" in spec[template][method.lower()]["responses"], (method, template)


def test_service_resumes_when_the_database_comes_back(tmp_path, caplog):
    directory = tmp_path / "later"
    url = f"sqlite:///{directory / 'tf.db'}"
    client = app_over(url)
    caplog.set_level(logging.INFO, "tuner_server.db.availability")
    assert_unavailable(call(client, "GET", "/v1/jobs"))
    directory.mkdir()
    upgrade_to_head(url)
    engine = make_engine(url)
    with session_scope(make_session_factory(engine)) as s:
        repo.register_token("admin", "admin", ADMIN, session=s)
    engine.dispose()
    created = call(client, "POST", "/v1/jobs")
    assert created.status_code == 201, created.text
    assert call(client, "GET", f"/v1/jobs/{created.json()['id']}").status_code == 200
    assert [r.levelname for r in caplog.records] == ["ERROR", "WARNING"]  # down, then available again


def test_a_database_error_that_is_no_outage_is_a_500(tmp_path, caplog):
    client = app_over(f"sqlite:///{tmp_path / 'never_migrated.db'}")  # reachable, but has no tables
    response = call(client, "GET", "/v1/jobs")
    assert response.status_code == 500 and response.json()["error"] == "internal error: OperationalError"
    assert "retry-after" not in response.headers
    assert not [r for r in caplog.records if r.name == "tuner_server.db.availability"]
