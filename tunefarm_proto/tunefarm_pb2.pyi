from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TaskKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_KIND_UNSPECIFIED: _ClassVar[TaskKind]
    MEASURE: _ClassVar[TaskKind]
    COMPARE: _ClassVar[TaskKind]

class TrialStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRIAL_STATUS_UNSPECIFIED: _ClassVar[TrialStatus]
    OK: _ClassVar[TrialStatus]
    COMPILE_ERROR: _ClassVar[TrialStatus]
    RUNTIME_ERROR: _ClassVar[TrialStatus]
    TIMEOUT: _ClassVar[TrialStatus]
    WRONG_ANSWER: _ClassVar[TrialStatus]
    RESOURCE_EXCEEDED: _ClassVar[TrialStatus]
    AGENT_LOST: _ClassVar[TrialStatus]
TASK_KIND_UNSPECIFIED: TaskKind
MEASURE: TaskKind
COMPARE: TaskKind
TRIAL_STATUS_UNSPECIFIED: TrialStatus
OK: TrialStatus
COMPILE_ERROR: TrialStatus
RUNTIME_ERROR: TrialStatus
TIMEOUT: TrialStatus
WRONG_ANSWER: TrialStatus
RESOURCE_EXCEEDED: TrialStatus
AGENT_LOST: TrialStatus

class DeviceFingerprint(_message.Message):
    __slots__ = ("kind", "device_index", "model", "arch", "isa_flags", "compute_units", "memory_bytes", "driver_version", "compiler_version", "cuda_version", "hostname", "target")
    KIND_FIELD_NUMBER: _ClassVar[int]
    DEVICE_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    ISA_FLAGS_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_UNITS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    DRIVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    COMPILER_VERSION_FIELD_NUMBER: _ClassVar[int]
    CUDA_VERSION_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    kind: str
    device_index: int
    model: str
    arch: str
    isa_flags: _containers.RepeatedScalarFieldContainer[str]
    compute_units: int
    memory_bytes: int
    driver_version: str
    compiler_version: str
    cuda_version: str
    hostname: str
    target: Target
    def __init__(self, kind: _Optional[str] = ..., device_index: _Optional[int] = ..., model: _Optional[str] = ..., arch: _Optional[str] = ..., isa_flags: _Optional[_Iterable[str]] = ..., compute_units: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., driver_version: _Optional[str] = ..., compiler_version: _Optional[str] = ..., cuda_version: _Optional[str] = ..., hostname: _Optional[str] = ..., target: _Optional[_Union[Target, _Mapping]] = ...) -> None: ...

class Target(_message.Message):
    __slots__ = ("kind", "arch", "max_threads_per_block", "max_shared_bytes", "warp_size", "vector_bytes", "cores", "max_registers_per_thread", "register_file", "max_dynamic_shared_bytes", "sm_count", "l2_bytes", "tensor_cores")
    KIND_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    MAX_THREADS_PER_BLOCK_FIELD_NUMBER: _ClassVar[int]
    MAX_SHARED_BYTES_FIELD_NUMBER: _ClassVar[int]
    WARP_SIZE_FIELD_NUMBER: _ClassVar[int]
    VECTOR_BYTES_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    MAX_REGISTERS_PER_THREAD_FIELD_NUMBER: _ClassVar[int]
    REGISTER_FILE_FIELD_NUMBER: _ClassVar[int]
    MAX_DYNAMIC_SHARED_BYTES_FIELD_NUMBER: _ClassVar[int]
    SM_COUNT_FIELD_NUMBER: _ClassVar[int]
    L2_BYTES_FIELD_NUMBER: _ClassVar[int]
    TENSOR_CORES_FIELD_NUMBER: _ClassVar[int]
    kind: str
    arch: str
    max_threads_per_block: int
    max_shared_bytes: int
    warp_size: int
    vector_bytes: int
    cores: int
    max_registers_per_thread: int
    register_file: int
    max_dynamic_shared_bytes: int
    sm_count: int
    l2_bytes: int
    tensor_cores: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, kind: _Optional[str] = ..., arch: _Optional[str] = ..., max_threads_per_block: _Optional[int] = ..., max_shared_bytes: _Optional[int] = ..., warp_size: _Optional[int] = ..., vector_bytes: _Optional[int] = ..., cores: _Optional[int] = ..., max_registers_per_thread: _Optional[int] = ..., register_file: _Optional[int] = ..., max_dynamic_shared_bytes: _Optional[int] = ..., sm_count: _Optional[int] = ..., l2_bytes: _Optional[int] = ..., tensor_cores: _Optional[_Iterable[str]] = ...) -> None: ...

class RegisterRequest(_message.Message):
    __slots__ = ("enrolment_token", "agent_name", "device", "codegen_version", "max_parallel_builds")
    ENROLMENT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    AGENT_NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    CODEGEN_VERSION_FIELD_NUMBER: _ClassVar[int]
    MAX_PARALLEL_BUILDS_FIELD_NUMBER: _ClassVar[int]
    enrolment_token: str
    agent_name: str
    device: DeviceFingerprint
    codegen_version: str
    max_parallel_builds: int
    def __init__(self, enrolment_token: _Optional[str] = ..., agent_name: _Optional[str] = ..., device: _Optional[_Union[DeviceFingerprint, _Mapping]] = ..., codegen_version: _Optional[str] = ..., max_parallel_builds: _Optional[int] = ...) -> None: ...

class RegisterResponse(_message.Message):
    __slots__ = ("agent_id", "session_token", "device_class", "heartbeat_interval_ms", "lease_seconds")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    session_token: str
    device_class: str
    heartbeat_interval_ms: int
    lease_seconds: int
    def __init__(self, agent_id: _Optional[str] = ..., session_token: _Optional[str] = ..., device_class: _Optional[str] = ..., heartbeat_interval_ms: _Optional[int] = ..., lease_seconds: _Optional[int] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("agent_id", "session_token", "held_task_ids", "leaving")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    HELD_TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    LEAVING_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    session_token: str
    held_task_ids: _containers.RepeatedScalarFieldContainer[str]
    leaving: bool
    def __init__(self, agent_id: _Optional[str] = ..., session_token: _Optional[str] = ..., held_task_ids: _Optional[_Iterable[str]] = ..., leaving: _Optional[bool] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("cancelled_task_ids", "reregister")
    CANCELLED_TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    REREGISTER_FIELD_NUMBER: _ClassVar[int]
    cancelled_task_ids: _containers.RepeatedScalarFieldContainer[str]
    reregister: bool
    def __init__(self, cancelled_task_ids: _Optional[_Iterable[str]] = ..., reregister: _Optional[bool] = ...) -> None: ...

class LeaseRequest(_message.Message):
    __slots__ = ("agent_id", "session_token", "max_tasks")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MAX_TASKS_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    session_token: str
    max_tasks: int
    def __init__(self, agent_id: _Optional[str] = ..., session_token: _Optional[str] = ..., max_tasks: _Optional[int] = ...) -> None: ...

class MeasureOptions(_message.Message):
    __slots__ = ("warmup", "min_repeats", "min_time_s", "max_repeats", "timeout_s", "flush_cache", "max_time_s", "target_rel_ci", "max_contention")
    WARMUP_FIELD_NUMBER: _ClassVar[int]
    MIN_REPEATS_FIELD_NUMBER: _ClassVar[int]
    MIN_TIME_S_FIELD_NUMBER: _ClassVar[int]
    MAX_REPEATS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    FLUSH_CACHE_FIELD_NUMBER: _ClassVar[int]
    MAX_TIME_S_FIELD_NUMBER: _ClassVar[int]
    TARGET_REL_CI_FIELD_NUMBER: _ClassVar[int]
    MAX_CONTENTION_FIELD_NUMBER: _ClassVar[int]
    warmup: int
    min_repeats: int
    min_time_s: float
    max_repeats: int
    timeout_s: float
    flush_cache: bool
    max_time_s: float
    target_rel_ci: float
    max_contention: float
    def __init__(self, warmup: _Optional[int] = ..., min_repeats: _Optional[int] = ..., min_time_s: _Optional[float] = ..., max_repeats: _Optional[int] = ..., timeout_s: _Optional[float] = ..., flush_cache: _Optional[bool] = ..., max_time_s: _Optional[float] = ..., target_rel_ci: _Optional[float] = ..., max_contention: _Optional[float] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("task_id", "attempt", "job_id", "workload_key", "config_json", "options", "lease_deadline_unix_ms", "kind", "baseline_config_json", "time_reference")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_KEY_FIELD_NUMBER: _ClassVar[int]
    CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    BASELINE_CONFIG_JSON_FIELD_NUMBER: _ClassVar[int]
    TIME_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    attempt: int
    job_id: str
    workload_key: str
    config_json: str
    options: MeasureOptions
    lease_deadline_unix_ms: int
    kind: TaskKind
    baseline_config_json: str
    time_reference: bool
    def __init__(self, task_id: _Optional[str] = ..., attempt: _Optional[int] = ..., job_id: _Optional[str] = ..., workload_key: _Optional[str] = ..., config_json: _Optional[str] = ..., options: _Optional[_Union[MeasureOptions, _Mapping]] = ..., lease_deadline_unix_ms: _Optional[int] = ..., kind: _Optional[_Union[TaskKind, str]] = ..., baseline_config_json: _Optional[str] = ..., time_reference: _Optional[bool] = ...) -> None: ...

class LeaseResponse(_message.Message):
    __slots__ = ("tasks", "retry_after_ms")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    retry_after_ms: int
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., retry_after_ms: _Optional[int] = ...) -> None: ...

class TrialResult(_message.Message):
    __slots__ = ("task_id", "attempt", "status", "samples_s", "median_s", "ci_low_s", "ci_high_s", "error", "codegen_version", "compile_s", "max_abs_error", "baseline_samples_s", "reference_samples_s", "reference_name", "contention", "noisy", "threads", "cpus")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_S_FIELD_NUMBER: _ClassVar[int]
    MEDIAN_S_FIELD_NUMBER: _ClassVar[int]
    CI_LOW_S_FIELD_NUMBER: _ClassVar[int]
    CI_HIGH_S_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CODEGEN_VERSION_FIELD_NUMBER: _ClassVar[int]
    COMPILE_S_FIELD_NUMBER: _ClassVar[int]
    MAX_ABS_ERROR_FIELD_NUMBER: _ClassVar[int]
    BASELINE_SAMPLES_S_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_SAMPLES_S_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONTENTION_FIELD_NUMBER: _ClassVar[int]
    NOISY_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    attempt: int
    status: TrialStatus
    samples_s: _containers.RepeatedScalarFieldContainer[float]
    median_s: float
    ci_low_s: float
    ci_high_s: float
    error: str
    codegen_version: str
    compile_s: float
    max_abs_error: float
    baseline_samples_s: _containers.RepeatedScalarFieldContainer[float]
    reference_samples_s: _containers.RepeatedScalarFieldContainer[float]
    reference_name: str
    contention: float
    noisy: bool
    threads: int
    cpus: str
    def __init__(self, task_id: _Optional[str] = ..., attempt: _Optional[int] = ..., status: _Optional[_Union[TrialStatus, str]] = ..., samples_s: _Optional[_Iterable[float]] = ..., median_s: _Optional[float] = ..., ci_low_s: _Optional[float] = ..., ci_high_s: _Optional[float] = ..., error: _Optional[str] = ..., codegen_version: _Optional[str] = ..., compile_s: _Optional[float] = ..., max_abs_error: _Optional[float] = ..., baseline_samples_s: _Optional[_Iterable[float]] = ..., reference_samples_s: _Optional[_Iterable[float]] = ..., reference_name: _Optional[str] = ..., contention: _Optional[float] = ..., noisy: _Optional[bool] = ..., threads: _Optional[int] = ..., cpus: _Optional[str] = ...) -> None: ...

class ReportRequest(_message.Message):
    __slots__ = ("agent_id", "session_token", "results")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    session_token: str
    results: _containers.RepeatedCompositeFieldContainer[TrialResult]
    def __init__(self, agent_id: _Optional[str] = ..., session_token: _Optional[str] = ..., results: _Optional[_Iterable[_Union[TrialResult, _Mapping]]] = ...) -> None: ...

class ReportResponse(_message.Message):
    __slots__ = ("accepted_task_ids", "duplicate_task_ids", "rejected_task_ids")
    ACCEPTED_TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    REJECTED_TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    accepted_task_ids: _containers.RepeatedScalarFieldContainer[str]
    duplicate_task_ids: _containers.RepeatedScalarFieldContainer[str]
    rejected_task_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, accepted_task_ids: _Optional[_Iterable[str]] = ..., duplicate_task_ids: _Optional[_Iterable[str]] = ..., rejected_task_ids: _Optional[_Iterable[str]] = ...) -> None: ...
