"""Timing statistics (median and its distribution-free 95 % CI) and the CPU timer's stopping rules."""
from __future__ import annotations

import math
import random

import pytest

from device_agent import measure
from device_agent.records import MeasureOptions


def binom_cdf(k: int, n: int) -> float:
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


@pytest.mark.parametrize("n, expected", [(1, (0, 0)), (5, (0, 4)), (6, (0, 5)), (8, (0, 7)), (9, (1, 7)),
                                         (10, (1, 8)), (20, (5, 14)), (100, (39, 60))])
def test_ci_ranks_match_the_binomial_table(n, expected):
    assert measure.median_ci_ranks(n) == expected


@pytest.mark.parametrize("n", [6, 7, 11, 30, 64, 201])
def test_ci_ranks_are_the_narrowest_with_95_percent_coverage(n):
    lo, hi = measure.median_ci_ranks(n)
    assert hi == n - 1 - lo
    # the median is below x(lo) (0-based) iff at most lo samples are below it: P = cdf(lo), the same above
    assert 1 - 2 * binom_cdf(lo, n) >= 0.95
    assert 1 - 2 * binom_cdf(lo + 1, n) < 0.95  # one rank narrower would not reach 95 %


def test_summarize_median_odd_and_even():
    assert measure.summarize([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)
    assert measure.summarize([4.0, 1.0, 3.0, 2.0])[0] == 2.5


def test_summarize_small_samples_use_min_and_max():
    assert measure.summarize([5.0]) == (5.0, 5.0, 5.0)
    assert measure.summarize([2.0, 9.0, 4.0, 1.0, 3.0]) == (3.0, 1.0, 9.0)


def test_summarize_rejects_no_samples():
    with pytest.raises(ValueError):
        measure.summarize([])


def test_summarize_interval_brackets_the_median():
    rng = random.Random(1)
    xs = [rng.lognormvariate(0, 0.3) for _ in range(50)]
    med, lo, hi = measure.summarize(xs)
    assert lo <= med <= hi
    s = sorted(xs)
    assert (lo, hi) == (s[17], s[32])


def test_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(1234)
    true_median = math.exp(0.0)  # lognormal(0, s): median e^0 = 1
    trials, covered = 2000, 0
    for _ in range(trials):
        _, lo, hi = measure.summarize([rng.lognormvariate(0.0, 0.5) for _ in range(20)])
        covered += lo <= true_median <= hi
    assert 0.94 <= covered / trials <= 0.985  # exact coverage for n=20 is 95.9 %


# ---- the CPU timer -----------------------------------------------------------------------------------------

class Counter:
    def __init__(self) -> None:
        self.calls = 0
        self.log: list[str] = []

    def __call__(self) -> None:
        self.calls += 1
        self.log.append("run")


def test_timer_runs_warmup_then_min_repeats_when_time_is_reached():
    fn = Counter()
    samples = measure.time_cpu(fn, MeasureOptions(warmup=3, min_repeats=4, min_time_s=0.0, max_repeats=100))
    assert len(samples) == 4 and fn.calls == 7
    assert all(s >= 0 for s in samples)


def test_timer_repeats_until_min_time_but_never_past_max_repeats():
    sleepy = lambda: __import__("time").sleep(0.002)  # noqa: E731
    samples = measure.time_cpu(sleepy, MeasureOptions(warmup=0, min_repeats=1, min_time_s=0.02, max_repeats=1000))
    assert sum(samples) >= 0.02 and len(samples) >= 2
    capped = measure.time_cpu(sleepy, MeasureOptions(warmup=0, min_repeats=1, min_time_s=10.0, max_repeats=3))
    assert len(capped) == 3


def test_timer_flushes_before_every_sample_and_not_during_warmup():
    fn = Counter()
    samples = measure.time_cpu(fn, MeasureOptions(warmup=2, min_repeats=3, min_time_s=0.0),
                               flush=lambda: fn.log.append("flush"))
    assert len(samples) == 3
    assert fn.log == ["run", "run", "flush", "run", "flush", "run", "flush", "run"]


# ---- the cache flush buffer --------------------------------------------------------------------------------

def _fake_cache(root, levels: dict[str, tuple[int, str]]) -> str:
    for name, (level, size) in levels.items():
        d = root / name
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "size").write_text(f"{size}\n")
    return str(root)


def test_llc_size_is_the_largest_level_from_sysfs(tmp_path):
    sysfs = _fake_cache(tmp_path, {"index0": (1, "32K"), "index1": (1, "32K"), "index2": (2, "512K"),
                                   "index3": (3, "32768K")})
    assert measure.llc_bytes(sysfs) == 32 << 20


def test_llc_size_unknown_without_sysfs(tmp_path):
    assert measure.llc_bytes(str(tmp_path / "missing")) is None


def test_flusher_buffer_size_and_touch():
    flush = measure.CacheFlusher(nbytes=1 << 20)
    assert flush.nbytes == 1 << 20
    flush()
    flush()
    assert int(flush.buffer[0]) == 2
