"""The tuner process's garbage-collector thresholds, set once when it starts.

A proposal allocates many short-lived dicts and tuples (configs, their ids, score rows) while the process holds many
long-lived objects (ORM rows, feature caches, each job's search state). With CPython's default first-generation
threshold (700 more container objects allocated than freed) a collection ran every few hundred of those allocations:
190 collections inside the driver's ticks of two 256-candidate jobs of benchmarks/tuner_overhead.py, 0.38 ms per
candidate, a tenth of the hot path. At 10,000 none ran there (3.76 -> 3.38 ms per candidate, the medians of four
interleaved jobs on a 2-core AMD EPYC: benchmarks/results/2026-11-28-overhead-xeon/); cyclic garbage still goes, a
little later.
"""
from __future__ import annotations

import gc

FIRST_GENERATION_THRESHOLD = 10_000


def tune_for_tuner() -> None:
    """Raise the first generation's threshold to FIRST_GENERATION_THRESHOLD (never lower it); the older
    generations' stay as they are."""
    first, second, third = gc.get_threshold()
    gc.set_threshold(max(first, FIRST_GENERATION_THRESHOLD), second, third)
