"""The model strategy with local additive jumps: from FROM observations on (48), JUMPS slots of each batch (1) go to
the config with the lowest lower confidence bound on log-runtime (KAPPA standard deviations, 1.0) under an additive
GP (`search/additive_gp.py`) fitted on the measured configs near a region centre, among the unseen configs within
RFRAC of the knobs (half) of that centre; the centres are the T (8) fastest measured configs at least 2 knobs apart,
a centre needing MINPTS (10) measured configs near it. The idea: inside one basin the synthetic landscape is additive
in which knobs match the basin's centre, so a main-effects model of a basin's own configs would jump to its bottom.
From the repository root:

    python3 benchmarks/results/2026-11-28-basin-screens/local_jumps.py --tables '' \
        --synthetic synth-basins-11k12-s32,synth-noisy-7k11-s16,synth-basins-9k11-s21,synth-basins-10k12-s51 \
        --seeds 16 --strategies model --jobs 2 --checkpoint /tmp/jumps.jsonl

The patch is made before the worker processes fork, so the workers run it too.
"""
import os
import sys

import numpy as np

sys.path[:0] = ["benchmarks", "."]  # run from the repository root

import search_efficiency as se  # noqa: E402

from tuner_server.search import model_guided  # noqa: E402
from tuner_server.search.additive_gp import AdditiveGP  # noqa: E402
from tuner_server.search.base import OK  # noqa: E402
from tuner_server.search.gaussian_process import one_blas_thread  # noqa: E402
from tuner_server.search.knob_walk import config_id  # noqa: E402

FROM = int(os.environ.get("FROM", "48"))
JUMPS = int(os.environ.get("JUMPS", "1"))
T = int(os.environ.get("T", "8"))
KAPPA = float(os.environ.get("KAPPA", "1.0"))
MINPTS = int(os.environ.get("MINPTS", "10"))
RFRAC = float(os.environ.get("RFRAC", "0.5"))


def jumps(self, k: int) -> list[dict]:
    """Up to k jump configs, best lower confidence bound first (one per region)."""
    portfolio, listed = self._portfolio, self._draws.listed()
    if k <= 0 or len(self._own) < FROM or listed is None:
        return []
    if portfolio._listed is None:
        portfolio._listed = (listed, [config_id(c) for c in listed], portfolio.coords.indices(listed))
    configs, ids, everything = portfolio._listed
    ran = sorted((o for o in self._own.values() if o.status == OK and o.median_s), key=lambda o: o.median_s)
    if len(ran) < MINPTS:
        return []
    measured = portfolio.coords.indices([o.config for o in ran])
    runtimes = np.array([o.median_s for o in ran])
    radius = max(2, round(RFRAC * measured.shape[1]))
    unseen = np.array([key not in self._seen for key in ids])
    centres: list[int] = []
    for i in range(len(ran)):
        if len(centres) == T:
            break
        if all((measured[i] != measured[j]).sum() >= 2 for j in centres):
            centres.append(i)
    found = []
    with one_blas_thread():
        for i in centres:
            near = (measured != measured[i]).sum(1) <= radius
            rows = np.flatnonzero(unseen & ((everything != measured[i]).sum(1) <= radius))
            if near.sum() < MINPTS or not len(rows):
                continue
            gp = AdditiveGP(portfolio.additive.at(measured[near]), runtimes[near])
            mean, var, _ = gp.posterior(portfolio.additive.at(everything[rows]))
            bound = gp.mu + gp.sd * (mean - KAPPA * np.sqrt(var))
            found.append((float(bound.min()), int(rows[np.argmin(bound)])))
    return [configs[row] for row in dict.fromkeys(row for _, row in sorted(found))][:k]


_model_batch = model_guided.ModelGuided._model_batch


def model_batch(self, model, n):
    batch = _model_batch(self, model, n)
    extra = jumps(self, JUMPS)
    keys = {config_id(c) for c in extra}
    return extra + [c for c in batch if config_id(c) not in keys][: n - len(extra)]


model_guided.ModelGuided._model_batch = model_batch

if __name__ == "__main__":
    se.main(sys.argv[1:])
