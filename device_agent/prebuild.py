"""Parallel compilation ahead of measurement: a process pool of `max_parallel_builds` builders.

Leased tasks are compiled while an earlier one is measured. For C the pool warms compiler_core's build cache
(shared libraries keyed by a hash of the source), so the worker's own `build` is a cache hit; for CUDA it
runs nvcc and hands the cubin to the worker, which only loads it. Compilation never touches the device. The
first task of a workload also has a builder compute its references into the disk cache (workload_data.py), off
the measurement's critical path.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing as mp
import os
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import compiler_core as cc
from compiler_core.backends import backend
from device_agent.records import Status, Task
from device_agent.worker import classify_build_error, exit_with_parent, input_seed, load_plugins, parse_task
from device_agent.workload_data import WorkloadCache

BUILDER_NICENESS = 10


@dataclass(frozen=True)
class Prebuilt:
    """What the pool made of a task: cubins by config JSON (CUDA), the compile time, or the build failure."""
    cubins: dict[str, bytes] | None = None
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


def prebuild(task: Task, target: cc.Target) -> Prebuilt:
    """Runs in a pool process: compiles every config of the task for the agent's `target` (what it registered),
    through the target's backend. CUDA cubins come back to the worker; C libraries land in the compiler's disk
    cache, where the worker's own build of the same source finds them."""
    t0 = time.perf_counter()
    cubins: dict[str, bytes] = {}
    try:
        workload, configs = parse_task(task)
        compile_source = backend(target.kind).compile
        for text, config in configs:
            artifact = compile_source(cc.generate(workload, config, target), target)
            if isinstance(artifact, bytes):
                cubins[text] = artifact
    except Exception as exc:  # noqa: BLE001 - a failed build is a result, not a crash of the pool
        status, message = classify_build_error(exc)
        return Prebuilt(status=status, error=message, compile_s=time.perf_counter() - t0)
    return Prebuilt(cubins=cubins or None, compile_s=time.perf_counter() - t0)


def prepare_references(workload_key: str, seed: int, cache_dir: str) -> None:
    """Runs in a pool process: the workload's inputs and expected outputs, into the disk cache, so that the worker
    loads them instead of computing a large float64 reference on the measurement's critical path."""
    try:
        WorkloadCache(Path(cache_dir), budget_bytes=0).get(cc.parse_key(workload_key), seed)
    except Exception:  # noqa: BLE001 - the worker computes (and reports on) what could not be prepared here
        pass


class BuildPool:
    """Compiles tasks ahead; `take(task_id)` hands over the future submitted for that task (or None). With a
    `cache_dir`, the first task of each workload also has its references prepared there."""

    def __init__(self, target: cc.Target, workers: int, plugins: tuple[str, ...] = (), cache_dir: str | None = None,
                 on_ready=None):
        self.target, self.cache_dir = target, cache_dir
        self.on_ready = on_ready  # on_ready(task_id), from a pool thread, once its build and inputs are done
        self._pool = ProcessPoolExecutor(max_workers=max(1, workers), mp_context=mp.get_context("spawn"),
                                         initializer=init_builder, initargs=(tuple(plugins),))
        self._futures: dict[str, Future] = {}
        self._prepared: dict[str, Future] = {}  # workload key -> its references' preparation

    def submit(self, task: Task) -> None:
        if self.cache_dir and task.workload_key not in self._prepared:
            self._prepared[task.workload_key] = self._pool.submit(prepare_references, task.workload_key,
                                                                  input_seed(task), self.cache_dir)
        if task.task_id not in self._futures:
            build = self._futures[task.task_id] = self._pool.submit(prebuild, task, self.target)
            if self.on_ready is not None:
                self._when_done([build, self._prepared.get(task.workload_key)], task.task_id)

    def _when_done(self, futures: list[Future | None], task_id: str) -> None:
        pending = [f for f in futures if f is not None]
        remaining = [len(pending)]
        lock = threading.Lock()

        def one_done(_future) -> None:
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                self.on_ready(task_id)

        for future in pending:
            future.add_done_callback(one_done)

    def take(self, task_id: str) -> Future | None:
        return self._futures.pop(task_id, None)

    def wait_prepared(self, workload_key: str, timeout_s: float) -> None:
        """Blocks until a builder has prepared the workload's inputs and references (when one is at it): the worker
        then reads them from the disk cache instead of computing them a second time on the critical path."""
        future = self._prepared.get(workload_key)
        if future is not None:
            concurrent.futures.wait([future], timeout=max(0.0, timeout_s))

    def wait_idle(self, timeout_s: float) -> None:
        """Blocks until the builds submitted so far have finished (or `timeout_s` passed)."""
        concurrent.futures.wait([*self._futures.values(), *self._prepared.values()], timeout=timeout_s)

    def cancel(self, task_id: str) -> None:
        future = self._futures.pop(task_id, None)
        if future is not None:
            future.cancel()

    def close(self) -> None:
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
