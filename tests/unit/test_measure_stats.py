"""Timing statistics (median and its distribution-free 95 % CI) and the CPU timer's stopping rules."""
from __future__ import annotations

import math
import random

import pytest

from compiler_core import stats
from device_agent import measure
from device_agent.records import MeasureOptions


def opts(**given) -> MeasureOptions:
    """Options for a test: the agent has no defaults, so every field is spelled out here."""
    base = dict(warmup=0, min_repeats=1, min_time_s=0.0, max_repeats=1000, timeout_s=10.0, flush_cache=False,
                max_time_s=5.0, target_rel_ci=float("inf"), max_contention=1.0)  # inf: no interval required
    return MeasureOptions(**{**base, **given})


def binom_cdf(k: int, n: int) -> float:
    return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n


@pytest.mark.parametrize("n, expected", [(1, (0, 0)), (5, (0, 4)), (6, (0, 5)), (8, (0, 7)), (9, (1, 7)),
                                         (10, (1, 8)), (20, (5, 14)), (100, (39, 60))])
def test_ci_ranks_match_the_binomial_table(n, expected):
    assert stats.median_ci_ranks(n) == expected


@pytest.mark.parametrize("n", [6, 7, 11, 30, 64, 201])
def test_ci_ranks_are_the_narrowest_with_95_percent_coverage(n):
    lo, hi = stats.median_ci_ranks(n)
    assert hi == n - 1 - lo
    # the median is below x(lo) (0-based) iff at most lo samples are below it: P = cdf(lo), the same above
    assert 1 - 2 * binom_cdf(lo, n) >= 0.95
    assert 1 - 2 * binom_cdf(lo + 1, n) < 0.95  # one rank narrower would not reach 95 %


def test_summarize_median_odd_and_even():
    assert stats.summarize([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)
    assert stats.summarize([4.0, 1.0, 3.0, 2.0])[0] == 2.5


def test_summarize_small_samples_use_min_and_max():
    assert stats.summarize([5.0]) == (5.0, 5.0, 5.0)
    assert stats.summarize([2.0, 9.0, 4.0, 1.0, 3.0]) == (3.0, 1.0, 9.0)


def test_summarize_rejects_no_samples():
    with pytest.raises(ValueError):
        stats.summarize([])


def test_summarize_interval_brackets_the_median():
    rng = random.Random(1)
    xs = [rng.lognormvariate(0, 0.3) for _ in range(50)]
    med, lo, hi = stats.summarize(xs)
    assert lo <= med <= hi
    s = sorted(xs)
    assert (lo, hi) == (s[17], s[32])


def test_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(1234)
    true_median = math.exp(0.0)  # lognormal(0, s): median e^0 = 1
    trials, covered = 2000, 0
    for _ in range(trials):
        _, lo, hi = stats.summarize([rng.lognormvariate(0.0, 0.5) for _ in range(20)])
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
    run = measure.time_cpu([fn], opts(warmup=3, min_repeats=4))
    assert len(run.series[0]) == 4 and fn.calls == 7 and run.converged
    assert all(s >= 0 for s in run.series[0])


def test_timer_repeats_until_min_time_but_never_past_max_repeats():
    sleepy = lambda: __import__("time").sleep(0.002)  # noqa: E731
    run = measure.time_cpu([sleepy], opts(min_time_s=0.02))
    assert sum(run.series[0]) >= 0.02 and len(run.series[0]) >= 2
    capped = measure.time_cpu([sleepy], opts(min_time_s=10.0, max_repeats=3))
    assert len(capped.series[0]) == 3


def test_timer_flushes_before_every_sample_and_not_during_warmup():
    fn = Counter()
    run = measure.time_cpu([fn], opts(warmup=2, min_repeats=3, max_repeats=3), flush=lambda: fn.log.append("flush"))
    assert len(run.series[0]) == 3
    assert fn.log == ["run", "run", "flush", "run", "flush", "run", "flush", "run"]


def test_rounds_interleave_the_functions_and_rotate_who_goes_first():
    order: list[str] = []
    fns = [lambda: order.append("a"), lambda: order.append("b"), lambda: order.append("r")]
    run = measure.time_cpu(fns, opts(min_repeats=3, max_repeats=3))
    assert [len(s) for s in run.series] == [3, 3, 3]
    assert order == ["a", "b", "r", "b", "r", "a", "r", "a", "b"]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 6, 7])
def test_round_orders_balance_who_goes_first_and_who_follows_whom(count):
    rounds = [measure.round_order(count, r) for r in range(2 * count)]
    assert all(sorted(row) == list(range(count)) for row in rounds)
    firsts = [row[0] for row in rounds]
    assert all(firsts.count(i) == 2 for i in range(count))
    follows: dict[tuple, int] = {}
    for row in rounds:
        for a, b in zip(row, row[1:], strict=False):
            follows[(a, b)] = follows.get((a, b), 0) + 1
    # every ordered pair of different functions is adjacent (within a round) equally often: no fixed neighbour
    assert len(follows) == count * (count - 1) and len(set(follows.values())) <= 1


def fake_timer(values):
    """A time_one(i) test double replaying per-function sample lists (no clock involved)."""
    streams = [iter(v) for v in values]
    return measure.one_at_a_time(lambda i: next(streams[i]))


def test_adaptive_sampling_stops_once_the_interval_is_tight():
    steady = [1.0 + 0.001 * (i % 3) for i in range(1000)]
    run = measure.sample_rounds(fake_timer([steady]), 1, opts(min_repeats=10, target_rel_ci=0.01))
    assert run.converged and 10 <= len(run.series[0]) <= 14


def test_adaptive_sampling_gives_up_at_the_cap_and_says_so():
    rng = random.Random(1)
    wild = [rng.uniform(1.0, 3.0) for _ in range(1000)]
    run = measure.sample_rounds(fake_timer([wild]), 1, opts(min_repeats=5, max_repeats=40, target_rel_ci=0.01))
    assert len(run.series[0]) == 40 and not run.converged


def test_paired_rounds_converge_on_the_ratio_even_when_the_host_slows_down():
    # both functions slow down together (a noisy neighbour): each series alone is wide, their ratio is not
    load = [1.0 + (i % 7) for i in range(1000)]
    a, b = [0.8 * x for x in load], list(load)
    run = measure.sample_rounds(fake_timer([a, b]), 2, opts(min_repeats=8, target_rel_ci=0.01))
    assert run.converged and len(run.series[0]) < 20
    assert stats.rel_ci_width(run.series[0]) > 0.5  # alone it would never have converged
    assert stats.summarize(stats.paired_ratios(*run.series))[0] == pytest.approx(0.8)


def test_a_reference_timed_for_the_record_does_not_keep_the_rounds_going():
    rng = random.Random(2)
    a = [1.0 + 0.001 * (i % 3) for i in range(1000)]
    b = [1.1 + 0.001 * (i % 5) for i in range(1000)]
    library = [rng.uniform(0.5, 5.0) for _ in range(1000)]  # launch overhead makes it wild
    watched = measure.sample_rounds(fake_timer([a, b, library]), 3, opts(min_repeats=8, target_rel_ci=0.01),
                                    watched=2)
    assert watched.converged and len(watched.series[2]) == len(watched.series[0]) < 20  # still paired
    everything = measure.sample_rounds(fake_timer([a, b, library]), 3,
                                       opts(min_repeats=8, max_repeats=60, target_rel_ci=0.01))
    assert not everything.converged and len(everything.series[0]) == 60


def test_batches_of_rounds_keep_the_rotation_and_stop_where_single_rounds_do():
    seen = []

    def recording(orders):
        seen.extend(orders)
        return [[1.0 + 0.5 * i + 0.001 * (len(seen) % 3) for i in order] for order in orders]

    single = measure.sample_rounds(measure.one_at_a_time(lambda i: 1.0 + 0.5 * i), 3,
                                   opts(min_repeats=9, max_repeats=9))
    batched = measure.sample_rounds(recording, 3, opts(min_repeats=9, max_repeats=9), batch=4)
    assert [len(s) for s in batched.series] == [len(s) for s in single.series] == [9, 9, 9]
    assert seen == [measure.round_order(3, r) for r in range(9)]  # batches of 4, 4, then the 1 left
    steady = measure.sample_rounds(recording, 2, opts(min_repeats=8, max_repeats=1000, target_rel_ci=0.05),
                                   batch=7)
    assert steady.converged and len(steady.series[0]) == 8  # stops inside a batch, at the first round allowed


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
