"""Steepest one-knob descent over a recorded space's configs from every start: the local optima it ends in, and the
share of starts that end at the optimum.

    PYTHONPATH=. python3 benchmarks/results/2026-11-29-basin-anatomy/descent.py synth-basins-11k12-s32
"""
import sys

import numpy as np

from tuner_server.synthetic_spaces import spec_from_name, synthetic_trials


def descent(name: str) -> None:
    _meta, trials = synthetic_trials(spec_from_name(name))
    keys = list(trials[0]["config"])
    values = [sorted({t["config"][key] for t in trials}) for key in keys]
    idx = np.array([[values[j].index(t["config"][key]) for j, key in enumerate(keys)] for t in trials])
    runtime = np.array([t["median_s"] if t["median_s"] else np.inf for t in trials])
    where = {tuple(row): i for i, row in enumerate(idx)}
    neighbours = []
    for row in idx:
        found = []
        for j in range(len(keys)):
            for v in range(len(values[j])):
                if v != row[j]:
                    moved = row.copy()
                    moved[j] = v
                    if tuple(moved) in where:
                        found.append(where[tuple(moved)])
        neighbours.append(np.array(found, dtype=int))
    end = np.empty(len(idx), dtype=int)
    for start in range(len(idx)):
        at = start
        while len(neighbours[at]):
            step = neighbours[at][np.argmin(runtime[neighbours[at]])]
            if runtime[step] >= runtime[at]:
                break
            at = step
        end[start] = at
    optimum = int(np.argmin(runtime))
    ends, counts = np.unique(end[np.isfinite(runtime)], return_counts=True)
    print(f"{name}: {len(ends)} local optima; starts ending at the optimum: "
          f"{counts[ends == optimum].sum() / counts.sum():.3f}; the 8 most reached (runtime / optimum, share):")
    for e, c in sorted(zip(ends, counts, strict=True), key=lambda ec: -ec[1])[:8]:
        print(f"  {runtime[e] / runtime[optimum]:.3f} {c / counts.sum():.3f}")


for arg in sys.argv[1:]:
    descent(arg)
