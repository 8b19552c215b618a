"""The agent process: `tunefarm agent --server HOST:PORT --device cpu|cuda:N --token T`.

`run_agent(settings)` is the thin shell around the state machine: it turns gRPC answers, finished tasks,
signals and the clock into events, and carries out the instructions that come back (calls through
rpc_client, tasks through the runner). SIGTERM/SIGINT ask for a graceful shutdown; a second one hurries it.
"""
from __future__ import annotations

import argparse
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from pathlib import Path

import compiler_core as cc
from device_agent import events as ev
from device_agent.affinity import CpuSetError, available_cpus, format_cpus, parse_cpus
from device_agent.fingerprint import FingerprintError, fingerprint, parse_device
from device_agent.health import HealthEndpoint
from device_agent.prebuild import BuildPool
from device_agent.rpc_client import AgentClient, RpcFailure
from device_agent.runner import TaskRunner
from device_agent.sandbox import Sandbox, WorkerStartError
from device_agent.settings import AgentSettings
from device_agent.state import AgentState
from device_agent.worker import WorkerSpec

log = logging.getLogger("tunefarm.agent")


class AgentShell:
    """Executes instructions; each network call answers with the event that describes its outcome."""

    def __init__(self, settings: AgentSettings, device: dict, client: AgentClient, runner: TaskRunner,
                 inbox: queue.SimpleQueue) -> None:
        self.settings, self.device, self.client, self.runner, self.inbox = settings, device, client, runner, inbox
        self.state = AgentState(settings.state_config())
        self.health: HealthEndpoint | None = None  # SERVING from the first registration on

    def loop(self) -> int:
        pending: deque = deque([ev.Tick(time.time()), ev.Started()])
        sleep_s = 0.0
        while True:
            if not pending:
                self._wait(pending, sleep_s)
            for instruction in self.state.handle(pending.popleft()):
                if isinstance(instruction, ev.Exit):
                    log.info("exiting (%d): %s", instruction.code, instruction.reason)
                    self._leave()
                    return instruction.code
                if isinstance(instruction, ev.Sleep):
                    sleep_s = instruction.seconds
                    continue
                outcome = self.execute(instruction)
                if outcome is not None:
                    pending.extend([ev.Tick(time.time()), outcome])

    def _leave(self) -> None:
        """Tells the tuner this agent stops (a registered one only; best effort: a tuner that does not hear it marks
        the agent lost once it has been silent long enough)."""
        if self.state.session is None:
            return
        try:
            self.client.heartbeat((), leaving=True)
        except RpcFailure as f:
            log.info("could not say goodbye to the tuner: %s", f)

    def _wait(self, pending: deque, timeout_s: float) -> None:
        """Waits for worker completions or signals (at most `timeout_s`), then stamps the time."""
        try:
            pending.append(self.inbox.get(timeout=max(timeout_s, 0.0)))
            while True:
                pending.append(self.inbox.get_nowait())
        except queue.Empty:
            pass
        pending.appendleft(ev.Tick(time.time()))

    def execute(self, instruction):
        handler = getattr(self, "_do_" + type(instruction).__name__)
        return handler(instruction)

    def _do_Register(self, _):
        s = self.settings
        try:
            reg = self.client.register(s.token, s.agent_name, self.device, cc.codegen_version(),
                                       s.max_parallel_builds)
        except RpcFailure as f:
            log.warning("register failed: %s", f)
            return ev.RegisterFailed(str(f), fatal=f.kind in ("refused", "session"))
        log.info("registered as %s (device class %s)", reg.agent_id, reg.device_class)
        if self.health is not None:
            self.health.set(True)
        return ev.Registered(reg.agent_id, reg.session_token, reg.lease_s, reg.heartbeat_s, reg.device_class)

    def _do_Lease(self, instruction: ev.Lease):
        try:
            tasks, retry_after_s = self.client.lease(instruction.n)
        except RpcFailure as f:
            return self._failed("lease", f)
        if not tasks:
            return ev.NothingToLease(retry_after_s)
        log.info("leased %d task(s)", len(tasks))
        self.runner.prebuild(tasks)
        return ev.Leased(tasks)

    def _do_Heartbeat(self, instruction: ev.Heartbeat):
        try:
            cancelled, reregister = self.client.heartbeat(instruction.held)
        except RpcFailure as f:
            return self._failed("heartbeat", f)
        return ev.HeartbeatAck(cancelled, reregister)

    def _do_Report(self, instruction: ev.Report):
        try:
            accepted, duplicate, rejected = self.client.report(instruction.results)
        except RpcFailure as f:
            if f.kind == "session":
                return ev.SessionExpired("report")
            log.warning("report of %d result(s) failed: %s", len(instruction.results), f)
            return ev.ReportFailed(str(f))
        log.info("reported %d result(s): %d accepted, %d duplicate, %d rejected", len(instruction.results),
                 len(accepted), len(duplicate), len(rejected))
        return ev.Reported(accepted, duplicate, rejected)

    def _do_StartTask(self, instruction: ev.StartTask):
        log.info("measuring task %s: %s %s", instruction.task.task_id, instruction.task.workload_key,
                 instruction.task.config_json)
        self.runner.start(instruction.task)

    def _do_CancelTask(self, instruction: ev.CancelTask):
        self.runner.cancel(instruction.task_id)

    def _failed(self, call: str, f: RpcFailure):
        if f.kind == "session":
            return ev.SessionExpired(call)
        log.warning("%s failed: %s", call, f)
        return ev.ConnectionLost(call, str(f))


def _on_result(inbox: queue.SimpleQueue):
    def done(result) -> None:
        log.info("task %s: %s%s", result.task_id, result.status.value,
                 f" median {result.median_s * 1e6:.1f} us" if result.samples_s else f" ({result.error[:200]})")
        inbox.put(ev.TaskDone(result))  # SimpleQueue.put is reentrant: safe from threads and signal handlers
    return done


def _install_signals(inbox: queue.SimpleQueue) -> dict:
    if threading.current_thread() is not threading.main_thread():
        return {}

    def request_shutdown(signum, _frame) -> None:
        inbox.put(ev.ShutdownRequested())

    return {sig: signal.signal(sig, request_shutdown) for sig in (signal.SIGTERM, signal.SIGINT)}


def run_agent(settings: AgentSettings) -> int:
    """Runs until shut down; returns the process exit code (0 clean, 1 results lost, 2 cannot start)."""
    try:
        kind, _ = parse_device(settings.device)
        device = fingerprint(settings.device, settings.cpus)
    except FingerprintError as exc:
        log.error("%s", exc)
        return 2
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    previous = _install_signals(inbox)
    cores = settings.cpus or available_cpus() if kind == "cpu" else frozenset()
    sandbox = Sandbox(WorkerSpec(settings.device, settings.plugins, cores, settings.lock_dir, settings.cache_dir,
                                 settings.cache_bytes))
    sandbox.start()
    pool = BuildPool(cc.Target.from_dict(device["target"]), settings.max_parallel_builds, settings.plugins,
                     cache_dir=settings.cache_dir, on_ready=lambda task_id: inbox.put(ev.TaskReady(task_id)))
    runner = TaskRunner(sandbox, pool, _on_result(inbox))
    client = AgentClient(settings.server, settings.tls_ca_file, settings.call_timeout_s, settings.tls_server_name)
    health = None
    try:
        if settings.health_port is not None:
            health = HealthEndpoint(settings.health_port).start(serving=False)
            log.info("health service on port %d (SERVING once registered)", health.port)
        sandbox.wait_ready()
        log.info("agent %s on %s (%s)%s, %d builder(s), server %s%s", settings.agent_name, settings.device,
                 device["model"], f" cores {format_cpus(cores)}" if cores else "", settings.max_parallel_builds,
                 settings.server, " (TLS)" if settings.tls_ca_file else "")
        shell = AgentShell(settings, device, client, runner, inbox)
        shell.health = health
        return shell.loop()
    except (WorkerStartError, OSError) as exc:
        log.error("%s", exc)
        return 2
    finally:
        if health is not None:
            health.stop()
        runner.close()
        client.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def watch_parent(pid: int, poll_s: float = 1.0) -> None:
    """--parent-pid: send this process SIGTERM (its graceful stop) once `pid` is no longer its parent."""
    def watch() -> None:
        while os.getppid() == pid:
            time.sleep(poll_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tunefarm agent", description="Measure candidate kernels for a tuner server.")
    p.add_argument("--server", required=True, help="tuner gRPC address, HOST:PORT")
    p.add_argument("--device", default="cpu", help="'cpu' or 'cuda:N' (default cpu)")
    p.add_argument("--token", default=None, help="enrolment token (default: $TUNEFARM_AGENT_TOKEN)")
    p.add_argument("--token-file", default=None, help="read the enrolment token from this file (a secret)")
    p.add_argument("--name", default="", help="agent name shown by the server (default HOST/DEVICE/PID)")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE in the worker and builders (registers custom ops); repeatable")
    p.add_argument("--builds", type=int, default=None,
                   help="parallel compilations (default: 2 for cpu, where builds share the measured cores; the "
                        "host's cores less 2 for cuda, so nvcc keeps ahead of the GPU)")
    p.add_argument("--lease-batch", type=int, default=None,
                   help="tasks held at once (default: twice --builds, at least 4): what the builders work ahead on")
    p.add_argument("--grace", type=float, default=20.0, help="seconds to finish work on SIGTERM (default 20)")
    p.add_argument("--tls-ca", default=None,
                   help="CA certificate file: connect with TLS (default: $TUNEFARM_GRPC_TLS_CA_FILE; unset: plaintext)")
    p.add_argument("--tls-server-name", default=None,
                   help="the name the tuner's certificate carries, when not the host of --server "
                        "(default: $TUNEFARM_GRPC_TLS_SERVER_NAME)")
    p.add_argument("--health-port", type=int, default=None,
                   help="serve the standard grpc.health.v1 service on this port, SERVING once registered (0: any "
                        "free port; default: $TUNEFARM_HEALTH_PORT; unset: off); probe: python -m device_agent.health")
    p.add_argument("--cpus", default=None, metavar="LIST",
                   help="CPU agents: the cores to measure on, e.g. '0-3' (default: every core this process may use); "
                        "kernels run with one thread per core")
    p.add_argument("--lock-dir", default="/tmp",
                   help="directory of the host-wide measurement locks; every agent of a host must use the same one "
                        "(in containers: mount one host directory there) (default /tmp)")
    p.add_argument("--cache-dir", default=None,
                   help="cache reference outputs on disk here (default: ~/.cache/tunefarm/references)")
    p.add_argument("--cache-gib", type=float, default=None,
                   help="memory for the inputs and references of recent workloads (default: a quarter of RAM, at "
                        "most 16); several jobs interleave their trials, so keep all their workloads")
    p.add_argument("--parent-pid", type=int, default=None, metavar="PID",
                    help="stop (as on SIGTERM) once PID is no longer this process's parent (tunefarm up sets it)")
    p.add_argument("--log-level", default="INFO")
    return p


def cache_bytes(gib: float | None) -> int:
    if gib is not None:
        return max(1, int(gib * (1 << 30)))
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return min(16 << 30, physical // 4)


class SettingsError(ValueError):
    """A setting that cannot work (an unreadable file, a bad number): one line for the user."""


def _read_file(path: str, what: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as exc:
        raise SettingsError(f"cannot read the {what} {path}: {exc.strerror}") from None


def _tls_ca(args: argparse.Namespace, environ) -> str | None:
    ca_file = args.tls_ca or environ.get("TUNEFARM_GRPC_TLS_CA_FILE") or None
    if ca_file and "BEGIN CERTIFICATE" not in _read_file(ca_file, "TLS CA certificate file"):
        raise SettingsError(f"the TLS CA certificate file {ca_file} holds no PEM certificate")
    return ca_file


def _health_port(args: argparse.Namespace, environ) -> int | None:
    if args.health_port is not None:
        return args.health_port
    value = environ.get("TUNEFARM_HEALTH_PORT", "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) > 65535:
        raise SettingsError(f"TUNEFARM_HEALTH_PORT={value!r} is not a port number")
    return int(value)


def settings_from_args(args: argparse.Namespace, environ=None) -> AgentSettings:
    """AgentSettings from the flags, with TUNEFARM_* variables as defaults; raises SettingsError (one line)."""
    environ = os.environ if environ is None else environ
    token = args.token
    if token is None and args.token_file:
        token = _read_file(args.token_file, "enrolment token file").strip()
    if token is None:
        token = environ.get("TUNEFARM_AGENT_TOKEN", "")
    cache_dir = args.cache_dir or str(Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                                      / "tunefarm" / "references")
    kind, _ = parse_device(args.device)
    builds = max(1, args.builds if args.builds is not None else
                 2 if kind == "cpu" else max(2, (os.cpu_count() or 4) - 2))
    lease_batch = max(1, args.lease_batch if args.lease_batch is not None else max(4, 2 * builds))
    return AgentSettings(server=args.server, device=args.device, token=token, name=args.name,
                         max_parallel_builds=builds, plugins=tuple(args.plugin),
                         tls_ca_file=_tls_ca(args, environ),
                         tls_server_name=args.tls_server_name or environ.get("TUNEFARM_GRPC_TLS_SERVER_NAME") or None,
                         lease_batch=lease_batch, shutdown_grace_s=args.grace,
                         health_port=_health_port(args, environ),
                         cpus=parse_cpus(args.cpus) if args.cpus else frozenset(),
                         lock_dir=args.lock_dir, cache_dir=cache_dir, cache_bytes=cache_bytes(args.cache_gib))


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = settings_from_args(args)
    except (CpuSetError, FingerprintError, SettingsError) as exc:  # bad settings: one line, no usage text
        print(f"tunefarm agent: {exc}", file=sys.stderr)
        return 2
    if args.parent_pid is not None:
        watch_parent(args.parent_pid)
    return run_agent(settings)


if __name__ == "__main__":
    sys.exit(main())
