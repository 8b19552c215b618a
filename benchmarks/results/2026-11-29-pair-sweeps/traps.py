"""The fastest local optima of synthetic spaces (under one-knob moves among the configs that ran), each with its
runtime over the optimum, its one-knob neighbours in the space, the configs of its two-knob ring in the space, and
how many of those run faster than it (0: a true local optimum; more: a trap that a two-knob move leaves).

    python3 benchmarks/results/2026-11-29-pair-sweeps/traps.py synth-noisy-7k11-s16,synth-basins-12k12-s76
"""
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tuner_server.synthetic_spaces import spec_from_name, synthetic_trials  # noqa: E402

SHOWN = 6  # local optima per space, fastest first


def with_value(x: np.ndarray, changes: dict) -> tuple:
    z = x.copy()
    for j, v in changes.items():
        z[j] = v
    return tuple(z)


def main(names: list[str]) -> None:
    for name in names:
        _, trials = synthetic_trials(spec_from_name(name))
        knobs = sorted(trials[0]["config"], key=lambda s: int(s[1:]))
        X = np.array([[t["config"][k] for k in knobs] for t in trials])
        y = np.array([t["median_s"] if t["median_s"] else np.inf for t in trials])
        at = {tuple(r): i for i, r in enumerate(X)}
        choices = [sorted(set(X[:, j])) for j in range(X.shape[1])]
        print(name)
        shown = 0
        for i in np.argsort(y):
            if shown == SHOWN or not np.isfinite(y[i]):
                break
            x = X[i]
            near = [at[z] for j, cs in enumerate(choices) for v in cs
                    if v != x[j] and (z := with_value(x, {j: v})) in at]
            if any(y[k] < y[i] for k in near):
                continue  # not a local optimum
            ring = [at[z] for a, b in itertools.combinations(range(len(x)), 2) for va in choices[a] if va != x[a]
                    for vb in choices[b] if vb != x[b] and (z := with_value(x, {a: va, b: vb})) in at]
            print(f"   {y[i] / y.min():.3f} neighbours={len(near):2d} ring={len(ring):3d} "
                  f"faster_in_ring={sum(y[k] < y[i] for k in ring)}")
            shown += 1


if __name__ == "__main__":
    main(sys.argv[1].split(","))
