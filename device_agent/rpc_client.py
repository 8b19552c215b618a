"""The agent's gRPC adapter: the only module that sees tunefarm_pb2 types (STYLE principle 7).

`AgentClient` makes the four AgentService calls with a deadline each (learned per kind of call from the
latencies seen, device_agent/deadlines.py), converting domain records to and from protobuf messages. A failed call
raises `RpcFailure` with a `kind` the shell maps to a state-machine event:
'unreachable' (retry with backoff), 'session' (the server does not know our session: re-register) or
'refused' (the request is wrong or not allowed: retrying the same request cannot help).
"""
from __future__ import annotations

import time
from pathlib import Path

import grpc

from device_agent.deadlines import CallDeadlines
from device_agent.records import MeasureOptions, Registration, Status, Task, TaskKind, TrialResult
from tunefarm_proto import tunefarm_pb2 as pb
from tunefarm_proto import tunefarm_pb2_grpc as pb_grpc

REFUSED = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.FAILED_PRECONDITION,
           grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.NOT_FOUND}
MAX_MESSAGE_BYTES = 64 << 20


class RpcFailure(Exception):
    def __init__(self, kind: str, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.kind, self.code, self.message = kind, code, message


def _failure(exc: grpc.RpcError) -> RpcFailure:
    code = exc.code() if hasattr(exc, "code") else grpc.StatusCode.UNKNOWN
    details = exc.details() if hasattr(exc, "details") else str(exc)
    if code == grpc.StatusCode.UNAUTHENTICATED:
        kind = "session"
    elif code in REFUSED:
        kind = "refused"
    else:
        kind = "unreachable"
    return RpcFailure(kind, code.name if code else "UNKNOWN", details or "")


# ---- conversions ---------------------------------------------------------------------------------------

def fingerprint_to_proto(fp: dict) -> pb.DeviceFingerprint:
    fields = dict(fp)
    target = fields.pop("target", None)
    return pb.DeviceFingerprint(**fields, target=pb.Target(**target) if target is not None else None)


def options_from_proto(m: pb.MeasureOptions, has: bool) -> MeasureOptions | None:
    """The job's options as sent; None when the task has none (the agent has no defaults: it refuses the task,
    and MeasureOptions.problems() names unusable values)."""
    if not has:
        return None
    return MeasureOptions(warmup=m.warmup, min_repeats=m.min_repeats, min_time_s=m.min_time_s,
                          max_repeats=m.max_repeats, timeout_s=m.timeout_s, flush_cache=m.flush_cache,
                          max_time_s=m.max_time_s, target_rel_ci=m.target_rel_ci, max_contention=m.max_contention)


def task_from_proto(m: pb.Task) -> Task:
    kind = TaskKind.COMPARE if m.kind == pb.COMPARE else TaskKind.MEASURE
    return Task(task_id=m.task_id, attempt=m.attempt, job_id=m.job_id, workload_key=m.workload_key,
                config_json=m.config_json, options=options_from_proto(m.options, m.HasField("options")),
                lease_deadline_s=m.lease_deadline_unix_ms / 1000.0, kind=kind,
                baseline_config_json=m.baseline_config_json, time_reference=m.time_reference)


def result_to_proto(r: TrialResult) -> pb.TrialResult:
    return pb.TrialResult(task_id=r.task_id, attempt=r.attempt, status=pb.TrialStatus.Value(Status(r.status).value),
                          samples_s=list(r.samples_s), median_s=r.median_s, ci_low_s=r.ci_low_s,
                          ci_high_s=r.ci_high_s, error=r.error, codegen_version=r.codegen_version,
                          compile_s=r.compile_s, max_abs_error=r.max_abs_error,
                          baseline_samples_s=list(r.baseline_samples_s),
                          reference_samples_s=list(r.reference_samples_s), reference_name=r.reference_name,
                          contention=r.contention, noisy=r.noisy, threads=r.threads, cpus=r.cpus)


def registration_from_proto(m: pb.RegisterResponse) -> Registration:
    return Registration(agent_id=m.agent_id, session_token=m.session_token, device_class=m.device_class,
                        heartbeat_s=(m.heartbeat_interval_ms or 10_000) / 1000.0, lease_s=float(m.lease_seconds or 60))


# ---- the client ----------------------------------------------------------------------------------------

def open_channel(address: str, ca_file: str | None = None, server_name: str | None = None) -> grpc.Channel:
    """Plaintext, or TLS verified against `ca_file` (the certificate must name `server_name`, default the host of
    `address`)."""
    options = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
               ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
    if ca_file:
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        credentials = grpc.ssl_channel_credentials(root_certificates=Path(ca_file).read_bytes())
        return grpc.secure_channel(address, credentials, options=options)
    return grpc.insecure_channel(address, options=options)


class AgentClient:
    def __init__(self, address: str, ca_file: str | None = None, call_timeout_s: float = 10.0,
                 server_name: str | None = None) -> None:
        """`call_timeout_s`: each kind of call's deadline until its first answer (then learned)."""
        self._channel = open_channel(address, ca_file, server_name)
        self._stub = pb_grpc.AgentServiceStub(self._channel)
        self.deadlines = CallDeadlines(initial_s=call_timeout_s)
        self.agent_id = ""
        self.session_token = ""

    def _call(self, call: str, method, request):
        start = time.monotonic()
        try:
            response = method(request, timeout=self.deadlines.timeout_s(call))
        except grpc.RpcError as exc:
            failure = _failure(exc)
            if failure.code == "DEADLINE_EXCEEDED":
                self.deadlines.expired(call)
            raise failure from None
        self.deadlines.observe(call, time.monotonic() - start)
        return response

    def register(self, token: str, name: str, fingerprint: dict, codegen_version: str,
                 max_parallel_builds: int) -> Registration:
        request = pb.RegisterRequest(enrolment_token=token, agent_name=name, device=fingerprint_to_proto(fingerprint),
                                     codegen_version=codegen_version, max_parallel_builds=max_parallel_builds)
        reg = registration_from_proto(self._call("Register", self._stub.Register, request))
        self.agent_id, self.session_token = reg.agent_id, reg.session_token
        return reg

    def heartbeat(self, held_task_ids, leaving: bool = False) -> tuple[tuple[str, ...], bool]:
        """-> (cancelled task ids, reregister); `leaving`: the agent stops, and the tuner retires it now."""
        request = pb.HeartbeatRequest(agent_id=self.agent_id, session_token=self.session_token,
                                      held_task_ids=list(held_task_ids), leaving=leaving)
        response = self._call("Heartbeat", self._stub.Heartbeat, request)
        return tuple(response.cancelled_task_ids), bool(response.reregister)

    def lease(self, max_tasks: int) -> tuple[tuple[Task, ...], float]:
        """-> (tasks, retry_after_s)"""
        request = pb.LeaseRequest(agent_id=self.agent_id, session_token=self.session_token, max_tasks=max_tasks)
        response = self._call("LeaseTasks", self._stub.LeaseTasks, request)
        return tuple(task_from_proto(t) for t in response.tasks), response.retry_after_ms / 1000.0

    def report(self, results) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """-> (accepted, duplicate, rejected) task ids"""
        request = pb.ReportRequest(agent_id=self.agent_id, session_token=self.session_token,
                                   results=[result_to_proto(r) for r in results])
        response = self._call("ReportResults", self._stub.ReportResults, request)
        return (tuple(response.accepted_task_ids), tuple(response.duplicate_task_ids),
                tuple(response.rejected_task_ids))

    def close(self) -> None:
        self._channel.close()
