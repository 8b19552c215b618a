"""The REST contract: pydantic schema families, separate from the tables (XCreate in, XPublic out).

Only pydantic here (no ORM, no FastAPI), so the Python client validates responses with the same classes.
"""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

import compiler_core as cc
from tuner_server import bounds
from tuner_server.device_class import CLASS_PATTERN

T = TypeVar("T")
MAX_PARAM_TEXT = 256  # a string param (an elementwise expression is at most 256 characters)
NO_NUL = r"^[^\x00]*$"  # PostgreSQL's text cannot hold U+0000 (strict_json refuses it in any body with a 400)
ParamValue = (Annotated[StrictInt, Field(ge=0, le=bounds.MAX_INT32)]
              | Annotated[StrictStr, Field(max_length=MAX_PARAM_TEXT, pattern=NO_NUL)])
Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]  # of an op param or a strategy option
NAMED_ONLY = {"additionalProperties": False}  # a dict's keys are Names (pydantic writes them as patternProperties)
Params = dict[Name, ParamValue]


def _no_int(value: Any) -> Any:
    """An option's float branch takes no int: an int past the int branch's bounds is refused, not rounded."""
    if isinstance(value, int):
        raise ValueError("an integer option must be within the 64-bit range")
    return value


OptionValue = (StrictBool | Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
               | Annotated[StrictFloat, Field(allow_inf_nan=False), BeforeValidator(_no_int)]
               | Annotated[StrictStr, Field(max_length=256, pattern=NO_NUL)] | None)
OpName = Literal[tuple(sorted(cc.OPS))]  # type: ignore[valid-type]  # GET /v1/ops describes each
DeviceClass = Annotated[str, Field(pattern=f"^{CLASS_PATTERN}$", max_length=128,
                                   description="an exact device class, e.g. cpu-x86_64-avx2-2c")]
DeviceSelector = Annotated[str, Field(pattern=f"^(cpu|cuda|{CLASS_PATTERN})$", max_length=128,
                                      description="'cpu' or 'cuda' (this farm's class of that kind: the only one, "
                                                  "else the only one online) or an exact device class")]
RowId = Annotated[str, Field(max_length=64, pattern=NO_NUL, description="a UUID")]  # of a job, token, trial
Version = Annotated[StrictInt, Field(ge=1, le=bounds.MAX_VERSION)]  # in bodies: JSON true is no version
PARAMS_DOC = "the op's params, e.g. {\"M\": 512, \"N\": 512, \"K\": 512}; GET /v1/ops lists each op's"


class Page(BaseModel, Generic[T]):
    """One page of a list: `items[offset : offset + limit]` of `total`."""

    items: list[T]
    total: int
    limit: int
    offset: int


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: what is wrong (`error`) and the specifics (`detail`: what is allowed, per-field)."""

    error: str
    detail: Any = None


class Health(BaseModel):
    status: str
    database: str
    codegen_version: str
    role: Literal["leader", "follower"] | None = Field(
        None, description="leader: this replica runs the job driver and the class-model keeper (one at a time over "
        "a database); follower: it serves REST and gRPC only")
    replica: str | None = Field(None, description="this tuner process (host/pid)")


# ---- ops, strategies, devices -----------------------------------------------------------------------------------
class OpPublic(BaseModel):
    name: str
    doc: str
    params: list[dict[str, Any]]
    dtypes: list[str]
    example_workload: str = Field(description="the workload the spaces below were built for")
    spaces: dict[str, dict[str, Any]] = Field(description="target kind ('c', 'cuda') -> knobs and constraints; "
                                              "choices depend on the sizes, so they are an example")


class OpsLimits(BaseModel):
    """Bounds on a workload beyond each param's own range (`params` of each op)."""

    max_tensor_elements: int = Field(description="the most elements one tensor (input or output) of a job's workload "
                                     "may have; a larger one is a 422 naming the tensor (no workload anywhere may "
                                     "pass compiler_core's 2^28)")
    max_dim: int = Field(description="the largest integer param of a job's workload (a shape dimension): this "
                         "server's policy for what it tunes, applied on top of each param's own `max` (the compiler's "
                         "range, which GET /v1/best and imports take as is); the smaller of the two binds")
    max_trials_per_job: int = Field(description="the largest trial budget of a job")


class OpsPage(Page[OpPublic]):
    strategies: dict[str, dict[str, Any]] = Field(description="search strategy -> description and options")
    limits: OpsLimits | None = Field(None, description="this server's bounds on workloads and jobs, for every op "
                                     "(always sent; null only from servers older than the field)")


class AgentPublic(BaseModel):
    id: str
    name: str
    status: str
    codegen_version: str
    registered_at: datetime
    last_heartbeat: datetime


class LeasePublic(BaseModel):
    """A task an agent holds now."""

    task_id: str
    job_id: str
    kind: str = Field(description="MEASURE (one config) or COMPARE (a candidate against the head)")
    workload: str
    lease_deadline: datetime | None


class AgentLeasesPublic(AgentPublic):
    device_class: str
    leases: list[LeasePublic] = Field(description="the tasks it holds now, oldest lease first")


class WhoAmI(BaseModel):
    scope: str = Field(description="'read' or 'admin'")


class DevicePublic(BaseModel):
    device_class: str
    kind: str
    status: str = Field(description="'online' when at least one agent of the class is active, else 'offline'")
    active_agents: int
    agents: list[AgentPublic]
    fingerprint: dict[str, Any]
    first_seen: datetime


# ---- jobs and trials --------------------------------------------------------------------------------------------
def _bounded(kind: type, low: float, high: float) -> Any:
    number = StrictInt if kind is int else Annotated[float, Field(allow_inf_nan=False)]
    return Annotated[number, Field(ge=low, le=high)] | None


class MeasureOptionsIn(BaseModel):
    """How agents time each candidate and how the job ends; unset fields take the device kind's defaults
    (GET /v1/ops lists them with their bounds). The job stores the resolved set: see measure_options.
    The bounds are measure_policy.FIELDS' (tests/unit/test_rest_schemas.py holds them equal)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    warmup: _bounded(int, 0, 1000) = None
    min_repeats: _bounded(int, 1, 10_000) = None
    max_repeats: _bounded(int, 1, 100_000) = None
    min_time_s: _bounded(float, 0.0, 60.0) = None
    max_time_s: _bounded(float, 0.0, 600.0) = None
    target_rel_ci: _bounded(float, 1e-4, 1.0) = None
    max_contention: _bounded(float, 1e-3, 1.0) = None
    timeout_s: _bounded(float, 0.1, 3600.0) = None
    flush_cache: StrictBool | None = None
    recheck_top: _bounded(int, 0, 64) = None
    min_gain: _bounded(float, 0.0, 0.5) = None
    time_reference: StrictBool | None = None


class JobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: OpName = Field(examples=["matmul"])
    params: Params = Field(max_length=32, description=PARAMS_DOC, examples=[{"M": 512, "N": 512, "K": 512}],
                           json_schema_extra=NAMED_ONLY)
    device: DeviceSelector = Field(description="'cpu' or 'cuda' (the job runs on the first class of that kind whose "
                                   "agent leases it) or an exact device class", examples=["cpu"])
    trials: StrictInt = Field(ge=1, le=bounds.MAX_INT32,
                              description="trial budget: 1 .. the server's max_trials_per_job")
    strategy: str = Field("model", pattern=r"^[a-z_]{1,32}$", description="GET /v1/ops lists the strategies")
    strategy_options: dict[Name, OptionValue] = Field(
        default_factory=dict, max_length=64, json_schema_extra=NAMED_ONLY,
        description="the strategy's options (GET /v1/ops lists each one's)")
    priority: StrictInt = Field(0, ge=-1000, le=1000)
    seed: StrictInt | None = Field(None, ge=0, le=2**63 - 1)
    measure: MeasureOptionsIn = Field(default_factory=MeasureOptionsIn)


class Throughput(BaseModel):
    gflops: float | None = Field(None, description="GFLOP/s from the op's flop count and the median")
    gbps: float | None = Field(None, description="GB/s from the op's compulsory bytes and the median")


class TrialPublic(Throughput):
    id: str
    job_id: str | None
    task_id: str | None
    attempt: int | None
    workload: str
    device_class: str
    agent_id: str | None
    config: dict[str, Any]
    codegen_version: str
    status: str
    samples: list[float]
    median_s: float | None
    ci_low_s: float | None
    ci_high_s: float | None
    error: str | None
    compile_s: float | None
    max_abs_error: float | None
    created_at: datetime
    rel_ci: float | None = Field(None, description="the median's 95% CI width relative to the median")
    contention: float | None = Field(None, description="share of the measuring cores other processes used")
    noisy: bool | None = Field(None, description="the CI stayed wider than target_rel_ci or contention was high")
    threads: int | None = None
    cpus: str | None = Field(None, description="the cores the agent measured on")


class CurvePoint(Throughput):
    """One trial on a job's tuning curve."""

    trial_id: str
    created_at: datetime
    status: str
    median_s: float | None
    ci_low_s: float | None
    ci_high_s: float | None
    config: dict[str, Any]


class CurvePublic(BaseModel):
    """A job's trials in the order they were measured, with the lines to compare them with."""

    job_id: str
    workload: str
    state: str
    phase: str
    trial_budget: int
    points: list[CurvePoint] = Field(description="oldest first, at most `limit`")
    total: int = Field(description="the job's trials, however many points were returned")
    limit: int
    default: CurvePoint | None = Field(description="the untuned default config's trial, once measured")
    reference: str | None = Field(description="the library timed beside the head (numpy, torch)")
    reference_median_s: float | None = Field(description="its median in the newest head-to-head comparison")


class JobProgressPublic(BaseModel):
    trial_budget: int
    completed: int = Field(description="trials recorded, any status")
    verified: int = Field(description="trials with status OK")
    failed: int
    queued: int = Field(description="tasks waiting for an agent")
    leased: int = Field(description="tasks an agent holds now")
    best: TrialPublic | None = Field(description="the fastest verified trial so far, by its own measurement")
    phase: str = Field("search", description="'final' once the budget is spent: the top trials are re-measured "
                                             "head to head against the head")
    comparing: int = Field(0, description="head-to-head comparisons queued or running")


class PairedPublic(BaseModel):
    ratio: float = Field(description="median of the per-round ratios")
    ci_low: float
    ci_high: float


class JobResultPublic(BaseModel):
    """The job's best, re-measured head to head when it ended: the numbers to quote."""

    head_trial_id: str
    config: dict[str, Any]
    head_median_s: float = Field(description="the head's median in the last final comparison")
    reference: str | None = Field(description="the reference library timed in the same rounds (numpy, torch)")
    reference_median_s: float | None
    speedup_vs_reference: PairedPublic | None = Field(description="reference time / head time, paired per round")
    speedup_vs_default: PairedPublic | None = Field(description="untuned default time / head time, paired")
    comparisons: int
    noisy: bool


class ComparisonPublic(BaseModel):
    id: str
    job_id: str
    purpose: str = Field(description="challenge (during the search) or final (when the job ends)")
    outcome: str = Field(description="promoted, kept, stale (the head moved meanwhile) or failed")
    candidate_trial_id: str
    baseline_trial_id: str
    ratio: float | None = Field(description="candidate time / baseline time, paired median")
    ratio_ci_low: float | None
    ratio_ci_high: float | None
    rounds: int
    timed_s: float = Field(description="the timed samples' total (candidate, baseline and reference)")
    reference: str | None
    contention: float | None
    noisy: bool | None
    error: str | None
    created_at: datetime


class StartModelPublic(BaseModel):
    """The device class's cost model a model-guided job's strategy was last built from."""

    device_class: str = Field(description="the class it was trained on: the job's own, or with too little history "
                                          "another class of the same kind (cross-device warm start)")
    version: int = Field(description="that class's model version (GET /v1/devices lists the models)")
    trained_on: int = Field(description="trials the model was fitted on")


class JobPublic(BaseModel):
    id: str
    workload: str
    op: str
    params: dict[str, Any]
    device_selector: str
    device_class: str | None = Field(description="fixed by the first lease")
    state: str
    error: str | None
    trial_budget: int
    strategy: str
    strategy_options: dict[str, Any]
    priority: int
    seed: int | None
    measure_options: dict[str, Any]
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    phase: str = "search"
    start_model: StartModelPublic | None = Field(None, description="the class model the job's search started from; "
                                                                   "null before its first batch, for strategies "
                                                                   "without a model, or when no class has one")
    progress: JobProgressPublic | None = Field(None, description="on GET /v1/jobs/{id} (and after create/cancel)")
    result: JobResultPublic | None = Field(None, description="on GET /v1/jobs/{id} once the final comparisons ran")


# ---- best schedules ---------------------------------------------------------------------------------------------
class TargetPublic(BaseModel):
    """compiler_core.Target of a device class, as its agents registered it: what the schedule was generated for
    (the loader rebuilds it)."""

    kind: str = Field(description="'c' or 'cuda'")
    arch: str = Field(description="'x86_64-avx2', 'sm_80', 'sm_90a'")
    max_threads_per_block: int
    max_shared_bytes: int = Field(description="static shared memory per block")
    warp_size: int
    vector_bytes: int
    cores: int = Field(description="C: OpenMP threads; CUDA: 0")
    max_registers_per_thread: int
    register_file: int = Field(0, description="32-bit registers per multiprocessor")
    max_dynamic_shared_bytes: int = Field(0, description="shared memory per block after opt-in")
    sm_count: int = 0
    l2_bytes: int = 0
    tensor_cores: list[str] = Field(default_factory=list, description="'wmma_f16', 'mma_bf16', 'wgmma'")


class VersionPublic(Throughput):
    workload: str
    device_class: str
    version: int
    parent_version: int | None
    reason: str
    pinned: bool = Field(description="whether the key was pinned when this version was made")
    author: str | None
    job_id: str | None
    message: str | None
    created_at: datetime
    trial_id: str
    config: dict[str, Any]
    codegen_version: str
    median_s: float | None
    ci_low_s: float | None
    ci_high_s: float | None


class BestPublic(VersionPublic):
    predicted: Literal[False] = Field(False, description="false: a measured head (see PredictedBest)")
    op: str
    params: dict[str, Any]
    head_version: int | None = Field(description="the key's current head (differs when version=/as_of= is given)")
    head_pinned: bool = Field(description="whether the key is pinned now")
    target: TargetPublic | None = Field(None, description="what the class's agents registered; null for a "
                                                          "class known only from an import")
    source: str | None = Field(None, description="the generated kernel source, with include_source=true")


class DiffPublic(BaseModel):
    workload: str
    device_class: str
    from_version: int
    to_version: int
    changed: dict[str, tuple[Any, Any]] = Field(description="knob -> [value in from_version, value in to_version]")
    median_ratio: float | None = Field(description="to_version median / from_version median (< 1: faster)")


class ScheduleKeyPublic(BaseModel):
    """A (workload, device class) with a best-schedule history, and its head now."""

    workload: str
    op: str
    params: dict[str, Any]
    device_class: str
    head_version: int
    pinned: bool
    updated_at: datetime


class ScheduleKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: OpName
    params: Params = Field(max_length=32, description=PARAMS_DOC, json_schema_extra=NAMED_ONLY)
    device: DeviceSelector
    message: str | None = Field(None, max_length=2000, pattern=NO_NUL)


class RollbackRequest(ScheduleKey):
    to_version: Version


class PinRequest(ScheduleKey):
    version: Version | None = Field(description="the version to pin, or null: pin `trial_id`, or without it unpin")
    trial_id: RowId | None = Field(None, description="with version null: pin this verified trial of the key (one "
                                   "that never became a version, e.g. to replace an implausible head)")


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=128, pattern=NO_NUL,
                      description="what the token is for, e.g. 'ci-reader'")
    scope: Literal["read", "admin"] = Field("read", description="'read' for GETs, 'admin' also for writes")


class TokenPublic(BaseModel):
    """A token's record; the plaintext is never stored (only its SHA-256) and so never shown again."""

    id: str
    name: str
    scope: str
    created_at: datetime
    revoked: bool


class TokenCreated(TokenPublic):
    token: str = Field(description="the plaintext, shown this once: keep it")


class ImportResult(BaseModel):
    workloads: int
    devices: int
    trials: int
    duplicate_trials: int
    versions: int
