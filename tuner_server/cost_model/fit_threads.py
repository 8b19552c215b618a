"""LightGBM fits side by side: a job's ensemble members (and the transfer model's fine-tune) train on threads of one
shared pool, since LightGBM releases the GIL while it trains and each fit is deterministic on one thread of its own.

On a host of several cores this takes the refit, the largest part of a model-guided proposal, off the critical path
of the job's round (benchmarks/tuner_overhead.py --sections)."""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")
MAX_THREADS = 8  # an ensemble has 5 members by default; more threads than fits buy nothing

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def threads() -> int:
    """Threads the pool runs: the cores this process may use, at most MAX_THREADS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_THREADS))


def _shared() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(threads(), thread_name_prefix="tunefarm-fit")
        return _pool


def submit(fn: Callable[..., R], *args) -> Future:
    """`fn(*args)` on the shared pool; on a single core, here and now (a finished future). `fn` must not wait on
    the pool itself (a pool whose threads all wait on it would never finish)."""
    if threads() == 1:
        done: Future = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # the caller's .result() raises it, as the pool's future would
            done.set_exception(exc)
        return done
    return _shared().submit(fn, *args)


def map_in_order(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """[fn(item) for item in items], the calls side by side; the first exception is raised after all have ended."""
    futures = [submit(fn, item) for item in items]
    wait(futures)
    return [f.result() for f in futures]
