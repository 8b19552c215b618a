"""Parallel compilation ahead of measurement: a process pool of `max_parallel_builds` builders.

Leased tasks are compiled while an earlier one is measured. For C the pool warms compiler_core's build cache
(shared libraries keyed by a hash of the source), so the worker's own `build` is a cache hit; for CUDA it
runs nvcc and hands the cubin to the worker, which only loads it. Compilation never touches the device.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing as mp
import os
import signal
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

import compiler_core as cc
from device_agent.records import Status, Task
from device_agent.worker import classify_build_error, exit_with_parent, load_plugins, parse_task

BUILDER_NICENESS = 10


@dataclass(frozen=True)
class Prebuilt:
    """What the pool made of a task: a cubin (CUDA), the compile time, or the build failure."""
    cubin: bytes | None = None
    compile_s: float | None = None
    status: Status | None = None  # set when the build failed: the task is reported without running
    error: str = ""


def init_builder(plugins: tuple[str, ...]) -> None:
    """Pool process initializer: leave Ctrl-C to the agent (it reaches the whole process group), exit when the
    agent dies, yield the CPU to the measurement that runs beside the builds (on a CPU device they share cores),
    load plugins."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent()
    os.nice(BUILDER_NICENESS)
    load_plugins(plugins)


def prebuild(task: Task, kind: str, arch: str) -> Prebuilt:
    """Runs in a pool process. `arch` is the GPU's sm_XX for CUDA (from the fingerprint), unused for C."""
    t0 = time.perf_counter()
    try:
        workload, config = parse_task(task)
        if kind == "cuda":
            from compiler_core.runtime.nvcc_check import nvcc_compile

            source = cc.generate(workload, config, cc.cuda_target(arch))
            cubin = nvcc_compile(source, arch)
        else:
            from compiler_core.runtime.c_runtime import compile_shared_library

            compile_shared_library(cc.generate(workload, config, cc.cpu_target()))
            cubin = None
    except Exception as exc:  # noqa: BLE001 - a failed build is a result, not a crash of the pool
        status, message = classify_build_error(exc)
        return Prebuilt(status=status, error=message, compile_s=time.perf_counter() - t0)
    return Prebuilt(cubin=cubin, compile_s=time.perf_counter() - t0)


class BuildPool:
    """Compiles tasks ahead; `take(task_id)` hands over the future submitted for that task (or None)."""

    def __init__(self, kind: str, arch: str, workers: int, plugins: tuple[str, ...] = ()):
        self.kind, self.arch = kind, arch
        self._pool = ProcessPoolExecutor(max_workers=max(1, workers), mp_context=mp.get_context("spawn"),
                                         initializer=init_builder, initargs=(tuple(plugins),))
        self._futures: dict[str, Future] = {}

    def submit(self, task: Task) -> None:
        if task.task_id not in self._futures:
            self._futures[task.task_id] = self._pool.submit(prebuild, task, self.kind, self.arch)

    def take(self, task_id: str) -> Future | None:
        return self._futures.pop(task_id, None)

    def wait_idle(self, timeout_s: float) -> None:
        """Blocks until the builds submitted so far have finished (or `timeout_s` passed)."""
        concurrent.futures.wait(list(self._futures.values()), timeout=timeout_s)

    def cancel(self, task_id: str) -> None:
        future = self._futures.pop(task_id, None)
        if future is not None:
            future.cancel()

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
