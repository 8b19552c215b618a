"""A daemon thread that runs one function every `interval_s`, or soon after `wake()`: the loop of the job driver
and of the class-model keeper, which must never die of an exception and must stop promptly.

While the database is unavailable (db/availability.py) a pass fails quietly (the engine logs the outage once) and
the next one waits longer each time, up to `max_backoff_s`; a wake() still runs one at once (whoever woke it has
just used the database), and the first pass that succeeds restores the interval.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from tuner_server.db.availability import unavailable

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 15.0


def backoff_s(interval_s: float, failures: int, max_backoff_s: float = MAX_BACKOFF_S) -> float:
    """The wait before the next pass after `failures` passes in a row found the database unavailable."""
    if failures <= 0:
        return interval_s
    return max(interval_s, min(max_backoff_s, interval_s * 2 ** (failures - 1)))


class PeriodicThread:
    def __init__(self, step: Callable[[], object], name: str, interval_s: float, min_gap_s: float = 0.0,
                 max_backoff_s: float = MAX_BACKOFF_S):
        self._step, self.name = step, name
        self.interval_s, self.min_gap_s, self.max_backoff_s = interval_s, min_gap_s, max_backoff_s
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None
        self.unavailable_passes = 0  # passes in a row that found the database unavailable

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._wake.set()  # the first pass runs at once
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def wake(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(backoff_s(self.interval_s, self.unavailable_passes, self.max_backoff_s))
            self._wake.clear()
            if self._stop.is_set():
                break
            self._pass()
            self._stop.wait(self.min_gap_s)  # a burst of wake() calls becomes one pass

    def _pass(self) -> None:
        try:
            self._step()
        except Exception as exc:  # noqa: BLE001 - a failed pass must not end the thread; the next one tries again
            if unavailable(exc) is not None:
                self.unavailable_passes += 1
                log.debug("%s: database unavailable (pass %d in a row)", self.name, self.unavailable_passes)
                return
            log.exception("%s: a pass failed", self.name)
        self.unavailable_passes = 0
