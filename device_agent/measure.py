"""Timing: the statistics of a set of samples, and the CPU and CUDA timers that collect them.

A timer runs `warmup` untimed calls, then timed ones until it has at least `min_repeats` samples AND
`min_time_s` of timed time (never more than `max_repeats`). With `flush_cache` the last-level cache (CPU) or
the L2 (GPU) is overwritten before each sample, so every sample starts cold.
"""
from __future__ import annotations

import glob
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from device_agent.records import MeasureOptions

CONFIDENCE = 0.95
DEFAULT_FLUSH_BYTES = 64 << 20  # when the cache size cannot be read: 2x a 32 MiB last-level cache


def median(sorted_samples: list[float]) -> float:
    n = len(sorted_samples)
    mid = n // 2
    return sorted_samples[mid] if n % 2 else 0.5 * (sorted_samples[mid - 1] + sorted_samples[mid])


def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int]:
    """0-based ranks (lo, hi) of the order statistics bounding a distribution-free CI of the median.

    The count B of samples below the median is Binomial(n, 1/2), so [x(k), x(n-1-k)] (0-based) covers the
    median with probability 1 - 2 P(B <= k): k is the largest rank with P(B <= k) <= (1 - confidence) / 2,
    computed exactly with integers. For n < 6 no pair reaches 95 %, and the full range (min, max) is used.
    """
    if n < 1:
        raise ValueError("no samples")
    limit = Fraction(1 - Fraction(str(confidence)), 2) * 2 ** n  # alpha/2 scaled by 2^n: compare integer sums
    cumulative, term, k = 0, 1, -1  # term = C(n, k + 1)
    while cumulative + term <= limit and k + 1 <= (n - 1) // 2:
        cumulative += term
        k += 1
        term = term * (n - k) // (k + 1)
    k = max(k, 0)
    return k, n - 1 - k


def summarize(samples) -> tuple[float, float, float]:
    """(median, ci_low, ci_high) of `samples`: a 95 % binomial order-statistics interval of the median."""
    xs = sorted(float(s) for s in samples)
    if not xs:
        raise ValueError("summarize needs at least one sample")
    lo, hi = median_ci_ranks(len(xs))
    return median(xs), xs[lo], xs[hi]


def _done(samples: list[float], total: float, opts: MeasureOptions) -> bool:
    if len(samples) >= max(1, opts.max_repeats):
        return True
    return len(samples) >= opts.min_repeats and total >= opts.min_time_s


# ---- CPU -----------------------------------------------------------------------------------------------

def llc_bytes(sysfs: str = "/sys/devices/system/cpu/cpu0/cache") -> int | None:
    """Size of the highest-level cache CPU 0 sees, from sysfs; None when it cannot be read."""
    best: tuple[int, int] | None = None
    for index in glob.glob(f"{sysfs}/index*"):
        try:
            with open(f"{index}/level") as f:
                level = int(f.read())
            with open(f"{index}/size") as f:
                size = _parse_size(f.read().strip())
        except (OSError, ValueError):
            continue
        if best is None or (level, size) > best:
            best = (level, size)
    return best[1] if best else None


def _parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


class CacheFlusher:
    """Overwrites (reads and writes) a buffer of twice the last-level cache: what the kernel touched is evicted."""

    def __init__(self, nbytes: int | None = None) -> None:
        llc = llc_bytes()
        size = nbytes or (2 * llc if llc else DEFAULT_FLUSH_BYTES)
        self.buffer = np.zeros(size // 8, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        return self.buffer.nbytes

    def __call__(self) -> None:
        np.add(self.buffer, 1, out=self.buffer)


def time_cpu(fn: Callable[[], None], opts: MeasureOptions, flush: Callable[[], None] | None = None) -> list[float]:
    """Samples of `fn()` in seconds, each timed with perf_counter_ns; `flush()` (untimed) runs before each."""
    for _ in range(max(0, opts.warmup)):
        fn()
    samples: list[float] = []
    total = 0.0
    while not _done(samples, total, opts):
        if flush is not None:
            flush()
        t0 = time.perf_counter_ns()
        fn()
        dt = (time.perf_counter_ns() - t0) * 1e-9
        samples.append(dt)
        total += dt
    return samples


# ---- CUDA ----------------------------------------------------------------------------------------------

class L2Flusher:
    """A device buffer of at least twice the L2; `flush(stream)` memsets it, evicting the L2's contents."""

    def __init__(self, drv, min_bytes: int = 0) -> None:
        l2 = drv.Context.get_device().get_attribute(drv.device_attribute.L2_CACHE_SIZE)
        self.drv = drv
        self.nbytes = max(min_bytes, 2 * int(l2), 1 << 20)
        self.buffer = drv.mem_alloc(self.nbytes)

    def __call__(self, stream=None) -> None:
        if stream is None:
            self.drv.memset_d8(self.buffer, 0, self.nbytes)
        else:
            self.drv.memset_d8_async(self.buffer, 0, self.nbytes, stream)


# A one-thread kernel that spins for a number of SM clock cycles, touching no memory (the caches stay as they
# are). Hand-written PTX, JIT-compiled by the driver: no nvcc needed in the worker.
SPIN_PTX = """.version 7.0
.target sm_70
.address_size 64
.visible .entry tf_spin(.param .u64 cycles)
{
  .reg .pred %p;
  .reg .b64 %t0, %t1, %d, %c;
  ld.param.u64 %c, [cycles];
  mov.u64 %t0, %clock64;
SPIN:
  mov.u64 %t1, %clock64;
  sub.s64 %d, %t1, %t0;
  setp.lt.s64 %p, %d, %c;
  @%p bra SPIN;
  ret;
}
"""
SPIN_S = 100e-6  # longer than the host needs to enqueue start event, launch and end event from Python


class GpuSpin:
    """Keeps the GPU busy while the host enqueues a sample, so the start event fires right before the kernel:
    without it an idle GPU records the start at once and the sample includes the host's launch overhead."""

    def __init__(self, drv, seconds: float = SPIN_S) -> None:
        clock_khz = drv.Context.get_device().get_attribute(drv.device_attribute.CLOCK_RATE)
        self.cycles = np.uint64(int(seconds * clock_khz * 1e3))
        self.module = drv.module_from_buffer(SPIN_PTX.encode())
        self.kernel = self.module.get_function("tf_spin")

    def __call__(self, stream) -> None:
        self.kernel(self.cycles, grid=(1, 1, 1), block=(1, 1, 1), stream=stream)


def time_cuda(launch: Callable[[object], None], opts: MeasureOptions, flush: L2Flusher | None = None) -> list[float]:
    """Samples in seconds of `launch(stream)`, each bracketed by CUDA events recorded on the same stream, after
    the (optional) L2 flush and a short spin that hides the host's enqueue time from the events."""
    import pycuda.driver as drv

    stream = drv.Stream()
    start, end = drv.Event(), drv.Event()
    spin = GpuSpin(drv)
    for _ in range(max(0, opts.warmup)):
        launch(stream)
    stream.synchronize()
    samples: list[float] = []
    total = 0.0
    while not _done(samples, total, opts):
        if flush is not None:
            flush(stream)
        spin(stream)
        start.record(stream)
        launch(stream)
        end.record(stream)
        end.synchronize()
        dt = end.time_since(start) * 1e-3
        samples.append(dt)
        total += dt
    return samples
