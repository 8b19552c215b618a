"""How much of the measuring cores' time other processes took during a measurement, from /proc.

busy(cores) counts every non-idle jiffy of the pinned cores (user, nice, system, irq, softirq, steal) from
/proc/stat; this process's own CPU time comes from os.times() (all its threads: the kernel's OpenMP threads
too). What the cores were busy with beyond our own time was someone else's work: another agent, a compiler,
the tuner, or the hypervisor (steal). Divided by wall time x cores it is the contention share, 0 on a quiet
host and up to 1 when others held every core the whole time.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system (idle iowait skipped) irq softirq steal
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cores_busy_s(cores: frozenset[int], stat_path: str = "/proc/stat") -> float | None:
    """Seconds the given cores spent busy since boot; None where /proc/stat cannot be read (not Linux)."""
    try:
        with open(stat_path) as f:
            lines = f.readlines()
    except OSError:
        return None
    ticks = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cores:
            continue
        fields = rest.split()
        ticks += sum(int(fields[i]) for i in BUSY_FIELDS if i < len(fields))
    return ticks / CLOCK_TICKS


def own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


@dataclass(frozen=True)
class _Mark:
    wall: float
    busy: float | None
    own: float


class ContentionMeter:
    """`start()` ... `stop()` -> contention share of `cores` over that window (0.0 when unmeasurable)."""

    def __init__(self, cores: frozenset[int], stat_path: str = "/proc/stat") -> None:
        self.cores, self.stat_path = frozenset(cores), stat_path
        self._mark: _Mark | None = None

    def start(self) -> None:
        self._mark = _Mark(time.perf_counter(), cores_busy_s(self.cores, self.stat_path), own_cpu_s())

    def stop(self) -> float:
        mark, self._mark = self._mark, None
        busy = cores_busy_s(self.cores, self.stat_path)
        if mark is None or mark.busy is None or busy is None or not self.cores:
            return 0.0
        wall = time.perf_counter() - mark.wall
        others = (busy - mark.busy) - (own_cpu_s() - mark.own)
        if wall <= 0:
            return 0.0
        return min(1.0, max(0.0, others / (wall * len(self.cores))))
