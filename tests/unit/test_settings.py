"""Settings come from TUNEFARM_* variables (read once, in main) with safe defaults."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from tuner_server.settings import Settings


def test_defaults(monkeypatch):
    for name in ("DATABASE_URL", "ADMIN_TOKEN", "REST_PORT"):
        monkeypatch.delenv(f"TUNEFARM_{name}", raising=False)
    s = Settings()
    assert (s.database_url, s.rest_port, s.grpc_port, s.lease_seconds) == ("sqlite:///./tunefarm.db", 8080, 50051, 60)
    assert s.admin_token is None and s.max_trials_per_job == 10000


def test_environment_with_prefix_and_secret_tokens(monkeypatch):
    monkeypatch.setenv("TUNEFARM_DATABASE_URL", "postgresql://tf@db/tf")
    monkeypatch.setenv("TUNEFARM_ADMIN_TOKEN", "s3cret-admin-token")
    monkeypatch.setenv("TUNEFARM_MAX_TRIALS_PER_JOB", "50")
    s = Settings()
    assert s.database_url == "postgresql://tf@db/tf" and s.max_trials_per_job == 50
    assert s.admin_token.get_secret_value() == "s3cret-admin-token"
    assert "s3cret" not in repr(s)


def test_bad_values_are_refused(monkeypatch):
    monkeypatch.setenv("TUNEFARM_LEASE_SECONDS", "0")
    with pytest.raises(ValidationError, match="lease_seconds"):
        Settings()


def test_codegen_mismatch_is_refused_unless_allowed(monkeypatch):
    monkeypatch.delenv("TUNEFARM_ALLOW_CODEGEN_MISMATCH", raising=False)
    assert Settings().allow_codegen_mismatch is False
    monkeypatch.setenv("TUNEFARM_ALLOW_CODEGEN_MISMATCH", "1")
    assert Settings().allow_codegen_mismatch is True


def test_rest_workers_need_postgresql(monkeypatch):
    for name in ("TUNEFARM_DATABASE_URL", "TUNEFARM_REST_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValidationError, match="needs PostgreSQL"):
        Settings(rest_workers=2)
    assert Settings(rest_workers=4, database_url="postgresql://h/db").rest_workers == 4
    assert Settings().rest_workers == 1
