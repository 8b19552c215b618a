"""A real agent process (`python -m device_agent.main`) against an in-test gRPC server TEST DOUBLE on loopback:
it registers, leases, reports every result once (even when a report call fails), and exits cleanly on SIGTERM,
also with a task still running (cancelled at the end of the grace period, its worker gone)."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
import psutil
import pytest

import compiler_core as cc
from device_agent.fingerprint import fingerprint
from device_agent.rpc_client import AgentClient, RpcFailure
from tests.space_configs import one_vector_microkernel
from tunefarm_proto import tunefarm_pb2 as pb
from tunefarm_proto import tunefarm_pb2_grpc as pb_grpc

REPO = Path(__file__).resolve().parents[2]
TOKEN = "test-enrolment-token"
MATMUL = cc.make_workload("matmul", {"M": 32, "N": 32, "K": 32})
FAST = pb.MeasureOptions(warmup=1, min_repeats=5, min_time_s=0.005, max_repeats=50, timeout_s=20, max_time_s=0.5,
                         target_rel_ci=0.5, max_contention=1.0)


def canned_task(task_id: str, key: str, config: dict, options=FAST) -> pb.Task:
    return pb.Task(task_id=task_id, attempt=1, job_id="job-1", workload_key=key, config_json=json.dumps(config),
                   options=options, lease_deadline_unix_ms=int((time.time() + 60) * 1000))


class FakeTunerServicer(pb_grpc.AgentServiceServicer):
    """TEST DOUBLE of the tuner's AgentService: hands out canned tasks and records what the agent sends."""

    def __init__(self, tasks: list[pb.Task], failing_reports: int = 0) -> None:
        self.queue = list(tasks)
        self.failing_reports = failing_reports
        self.lock = threading.Lock()
        self.registrations: list[pb.RegisterRequest] = []
        self.leases: list[int] = []
        self.heartbeats: list[tuple[str, ...]] = []
        self.report_calls = 0
        self.results: dict[tuple[str, int], pb.TrialResult] = {}

    def _check(self, request, context) -> None:
        if request.session_token != "session-1":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "unknown session")

    def Register(self, request, context):
        if request.enrolment_token != TOKEN:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad enrolment token")
        with self.lock:
            self.registrations.append(request)
        return pb.RegisterResponse(agent_id="agent-1", session_token="session-1", device_class="cpu-test",
                                   heartbeat_interval_ms=300, lease_seconds=30)

    def Heartbeat(self, request, context):
        self._check(request, context)
        with self.lock:
            self.heartbeats.append(tuple(request.held_task_ids))
        return pb.HeartbeatResponse()

    def LeaseTasks(self, request, context):
        self._check(request, context)
        with self.lock:
            self.leases.append(request.max_tasks)
            given, self.queue = self.queue[:request.max_tasks], self.queue[request.max_tasks:]
        return pb.LeaseResponse(tasks=given, retry_after_ms=0 if given else 200)

    def ReportResults(self, request, context):
        self._check(request, context)
        with self.lock:
            self.report_calls += 1
            if self.failing_reports > 0:
                self.failing_reports -= 1
                context.abort(grpc.StatusCode.UNAVAILABLE, "injected failure")
            accepted, duplicate = [], []
            for r in request.results:
                key = (r.task_id, r.attempt)
                (duplicate if key in self.results else accepted).append(r.task_id)
                self.results.setdefault(key, r)
        return pb.ReportResponse(accepted_task_ids=accepted, duplicate_task_ids=duplicate)

    def result_count(self) -> int:
        with self.lock:
            return len(self.results)


def serve(servicer: FakeTunerServicer):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_AgentServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def start_agent(port: int, log_path: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "device_agent.main", "--server", f"127.0.0.1:{port}", "--device", "cpu",
           "--token", TOKEN, "--name", "test-agent", "--plugin", "tests.fault_plugin", "--builds", "1", *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=log_path.open("w"), stderr=subprocess.STDOUT)


def wait_for(predicate, timeout_s: float, proc: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"agent exited early ({proc.returncode}):\n{log_path.read_text()[-4000:]}")
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout_s} s:\n{log_path.read_text()[-4000:]}")


def stop(proc: subprocess.Popen, log_path: Path, timeout_s: float) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"agent did not exit within {timeout_s} s of SIGTERM:\n{log_path.read_text()[-4000:]}")


def test_agent_registers_leases_reports_every_result_once_and_exits_on_sigterm(tmp_path):
    default = cc.default_config(MATMUL, cc.cpu_target())
    tasks = [canned_task("ok-1", MATMUL.key, default),
             canned_task("ok-2", MATMUL.key, one_vector_microkernel(MATMUL, cc.cpu_target())),
             canned_task("wrong", "fault(mode=wrong,n=16,dtype=float32)", {}),
             canned_task("bad-config", MATMUL.key, {"no_such_knob": 1})]
    servicer = FakeTunerServicer(tasks, failing_reports=1)
    server, port = serve(servicer)
    log_path = tmp_path / "agent.log"
    proc = start_agent(port, log_path, "--lease-batch", "2")
    try:
        wait_for(lambda: servicer.result_count() == len(tasks), 45, proc, log_path)
        wait_for(lambda: len(servicer.heartbeats) >= 2, 10, proc, log_path)
        code = stop(proc, log_path, 15)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.stop(0)
    log = log_path.read_text()
    assert code == 0, log
    reg = servicer.registrations[0]
    assert len(servicer.registrations) == 1
    assert reg.agent_name == "test-agent" and reg.device.kind == "cpu" and reg.device.compute_units >= 1
    assert len(reg.codegen_version) == 16
    assert all(0 < n <= 2 for n in servicer.leases)
    statuses = {task_id: pb.TrialStatus.Name(r.status) for (task_id, _), r in servicer.results.items()}
    assert statuses == {"ok-1": "OK", "ok-2": "OK", "wrong": "WRONG_ANSWER", "bad-config": "COMPILE_ERROR"}, log
    ok = servicer.results[("ok-1", 1)]
    assert len(ok.samples_s) >= 5 and ok.ci_low_s <= ok.median_s <= ok.ci_high_s
    assert servicer.report_calls > len({k for k in servicer.results})  # the failed report was sent again
    assert "shut down" in log


def test_sigterm_with_a_task_running_cancels_it_after_the_grace_period(tmp_path):
    hang = canned_task("hang", "fault(mode=hang,n=4,dtype=float32)", {},
                       pb.MeasureOptions(warmup=0, min_repeats=1, max_repeats=1, timeout_s=60, max_time_s=1.0,
                                         target_rel_ci=1.0, max_contention=1.0))
    servicer = FakeTunerServicer([hang])
    server, port = serve(servicer)
    log_path = tmp_path / "agent.log"
    proc = start_agent(port, log_path, "--grace", "1")
    try:
        wait_for(lambda: "measuring task hang" in log_path.read_text(), 30, proc, log_path)
        time.sleep(0.5)  # the hang is running in the worker now
        children = psutil.Process(proc.pid).children(recursive=True)
        t0 = time.monotonic()
        code = stop(proc, log_path, 15)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
        server.stop(0)
    assert code == 0, log_path.read_text()
    assert elapsed < 1 + 5  # the grace period plus shutting the worker and builders down
    assert servicer.results == {}  # an unfinished measurement is not reported: its lease lapses
    psutil.wait_procs(children, timeout=5)
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI to make a test certificate")
def test_client_speaks_tls_when_given_a_ca_file(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    servicer = FakeTunerServicer([])
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_AgentServiceServicer_to_server(servicer, server)
    credentials = grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        client = AgentClient(f"localhost:{port}", ca_file=str(cert), call_timeout_s=5)
        reg = client.register(TOKEN, "tls-agent", fingerprint("cpu"), "0" * 16, 1)
        assert reg.agent_id == "agent-1" and reg.heartbeat_s == pytest.approx(0.3)
        assert client.lease(2) == ((), 0.2)
        with pytest.raises(RpcFailure) as failure:  # a plaintext client cannot talk to the TLS port
            AgentClient(f"localhost:{port}", call_timeout_s=2).register(TOKEN, "x", fingerprint("cpu"), "", 1)
        assert failure.value.kind == "unreachable"
        client.close()
    finally:
        server.stop(0)


def test_a_bad_enrolment_token_is_refused_not_retried(tmp_path):
    servicer = FakeTunerServicer([])
    server, port = serve(servicer)
    log_path = tmp_path / "agent.log"
    proc = subprocess.Popen([sys.executable, "-m", "device_agent.main", "--server", f"127.0.0.1:{port}",
                             "--token", "wrong", "--builds", "1"], cwd=REPO, stdout=log_path.open("w"),
                            stderr=subprocess.STDOUT)
    try:
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.stop(0)
    assert code == 2 and "registration refused" in log_path.read_text()
