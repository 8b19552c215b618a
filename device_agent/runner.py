"""TaskRunner: carries out StartTask/CancelTask for the shell, one task at a time, off the main thread.

A task's build comes from the BuildPool (submitted when it was leased); a build that failed is reported
without running; otherwise the sandboxed worker verifies and measures it. The result goes to `on_done`.
"""
from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable

import compiler_core as cc
from device_agent.prebuild import BuildPool, Prebuilt
from device_agent.records import Status, Task, TrialResult, failed
from device_agent.sandbox import Sandbox, WorkerStartError

log = logging.getLogger("tunefarm.agent")


class TaskRunner:
    def __init__(self, sandbox: Sandbox, pool: BuildPool, on_done: Callable[[TrialResult], None]) -> None:
        self.sandbox, self.pool, self.on_done = sandbox, pool, on_done
        self._current: str | None = None
        self._thread: threading.Thread | None = None

    def prebuild(self, tasks) -> None:
        for task in tasks:
            self.pool.submit(task)

    def start(self, task: Task) -> None:
        self._current = task.task_id
        self._thread = threading.Thread(target=self._run, args=(task,), name=f"task-{task.task_id}", daemon=True)
        self._thread.start()

    def cancel(self, task_id: str) -> None:
        if self._current == task_id:
            log.info("cancelling running task %s", task_id)
            self.sandbox.cancel()
        else:
            self.pool.cancel(task_id)

    def close(self) -> None:
        self.pool.close()
        self.sandbox.close()

    def _run(self, task: Task) -> None:
        try:
            result = self.run_one(task)
        except Exception as exc:  # noqa: BLE001 - the shell must always hear back about a started task
            log.exception("task %s failed in the agent itself", task.task_id)
            result = failed(task, Status.RUNTIME_ERROR, f"agent error: {type(exc).__name__}: {exc}")
        self._current = None
        self.on_done(result)

    def run_one(self, task: Task) -> TrialResult:
        t0 = time.monotonic()
        built = self._wait_build(task)
        waited = time.monotonic() - t0
        if isinstance(built, TrialResult):
            return built
        if built.status is not None:
            return failed(task, built.status, built.error, compile_s=built.compile_s or 0.0,
                          codegen_version=cc.codegen_version())
        self.pool.wait_prepared(task.workload_key, task.timeout_s - (time.monotonic() - t0))
        prepared = time.monotonic() - t0 - waited
        if self.pool.target.kind == "c":
            # compilers running beside a CPU measurement would be timed with it: let the builds ahead finish
            self.pool.wait_idle(task.timeout_s)
        t1 = time.monotonic()
        try:
            return self.sandbox.run(task, built.cubins, built.compile_s)
        except WorkerStartError as exc:
            return failed(task, Status.RUNTIME_ERROR, str(exc))
        finally:
            # where a task's time goes: waiting for its build or its inputs (the builders are behind), or in the worker
            log.info("task %s: %.2f s waiting for its build, %.2f s for its inputs, %.2f s in the worker",
                     task.task_id, waited, prepared, time.monotonic() - t1)

    def _wait_build(self, task: Task) -> Prebuilt | TrialResult:
        future = self.pool.take(task.task_id)
        if future is None:
            self.pool.submit(task)
            future = self.pool.take(task.task_id)
        timeout_s = task.timeout_s
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return failed(task, Status.TIMEOUT, f"build did not finish within the task timeout of {timeout_s:g} s",
                          codegen_version=cc.codegen_version())
        except Exception as exc:  # noqa: BLE001 - a broken pool: let the worker build it itself
            log.warning("build pool failed for task %s (%s); building in the worker", task.task_id, exc)
            return Prebuilt()
