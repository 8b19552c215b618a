"""The farm's tables (SQLAlchemy 2.0, portable between SQLite and PostgreSQL).

`trials` and `schedule_versions` are append-only; `schedule_heads` is the one mutable pointer per
(workload, device class). `config_features` and `cost_models` are the cost model's state: a cache of feature
vectors and the last few fitted models per device class. The Alembic revisions in `migrations/versions` are
kept identical to these models (tests/db/test_migrations.py checks for drift).
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from tuner_server.db.types import UTCDateTime, new_id, utcnow

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

AGENT_STATES = ("active", "lost", "gone")
JOB_STATES = ("queued", "running", "done", "failed", "cancelled")
JOB_OPEN_STATES = ("queued", "running")
TASK_STATES = ("queued", "leased", "done", "lost", "cancelled")
TRIAL_STATUSES = ("OK", "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "WRONG_ANSWER", "RESOURCE_EXCEEDED", "AGENT_LOST")
VERSION_REASONS = ("improved", "rollback", "pin", "import", "revalidated")
TASK_KINDS = ("MEASURE", "COMPARE")  # names of proto TaskKind
COMPARE_PURPOSES = ("challenge", "final")  # a candidate against the head during the search, or when the job ends
COMPARISON_OUTCOMES = ("promoted", "kept", "stale", "failed")
JOB_PHASES = ("search", "final")  # final: the budget is spent and the top trials are re-measured head to head
TOKEN_SCOPES = ("read", "admin")

ID = String(36)
CLASS = String(128)


def _one_of(column: str, values: tuple[str, ...], name: str) -> CheckConstraint:
    quoted = ", ".join(f"'{v}'" for v in values)
    return CheckConstraint(f"{column} IN ({quoted})", name=name)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON, list[Any]: JSON}


class Workload(Base):
    __tablename__ = "workloads"
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    key: Mapped[str] = mapped_column(String(512), unique=True)
    op: Mapped[str] = mapped_column(String(64), index=True)
    params: Mapped[dict[str, Any]]
    flops: Mapped[int | None] = mapped_column(BigInteger)
    bytes: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Device(Base):
    __tablename__ = "devices"
    device_class: Mapped[str] = mapped_column(CLASS, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    fingerprint: Mapped[dict[str, Any]]
    first_seen: Mapped[datetime] = mapped_column(default=utcnow)


class Agent(Base):
    __tablename__ = "agents"
    __table_args__ = (_one_of("status", AGENT_STATES, "status"),)
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(128))
    device_class: Mapped[str] = mapped_column(ForeignKey("devices.device_class"), index=True)
    fingerprint: Mapped[dict[str, Any]]
    session_token_hash: Mapped[str] = mapped_column(String(64))
    codegen_version: Mapped[str] = mapped_column(String(64))
    registered_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_heartbeat: Mapped[datetime] = mapped_column(default=utcnow)
    status: Mapped[str] = mapped_column(String(8), default="active", index=True)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (_one_of("state", JOB_STATES, "state"),)
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    workload_id: Mapped[str] = mapped_column(ForeignKey("workloads.id"), index=True)
    device_selector: Mapped[str] = mapped_column(CLASS)
    device_class: Mapped[str | None] = mapped_column(ForeignKey("devices.device_class"))
    strategy: Mapped[str] = mapped_column(String(32))
    strategy_options: Mapped[dict[str, Any]]
    trial_budget: Mapped[int] = mapped_column(Integer)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    created_by: Mapped[str | None] = mapped_column(String(128))
    seed: Mapped[int | None] = mapped_column(BigInteger)
    measure_options: Mapped[dict[str, Any]]  # resolved completely at creation (tuner_server.measure_policy)
    phase: Mapped[str] = mapped_column(String(16), default="search", server_default="search")
    # the class model its strategy was last built from: {"device_class", "version", "trained_on"} (0005)
    start_model: Mapped[dict[str, Any] | None]

    workload: Mapped[Workload] = relationship()


class Task(Base):
    """A MEASURE task times one config of a job; a COMPARE task times a candidate trial's config against a baseline
    trial's (the head's) interleaved. `config_key` is the task's identity within its job: the config's key, or for
    COMPARE '<purpose> <candidate trial> vs <baseline trial>' (so a pair is compared once per purpose and job)."""

    __tablename__ = "tasks"
    __table_args__ = (
        UniqueConstraint("job_id", "config_key"),
        Index("ix_tasks_state_job_id", "state", "job_id"),
        _one_of("state", TASK_STATES, "state"),
        _one_of("kind", TASK_KINDS, "kind"),
    )
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    config: Mapped[dict[str, Any]]
    config_key: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(8), default="MEASURE", server_default="MEASURE")
    purpose: Mapped[str | None] = mapped_column(String(16))  # COMPARE: one of COMPARE_PURPOSES
    candidate_trial_id: Mapped[str | None] = mapped_column(ID)  # COMPARE
    baseline_trial_id: Mapped[str | None] = mapped_column(ID)  # COMPARE: the head's trial when it was queued
    time_reference: Mapped[bool | None] = mapped_column(Boolean)  # COMPARE
    position: Mapped[int] = mapped_column(Integer)  # proposal order within the job: a batch is leased in order
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    state: Mapped[str] = mapped_column(String(16), default="queued")
    agent_id: Mapped[str | None] = mapped_column(ForeignKey("agents.id"), index=True)
    lease_deadline: Mapped[datetime | None] = mapped_column(index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    job: Mapped[Job] = relationship()


class Trial(Base):
    """One measured (or failed) attempt. Append-only. Imported trials have no task, job or agent."""

    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("task_id", "attempt"),
        Index("ix_trials_workload_id_device_class", "workload_id", "device_class"),
        Index("ix_trials_device_class_created_at", "device_class", "created_at"),  # a class's newest trials
        _one_of("status", TRIAL_STATUSES, "status"),
    )
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    task_id: Mapped[str | None] = mapped_column(ForeignKey("tasks.id"))
    attempt: Mapped[int | None] = mapped_column(Integer)
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"), index=True)
    workload_id: Mapped[str] = mapped_column(ForeignKey("workloads.id"))
    device_class: Mapped[str] = mapped_column(ForeignKey("devices.device_class"))
    agent_id: Mapped[str | None] = mapped_column(ForeignKey("agents.id"))
    config: Mapped[dict[str, Any]]
    config_key: Mapped[str] = mapped_column(Text)
    codegen_version: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(24))
    samples: Mapped[list[Any]]
    median_s: Mapped[float | None] = mapped_column(Double)
    ci_low_s: Mapped[float | None] = mapped_column(Double)
    ci_high_s: Mapped[float | None] = mapped_column(Double)
    error: Mapped[str | None] = mapped_column(Text)
    compile_s: Mapped[float | None] = mapped_column(Double)
    max_abs_error: Mapped[float | None] = mapped_column(Double)
    content_id: Mapped[str] = mapped_column(String(64), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    contention: Mapped[float | None] = mapped_column(Double)  # share of the cores others took while timing
    noisy: Mapped[bool | None] = mapped_column(Boolean)  # the CI stayed wide or contention was high
    threads: Mapped[int | None] = mapped_column(Integer)
    cpus: Mapped[str | None] = mapped_column(String(256))  # the cores the agent measured on, e.g. "0-3"

    workload: Mapped[Workload] = relationship()

    @property
    def rel_ci(self) -> float | None:
        """The CI's width relative to the median: how sure the measurement is."""
        if self.median_s and self.ci_low_s is not None and self.ci_high_s is not None:
            return (self.ci_high_s - self.ci_low_s) / self.median_s
        return None


class Comparison(Base):
    """One head-to-head measurement: a candidate and the head (and the reference library) timed interleaved in one
    worker. Append-only. `ratio` is the median of the paired candidate/baseline ratios with its 95 % CI: the head
    moves only when the whole interval lies below 1."""

    __tablename__ = "comparisons"
    __table_args__ = (
        UniqueConstraint("task_id", "attempt"),
        _one_of("purpose", COMPARE_PURPOSES, "purpose"),
        _one_of("outcome", COMPARISON_OUTCOMES, "outcome"),
    )
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id"))
    attempt: Mapped[int] = mapped_column(Integer)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    workload_id: Mapped[str] = mapped_column(ForeignKey("workloads.id"))
    device_class: Mapped[str] = mapped_column(ForeignKey("devices.device_class"))
    agent_id: Mapped[str | None] = mapped_column(ForeignKey("agents.id"))
    candidate_trial_id: Mapped[str] = mapped_column(ForeignKey("trials.id"))
    baseline_trial_id: Mapped[str] = mapped_column(ForeignKey("trials.id"))
    purpose: Mapped[str] = mapped_column(String(16))
    outcome: Mapped[str] = mapped_column(String(16))
    codegen_version: Mapped[str] = mapped_column(String(64))
    candidate_samples: Mapped[list[Any]]
    baseline_samples: Mapped[list[Any]]
    reference_samples: Mapped[list[Any]]
    reference_name: Mapped[str | None] = mapped_column(String(32))
    ratio: Mapped[float | None] = mapped_column(Double)  # candidate / baseline, paired median
    ratio_ci_low: Mapped[float | None] = mapped_column(Double)
    ratio_ci_high: Mapped[float | None] = mapped_column(Double)
    contention: Mapped[float | None] = mapped_column(Double)
    noisy: Mapped[bool | None] = mapped_column(Boolean)
    threads: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ScheduleVersion(Base):
    """One commit of the best-schedule history of (workload, device class). Append-only."""

    __tablename__ = "schedule_versions"
    __table_args__ = (
        UniqueConstraint("workload_id", "device_class", "version"),
        _one_of("reason", VERSION_REASONS, "reason"),
    )
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    workload_id: Mapped[str] = mapped_column(ForeignKey("workloads.id"))
    device_class: Mapped[str] = mapped_column(ForeignKey("devices.device_class"))
    version: Mapped[int] = mapped_column(Integer)
    parent_version: Mapped[int | None] = mapped_column(Integer)
    trial_id: Mapped[str] = mapped_column(ForeignKey("trials.id"))
    reason: Mapped[str] = mapped_column(String(16))
    pinned: Mapped[bool] = mapped_column(Boolean, default=False)
    author: Mapped[str | None] = mapped_column(String(128))
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"))
    message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    trial: Mapped[Trial] = relationship()
    workload: Mapped[Workload] = relationship()


class ScheduleHead(Base):
    """The mutable pointer: which version is the head of a key, and whether it is pinned."""

    __tablename__ = "schedule_heads"
    workload_id: Mapped[str] = mapped_column(ForeignKey("workloads.id"), primary_key=True)
    device_class: Mapped[str] = mapped_column(ForeignKey("devices.device_class"), primary_key=True)
    head_version: Mapped[int | None] = mapped_column(Integer)
    pinned: Mapped[bool] = mapped_column(Boolean, default=False)
    pinned_version: Mapped[int | None] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiToken(Base):
    __tablename__ = "api_tokens"
    __table_args__ = (_one_of("scope", TOKEN_SCOPES, "scope"),)
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(128))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scope: Mapped[str] = mapped_column(String(8))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class ConfigFeatures(Base):
    """The lowered-IR feature vector (float32 bytes) of one config: lowering is costly, so it is done once."""

    __tablename__ = "config_features"
    __table_args__ = (UniqueConstraint("workload_id", "feature_set", "config_key"),)
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    workload_id: Mapped[str] = mapped_column(ForeignKey("workloads.id"))
    feature_set: Mapped[str] = mapped_column(String(64), index=True)  # which featurizer/target/codegen made it
    config_key: Mapped[str] = mapped_column(Text)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class CostModelRecord(Base):
    """One fitted ranking model of a device class, kept so a restarted tuner warm-starts instead of refitting."""

    __tablename__ = "cost_models"
    __table_args__ = (UniqueConstraint("device_class", "feature_set", "version"),)
    id: Mapped[str] = mapped_column(ID, primary_key=True, default=new_id)
    device_class: Mapped[str] = mapped_column(ForeignKey("devices.device_class"))
    feature_set: Mapped[str] = mapped_column(String(64))
    version: Mapped[int] = mapped_column(Integer)  # 1, 2, ... per (device_class, feature_set)
    objective: Mapped[str] = mapped_column(String(32))
    trained_on: Mapped[int] = mapped_column(Integer)  # trials it was fitted on
    workloads: Mapped[int] = mapped_column(Integer)  # distinct workloads among them
    newest_trial_at: Mapped[datetime | None]  # created_at of the newest trial used
    fit_s: Mapped[float] = mapped_column(Double)
    blob: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
