"""The agent's domain records: tasks in, trial results out. Plain frozen dataclasses, no protobuf (see rpc_client)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Status(enum.StrEnum):
    """How one measured attempt ended; names match proto TrialStatus."""
    OK = "OK"
    COMPILE_ERROR = "COMPILE_ERROR"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    TIMEOUT = "TIMEOUT"
    WRONG_ANSWER = "WRONG_ANSWER"
    RESOURCE_EXCEEDED = "RESOURCE_EXCEEDED"
    AGENT_LOST = "AGENT_LOST"


@dataclass(frozen=True)
class MeasureOptions:
    """How to time one candidate (proto MeasureOptions); `timeout_s` bounds build + verify + measure in the worker."""
    warmup: int = 2
    min_repeats: int = 5
    min_time_s: float = 0.1
    max_repeats: int = 200
    timeout_s: float = 60.0
    flush_cache: bool = False


@dataclass(frozen=True)
class Task:
    """One (job, config) to measure, leased to this agent until `lease_deadline_s` (unix seconds)."""
    task_id: str
    attempt: int
    job_id: str
    workload_key: str
    config_json: str
    options: MeasureOptions = field(default_factory=MeasureOptions)
    lease_deadline_s: float = 0.0


@dataclass(frozen=True)
class TrialResult:
    """One measured (or failed) attempt; idempotent by (task_id, attempt) on the server."""
    task_id: str
    attempt: int
    status: Status
    samples_s: tuple[float, ...] = ()
    median_s: float = 0.0
    ci_low_s: float = 0.0
    ci_high_s: float = 0.0
    error: str = ""
    codegen_version: str = ""
    compile_s: float = 0.0
    max_abs_error: float = 0.0

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.attempt)


def failed(task: Task, status: Status, error: str, **fields) -> TrialResult:
    """A non-OK result for `task`; errors are cut to 4000 characters so reports stay small."""
    return TrialResult(task.task_id, task.attempt, Status(status), error=error[-4000:], **fields)


@dataclass(frozen=True)
class Registration:
    """What the server answered to Register."""
    agent_id: str
    session_token: str
    device_class: str
    heartbeat_s: float
    lease_s: float
