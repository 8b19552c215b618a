"""Timing: the statistics of a set of samples, and the CPU and CUDA timers that collect them.

A timer runs `warmup` untimed calls of each function, then rounds in which every function is timed once
(interleaved, in the orders of `round_order`; the CUDA timer enqueues several rounds at once), until the stop
rule of MeasureOptions holds (enough samples and time, and a 95 % CI of the median, or of the paired ratios,
narrower than `target_rel_ci`) or a cap ends it. With `flush_cache` the last-level cache (CPU) or the L2
(GPU) is overwritten before each sample, so every sample starts cold.
"""
from __future__ import annotations

import glob
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from compiler_core.stats import paired_ratios, rel_ci_width
from device_agent.records import MeasureOptions

DEFAULT_FLUSH_BYTES = 64 << 20  # when the cache size cannot be read: 2x a 32 MiB last-level cache


def spread(series: list[list[float]]) -> float:
    """How unsure the rounds still are: the relative CI width of the one series, or, when several were timed
    in the same rounds, the widest relative CI of each one's paired ratio to the next."""
    if len(series) == 1:
        return rel_ci_width(series[0])
    return max(rel_ci_width(paired_ratios(a, b)) for a, b in zip(series, series[1:], strict=False))


def round_order(count: int, r: int) -> list[int]:
    """The order of round r: rows of a Williams design (a balanced Latin square, as crossover trials use), so over
    `count` rounds (2 `count` when odd) every function goes first equally often and follows every other one equally
    often. A plain rotation keeps cyclic neighbours fixed: the function after a reference library always paid for
    the library's leftovers (its threads still spinning on the cores: measured 2x on a 22 ms matmul)."""
    base, low, high = [0], 1, count - 1
    while len(base) < count:
        base.append(low)
        low += 1
        if len(base) < count:
            base.append(high)
            high -= 1
    row = [(b + r) % count for b in base]
    return row[::-1] if count % 2 and (r // count) % 2 else row


@dataclass
class Sampling:
    """The outcome of `sample_rounds`: per function its samples (paired by index) and whether the stop rule was
    met (converged) or a cap ended it."""
    series: list[list[float]]
    converged: bool
    seconds: float


def sample_rounds(time_rounds: Callable[[list[list[int]]], list[list[float]]], count: int, opts: MeasureOptions,
                  check_every: int = 4, watched: int | None = None, batch: int = 1) -> Sampling:
    """Times `count` functions in rounds, each once per round, in balanced orders (`round_order`).
    `time_rounds(orders)` times the given rounds (each a list of function indices, in order) and returns their
    samples in seconds, shaped like `orders`; a timer that can enqueue ahead (CUDA) gets up to `batch` rounds at
    once. Stops when the rule of MeasureOptions is met by the first `watched` functions (default all): a
    reference library timed beside them for the record decides nothing, so its spread (a library's launch
    overhead can keep it wide) never keeps the rounds going."""
    watch = count if watched is None else max(1, min(watched, count))
    series: list[list[float]] = [[] for _ in range(count)]
    start = time.perf_counter()
    timed = 0.0
    rounds = 0
    while True:
        n = max(1, min(batch, opts.max_repeats - rounds))
        orders = [round_order(count, rounds + r) for r in range(n)]
        for order, samples in zip(orders, time_rounds(orders), strict=True):
            for i, dt in zip(order, samples, strict=True):
                series[i].append(dt)
                timed += dt
            rounds += 1
            elapsed = time.perf_counter() - start
            if rounds >= opts.max_repeats or elapsed >= opts.max_time_s:
                converged = rounds >= opts.min_repeats and spread(series[:watch]) <= opts.target_rel_ci
                return Sampling(series, converged, elapsed)
            if rounds >= opts.min_repeats and timed >= opts.min_time_s * count and \
                    (rounds - opts.min_repeats) % check_every == 0 and spread(series[:watch]) <= opts.target_rel_ci:
                return Sampling(series, True, elapsed)


def one_at_a_time(time_one: Callable[[int], float]) -> Callable[[list[list[int]]], list[list[float]]]:
    """A `time_rounds` for timers that take one sample at a time."""
    return lambda orders: [[time_one(i) for i in order] for order in orders]


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


def time_cpu(fns: list[Callable[[], None]], opts: MeasureOptions,
             flush: Callable[[], None] | None = None, watched: int | None = None) -> Sampling:
    """Samples of each `fns[i]()` in seconds (perf_counter_ns), in interleaved rounds; `flush()` (untimed) runs
    before each sample."""
    for _ in range(max(0, opts.warmup)):
        for fn in fns:
            fn()

    def time_one(i: int) -> float:
        if flush is not None:
            flush()
        t0 = time.perf_counter_ns()
        fns[i]()
        return (time.perf_counter_ns() - t0) * 1e-9

    return sample_rounds(one_at_a_time(time_one), len(fns), opts, watched=watched)


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
    """Keeps the GPU busy while the host enqueues samples, so each start event fires right before its kernel:
    without it an idle GPU records the start at once and the sample includes the host's launch overhead.
    Cycles are counted at the device's peak clock: at a lower clock the spin only lasts longer."""

    def __init__(self, drv, seconds: float = SPIN_S) -> None:
        self.clock_hz = drv.Context.get_device().get_attribute(drv.device_attribute.CLOCK_RATE) * 1e3
        self.seconds = seconds
        self.module = drv.module_from_buffer(SPIN_PTX.encode())
        self.kernel = self.module.get_function("tf_spin")

    def __call__(self, stream, seconds: float | None = None) -> None:
        cycles = np.uint64(int((self.seconds if seconds is None else seconds) * self.clock_hz))
        self.kernel(cycles, grid=(1, 1, 1), block=(1, 1, 1), stream=stream)


BATCH_GPU_S = 2e-3  # GPU time one batch of rounds aims at: the host enqueues it while the spin holds the GPU
MAX_BATCH_ROUNDS = 32


def time_cuda(launches: list[Callable[[object], None]], opts: MeasureOptions, flush: L2Flusher | None = None,
              spin: GpuSpin | None = None, watched: int | None = None) -> Sampling:
    """Samples in seconds of each `launches[i](stream)`, in interleaved rounds, each bracketed by CUDA events
    recorded on the same stream after the (optional) L2 flush.

    Rounds go to the GPU in batches: a spin kernel first holds the GPU while the host enqueues every flush, event
    and launch of the batch, then the GPU runs them back to back and the host reads all events after one
    synchronisation. So no sample includes the host's enqueue time (the GPU never waits on the host inside a
    batch), and a small kernel costs its flush and itself, not a host round trip per sample. The spin's length
    is the host's measured enqueue time of a batch, with a margin."""
    import pycuda.driver as drv

    stream = drv.Stream()
    spin = spin or GpuSpin(drv)
    count = len(launches)
    t0, t1 = drv.Event(), drv.Event()
    t0.record(stream)
    for _ in range(max(1, opts.warmup)):
        for launch in launches:
            if flush is not None:
                flush(stream)
            launch(stream)
    t1.record(stream)
    t1.synchronize()
    round_s = t1.time_since(t0) * 1e-3 / max(1, opts.warmup)
    batch = max(1, min(MAX_BATCH_ROUNDS, int(BATCH_GPU_S / max(round_s, 1e-7))))
    events: list[tuple] = []
    enqueue_s = SPIN_S / max(1, count)  # per sample; learned from each batch

    def time_rounds(orders: list[list[int]]) -> list[list[float]]:
        nonlocal enqueue_s
        samples = sum(len(o) for o in orders)
        while len(events) < samples:
            events.append((drv.Event(), drv.Event()))
        spin(stream, max(SPIN_S, 2.0 * enqueue_s * samples))
        h0 = time.perf_counter()
        k = 0
        for order in orders:
            for i in order:
                if flush is not None:
                    flush(stream)
                events[k][0].record(stream)
                launches[i](stream)
                events[k][1].record(stream)
                k += 1
        enqueue_s = (time.perf_counter() - h0) / samples
        events[k - 1][1].synchronize()
        out, k = [], 0
        for order in orders:
            out.append([events[k + j][1].time_since(events[k + j][0]) * 1e-3 for j in range(len(order))])
            k += len(order)
        return out

    return sample_rounds(time_rounds, count, opts, watched=watched, batch=batch)
