"""The one Settings object of a tuner process (env vars TUNEFARM_*), built in `main` and passed down.

Nothing below `main` reads the environment: repository functions take the values they need as arguments.
"""
from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TUNEFARM_", extra="ignore")

    database_url: str = Field("sqlite:///./tunefarm.db", description="SQLAlchemy URL; postgresql:// uses psycopg 3")
    data_dir: Path = Field(Path(".tunefarm"), description="cost models, build caches and other server files")

    rest_host: str = "127.0.0.1"
    rest_port: int = Field(8080, ge=0, le=65535)
    rest_workers: int = Field(1, ge=1, le=64, description="processes answering REST on rest_port (more than one "
                              "needs PostgreSQL; see tuner_server/rest_workers.py)")
    grpc_host: str = "127.0.0.1"
    grpc_port: int = Field(50051, ge=0, le=65535)
    grpc_tls_cert_file: Path | None = Field(None, description="PEM certificate (chain); with the key, gRPC serves "
                                                              "TLS only")
    grpc_tls_key_file: Path | None = Field(None, description="PEM private key of grpc_tls_cert_file")
    metrics_host: str = Field("127.0.0.1", description="address of the unauthenticated metrics listener")
    metrics_port: int | None = Field(None, ge=0, le=65535, description="serve GET /metrics without a token on this "
                                     "port (for Prometheus scrapes); unset: off (REST /metrics needs a read token)")

    enrolment_token: SecretStr | None = Field(None, description="agents present it to Register; CLI creates one")
    admin_token: SecretStr | None = Field(None, description="REST admin bearer token; CLI creates one when absent")
    read_token: SecretStr | None = Field(None, description="REST read-only bearer token; optional")
    # Secrets may come as files (docker/compose secrets): *_file is read when the value itself is unset.
    enrolment_token_file: Path | None = None
    admin_token_file: Path | None = None
    read_token_file: Path | None = None
    database_password_file: Path | None = Field(None, description="password inserted into database_url")

    lease_seconds: int = Field(60, ge=1, description="a leased task returns to the queue after this")
    heartbeat_interval_s: float = Field(5.0, gt=0)
    rpc_budget_s: float = Field(2.0, gt=0, le=60, description="LeaseTasks and ReportResults answer within this (or "
                                "within 80 % of the agent's own deadline, if sooner): with fewer tasks or results "
                                "rather than late; database waits are bounded by it too")
    agent_lost_after_s: float = Field(30.0, gt=0, description="an agent silent this long is marked lost")
    max_task_attempts: int = Field(3, ge=1, description="leases of one task that may expire before it is lost")
    leader_check_s: float | None = Field(None, gt=0, le=60, description="replicas over PostgreSQL: how often a "
                                         "follower tries to take the lead and the leader checks it still holds it; "
                                         "default lease_seconds / 8, at most 2 s (leadership.py)")
    allow_codegen_mismatch: bool = Field(False, description="accept agents whose compiler_core codegen_version differs "
                                                            "from the tuner's (their trials then never compete with "
                                                            "heads of another version)")

    feature_workers: int = Field(1, ge=0, description="processes lowering configs for the cost model's features; "
                                                     "0: none (model-guided search then lowers inline)")
    class_model_interval_s: float = Field(5.0, gt=0, description="how often device-class cost models are refreshed")

    max_trials_per_job: int = Field(10000, ge=1)
    max_dim: int = Field(65536, ge=1, description="largest integer workload parameter (a shape dimension)")
    max_tensor_elements: int = Field(1 << 28, ge=1, description="largest tensor of a workload, in elements")
    max_request_bytes: int = Field(8 << 20, ge=1024, description="REST request bodies (imports included)")

    @model_validator(mode="after")
    def _read_secret_files(self) -> Settings:
        for name in ("enrolment_token", "admin_token", "read_token"):
            path = getattr(self, f"{name}_file")
            if getattr(self, name) is None and path is not None:
                setattr(self, name, SecretStr(_read_secret(path)))
        if self.database_password_file is not None:
            url = make_url(self.database_url)
            if url.password is None:
                password = _read_secret(self.database_password_file)
                self.database_url = url.set(password=password).render_as_string(hide_password=False)
        _check_tls_files(self.grpc_tls_cert_file, self.grpc_tls_key_file)
        if self.rest_workers > 1 and make_url(self.database_url).get_backend_name() == "sqlite":
            raise ValueError(f"TUNEFARM_REST_WORKERS={self.rest_workers} needs PostgreSQL: on SQLite every writer "
                             "waits for the one file lock, so keep 1 (the default)")
        return self


def _check_tls_files(cert: Path | None, key: Path | None) -> None:
    """Both or neither, each a readable PEM file: a bad TLS setting stops the start with one clear line."""
    if (cert is None) != (key is None):
        raise ValueError("gRPC TLS needs both TUNEFARM_GRPC_TLS_CERT_FILE and TUNEFARM_GRPC_TLS_KEY_FILE")
    for name, path, marker in (("TUNEFARM_GRPC_TLS_CERT_FILE", cert, "CERTIFICATE-----"),
                               ("TUNEFARM_GRPC_TLS_KEY_FILE", key, "PRIVATE KEY-----")):
        if path is None:
            continue
        try:
            text = Path(path).read_text(errors="replace")
        except OSError as exc:
            raise ValueError(f"{name}: cannot read {path}: {exc.strerror}") from None
        if f"BEGIN {marker}" not in text and not (marker.startswith("PRIVATE") and marker in text):
            raise ValueError(f"{name}: {path} is not a PEM {marker.rstrip('-').lower()}")


def _read_secret(path: Path) -> str:
    try:
        value = Path(path).read_text().strip()
    except OSError as exc:
        raise ValueError(f"cannot read secret file {path}: {exc.strerror}") from None
    if not value:
        raise ValueError(f"secret file {path} is empty")
    return value
