"""The guards of a measurement: the contention meter (/proc/stat), the host-wide lock, and the core set."""
from __future__ import annotations

import multiprocessing as mp
import os
import time

import pytest

from device_agent import affinity, contention
from device_agent.host_lock import HostLock, HostLockTimeout, host_key, lock_path


def _stat(busy: dict[int, int]) -> str:
    """A /proc/stat test double: per-core user ticks as given, everything else idle."""
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    lines += [f"cpu{c} {ticks} 0 0 1000 0 0 0 0 0 0" for c, ticks in sorted(busy.items())]
    return "\n".join(lines) + "\nintr 0\n"


def test_busy_time_counts_only_the_named_cores(tmp_path):
    path = tmp_path / "stat"
    path.write_text(_stat({0: 100, 1: 300, 2: 5000}))
    assert contention.cores_busy_s(frozenset({0, 1}), str(path)) == pytest.approx(400 / contention.CLOCK_TICKS)
    assert contention.cores_busy_s(frozenset({0}), str(tmp_path / "missing")) is None


def test_contention_is_the_others_share_of_the_cores(tmp_path, monkeypatch):
    path = tmp_path / "stat"
    path.write_text(_stat({0: 0, 1: 0}))
    clock = iter([0.0, 1.0])
    monkeypatch.setattr(contention.time, "perf_counter", lambda: next(clock))
    own = iter([0.0, 0.5])  # we used half a core-second ...
    monkeypatch.setattr(contention, "own_cpu_s", lambda: next(own))
    meter = contention.ContentionMeter(frozenset({0, 1}), str(path))
    meter.start()
    path.write_text(_stat({0: contention.CLOCK_TICKS, 1: contention.CLOCK_TICKS // 2}))  # ... the cores 1.5
    assert meter.stop() == pytest.approx(0.5)  # 1.0 core-second of others' work over 2 core-seconds


def test_contention_is_zero_when_unmeasurable(tmp_path):
    meter = contention.ContentionMeter(frozenset({0}), str(tmp_path / "missing"))
    meter.start()
    assert meter.stop() == 0.0


def _hold(lock_dir: str, seconds: float, ready) -> None:
    with HostLock(lock_dir, "cpu").hold(5.0):
        ready.set()
        time.sleep(seconds)


def test_the_host_lock_excludes_another_process_and_times_out(tmp_path):
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path), 1.5, ready))
    holder.start()
    try:
        assert ready.wait(30)
        lock = HostLock(tmp_path, "cpu")
        with pytest.raises(HostLockTimeout, match="held by another measurement"):
            lock.acquire(0.2)
        with lock.hold(10.0):  # waits for the holder to finish
            assert lock.waited_s > 0.3
    finally:
        holder.join(10)


def test_the_lock_is_per_device_and_per_host(tmp_path):
    cpu, gpu = lock_path(tmp_path, "cpu"), lock_path(tmp_path, "cuda-0000:01:00.0")
    assert cpu != gpu and host_key() in cpu.name and "/" not in gpu.name.replace(str(tmp_path), "")
    with HostLock(tmp_path, "cpu").hold(1.0), HostLock(tmp_path, "cuda-0").hold(1.0):
        pass  # two devices measure at once


def test_cpu_sets_parse_and_format():
    allowed = sorted(os.sched_getaffinity(0))
    first = allowed[0]
    assert affinity.parse_cpus(str(first)) == frozenset({first})
    assert affinity.format_cpus({0, 1, 2, 3, 6, 8, 9}) == "0-3,6,8-9"
    for bad, why in (("", "names no core"), ("a-b", "expected a list"), ("3-1", "backwards"),
                     ("100000", "not available here")):
        with pytest.raises(affinity.CpuSetError, match=why):
            affinity.parse_cpus(bad)
