"""A synthetic basins or noisy space taken apart (the generator's draws replayed): each basin's offset, its share of
the configs, its best config over the optimum, the configs within 5 %, and the smooth bowl at its centre.

    PYTHONPATH=. python3 benchmarks/results/2026-11-29-basin-anatomy/anatomy.py synth-basins-11k12-s32
"""
import sys

import numpy as np

from tuner_server import synthetic_spaces as ss


def anatomy(name: str) -> None:
    spec = ss.spec_from_name(name)
    rng = np.random.default_rng([spec.seed, ss.KINDS.index(spec.kind), spec.configs, spec.knobs])
    sizes = ss._knob_sizes(rng, spec.knobs, spec.configs)
    [ss.VALUE_LADDERS[int(rng.integers(len(ss.VALUE_LADDERS)))][:n] for n in sizes]  # the ladders' draws
    resource = tuple(int(v) for v in rng.choice(spec.knobs, size=2, replace=False))
    idx = ss._record_indices(rng, sizes, spec.configs, resource)
    n, k = idx.shape
    top = np.asarray(sizes) - 1
    pos = idx / top
    weights = rng.uniform(0.2, 1.0, size=k)
    pref = rng.uniform(0, 1, size=k)
    bowl = ((pos - pref) ** 2 * weights).sum(axis=1)
    pairs = rng.choice(k, size=(k // 3, 2), replace=True)
    tables = [rng.uniform(-1, 1, size=(sizes[p], sizes[q])) for p, q in pairs]
    mixed = sum(t[idx[:, p], idx[:, q]] for t, (p, q) in zip(tables, pairs, strict=True)) / max(len(tables), 1)
    smooth = {"smooth": 1.0, "basins": 0.25, "needle": 0.2, "invalid": 0.4, "noisy": 0.3}[spec.kind]
    n_basins = {"smooth": 1, "basins": 12, "needle": 1, "invalid": 4, "noisy": 6}[spec.kind]
    offsets = np.concatenate([[0.0], rng.uniform(0.06, 0.3, size=n_basins - 1)])
    terms, centres = [], []
    for offset in offsets:
        centre = idx[rng.integers(n)]
        knob_w = rng.uniform(0.5, 1.5, size=k)
        terms.append(offset + 1.2 * ((idx != centre) * knob_w).sum(axis=1) / knob_w.sum())
        centres.append(centre)
    terms = np.stack(terms)
    f = smooth * bowl + 0.08 * mixed + terms.min(axis=0)
    if spec.kind == "noisy":
        f = f + rng.normal(0.0, 0.04, size=len(f))
    owner, fmin = terms.argmin(axis=0), f.min()
    print(f"{name}: knob sizes {sizes}; basin, offset, share of configs, its best / optimum, configs within 5 %, "
          "the bowl at its centre")
    best = {j: np.exp(f[owner == j].min() - fmin) for j in range(n_basins) if (owner == j).any()}
    for j in sorted(best, key=best.get):
        inside = owner == j
        at_centre = smooth * (((centres[j] / top) - pref) ** 2 * weights).sum()
        print(f"  {j:2d} {offsets[j]:.3f} {inside.mean():.3f} {best[j]:.3f} "
              f"{int((np.exp(f[inside] - fmin) <= 1.05).sum())} {at_centre:.3f}")


for arg in sys.argv[1:]:
    anatomy(arg)
