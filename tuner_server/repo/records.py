"""Plain records that repository functions take and return (no ORM sessions, no HTTP or gRPC types)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from tuner_server.db.models import Agent, Comparison, ScheduleVersion, Trial

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True)
class JobLimits:
    """Bounds on what a job may ask for; build with `from_settings` in the server."""

    max_trials: int = 10000
    max_dim: int = 65536
    max_tensor_elements: int = 1 << 28

    @classmethod
    def from_settings(cls, settings) -> JobLimits:
        return cls(settings.max_trials_per_job, settings.max_dim, settings.max_tensor_elements)


@dataclass(frozen=True)
class JobSpec:
    """What a user asks for; `create_job` validates it."""

    workload_key: str
    device_selector: str  # 'cpu' | 'cuda' | an exact device class
    trial_budget: int
    strategy: str = "model"
    strategy_options: dict[str, Any] = field(default_factory=dict)
    priority: int = 0
    created_by: str | None = None
    seed: int | None = None
    measure_options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobProgress:
    job_id: str
    state: str
    trial_budget: int
    completed: int  # trials recorded (any status)
    verified: int  # trials with status OK
    failed: int
    queued: int  # MEASURE tasks waiting for an agent
    leased: int  # MEASURE tasks an agent holds now
    best: Trial | None  # the fastest OK trial so far (by its own measurement); None when not asked for
    phase: str = "search"  # 'final': the budget is spent; the top trials are re-measured head to head
    comparing: int = 0  # COMPARE tasks queued or leased


@dataclass(frozen=True)
class Registration:
    agent: Agent
    session_token: str  # plaintext, returned once; only its hash is stored
    device_class: str


@dataclass(frozen=True)
class LeasedTask:
    task_id: str
    attempt: int
    job_id: str
    workload_key: str
    config: dict[str, Any]
    measure_options: dict[str, Any]
    lease_deadline: datetime
    kind: str = "MEASURE"  # or "COMPARE"
    baseline_config: dict[str, Any] | None = None  # COMPARE: the head's config
    time_reference: bool = False  # COMPARE


@dataclass(frozen=True)
class Requeued:
    requeued: list[str]  # task ids back in the queue with attempt + 1
    lost: list[str]  # task ids that ran out of attempts (an AGENT_LOST trial records each)


@dataclass(frozen=True)
class TrialReport:
    """One result as an agent reports it (the domain twin of the proto TrialResult)."""

    task_id: str
    attempt: int
    status: str
    samples_s: tuple[float, ...] = ()
    median_s: float | None = None
    ci_low_s: float | None = None
    ci_high_s: float | None = None
    error: str = ""
    codegen_version: str = ""
    compile_s: float | None = None
    max_abs_error: float | None = None
    baseline_samples_s: tuple[float, ...] = ()  # COMPARE: paired with samples_s
    reference_samples_s: tuple[float, ...] = ()  # COMPARE: paired too (empty: no reference timed)
    reference_name: str = ""
    contention: float | None = None
    noisy: bool | None = None
    threads: int | None = None
    cpus: str | None = None


@dataclass(frozen=True)
class RecordOutcome:
    status: Literal["accepted", "duplicate", "rejected"]
    task_id: str
    trial: Trial | None = None  # MEASURE results
    promoted: ScheduleVersion | None = None  # the new head version when this result moved it
    reason: str = ""  # why a result was rejected
    comparison: Comparison | None = None  # COMPARE results


@dataclass(frozen=True)
class VersionDiff:
    from_version: int
    to_version: int
    changed: dict[str, tuple[Any, Any]]  # knob -> (value in from_version, value in to_version); missing = None
    median_ratio: float | None  # to_version median / from_version median (< 1: to_version is faster)


@dataclass(frozen=True)
class DeviceSummary:
    device_class: str
    kind: str
    fingerprint: dict[str, Any]
    first_seen: datetime
    active_agents: int


@dataclass(frozen=True)
class ScheduleKeySummary:
    """One (workload, device class) with a best-schedule history: where its head is now."""

    workload_key: str
    op: str
    params: dict[str, Any]
    device_class: str
    head_version: int
    pinned: bool
    updated_at: datetime


@dataclass(frozen=True)
class ImportCounts:
    workloads: int = 0  # created
    devices: int = 0  # created
    trials: int = 0  # appended
    duplicate_trials: int = 0  # already present (same content identity): skipped
    versions: int = 0  # schedule versions appended with reason 'import'


@dataclass(frozen=True)
class TrainingRow:
    """One trial as the cost model learns from it: its outcome and, if already computed, its feature vector."""

    workload_key: str
    config_key: str
    config: dict[str, Any]
    median_s: float | None
    status: str
    created_at: datetime
    vector: bytes | None  # float32 bytes from config_features; None when not featurized yet
