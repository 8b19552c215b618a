"""Order statistics of timing samples: the median and its distribution-free 95 % confidence interval.

Shared by the agents (their stop rule) and the tuner (paired head-to-head tests); no assumptions about the
samples' distribution, which on a shared host is anything but normal.
"""
from __future__ import annotations

from fractions import Fraction

CONFIDENCE = 0.95


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


def rel_ci_width(samples) -> float:
    """Width of the median's 95 % CI relative to the median (inf when the median is not positive)."""
    med, lo, hi = summarize(samples)
    return (hi - lo) / med if med > 0 else float("inf")


def paired_ratios(a, b) -> list[float]:
    """a[i] / b[i]: samples taken in the same round, so slow phases of a shared host cancel in the ratio."""
    return [x / y for x, y in zip(a, b, strict=True) if y > 0]
