"""The agent's call deadlines (device_agent/deadlines.py): learned from latencies, bounded, backed off on timeouts."""
from __future__ import annotations

import pytest

from device_agent.deadlines import CallDeadlines, Deadline


def test_the_initial_deadline_holds_until_the_first_answer():
    d = Deadline(initial_s=10.0, floor_s=3.0, ceiling_s=60.0)
    assert d.timeout_s() == 10.0
    d.observe(0.02)
    assert d.timeout_s() == 3.0  # fast answers: the floor, so a dead tuner is noticed sooner


def test_a_slow_tuner_is_waited_for_longer():
    d = Deadline(initial_s=10.0, floor_s=3.0, ceiling_s=60.0)
    for latency in (2.0, 6.0, 3.0, 8.0, 4.0) * 4:
        d.observe(latency)
    assert 10.0 < d.timeout_s() < 60.0  # the mean (~4.6 s) plus four deviations, beyond the fixed 10 s
    assert d.timeout_s() > max(2.0, 6.0, 3.0, 8.0, 4.0)


def test_timeouts_double_the_deadline_up_to_the_ceiling_and_an_answer_resets_it():
    d = Deadline(initial_s=10.0, floor_s=3.0, ceiling_s=60.0)
    d.observe(0.01)
    timeouts = []
    for _ in range(6):
        d.expired()
        timeouts.append(d.timeout_s())
    assert timeouts == [6.0, 12.0, 24.0, 48.0, 60.0, 60.0]
    d.observe(0.01)
    assert d.timeout_s() == pytest.approx(3.0)


def test_each_kind_of_call_learns_alone_and_a_short_initial_lowers_the_floor():
    calls = CallDeadlines(initial_s=10.0)
    calls.observe("ReportResults", 20.0)
    assert calls.timeout_s("LeaseTasks") == 10.0 and calls.timeout_s("ReportResults") == 60.0
    assert CallDeadlines(initial_s=1.0).timeout_s("Register") == 1.0
    quick = CallDeadlines(initial_s=1.0)
    quick.observe("Heartbeat", 0.001)
    assert quick.timeout_s("Heartbeat") == 1.0
