"""The one Settings object of a tuner process (env vars TUNEFARM_*), built in `main` and passed down.

Nothing below `main` reads the environment: repository functions take the values they need as arguments.
"""
from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TUNEFARM_", extra="ignore")

    database_url: str = Field("sqlite:///./tunefarm.db", description="SQLAlchemy URL; postgresql:// uses psycopg 3")
    data_dir: Path = Field(Path(".tunefarm"), description="cost models, build caches and other server files")

    rest_host: str = "127.0.0.1"
    rest_port: int = Field(8080, ge=0, le=65535)
    grpc_host: str = "127.0.0.1"
    grpc_port: int = Field(50051, ge=0, le=65535)

    enrolment_token: SecretStr | None = Field(None, description="agents present it to Register; CLI creates one")
    admin_token: SecretStr | None = Field(None, description="REST admin bearer token; CLI creates one when absent")
    read_token: SecretStr | None = Field(None, description="REST read-only bearer token; optional")

    lease_seconds: int = Field(60, ge=1, description="a leased task returns to the queue after this")
    heartbeat_interval_s: float = Field(5.0, gt=0)
    agent_lost_after_s: float = Field(30.0, gt=0, description="an agent silent this long is marked lost")
    max_task_attempts: int = Field(3, ge=1, description="leases of one task that may expire before it is lost")

    max_trials_per_job: int = Field(10000, ge=1)
    max_dim: int = Field(65536, ge=1, description="largest integer workload parameter (a shape dimension)")
    max_tensor_elements: int = Field(1 << 28, ge=1, description="largest tensor of a workload, in elements")
    max_request_bytes: int = Field(8 << 20, ge=1024, description="REST request bodies (imports included)")
