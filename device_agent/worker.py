"""What runs inside the isolated worker process: build, verify, measure one task, return a TrialResult.

`serve(conn, spec)` is the worker process's main loop (started by sandbox.Sandbox with the 'spawn' context):
it pins itself to the agent's cores, keeps each workload's inputs and references (WorkloadCache) and a bench
for its device (benches.py). `execute(...)` does one task and is a plain function, so tests can also call it
in-process. A MEASURE task times one config; a COMPARE task times a candidate, the head (and the reference
library) interleaved in the same rounds. Failures come back as values, never an exception across the pipe.
"""
from __future__ import annotations

import importlib
import json
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
import zlib
from dataclasses import dataclass
from pathlib import Path

import compiler_core as cc
from compiler_core.stats import summarize
from device_agent import affinity
from device_agent.fingerprint import parse_device
from device_agent.host_lock import HostLockTimeout
from device_agent.records import Status, Task, TaskKind, TrialResult, failed
from device_agent.workload_data import DEFAULT_BUDGET_BYTES, WorkloadCache, WorkloadData

PARENT_GONE_EXIT = 70  # exit code of a worker or builder whose agent died


def exit_with_parent() -> None:
    """In a process started by multiprocessing: end it (os._exit) as soon as its parent is gone, even when the
    parent was killed with SIGKILL and even while a kernel runs (a daemon thread waits on the parent's sentinel;
    ctypes calls release the GIL). Without it a killed agent's builders and a hung worker live on as orphans."""
    parent = mp.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(PARENT_GONE_EXIT)

    threading.Thread(target=watch, name="tunefarm-parent-watch", daemon=True).start()


def load_plugins(names) -> None:
    """Imports operator plugins (modules that register extra ops/templates into compiler_core at import)."""
    for name in names:
        importlib.import_module(name)


def classify_build_error(exc: BaseException) -> tuple[Status, str]:
    """The status of a failure while parsing, lowering or compiling (before anything ran)."""
    if isinstance(exc, cc.ResourceError):
        return Status.RESOURCE_EXCEEDED, f"resource limit exceeded: {exc}"
    if isinstance(exc, (cc.ConfigError, cc.WorkloadError, json.JSONDecodeError)):
        return Status.COMPILE_ERROR, f"invalid task: {exc}"
    if isinstance(exc, cc.BuildError):
        return Status.COMPILE_ERROR, str(exc)
    return Status.COMPILE_ERROR, f"{type(exc).__name__} while building: {exc}\n{traceback.format_exc(limit=4)}"


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker process is started with (picklable: it crosses the spawn)."""
    device: str  # 'cpu' | 'cuda:N'
    plugins: tuple[str, ...] = ()
    cores: frozenset[int] = frozenset()  # CPU: the cores to pin to (empty: every core this process may use)
    lock_dir: str = "/tmp"  # where the host-wide measurement locks live (shared by every agent of the host)
    cache_dir: str | None = None  # where references are cached on disk (None: memory only)
    cache_bytes: int = DEFAULT_BUDGET_BYTES  # inputs and references kept in memory (and on the device)


def parse_config(text: str) -> dict:
    config = json.loads(text)
    if not isinstance(config, dict):
        raise cc.ConfigError(f"config must be a JSON object, got {type(config).__name__}")
    return config


def parse_task(task: Task) -> tuple[cc.Workload, list[tuple[str, dict]]]:
    """The workload and the configs to build, each with its JSON text (what cubins are keyed by): the config for
    MEASURE, the config then the baseline for COMPARE."""
    texts = [task.config_json] + ([task.baseline_config_json] if task.kind == TaskKind.COMPARE else [])
    return cc.parse_key(task.workload_key), [(text, parse_config(text)) for text in texts]


def input_seed(task: Task) -> int:
    """Inputs are seeded by the workload, so every attempt and every agent verifies on the same data."""
    return zlib.crc32(task.workload_key.encode())


def make_bench(spec: WorkerSpec):
    from device_agent.benches import CpuBench, CudaBench

    kind, index = parse_device(spec.device)
    if kind == "cuda":
        return CudaBench(index, spec.lock_dir)
    return CpuBench(spec.cores or affinity.available_cpus(), spec.lock_dir)


def execute(task: Task, bench, cache: WorkloadCache, cubins: dict[str, bytes] | None = None,
            compile_s: float | None = None) -> tuple[TrialResult, bool]:
    """One task end to end. Returns (result, healthy): healthy=False asks the parent for a fresh worker
    (after some CUDA errors the context is unusable: the bench says)."""
    version = cc.codegen_version()
    if task.options is None or task.options.problems():
        why = "; ".join(task.options.problems()) if task.options else "the task carries no measure options"
        return failed(task, Status.COMPILE_ERROR, f"invalid task: {why}", codegen_version=version), True
    t0 = time.perf_counter()
    try:
        workload, configs = parse_task(task)
        kernels = [bench.build(workload, config, (cubins or {}).get(text)) for text, config in configs]
    except Exception as exc:  # noqa: BLE001 - every build failure becomes a result
        status, message = classify_build_error(exc)
        return failed(task, status, message, codegen_version=version), True
    built_s = compile_s if compile_s is not None else time.perf_counter() - t0
    try:
        data = cache.get(workload, input_seed(task))
        return _verify_and_measure(task, bench, data, kernels, built_s, t0), True
    except HostLockTimeout as exc:
        return failed(task, Status.TIMEOUT, str(exc), codegen_version=version, compile_s=built_s), True
    except Exception as exc:  # noqa: BLE001 - a kernel that raises while running is a runtime error
        message = f"{type(exc).__name__} while running: {exc}"
        return failed(task, Status.RUNTIME_ERROR, message, codegen_version=version, compile_s=built_s), bench.usable()


def _verify_and_measure(task: Task, bench, data: WorkloadData, kernels: list[cc.Kernel], built_s: float,
                        t0: float) -> TrialResult:
    """Under the host lock (verification runs kernels too): verify every kernel, then time them interleaved."""
    opts, version = task.options, cc.codegen_version()
    names = ("candidate", "baseline")
    with bench.lock.hold(max(1.0, opts.timeout_s - (time.perf_counter() - t0) - 1.0)):
        worst = 0.0
        for name, kernel in zip(names, kernels, strict=False):
            check = bench.verify(kernel, data)
            worst = max(worst, check.max_abs_error)
            if not check.ok:  # a wrong answer is never timed
                prefix = f"{name}: " if len(kernels) > 1 else ""
                return failed(task, Status.WRONG_ANSWER, prefix + check.message, codegen_version=version,
                              compile_s=built_s, max_abs_error=check.max_abs_error)
        fns = [bench.timed(k, data) for k in kernels]
        reference = bench.baseline(data) if task.time_reference else None
        bench.meter.start()
        sampling = bench.sample(fns + ([reference] if reference else []), opts, watched=len(fns))
        contention = bench.meter.stop()
    samples = sampling.series[0]
    med, lo, hi = summarize(samples)
    return TrialResult(task.task_id, task.attempt, Status.OK, tuple(samples), med, lo, hi, "", version, built_s,
                       worst, baseline_samples_s=tuple(sampling.series[1]) if len(kernels) > 1 else (),
                       reference_samples_s=tuple(sampling.series[-1]) if reference else (),
                       reference_name=reference.name if reference else "", contention=contention,
                       noisy=not sampling.converged or contention > opts.max_contention,
                       threads=bench.threads, cpus=bench.cpus)


def serve(conn, spec: WorkerSpec) -> None:
    """The worker process: import plugins, pin to its cores, say ready, then answer ('run', task, cubins,
    compile_s) messages with ('result', TrialResult, healthy) until told to stop, the pipe closes, or it is
    unhealthy."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: only the agent decides
    exit_with_parent()
    try:
        load_plugins(spec.plugins)
        bench = make_bench(spec)
        cache = WorkloadCache(Path(spec.cache_dir) if spec.cache_dir else None, spec.cache_bytes, bench.release)
    except BaseException:  # noqa: BLE001 - report why the worker cannot start, then exit
        conn.send(("fatal", traceback.format_exc()))
        return
    conn.send(("ready", None))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message[0] != "run":
            return
        _, task, cubins, compile_s = message
        result, healthy = execute(task, bench, cache, cubins, compile_s)
        conn.send(("result", result, healthy))
        if not healthy:
            return
