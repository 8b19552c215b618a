"""FakeAgent: a test double for device_agent that needs no compiler, worker or network.

It leases through `repo.lease_tasks` and reports synthetic `TrialReport`s through `repo.record_result`, as the
real agent's gRPC calls would: a MEASURE task gets samples around `seconds(config)`; a COMPARE task gets paired
rounds of candidate and baseline (and, when asked, the reference library) whose every round is slowed alike, as
a shared host's slow phase would. The round factors (0.9, 1.0, 1.1) have median 1 and the candidate's jitter has
median 0, so the medians and paired ratios the tuner computes are exactly the configured times and their ratios.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime

from compiler_core.space import config_key
from tuner_server import repo
from tuner_server.db import session_scope
from tuner_server.repo import TrialReport

ROUNDS = 9


def hashed_seconds(config: dict) -> float:
    """A config's "true" time: 1 to 7 ms, a stable function of the config."""
    digest = hashlib.sha256(config_key(config).encode()).digest()
    return 1e-3 * (1 + digest[0] % 7)


class FakeAgent:
    hashed = staticmethod(hashed_seconds)

    def __init__(self, sessions, agent_id: str, seconds: Callable[[dict], float] = hashed_seconds, *,
                 reference_s: float | None = None, jitter: float = 0.002, codegen: str = "cg1") -> None:
        self.sessions, self.agent_id, self.seconds = sessions, agent_id, seconds
        self.reference_s, self.jitter, self.codegen = reference_s, jitter, codegen
        self.handled: list[tuple[str, str | None]] = []  # (kind, purpose) of every task reported

    def run(self, now: datetime, limit: int = 1000, status: str = "OK") -> int:
        """Lease up to `limit` tasks and report each; returns how many."""
        with session_scope(self.sessions) as s:
            leased = repo.lease_tasks(self.agent_id, limit, session=s, now=now)
            for task in leased:
                report = self._compare(task) if task.kind == "COMPARE" else self._measure(task, status)
                outcome = repo.record_result(self.agent_id, report, session=s, now=now)
                assert outcome.status == "accepted", outcome
                self.handled.append((task.kind, outcome.comparison.purpose if outcome.comparison else None))
        return len(leased)

    def _measure(self, task, status: str) -> TrialReport:
        t = self.seconds(task.config)
        samples = tuple(t * (1 + self.jitter * (i % 5 - 2)) for i in range(ROUNDS))
        return TrialReport(task.task_id, task.attempt, status, samples_s=samples, median_s=t,
                           ci_low_s=min(samples), ci_high_s=max(samples), codegen_version=self.codegen,
                           contention=0.0, noisy=False, threads=2, cpus="0-1")

    def _compare(self, task) -> TrialReport:
        candidate, baseline = self.seconds(task.config), self.seconds(task.baseline_config)
        phases = [1 + 0.1 * (i % 3 - 1) for i in range(ROUNDS)]
        cand = tuple(candidate * p * (1 + self.jitter * (i % 5 - 2)) for i, p in enumerate(phases))
        timed_reference = task.time_reference and self.reference_s is not None
        ref = tuple(self.reference_s * p for p in phases) if timed_reference else ()
        ordered = sorted(cand)
        return TrialReport(task.task_id, task.attempt, "OK", samples_s=cand, median_s=ordered[ROUNDS // 2],
                           ci_low_s=ordered[1], ci_high_s=ordered[-2], codegen_version=self.codegen,
                           baseline_samples_s=tuple(baseline * p for p in phases), reference_samples_s=ref,
                           reference_name="numpy" if ref else "", contention=0.0, noisy=False, threads=2,
                           cpus="0-1")
