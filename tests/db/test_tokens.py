"""Tokens are stored hashed (SHA-256); plaintext is returned once."""
from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import select

from tests.db.factories import agent, cpu_fingerprint
from tuner_server import repo
from tuner_server.db import Agent, ApiToken


def test_create_authenticate_revoke(session):
    row, plaintext = repo.create_token("ci", "admin", session=session)
    assert plaintext.startswith("tf_") and len(plaintext) > 30
    stored = session.scalars(select(ApiToken)).one()
    assert stored.token_hash == hashlib.sha256(plaintext.encode()).hexdigest() != plaintext
    assert repo.authenticate_token(plaintext, session=session) == "admin"
    assert repo.authenticate_token(plaintext + "x", session=session) is None
    assert repo.authenticate_token("", session=session) is None
    with pytest.raises(repo.Conflict, match="last active admin token"):
        repo.revoke_token(row.id, session=session)  # the farm would be left without an admin
    repo.create_token("ci-2", "admin", session=session)
    repo.revoke_token(row.id, session=session)
    assert repo.authenticate_token(plaintext, session=session) is None
    with pytest.raises(repo.NotFound):
        repo.revoke_token("nope", session=session)


def test_register_a_configured_token_is_idempotent(session):
    first = repo.register_token("env-admin", "read", "a-long-configured-secret", session=session)
    again = repo.register_token("env-admin", "read", "a-long-configured-secret", session=session)
    assert first.id == again.id and len(repo.list_tokens(session=session)) == 1
    with pytest.raises(repo.InvalidRequest, match="already registered"):
        repo.register_token("other", "admin", "a-long-configured-secret", session=session)
    with pytest.raises(repo.InvalidRequest, match="scope"):
        repo.register_token("x", "root", "another-long-secret-value", session=session)
    with pytest.raises(repo.InvalidRequest, match="16 characters"):
        repo.register_token("x", "read", "short", session=session)


def test_agent_session_tokens_are_hashed_and_checked(session):
    reg = repo.register_agent(cpu_fingerprint(), "box", "cg1", session=session)
    assert reg.device_class == "cpu-x86_64-avx2-2c"
    row = session.get(Agent, reg.agent.id)
    assert row.session_token_hash == hashlib.sha256(reg.session_token.encode()).hexdigest()
    assert repo.authenticate_agent(reg.agent.id, reg.session_token, session=session) is row
    assert repo.authenticate_agent(reg.agent.id, "wrong", session=session) is None
    assert repo.authenticate_agent("", reg.session_token, session=session) is None
    agent(session, "box")  # re-registration retires the old session
    assert repo.authenticate_agent(reg.agent.id, reg.session_token, session=session) is None


def test_registration_records_the_device_once(session):
    agent(session, "a")
    agent(session, "b", {**cpu_fingerprint(), "memory_bytes": 1})
    (device,) = repo.list_devices(session=session)
    assert (device.device_class, device.kind, device.active_agents) == ("cpu-x86_64-avx2-2c", "cpu", 2)
    assert device.fingerprint["memory_bytes"] == 8 << 30
    with pytest.raises(repo.InvalidRequest, match="missing field 'arch'"):
        repo.register_agent({"kind": "cpu", "isa_flags": [], "compute_units": 1}, "c", "cg1", session=session)
