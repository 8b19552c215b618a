"""The cores an agent measures on: parsing `--cpus 0-3,6`, pinning the worker, and the thread count."""
from __future__ import annotations

import os


class CpuSetError(ValueError):
    """A --cpus value that names no usable core."""


def parse_cpus(text: str) -> frozenset[int]:
    """'0-3,6' -> {0, 1, 2, 3, 6}; every core must be one this process may run on."""
    allowed = os.sched_getaffinity(0)
    cores: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise CpuSetError(f"--cpus {text!r}: expected a list like '0-3,6'")
        first, last = int(low), int(high or low)
        if last < first:
            raise CpuSetError(f"--cpus {text!r}: range {part} runs backwards")
        cores.update(range(first, last + 1))
    if not cores:
        raise CpuSetError(f"--cpus {text!r} names no core")
    outside = sorted(cores - allowed)
    if outside:
        raise CpuSetError(f"--cpus {text!r}: core(s) {format_cpus(outside)} not available here; "
                          f"allowed: {format_cpus(allowed)}")
    return frozenset(cores)


def format_cpus(cores) -> str:
    """{0, 1, 2, 3, 6} -> '0-3,6'."""
    out, run = [], []
    for c in sorted(cores):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def available_cpus() -> frozenset[int]:
    return frozenset(os.sched_getaffinity(0))


def pin(cores: frozenset[int]) -> int:
    """Pins this process (and the threads it starts from now on) to `cores`; returns the thread count to use.
    OpenMP reads OMP_NUM_THREADS when the first kernel loads libgomp, so this runs before any kernel is loaded;
    numpy's BLAS threads are limited with threadpoolctl."""
    os.sched_setaffinity(0, cores)
    threads = len(cores)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OMP_PROC_BIND"] = "true"  # OpenMP threads stay on one core each: no migration between samples
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except ImportError:  # without threadpoolctl numpy's BLAS keeps its own count (the reference may be off)
        pass
    return threads
