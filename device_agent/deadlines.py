"""How long the agent waits for each kind of tuner call: a deadline learned from the latencies it sees.

TCP's retransmission timer (RFC 6298) per kind of call (Register, Heartbeat, LeaseTasks, ReportResults): a smoothed
latency and its mean deviation, deadline = smoothed + 4 deviations, within [floor_s, ceiling_s]; before the first
answer, `initial_s`. A call that runs out doubles the deadline (up to the ceiling) until an answer comes back, so a
tuner that is slow but working is waited for instead of being retried into the ground; a fast one is given up on
sooner when it stops answering. The tuner answers within a share of the deadline it is sent (with fewer tasks or
results if it must), so a deadline only runs out when the tuner or the network is really stuck.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

ALPHA, BETA, K = 1 / 8, 1 / 4, 4  # RFC 6298's gains and deviation multiple


@dataclass
class Deadline:
    """The deadline of one kind of call; `observe` each answered call's latency, `expired` each timeout."""

    initial_s: float = 10.0
    floor_s: float = 3.0
    ceiling_s: float = 60.0
    smoothed_s: float | None = None
    deviation_s: float = 0.0
    backoff: int = 0  # timeouts since the last answer: each doubles the deadline

    def timeout_s(self) -> float:
        base = self.initial_s if self.smoothed_s is None else self.smoothed_s + K * self.deviation_s
        return min(self.ceiling_s, max(self.floor_s, base) * 2 ** self.backoff)

    def observe(self, latency_s: float) -> None:
        latency_s = max(0.0, latency_s)
        if self.smoothed_s is None:
            self.smoothed_s, self.deviation_s = latency_s, latency_s / 2
        else:
            self.deviation_s += BETA * (abs(self.smoothed_s - latency_s) - self.deviation_s)
            self.smoothed_s += ALPHA * (latency_s - self.smoothed_s)
        self.backoff = 0

    def expired(self) -> None:
        if self.timeout_s() < self.ceiling_s:
            self.backoff += 1


@dataclass
class CallDeadlines:
    """One `Deadline` per kind of call, made on first use; safe to use from several threads."""

    initial_s: float = 10.0
    floor_s: float = 3.0
    ceiling_s: float = 60.0
    _by_call: dict[str, Deadline] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def timeout_s(self, call: str) -> float:
        with self._lock:
            return self._get(call).timeout_s()

    def observe(self, call: str, latency_s: float) -> None:
        with self._lock:
            self._get(call).observe(latency_s)

    def expired(self, call: str) -> None:
        with self._lock:
            self._get(call).expired()

    def _get(self, call: str) -> Deadline:
        if call not in self._by_call:
            self._by_call[call] = Deadline(self.initial_s, min(self.floor_s, self.initial_s),
                                           max(self.ceiling_s, self.initial_s))
        return self._by_call[call]
