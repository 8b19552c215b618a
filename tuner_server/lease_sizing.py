"""How many tasks one lease gives an agent: about `horizon_s` of its work, judged by the results it reports.

An agent asks for the room it has (its lease batch less what it holds). The tuner grants ceil(rate x horizon_s) of
that, at least one, where `rate` is the results per second the agent reported over the last `window_s`: a fast agent
gets its whole batch and leases less often; a slow one (long kernels, a loaded host) holds little, so it strands
little if it dies and leaves the queue to agents that would finish sooner. An agent that has reported nothing yet
gets what it asks for. The rates live in this process (one `LeaseSizer` per tuner): an agent that another tuner
served is new here.
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

FORGET_AFTER_WINDOWS = 10  # an agent silent this many windows is forgotten (it is long gone or lost)


@dataclass
class _Reports:
    first: float  # when it first reported
    recent: deque[tuple[float, int]] = field(default_factory=deque)  # (time, results) within the window


class LeaseSizer:
    def __init__(self, horizon_s: float = 10.0, window_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.horizon_s, self.window_s, self.clock = horizon_s, window_s, clock
        self._agents: dict[str, _Reports] = {}
        self._lock = threading.Lock()
        self._pruned_at = clock()

    def reported(self, agent_id: str, results: int) -> None:
        """The agent reported `results` results (accepted or duplicate) now."""
        now = self.clock()
        with self._lock:
            self._agents.setdefault(agent_id, _Reports(now)).recent.append((now, results))
            if now - self._pruned_at > self.window_s:
                self._pruned_at = now
                self._agents = {a: r for a, r in self._agents.items()
                                if r.recent and now - r.recent[-1][0] < FORGET_AFTER_WINDOWS * self.window_s}

    def rate(self, agent_id: str) -> float | None:
        """Results per second over the last window (or since its first report); None: it never reported."""
        now = self.clock()
        with self._lock:
            reports = self._agents.get(agent_id)
            if reports is None:
                return None
            while reports.recent and reports.recent[0][0] < now - self.window_s:
                reports.recent.popleft()
            span = max(1.0, min(self.window_s, now - reports.first))
            return sum(n for _, n in reports.recent) / span

    def size(self, agent_id: str, requested: int) -> int:
        """Tasks to lease of the `requested` (0 stays 0)."""
        if requested <= 0:
            return 0
        rate = self.rate(agent_id)
        return requested if rate is None else max(1, min(requested, math.ceil(rate * self.horizon_s)))
