"""What runs inside the isolated worker process: build, verify, measure one task, return a TrialResult.

`serve(conn, device, plugins)` is the worker process's main loop (started by sandbox.Sandbox with the 'spawn'
context). `execute(...)` does one task and is a plain function, so tests can also call it in-process.
Failures come back as values: a result with an error status, never an exception across the pipe.
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

import compiler_core as cc
from compiler_core.build import build_module
from device_agent import measure
from device_agent.fingerprint import parse_device
from device_agent.records import Status, Task, TrialResult, failed

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


def parse_task(task: Task) -> tuple[cc.Workload, dict]:
    config = json.loads(task.config_json)
    if not isinstance(config, dict):
        raise cc.ConfigError(f"config must be a JSON object, got {type(config).__name__}")
    return cc.parse_key(task.workload_key), config


def input_seed(task: Task) -> int:
    """Inputs are seeded by the workload, so every attempt and every agent verifies on the same data."""
    return zlib.crc32(task.workload_key.encode())


def execute(task: Task, device: str, cubin: bytes | None = None, compile_s: float | None = None,
            flusher=None) -> tuple[TrialResult, bool]:
    """One task end to end. Returns (result, healthy): healthy=False asks the parent for a fresh worker
    (after a CUDA error the context may be unusable)."""
    kind, index = parse_device(device)
    t0 = time.perf_counter()
    try:
        workload, config = parse_task(task)
        kernel = _build_cuda(workload, config, index, cubin) if kind == "cuda" else _build_c(workload, config)
    except Exception as exc:  # noqa: BLE001 - every build failure becomes a result
        status, message = classify_build_error(exc)
        return failed(task, status, message, codegen_version=cc.codegen_version()), True
    built_s = compile_s if compile_s is not None else time.perf_counter() - t0
    try:
        return _verify_and_measure(task, workload, kernel, built_s, kind, flusher), True
    except Exception as exc:  # noqa: BLE001 - a kernel that raises while running is a runtime error
        message = f"{type(exc).__name__} while running: {exc}"
        return failed(task, Status.RUNTIME_ERROR, message, codegen_version=cc.codegen_version(),
                      compile_s=built_s), kind != "cuda"


def _build_c(workload: cc.Workload, config: dict) -> cc.Kernel:
    return cc.build(workload, config, cc.cpu_target())  # a cache hit when the build pool compiled it ahead


def _build_cuda(workload: cc.Workload, config: dict, index: int, cubin: bytes | None) -> cc.Kernel:
    from compiler_core.runtime.cuda_runtime import device_arch

    target = cc.cuda_target(device_arch(index))
    module = cc.lower(workload, config, target)
    return build_module(workload, module, target, config, cubin=cubin)


def _verify_and_measure(task: Task, workload: cc.Workload, kernel: cc.Kernel, built_s: float, kind: str,
                        flusher) -> TrialResult:
    inputs = cc.random_inputs(workload, input_seed(task))
    outputs = kernel.run(*inputs)
    check = cc.verify(workload, outputs, cc.expect(workload, inputs))
    version = cc.codegen_version()
    if not check.ok:  # a wrong answer is never timed
        return failed(task, Status.WRONG_ANSWER, check.message, codegen_version=version, compile_s=built_s,
                      max_abs_error=check.max_abs_error)
    opts = task.options
    if kind == "cuda":
        samples = _time_cuda(kernel, inputs, outputs, opts, flusher)
    else:
        # bind() validates once: per-call checks would swamp small kernels' timings.
        flush = flusher if opts.flush_cache else None
        samples = measure.time_cpu(kernel.bind(*inputs, *outputs), opts, flush)
    med, lo, hi = measure.summarize(samples)
    return TrialResult(task.task_id, task.attempt, Status.OK, tuple(samples), med, lo, hi, "", version, built_s,
                       check.max_abs_error)


def _time_cuda(kernel: cc.Kernel, inputs, outputs, opts, flusher) -> list[float]:
    from compiler_core.runtime.cuda_runtime import driver

    drv = driver()
    args = [drv.to_device(a) for a in inputs] + [drv.mem_alloc(max(o.nbytes, 1)) for o in outputs]
    workspaces = [drv.mem_alloc(max(w.nbytes, 1)) for w in kernel.module.workspaces]
    flush = None
    if opts.flush_cache:
        flush = flusher or measure.L2Flusher(drv)
    try:
        return measure.time_cuda(lambda stream: kernel.launch_device(args, workspaces, stream), opts, flush)
    finally:
        for buf in (*args, *workspaces):
            buf.free()


def serve(conn, device: str, plugins: tuple[str, ...]) -> None:
    """The worker process: import plugins, say ready, then answer ('run', task, cubin, compile_s) messages
    with ('result', TrialResult, healthy) until told to stop, the pipe closes, or it is unhealthy."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: only the agent decides
    exit_with_parent()
    try:
        load_plugins(plugins)
        kind, _ = parse_device(device)
        flusher = measure.CacheFlusher() if kind == "cpu" else None
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
        _, task, cubin, compile_s = message
        result, healthy = execute(task, device, cubin, compile_s, flusher)
        conn.send(("result", result, healthy))
        if not healthy:
            return
