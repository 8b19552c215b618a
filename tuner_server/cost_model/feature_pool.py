"""Lowering configs for their features in worker processes, so the tuner's search never waits on compiler_core.

Lowering a config costs ~10 ms of Python; a model-guided round looks at a few hundred configs. With a
`FeaturePool`, a `LoweredFeatures` featurizer becomes asynchronous: `prefetch(configs)` submits the configs whose
vectors are neither cached nor in flight (in chunks, to a spawn process pool) and returns at once; finished vectors
land in the featurizer's cache, where the next round finds them. `wait()` blocks until nothing is in flight (tests and
benchmarks use it to make a run repeatable). A worker that dies loses its chunk only: the pool is rebuilt and those
configs can be asked for again.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np

CHUNK = 32  # configs per task: large enough to amortize pickling, small enough to spread over workers


FEATURE_NICENESS = 10  # background work: on a host shared with agents, it yields to their measurements


def _exit_with_parent(parent_pid: int) -> None:
    """Worker initializer: a worker ends when the tuner that started it is gone (even after a kill -9, when nobody
    shuts the pool down), and runs niced."""
    os.nice(FEATURE_NICENESS)
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="tunefarm-parent-watch", daemon=True).start()


def featurize_chunk(workload_key: str, target, configs: list[dict]) -> tuple[np.ndarray, float]:
    """Worker side: the feature rows of `configs` (NaN rows for configs that cannot be lowered) and the seconds."""
    from compiler_core.features import FEATURE_NAMES
    from tuner_server.cost_model.featurize import FeatureCache, LoweredFeatures

    t0 = time.process_time()
    try:
        featurizer = LoweredFeatures(workload_key, target, FeatureCache(max_entries=len(configs) + 1))
    except Exception:  # noqa: BLE001 - a workload this process cannot parse (a plugin op of the tuner's): no features
        return np.full((len(configs), len(FEATURE_NAMES)), np.nan, np.float32), time.process_time() - t0
    return featurizer(configs), time.process_time() - t0


class FeaturePool:
    """Worker processes that fill featurizers' caches in the background; see the module docstring."""

    def __init__(self, workers: int = 1, chunk: int = CHUNK):
        if workers < 1:
            raise ValueError(f"a feature pool needs at least one worker, got {workers}")
        self.workers, self.chunk = workers, chunk
        self._executor: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._in_flight: set[tuple[str, str]] = set()
        self._futures: set[Future] = set()
        self.computed = 0  # vectors the workers produced ...
        self.worker_cpu_s = 0.0  # ... and the CPU seconds they spent on them

    def request(self, featurizer, configs: list[dict]) -> int:
        """Submit the configs of `featurizer` (a LoweredFeatures) that are neither cached nor in flight; returns how
        many were submitted."""
        todo = []
        keys = [(featurizer.key, featurizer.config_key(c)) for c in configs]
        with self._lock:
            for config, key in zip(configs, keys, strict=True):
                if key not in self._in_flight and key not in featurizer.cache:
                    self._in_flight.add(key)
                    todo.append((key, config))
        for i in range(0, len(todo), self.chunk):
            self._submit(featurizer, todo[i:i + self.chunk])
        return len(todo)

    def in_flight(self) -> int:
        with self._lock:
            return len(self._in_flight)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until every submitted chunk finished (True) or `timeout_s` passed (False)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            with self._lock:
                pending = list(self._futures)
            if not pending:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            try:
                pending[0].result(timeout=left)
            except Exception:  # noqa: BLE001 - a failed chunk is handled by its callback; here we only wait
                pass
            time.sleep(0)  # let the done-callback run before looking again

    def close(self) -> None:
        """Shut the workers down (chunks in flight are dropped); a later request starts new ones."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    # ---- internals ------------------------------------------------------------------------------------------------
    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(self.workers, mp_context=mp.get_context("spawn"),
                                                     initializer=_exit_with_parent, initargs=(os.getpid(),))
            return self._executor

    def _submit(self, featurizer, items: list[tuple[tuple[str, str], dict]]) -> None:
        keys = [k for k, _ in items]
        try:
            future = self._pool().submit(featurize_chunk, featurizer.workload.key, featurizer.target,
                                         [c for _, c in items])
        except (BrokenProcessPool, RuntimeError):  # a dead pool: rebuild it next time, give the keys back
            self.close()
            self._release(keys)
            return
        with self._lock:
            self._futures.add(future)
        future.add_done_callback(lambda f: self._done(f, featurizer.cache, keys))

    def _done(self, future: Future, cache, keys: list[tuple[str, str]]) -> None:
        try:
            rows, cpu_s = future.result()
        except BrokenProcessPool:  # a worker died: rebuild the pool; these configs can be asked for again
            self.close()
            rows = None
        except BaseException:  # noqa: BLE001 - cancelled (closing), or a bug in the worker: asked for again later
            rows = None
        if rows is not None:
            for key, row in zip(keys, rows, strict=True):
                cache.put(key, row)
            with self._lock:
                self.computed += len(keys)
                self.worker_cpu_s += cpu_s
        self._release(keys)
        with self._lock:
            self._futures.discard(future)

    def _release(self, keys: list[tuple[str, str]]) -> None:
        with self._lock:
            self._in_flight.difference_update(keys)
