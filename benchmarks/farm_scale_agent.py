"""TEST DOUBLE agent for benchmarks/farm_scale.py: the real agent with its compiler and timer replaced.

It runs device_agent's own shell, state machine and gRPC client (AgentShell, AgentState, AgentClient: registration,
heartbeats, leases and their deadlines, reports and re-sends, backoff, the SIGTERM drain) against a real tuner, but
its runner is a TEST DOUBLE (`SimulatedRunner`): a leased task is "ready" at once, "measures" by sleeping
`--measure-s` (±20 %, no CPU) and reports made-up samples. So N of these load the tuner as N agents would, without N
compilers and kernels competing for the machine's cores. Its trials are invented: never point it at a real farm.

At exit it writes `--summary` (JSON): every AgentService call's latency by method, failures by status code, and the
tasks it ran per job.

    python benchmarks/farm_scale_agent.py --server 127.0.0.1:50051 --token-file T --name a0 --summary a0.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import queue
import random
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import compiler_core as cc  # noqa: E402
from device_agent import events as ev  # noqa: E402
from device_agent.fingerprint import fingerprint  # noqa: E402
from device_agent.main import AgentShell, _install_signals, _on_result  # noqa: E402
from device_agent.records import Status, Task, TaskKind, TrialResult  # noqa: E402
from device_agent.rpc_client import AgentClient, RpcFailure  # noqa: E402
from device_agent.settings import AgentSettings  # noqa: E402

SAMPLES = 5


def seconds_of(config_json: str) -> float:
    """A config's made-up kernel time: 1 to 7 ms, a stable function of the config."""
    return 1e-3 * (1 + hashlib.sha256(config_json.encode()).digest()[0] % 7)


class TimedClient(AgentClient):
    """AgentClient that records each call's start (unix s) and latency, and the calls that failed, as the agent saw
    them (the tuner's queueing and the transfer included)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.latencies: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self.failed_calls: list[tuple[float, str, str]] = []

    def _call(self, call: str, method, request):
        started, start = time.time(), time.monotonic()
        try:
            return super()._call(call, method, request)
        except RpcFailure as failure:
            self.failed_calls.append((started, call, failure.code))
            raise
        finally:
            self.latencies[call].append((started, time.monotonic() - start))


class SimulatedRunner:
    """TEST DOUBLE of device_agent.runner.TaskRunner: no build, no worker; a task sleeps, then reports samples
    around `seconds_of(config)` (a COMPARE task: the candidate's and the baseline's, paired)."""

    def __init__(self, inbox: queue.SimpleQueue, on_done, measure_s: float, seed: str) -> None:
        self.inbox, self.on_done, self.measure_s = inbox, on_done, measure_s
        self.rng = random.Random(seed)
        self.timer: threading.Timer | None = None
        self.current: str | None = None
        self.ran: Counter = Counter()  # tasks finished per job

    def prebuild(self, tasks) -> None:
        for task in tasks:
            self.inbox.put(ev.TaskReady(task.task_id))

    def start(self, task: Task) -> None:
        self.current = task.task_id
        self.timer = threading.Timer(self.measure_s * self.rng.uniform(0.8, 1.2), self._finish, (task,))
        self.timer.daemon = True
        self.timer.start()

    def cancel(self, task_id: str) -> None:
        if self.current == task_id and self.timer is not None:
            self.timer.cancel()
            self.current = None

    def close(self) -> None:
        self.cancel(self.current or "")

    def _finish(self, task: Task) -> None:
        self.current = None
        self.ran[task.job_id] += 1
        self.on_done(self.result(task))

    def result(self, task: Task) -> TrialResult:
        median = seconds_of(task.config_json)
        samples = tuple(median * (1 + 0.01 * (i - SAMPLES // 2)) for i in range(SAMPLES))
        baseline = ()
        if task.kind == TaskKind.COMPARE:
            base = seconds_of(task.baseline_config_json)
            baseline = tuple(base * (1 + 0.01 * (i - SAMPLES // 2)) for i in range(SAMPLES))
        return TrialResult(task.task_id, task.attempt, Status.OK, samples_s=samples, median_s=median,
                           ci_low_s=min(samples), ci_high_s=max(samples), codegen_version=cc.codegen_version(),
                           compile_s=0.0, baseline_samples_s=baseline, threads=1)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--measure-s", type=float, default=1.0, help="how long each task 'measures' (default 1 s)")
    p.add_argument("--lease-batch", type=int, default=4, help="tasks held at once (the real CPU agent's default)")
    p.add_argument("--summary", required=True, help="JSON file written at exit")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = AgentSettings(server=args.server, token=Path(args.token_file).read_text().strip(), name=args.name,
                             lease_batch=args.lease_batch, shutdown_grace_s=5.0, seed=hash(args.name) & 0xFFFF,
                             ready_wait_s=0.0)
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    _install_signals(inbox)
    runner = SimulatedRunner(inbox, _on_result(inbox), args.measure_s, args.name)
    client = TimedClient(settings.server, None, settings.call_timeout_s)
    started = time.time()
    code = 1
    try:
        code = AgentShell(settings, fingerprint("cpu", frozenset()), client, runner, inbox).loop()
    finally:
        runner.close()
        client.close()
        Path(args.summary).write_text(json.dumps({
            "name": args.name, "exit_code": code, "started": started, "stopped": time.time(),
            "latencies": client.latencies, "failed_calls": client.failed_calls, "ran": dict(runner.ran)}))
    return code


if __name__ == "__main__":
    sys.exit(main())
