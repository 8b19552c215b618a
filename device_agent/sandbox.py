"""The parent's side of the isolated worker: one process per device, a Pipe, a timeout, restarts.

`Sandbox.run(task)` sends the task to the worker and waits at most the task's timeout (plus a small slack
for the pipe). A worker that does not answer in time is killed (TIMEOUT); one that dies while running
(segfault, abort, illegal address: it exits with a signal or the pipe breaks) is a RUNTIME_ERROR naming the
signal. Either way a fresh worker is started at once, so the next task finds one ready.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from dataclasses import dataclass

from device_agent.baselines import QUIET_REFERENCE_ENV
from device_agent.records import Status, Task, TrialResult, failed
from device_agent.worker import WorkerSpec, serve

PIPE_SLACK_S = 0.5  # beyond the task's own timeout: sending the result back over the pipe
START_TIMEOUT_S = 120.0  # a worker imports numpy, compiler_core and the plugins before it is ready


class WorkerStartError(RuntimeError):
    """The worker process could not start (a plugin failed to import, the device is unusable)."""


@dataclass
class _Worker:
    process: mp.process.BaseProcess
    conn: object  # the parent's end of the Pipe
    ready: bool = False


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "worker still running"
    if exitcode < 0:
        try:
            return f"worker killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"worker killed by signal {-exitcode}"
    return f"worker exited with code {exitcode}"


class Sandbox:
    """One isolated worker process for one device; `run` is called from one thread at a time, `cancel`
    from any thread."""

    def __init__(self, spec: WorkerSpec, start_timeout_s: float = START_TIMEOUT_S):
        self.spec, self.device, self.start_timeout_s = spec, spec.device, start_timeout_s
        self._ctx = mp.get_context("spawn")
        self._worker: _Worker | None = None
        self._lock = threading.Lock()
        self._cancelled = False
        self._closed = False
        self.restarts = 0

    # ---- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Starts the worker process without waiting for it (it imports in the background)."""
        with self._lock:
            if self._worker is None and not self._closed:
                self._worker = self._spawn()

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        os.environ.update(QUIET_REFERENCE_ENV)  # a spawned child starts with this environment: before numpy loads
        process = self._ctx.Process(target=serve, args=(child, self.spec),
                                    name=f"tunefarm-worker-{self.device}", daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent)

    def wait_ready(self) -> None:
        """Blocks until the worker said ready; raises WorkerStartError if it cannot start."""
        self.start()
        worker = self._worker
        if worker is None:
            raise WorkerStartError("the sandbox is closed")
        if worker.ready and worker.process.is_alive():
            return
        if worker.ready:  # died while idle (killed from outside): replace it before giving it a task
            self._restart(worker)
            return self.wait_ready()
        if not worker.conn.poll(self.start_timeout_s):
            self._discard(worker)
            raise WorkerStartError(f"worker for {self.device} not ready after {self.start_timeout_s:.0f} s")
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(5)
            self._discard(worker)
            raise WorkerStartError(f"worker for {self.device} died while starting: "
                                   f"{describe_exit(worker.process.exitcode)}") from None
        if message[0] != "ready":
            self._discard(worker)
            raise WorkerStartError(f"worker for {self.device} failed to start:\n{message[1]}")
        worker.ready = True

    def _discard(self, worker: _Worker) -> None:
        with self._lock:
            if worker.process.is_alive():
                worker.process.kill()
            worker.process.join(5)
            _close_quietly(worker.conn)
            if self._worker is worker:
                self._worker = None

    def _restart(self, worker: _Worker) -> None:
        self._discard(worker)
        self.restarts += 1
        self.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is None:
            return
        try:
            worker.conn.send(("stop",))
        except (OSError, BrokenPipeError):
            pass
        worker.process.join(2)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(5)
        _close_quietly(worker.conn)

    @property
    def pid(self) -> int | None:
        return self._worker.process.pid if self._worker else None

    # ---- running tasks -----------------------------------------------------------------------------
    def cancel(self) -> None:
        """Kills the worker mid-task (the task was cancelled); `run` then returns a RUNTIME_ERROR result."""
        self._cancelled = True
        worker = self._worker
        if worker is not None and worker.process.is_alive():
            worker.process.kill()

    def run(self, task: Task, cubins: dict[str, bytes] | None = None, compile_s: float | None = None) -> TrialResult:
        """`cubins`: config JSON -> cubin built ahead (CUDA); the worker builds what is missing."""
        self.wait_ready()
        worker = self._worker
        self._cancelled = False
        timeout_s = task.timeout_s
        t0 = time.monotonic()
        try:
            worker.conn.send(("run", task, cubins, compile_s))
            if worker.conn.poll(timeout_s + PIPE_SLACK_S):
                _, result, healthy = worker.conn.recv()
                if not healthy:
                    self._restart(worker)
                return result
        except (EOFError, OSError):
            return self._crashed(task, worker, time.monotonic() - t0)
        self._restart(worker)
        return failed(task, Status.TIMEOUT, f"no result within the task timeout of {timeout_s:g} s; worker killed")

    def _crashed(self, task: Task, worker: _Worker, elapsed: float) -> TrialResult:
        worker.process.join(5)
        why = describe_exit(worker.process.exitcode)
        self._restart(worker)
        if self._cancelled:
            return failed(task, Status.RUNTIME_ERROR, "cancelled by the server; worker killed")
        return failed(task, Status.RUNTIME_ERROR, f"{why} after {elapsed:.2f} s (crash in build, verify or run)")


def _close_quietly(conn) -> None:
    """Close a worker's pipe; a cancelled task's thread may be closing it at the same moment (EBADF then)."""
    try:
        conn.close()
    except OSError:
        pass
