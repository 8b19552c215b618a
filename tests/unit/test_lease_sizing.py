"""Lease sizes from each agent's reported throughput (tuner_server/lease_sizing.py), on a fake clock."""
from __future__ import annotations

from tuner_server.lease_sizing import LeaseSizer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_new_agent_gets_what_it_asks_for():
    assert LeaseSizer(clock=Clock()).size("a", 4) == 4


def test_a_fast_agent_gets_its_batch_and_a_slow_one_a_task_at_a_time():
    clock = Clock()
    sizer = LeaseSizer(horizon_s=10.0, window_s=60.0, clock=clock)
    for step in range(120):  # fast: one result every 0.5 s; slow: one every 20 s
        clock.now += 0.5
        sizer.reported("fast", 1)
        if step % 40 == 39:
            sizer.reported("slow", 1)
    assert sizer.size("fast", 8) == 8 and sizer.size("slow", 8) == 1
    assert sizer.size("fast", 0) == 0


def test_the_size_follows_the_rate_within_the_window():
    clock = Clock()
    sizer = LeaseSizer(horizon_s=10.0, window_s=60.0, clock=clock)
    for _ in range(60):  # 0.25 results/s for a minute: 2.5 tasks' worth in the horizon
        clock.now += 4
        sizer.reported("a", 1)
    assert sizer.rate("a") == 16 / 60 and sizer.size("a", 8) == 3  # the reports of the last 60 s, both ends in


def test_an_agent_that_stopped_reporting_holds_one_task():
    clock = Clock()
    sizer = LeaseSizer(window_s=60.0, clock=clock)
    sizer.reported("a", 5)
    clock.now += 120  # e.g. its kernels now take minutes
    assert sizer.rate("a") == 0 and sizer.size("a", 4) == 1
