"""/v1/tokens (admin): create (the plaintext is answered once, only its SHA-256 is stored), list, revoke; the last
admin token and the tokens the settings name cannot be revoked. Refusals write nothing."""
from __future__ import annotations

import pytest

from tests.cpu.rest_support import ADMIN, READER, make_farm
from tests.db.conftest import db_engine, db_url, session_factory  # noqa: F401  (fixtures)
from tuner_server.db.models import ApiToken


@pytest.fixture
def farm(session_factory):  # noqa: F811
    return make_farm(session_factory)


def _ids(farm) -> dict[str, str]:
    return {t["name"]: t["id"] for t in farm.get("/v1/tokens", token=ADMIN).json()}


def test_create_list_and_revoke_a_token(farm):
    made = farm.post("/v1/tokens", json={"name": "ci", "scope": "read"})
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["token"].startswith("tf_") and body["scope"] == "read" and not body["revoked"]
    with farm.factory() as s:
        stored = s.get(ApiToken, body["id"])
        assert stored.token_hash != body["token"] and len(stored.token_hash) == 64
    listed = farm.get("/v1/tokens", token=ADMIN).json()
    assert [t["name"] for t in listed] == ["admin", "reader", "ci"] and all("token" not in t for t in listed)
    assert farm.get("/v1/devices", token=body["token"]).status_code == 200
    assert farm.post("/v1/tokens", token=body["token"], json={"name": "x"}).status_code == 403
    revoked = farm.delete(f"/v1/tokens/{body['id']}")
    assert revoked.status_code == 200 and revoked.json()["revoked"]
    assert farm.get("/v1/devices", token=body["token"]).status_code == 401
    assert farm.delete(f"/v1/tokens/{body['id']}").status_code == 200  # idempotent


def test_refusals_are_4xx_and_write_nothing(farm):
    before = farm.rows()
    assert farm.get("/v1/tokens", token=READER).status_code == 403
    assert farm.post("/v1/tokens", json={"name": "x", "scope": "root"}).status_code == 422
    assert farm.post("/v1/tokens", json={"name": ""}).status_code == 422
    missing = farm.delete("/v1/tokens/nope")
    assert missing.status_code == 404 and "no token nope" in missing.json()["error"]
    last = farm.delete(f"/v1/tokens/{_ids(farm)['admin']}")
    assert last.status_code == 409 and "last active admin token" in last.json()["error"]
    assert farm.rows() == before


def test_a_token_the_settings_name_is_not_revoked(session_factory):  # noqa: F811
    farm = make_farm(session_factory, admin_token=ADMIN)
    assert farm.post("/v1/tokens", json={"name": "second admin", "scope": "admin"}).status_code == 201
    refused = farm.delete(f"/v1/tokens/{_ids(farm)['admin']}")
    assert refused.status_code == 409 and "TUNEFARM_ADMIN_TOKEN" in refused.json()["error"]
