"""Ranking labels: relevance grades from runtime ranks within one workload, and the grouped training set.

Within a group (one workload), the OK trials are ranked by median runtime and the rank's quantile picks a grade:
the fastest TOP_QUANTILES[0] of them get the highest grade, then the next band, down to grade 1 for the slowest
half. The bands are finer near the top, where a tuner has to tell schedules apart. Failed trials (compile error,
wrong answer, timeout, ...) get grade 0: below every config that ran, rather than dropped.

LightGBM's ranking objectives compare rows within a query only, so runtimes of different workloads are never
compared; a large group is cut at random into queries of at most MAX_QUERY rows (grades stay those of the group).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

OK = "OK"  # the trial status of a config that ran and verified (tuner_server.search.base.OK)
FAILED_GRADE = 0
# Upper edges of the rank-quantile bands, fastest band first; grade = len(TOP_QUANTILES) + 1 - band index.
TOP_QUANTILES = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 1.0)
MAX_GRADE = len(TOP_QUANTILES)
MAX_QUERY = 1000


def relevance_grades(medians: Sequence[float | None], statuses: Sequence[str]) -> np.ndarray:
    """Grades (int, 0..MAX_GRADE) for one group's trials; faster is higher, failures are FAILED_GRADE."""
    n = len(medians)
    if len(statuses) != n:
        raise ValueError("medians and statuses differ in length")
    grades = np.full(n, FAILED_GRADE, dtype=np.int32)
    ok = np.array([s == OK and m is not None and np.isfinite(m) and m > 0 for m, s in zip(medians, statuses,
                                                                                         strict=True)], bool)
    if not ok.any():
        return grades
    times = np.array([m for m, good in zip(medians, ok, strict=True) if good], dtype=np.float64)
    order = np.argsort(times, kind="stable")
    ranks = np.empty(len(times))
    ranks[order] = np.arange(len(times))
    # Ties share the best rank among them, so equal runtimes always get equal grades.
    _, first, inverse = np.unique(times, return_index=True, return_inverse=True)
    ranks = ranks[first][inverse]
    quantile = ranks / len(times)
    band = np.searchsorted(np.asarray(TOP_QUANTILES), quantile, side="right")
    grades[ok] = MAX_GRADE - np.minimum(band, MAX_GRADE - 1)
    return grades


@dataclass(frozen=True)
class RankingData:
    """Rows ordered by query: features X, grades y, and the sizes of consecutive queries."""

    X: np.ndarray
    y: np.ndarray
    queries: list[int]

    def __len__(self) -> int:
        return len(self.y)


def ranking_data(groups: Sequence[tuple[np.ndarray, Sequence[float | None], Sequence[str]]],
                 seed: int = 0, max_query: int = MAX_QUERY) -> RankingData:
    """Stack groups of (features, medians, statuses) into one ranking training set; rows whose features are
    missing (all NaN: the config could not be lowered) are left out. Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    xs, ys, queries = [], [], []
    for X, medians, statuses in groups:
        X = np.asarray(X, dtype=np.float32)
        keep = ~np.all(np.isnan(X), axis=1) if X.size else np.zeros(0, bool)
        grades = relevance_grades(medians, statuses)[keep]
        X = X[keep]
        if len(grades) < 2:
            continue  # a query of one row teaches a ranking nothing
        order = rng.permutation(len(grades)) if len(grades) > max_query else np.arange(len(grades))
        for start in range(0, len(order), max_query):
            part = order[start:start + max_query]
            if len(part) >= 2:
                xs.append(X[part])
                ys.append(grades[part])
                queries.append(len(part))
    if not xs:
        return RankingData(np.zeros((0, 0), np.float32), np.zeros(0, np.int32), [])
    return RankingData(np.concatenate(xs), np.concatenate(ys), queries)
