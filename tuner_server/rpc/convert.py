"""Protobuf <-> domain records, with every request field validated: the only tuner module that sees `_pb2` types.

A request that breaks a rule raises `FieldError` naming the field and what is allowed (the servicer answers
INVALID_ARGUMENT); nothing here touches the database. Responses are built from repository records.

What a result stores is held to the rules an import holds a trial line to (repo/plausible.py: its timings, the length
of its error text), checked by the same functions, so that this farm's export always imports again. A registered
compiler target must be one compiler_core generates code for, and the ISA of the class its fingerprint names
(targets.py).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import compiler_core as cc
from compiler_core.backends import backend_for_device
from tunefarm_proto import tunefarm_pb2 as pb
from tuner_server import measure_policy
from tuner_server.device_class import arch_token, best_isa, sm_number
from tuner_server.repo import LeasedTask, RecordOutcome, Registration, TrialReport
from tuner_server.repo.plausible import (
    MAX_CODEGEN_VERSION,
    MAX_ERROR_CHARS,
    MAX_SAMPLES,
    number_problem,
    timings_problem,
)
from tuner_server.targets import isa_problem, target_problem

MAX_ID = 64  # task and agent ids are 36-character UUIDs
MAX_TOKEN = 512
MAX_NAME = 128
MAX_TEXT = 256  # fingerprint strings
MAX_FLAGS = 512
MAX_LEASE = 256  # tasks per LeaseTasks call
MAX_HELD = 10_000  # held task ids per Heartbeat
MAX_RESULTS = 1_000  # results per ReportResults call
MAX_BUILDS = 1_024
KINDS = ("cpu", "cuda")
STATUS_NAMES = tuple(name for name in pb.TrialStatus.keys() if name != "TRIAL_STATUS_UNSPECIFIED")

MAX_SECONDS = 86_400.0  # a sample, median or build time: a task's timeout is at most an hour
MAX_CPUS_TEXT = 256
MAX_THREADS = 1 << 16


class FieldError(ValueError):
    """A request field breaks a rule; the message names the field and what is allowed."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field


@dataclass(frozen=True)
class Credentials:
    agent_id: str
    session_token: str


@dataclass(frozen=True)
class RegisterCall:
    enrolment_token: str
    agent_name: str
    fingerprint: dict[str, Any]
    codegen_version: str
    max_parallel_builds: int


# ---- requests ------------------------------------------------------------------------------------------------
def _text(value: str, field: str, limit: int, *, required: bool = False) -> str:
    if required and not value.strip():
        raise FieldError(field, "is required (empty)")
    if len(value) > limit:
        raise FieldError(field, f"must be at most {limit} characters, got {len(value)}")
    if "\x00" in value:
        raise FieldError(field, "must not contain a NUL character (the database's text cannot hold it)")
    return value


_CUT = "..."  # what starts an error text cut to its end


def _error_text(value: str) -> str:
    """A failure's text as stored: at most MAX_ERROR_CHARS characters (what an import takes), its end when it is
    longer (where compilers and tracebacks say what failed), and any NUL (a crashed kernel's output may hold one;
    the database's text cannot) shown as U+FFFD."""
    text = value if len(value) <= MAX_ERROR_CHARS else _CUT + value[len(value) - MAX_ERROR_CHARS + len(_CUT):]
    return text.replace("\x00", "\ufffd")


def _in_range(value: int, field: str, low: int, high: int | None = None) -> int:
    if value < low or (high is not None and value > high):
        allowed = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise FieldError(field, f"must be {allowed}, got {value}")
    return value


def credentials(m: Any) -> Credentials:
    """The (agent_id, session_token) of a Heartbeat/Lease/Report request; emptiness is the servicer's call."""
    return Credentials(_text(m.agent_id, "agent_id", MAX_ID), _text(m.session_token, "session_token", MAX_TOKEN))


def fingerprint(m: pb.DeviceFingerprint) -> dict[str, Any]:
    kind = m.kind.strip().lower()
    if kind not in KINDS:
        raise FieldError("device.kind", f"must be one of {', '.join(KINDS)}, got {m.kind!r}")
    _text(m.arch, "device.arch", MAX_TEXT, required=True)
    _arch(m.arch, kind)
    _text(m.model, "device.model", MAX_TEXT, required=kind == "cuda")
    for name in ("driver_version", "compiler_version", "cuda_version", "hostname"):
        _text(getattr(m, name), f"device.{name}", MAX_TEXT)
    if len(m.isa_flags) > MAX_FLAGS:
        raise FieldError("device.isa_flags", f"at most {MAX_FLAGS} flags, got {len(m.isa_flags)}")
    for i, flag in enumerate(m.isa_flags):
        _text(flag, f"device.isa_flags[{i}]", MAX_TEXT, required=True)
    _in_range(m.compute_units, "device.compute_units", 1)
    _in_range(m.device_index, "device.device_index", 0)
    _in_range(m.memory_bytes, "device.memory_bytes", 0)
    compiler_target = target(m, kind)
    if kind == "cpu" and (problem := isa_problem(best_isa(m.isa_flags), compiler_target)):
        raise FieldError("device.isa_flags", problem)
    return {"kind": kind, "device_index": m.device_index, "model": m.model, "arch": m.arch,
            "isa_flags": list(m.isa_flags), "compute_units": m.compute_units, "memory_bytes": m.memory_bytes,
            "driver_version": m.driver_version, "compiler_version": m.compiler_version,
            "cuda_version": m.cuda_version, "hostname": m.hostname, "target": compiler_target.to_dict()}


def _arch(arch: str, kind: str) -> None:
    """A CUDA device's arch is its compute capability; a CPU's, a machine name with letters or digits."""
    try:
        if kind == "cuda":
            sm_number(arch)
        else:
            arch_token(arch)
    except ValueError:
        allowed = "its compute capability, like 'sm_90', 'sm_90a' or '9.0'" if kind == "cuda" else \
            "its machine, like 'x86_64' or 'aarch64'"
        raise FieldError("device.arch", f"a {kind} device's arch is {allowed}; got {arch!r}") from None


def target(m: pb.DeviceFingerprint, kind: str) -> cc.Target:
    """The agent's compiler target: present, well-formed, and of its device's kind (and cores, for a CPU)."""
    if not m.HasField("target"):
        raise FieldError("device.target", "is required: the compiler target the agent generates code for "
                                          "(agents of this release send it)")
    t = m.target
    fields = {name: getattr(t, name) for name in cc.Target.__dataclass_fields__}
    fields["tensor_cores"] = list(t.tensor_cores)
    try:
        parsed = cc.Target.from_dict(fields)
    except ValueError as exc:
        raise FieldError("device.target", str(exc)) from None
    expected = backend_for_device(kind).kind
    if parsed.kind != expected:
        raise FieldError("device.target.kind", f"a {kind} device generates {expected!r} code, got {parsed.kind!r}")
    if problem := target_problem(parsed):
        raise FieldError(f"device.target.{problem[0]}", problem[1])
    counted = "cores" if kind == "cpu" else "sm_count"
    if getattr(parsed, counted) != m.compute_units:
        raise FieldError(f"device.target.{counted}", f"must equal device.compute_units ({m.compute_units}), the "
                                                     f"{counted} the agent measures on; got {getattr(parsed, counted)}")
    if kind == "cuda" and str(parsed.sm) != sm_number(m.arch):
        raise FieldError("device.target.arch", f"{parsed.arch} is not the device's arch {m.arch!r}")
    if kind == "cpu" and parsed.arch.rpartition("-")[0] != arch_token(m.arch):
        raise FieldError("device.target.arch", f"{parsed.arch} is not for the device's arch {m.arch!r}: expected "
                                               f"'{arch_token(m.arch)}-<isa>'")
    return parsed


def register_call(m: pb.RegisterRequest) -> RegisterCall:
    if not m.HasField("device"):
        raise FieldError("device", "is required: the agent's device fingerprint")
    return RegisterCall(
        enrolment_token=_text(m.enrolment_token, "enrolment_token", MAX_TOKEN),
        agent_name=_text(m.agent_name, "agent_name", MAX_NAME, required=True),
        fingerprint=fingerprint(m.device),
        codegen_version=_text(m.codegen_version, "codegen_version", MAX_CODEGEN_VERSION, required=True),
        max_parallel_builds=_in_range(m.max_parallel_builds, "max_parallel_builds", 0, MAX_BUILDS),
    )


def held_task_ids(m: pb.HeartbeatRequest) -> list[str]:
    if len(m.held_task_ids) > MAX_HELD:
        raise FieldError("held_task_ids", f"at most {MAX_HELD} ids, got {len(m.held_task_ids)}")
    return [_text(t, f"held_task_ids[{i}]", MAX_ID, required=True) for i, t in enumerate(m.held_task_ids)]


def max_tasks(m: pb.LeaseRequest) -> int:
    return _in_range(m.max_tasks, "max_tasks", 1, MAX_LEASE)


def _seconds(value: float, field: str) -> float:
    if not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
        raise FieldError(field, f"must be a number of seconds between 0 and {MAX_SECONDS}, got {value!r}")
    return value


def _status(value: int, field: str) -> str:
    if value == pb.TRIAL_STATUS_UNSPECIFIED:
        raise FieldError(field, f"is unset; one of {', '.join(STATUS_NAMES)}")
    if value not in pb.TrialStatus.values():
        raise FieldError(field, f"unknown value {value}; one of {', '.join(STATUS_NAMES)}")
    return pb.TrialStatus.Name(value)


def _samples(values: Sequence[float], field: str) -> tuple[float, ...]:
    if len(values) > MAX_SAMPLES:
        raise FieldError(field, f"at most {MAX_SAMPLES} samples, got {len(values)}")
    return tuple(_seconds(v, f"{field}[{i}]") for i, v in enumerate(values))


def _interval(low: float, median: float | None, high: float, path: str) -> tuple[float | None, float | None]:
    """Both bounds 0 means 'not given'; otherwise 0 <= low <= median <= high."""
    if low == 0 and high == 0:
        return None, None
    if low > high or (median is not None and not low <= median <= high):
        raise FieldError(f"{path}.ci_low_s", f"the interval must satisfy ci_low_s <= median_s <= ci_high_s, got "
                                             f"{low!r} <= {median!r} <= {high!r}")
    return low, high


def trial_report(m: pb.TrialResult, path: str) -> TrialReport:
    status = _status(m.status, f"{path}.status")
    samples = _samples(m.samples_s, f"{path}.samples_s")
    median = _seconds(m.median_s, f"{path}.median_s")
    low, high = _seconds(m.ci_low_s, f"{path}.ci_low_s"), _seconds(m.ci_high_s, f"{path}.ci_high_s")
    max_abs_error = m.max_abs_error if math.isfinite(m.max_abs_error) else None  # a wrong answer may be NaN
    if max_abs_error is not None and max_abs_error < 0:
        raise FieldError(f"{path}.max_abs_error", f"must be >= 0, got {m.max_abs_error!r}")
    if status == "OK":
        if not samples:
            raise FieldError(f"{path}.samples_s", "an OK result needs at least one sample")
        if median <= 0:
            raise FieldError(f"{path}.median_s", f"an OK result needs a median > 0, got {median!r}")
        if max_abs_error is None:
            raise FieldError(f"{path}.max_abs_error", f"an OK (verified) result has a finite error, got "
                                                      f"{m.max_abs_error!r}")
    median_or_none = median if median > 0 else None
    low, high = _interval(low, median_or_none, high, path)
    error = _error_text(m.error)
    baseline = _samples(m.baseline_samples_s, f"{path}.baseline_samples_s")
    reference = _samples(m.reference_samples_s, f"{path}.reference_samples_s")
    for name, paired in (("baseline_samples_s", baseline), ("reference_samples_s", reference)):
        if paired and len(paired) != len(samples):
            raise FieldError(f"{path}.{name}", f"pairs with samples_s: {len(samples)} values expected, got "
                                               f"{len(paired)}")
    if not (math.isfinite(m.contention) and 0 <= m.contention <= 1):
        raise FieldError(f"{path}.contention", f"must be a share between 0 and 1, got {m.contention!r}")
    if status == "OK":
        _plausible(path, samples, median, low, high, baseline=baseline, reference=reference)
    else:  # a failed build or run was not timed: no timings are kept (imports hold trials to that too)
        samples, baseline, reference, median_or_none, low, high = (), (), (), None, None, None
    codegen_version = _text(m.codegen_version, f"{path}.codegen_version", MAX_CODEGEN_VERSION)
    if codegen_version and not codegen_version.strip():
        raise FieldError(f"{path}.codegen_version", "must name the code generator, or be empty (the agent's)")
    return TrialReport(
        task_id=_text(m.task_id, f"{path}.task_id", MAX_ID, required=True),
        attempt=_in_range(m.attempt, f"{path}.attempt", 1), status=status, samples_s=samples,
        median_s=median_or_none, ci_low_s=low, ci_high_s=high, error=error,
        codegen_version=codegen_version,
        compile_s=_seconds(m.compile_s, f"{path}.compile_s"), max_abs_error=max_abs_error,
        baseline_samples_s=baseline, reference_samples_s=reference,
        reference_name=_text(m.reference_name, f"{path}.reference_name", 32), contention=m.contention,
        noisy=m.noisy, threads=_in_range(m.threads, f"{path}.threads", 0, MAX_THREADS),
        cpus=_text(m.cpus, f"{path}.cpus", MAX_CPUS_TEXT) or None,
    )


def _plausible(path: str, samples: Sequence[float], median: float, low: float | None, high: float | None, *,
               baseline: Sequence[float], reference: Sequence[float]) -> None:
    """An OK result's timings could have been measured, by the rules (and the code) an import holds a trial line to
    (repo/plausible.py): every sample, paired one included, > 0; median_s within the samples; the CI around it."""
    problem = timings_problem({"status": "OK", "samples": samples, "median_s": median, "ci_low_s": low,
                               "ci_high_s": high})
    paired = (number_problem(f"{name}[{i}]", value, positive=True)
              for name, values in (("baseline_samples_s", baseline), ("reference_samples_s", reference))
              for i, value in enumerate(values))
    problem = problem or next(filter(None, paired), None)
    if problem:
        raise FieldError(path, f"implausible OK result: {problem} (an OK result's samples are > 0, its median_s lies "
                               "within them and its CI holds the median, as an import requires)")


def trial_reports(m: pb.ReportRequest) -> list[TrialReport]:
    """Every result of a report, all validated before any is recorded."""
    if not 1 <= len(m.results) <= MAX_RESULTS:
        raise FieldError("results", f"must hold between 1 and {MAX_RESULTS} results, got {len(m.results)}")
    return [trial_report(r, f"results[{i}]") for i, r in enumerate(m.results)]


# ---- responses -----------------------------------------------------------------------------------------------
def register_response(reg: Registration, heartbeat_interval_s: float, lease_seconds: int) -> pb.RegisterResponse:
    return pb.RegisterResponse(agent_id=reg.agent.id, session_token=reg.session_token, device_class=reg.device_class,
                               heartbeat_interval_ms=int(heartbeat_interval_s * 1000), lease_seconds=lease_seconds)


def heartbeat_response(cancelled: Iterable[str] = (), reregister: bool = False) -> pb.HeartbeatResponse:
    return pb.HeartbeatResponse(cancelled_task_ids=list(cancelled), reregister=reregister)


def measure_options(options: Mapping[str, Any]) -> pb.MeasureOptions:
    """The job's resolved options (tuner_server.measure_policy) as the agent receives them."""
    return pb.MeasureOptions(**{name: options[name] for name in measure_policy.AGENT_FIELDS})


def task(t: LeasedTask) -> pb.Task:
    return pb.Task(task_id=t.task_id, attempt=t.attempt, job_id=t.job_id, workload_key=t.workload_key,
                   config_json=cc.config_key(t.config), options=measure_options(t.measure_options),
                   lease_deadline_unix_ms=int(t.lease_deadline.timestamp() * 1000), kind=pb.TaskKind.Value(t.kind),
                   baseline_config_json=cc.config_key(t.baseline_config) if t.baseline_config is not None else "",
                   time_reference=t.time_reference)


def lease_response(tasks: Sequence[LeasedTask], retry_after_s: float) -> pb.LeaseResponse:
    return pb.LeaseResponse(tasks=[task(t) for t in tasks], retry_after_ms=0 if tasks else int(retry_after_s * 1000))


def report_response(outcomes: Iterable[RecordOutcome]) -> pb.ReportResponse:
    by_status: dict[str, list[str]] = {"accepted": [], "duplicate": [], "rejected": []}
    for outcome in outcomes:
        by_status[outcome.status].append(outcome.task_id)
    return pb.ReportResponse(accepted_task_ids=by_status["accepted"], duplicate_task_ids=by_status["duplicate"],
                             rejected_task_ids=by_status["rejected"])
