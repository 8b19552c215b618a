"""A screened variant: the joint rounds' slots (before `joint_until`) are picked by Thompson sampling of the fitted
GP instead of the GPs' joint expected improvement: each slot is the fastest config of one posterior draw over every
candidate (a pathwise draw: a random-feature draw of the prior, corrected exactly at the observations), so a batch
spreads over the basins in proportion to how likely each is to hold the optimum. TS_MIX of the slots (rounded) keep
the joint EI. From the repository root:

    TS_MIX=0 python3 benchmarks/results/2026-11-27-basins11k-variants/thompson.py --tables '' \\
        --synthetic synth-basins-11k12-s32 --seeds 40 --jobs 2 --strategies model --checkpoint ts.jsonl
"""
import math
import os
import sys

import numpy as np
from scipy.linalg import cho_solve

sys.path[:0] = ["benchmarks", "."]  # run from the repository root
import search_efficiency  # noqa: E402

from tuner_server.search import portfolio  # noqa: E402
from tuner_server.search.gaussian_process import matern32  # noqa: E402

FEATURES = 2048
MIX = float(os.environ.get("TS_MIX", "0"))
joint = portfolio.Portfolio._joint_batch


def draw(gp, C: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One posterior draw of the normalised targets at rows C (Matérn 3/2: spectral density a Student t, 3 dof)."""
    d = gp.X.shape[1]
    scale = np.broadcast_to(np.asarray(gp.lengthscale, dtype=float), (d,))
    omega = rng.standard_normal((FEATURES, d)) / scale * np.sqrt(3.0 / rng.chisquare(3.0, size=(FEATURES, 1)))
    phase = rng.uniform(0, 2 * math.pi, FEATURES)
    w = rng.standard_normal(FEATURES) * math.sqrt(2 * gp.amplitude / FEATURES)

    def prior(P):
        return np.cos(P @ omega.T + phase) @ w
    noise = float(np.diag(gp.factor[0] @ gp.factor[0].T).mean() - gp.amplitude)  # the fit's noise, as stored
    eps = rng.standard_normal(len(gp.X)) * math.sqrt(max(noise, 1e-12))
    v = cho_solve(gp.factor, gp.z - prior(gp.X) - eps)
    return prior(C) + gp.amplitude * matern32(C, gp.X, gp.lengthscale) @ v


def thompson(self, observations, indices, codes, k, combine=None):
    keep = round(MIX * k)
    picks = joint(self, observations, indices, codes, keep) if keep else []
    rng = np.random.default_rng(self.rng.getrandbits(32))
    C = self._frame(codes).at(indices)
    for _ in range(k - len(picks)):
        values = draw(self._gp, C, rng)
        values[picks] = np.inf
        picks.append(int(np.argmin(values)))
    return picks


if __name__ == "__main__":
    portfolio.Portfolio._joint_batch = thompson  # before the worker processes fork
    search_efficiency.main(sys.argv[1:])
