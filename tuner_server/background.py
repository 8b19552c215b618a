"""A daemon thread that runs one function every `interval_s`, or soon after `wake()`: the loop of the job driver
and of the class-model keeper, which must never die of an exception and must stop promptly."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class PeriodicThread:
    def __init__(self, step: Callable[[], object], name: str, interval_s: float, min_gap_s: float = 0.0):
        self._step, self.name = step, name
        self.interval_s, self.min_gap_s = interval_s, min_gap_s
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None

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
            self._wake.wait(self.interval_s)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self._step()
            except Exception:  # noqa: BLE001 - a failed pass must not end the thread; the next one tries again
                log.exception("%s: a pass failed", self.name)
            self._stop.wait(self.min_gap_s)  # a burst of wake() calls becomes one pass
