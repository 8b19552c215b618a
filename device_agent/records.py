"""The agent's domain records: tasks in, trial results out. Plain frozen dataclasses, no protobuf (see rpc_client)."""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Status(enum.StrEnum):
    """How one measured attempt ended; names match proto TrialStatus."""
    OK = "OK"
    COMPILE_ERROR = "COMPILE_ERROR"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    TIMEOUT = "TIMEOUT"
    WRONG_ANSWER = "WRONG_ANSWER"
    RESOURCE_EXCEEDED = "RESOURCE_EXCEEDED"
    AGENT_LOST = "AGENT_LOST"


class TaskKind(enum.StrEnum):
    """What a task asks for; names match proto TaskKind."""
    MEASURE = "MEASURE"  # build, verify and time one config
    COMPARE = "COMPARE"  # time a config against a baseline config (and the reference) interleaved, in one worker


@dataclass(frozen=True)
class MeasureOptions:
    """How to time one candidate (proto MeasureOptions), as the job resolved it: the agent has no defaults.

    Sampling stops once there are `min_repeats` samples and `min_time_s` of timed time AND the 95 % CI of the
    median (of the paired ratio, for COMPARE) is at most `target_rel_ci` of it; or at `max_repeats` samples or
    `max_time_s` of timing, and then the result is marked noisy. `timeout_s` bounds build + verify + measure."""
    warmup: int
    min_repeats: int
    min_time_s: float
    max_repeats: int
    timeout_s: float
    flush_cache: bool
    max_time_s: float
    target_rel_ci: float
    max_contention: float

    def problems(self) -> list[str]:
        """What makes these options unusable (a task with such options is refused, never timed with guesses)."""
        out = []
        if self.warmup < 0:
            out.append(f"warmup must be >= 0, got {self.warmup}")
        if not 1 <= self.min_repeats <= self.max_repeats:
            out.append(f"need 1 <= min_repeats <= max_repeats, got {self.min_repeats} and {self.max_repeats}")
        if self.timeout_s <= 0:
            out.append(f"timeout_s must be > 0, got {self.timeout_s}")
        if not 0 <= self.min_time_s <= self.max_time_s:
            out.append(f"need 0 <= min_time_s <= max_time_s, got {self.min_time_s} and {self.max_time_s}")
        if self.target_rel_ci <= 0:
            out.append(f"target_rel_ci must be > 0, got {self.target_rel_ci}")
        if not 0 < self.max_contention <= 1:
            out.append(f"max_contention must be in (0, 1], got {self.max_contention}")
        return out


@dataclass(frozen=True)
class Task:
    """One (job, config) to measure or compare, leased to this agent until `lease_deadline_s` (unix seconds)."""
    task_id: str
    attempt: int
    job_id: str
    workload_key: str
    config_json: str
    options: MeasureOptions | None  # None: the server sent none (the task is refused)
    lease_deadline_s: float = 0.0
    kind: TaskKind = TaskKind.MEASURE
    baseline_config_json: str = ""  # COMPARE: the head's config
    time_reference: bool = False  # COMPARE: time the reference library in the same rounds

    @property
    def timeout_s(self) -> float:
        """The task's budget; a task without options is refused at once, so a short bound serves it."""
        return self.options.timeout_s if self.options is not None else 10.0


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
    baseline_samples_s: tuple[float, ...] = ()  # COMPARE: paired with samples_s by index
    reference_samples_s: tuple[float, ...] = ()  # COMPARE with time_reference (empty: no reference here)
    reference_name: str = ""
    contention: float = 0.0  # share of the pinned cores' time other processes took while timing
    noisy: bool = False
    threads: int = 0
    cpus: str = ""

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
