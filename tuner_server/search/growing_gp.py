"""A fixed-kernel Gaussian process over a fixed set of candidates whose observations only grow: each round extends its
Cholesky factor and V = L^-1 K(X, C) by the new observations' rows instead of computing them again.

The posterior variance at every candidate needs V, which costs points^2 per candidate when computed afresh: for the
smooth GP of the model-guided strategy's last phase, scoring every config of a space of 16,384 on 400 points, about
0.5 s a round on one core. Appending m points costs m * points per candidate (the factor's new rows, then V's), a
tenth of that at a batch of 8. The posterior is the one `gaussian_process.GaussianProcess` gives on the same points,
up to rounding (mean K(C, X) K^-1 z = V^T L^-1 z). V is held for `capacity` points at most, preallocated:
capacity x candidates floats (64 MiB for 512 points and 16,384 candidates).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cholesky, solve_triangular

from tuner_server.search.gaussian_process import JITTER, joint_ei_batch, matern32, standardised


class GrowingPosterior:
    """The posterior of a zero-mean GP with a fixed Matérn 3/2 kernel at the rows of `candidates`, given observations
    appended in order (`extend`); `covers` says whether a list of points extends the ones it holds."""

    def __init__(self, candidates: np.ndarray, lengthscale: float, capacity: int, amplitude: float = 1.0,
                 noise: float = JITTER):
        self.C, self.lengthscale, self.amplitude, self.noise = candidates, lengthscale, amplitude, noise
        self.X = np.empty((0, candidates.shape[1]))
        self.L = np.empty((0, 0))
        self.V = np.empty((capacity, len(candidates)))  # rows [0, len(X)) hold L^-1 K(X, C)
        self.var = np.full(len(candidates), amplitude)  # prior variance less what the points explain

    def _kernel(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.amplitude * matern32(a, b, self.lengthscale)

    def covers(self, X: np.ndarray) -> bool:
        """Whether X is the points held, then possibly more, and fits in the capacity."""
        n = len(self.X)
        return n <= len(X) <= len(self.V) and np.array_equal(X[:n], self.X)

    def extend(self, X: np.ndarray) -> None:
        """Take in the points of X past those held (X must be `covers`ed)."""
        n, new = len(self.X), X[len(self.X):]
        if not len(new):
            return
        K12 = self._kernel(self.X, new)  # old points x new points
        K22 = self._kernel(new, new) + self.noise * np.eye(len(new))
        L21 = solve_triangular(self.L, K12, lower=True).T if n else np.empty((len(new), 0))
        L22 = cholesky(K22 - L21 @ L21.T, lower=True)
        L = np.zeros((n + len(new), n + len(new)))
        L[:n, :n], L[n:, :n], L[n:, n:] = self.L, L21, L22
        rows = self._kernel(new, self.C)  # new points x candidates
        if n:
            rows -= L21 @ self.V[:n]
        self.V[n:n + len(new)] = solve_triangular(L22, rows, lower=True)
        self.var -= (self.V[n:n + len(new)] ** 2).sum(axis=0)
        self.X, self.L = X.copy(), L

    def ei_batch(self, y: np.ndarray, n: int, xi: float, excluded: np.ndarray) -> list[int]:
        """Candidate rows picked by expected improvement with the kriging believer (`joint_ei_batch`), given the
        targets `y` of the points held (in their order; lower is better); rows `excluded` are never picked."""
        return joint_ei_batch([_Fitted(self, y)], [self.C], n, xi, excluded=excluded)


class ListedPicks:
    """Expected-improvement picks over the configs of a listed space (those at `rows` of the listing), by a
    GrowingPosterior over them: what the smooth GP picks from in the last phase (or from `listed_from` on)."""

    def __init__(self, configs: list[dict], ids: list[tuple], rows: np.ndarray, points: np.ndarray,
                 lengthscale: float, capacity: int):
        self.configs, self.ids, self.rows = configs, ids, rows  # the listing, its config ids, the rows scored
        self.posterior = GrowingPosterior(points, lengthscale, capacity)

    def picks(self, X: np.ndarray, y: np.ndarray, skip: set[tuple], n: int, xi: float) -> list[dict] | None:
        """n configs whose id is not in `skip`, given the observations' points X (in order) and targets y; None when X
        does not extend the points held (or overflows the capacity). Raises LinAlgError when rounding leaves the
        grown factor singular."""
        if not self.posterior.covers(X):
            return None
        self.posterior.extend(X)
        excluded = np.fromiter((self.ids[i] in skip for i in self.rows), bool, len(self.rows))
        if len(self.rows) - excluded.sum() <= n:  # the few left, in listing order (as the sampled picks give them)
            return [self.configs[i] for i, out in zip(self.rows, excluded, strict=True) if not out]
        return [self.configs[self.rows[j]] for j in self.posterior.ei_batch(y, n, xi, excluded)]


class _Fitted:
    """A GrowingPosterior with its targets: what `joint_ei_batch` asks of a GP (targets, posterior, kernel)."""

    def __init__(self, growing: GrowingPosterior, y: np.ndarray):
        self.growing = growing
        self.z = standardised(np.asarray(y, dtype=np.float64))[0]
        self._kernel = growing._kernel

    def posterior(self, C: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        g = self.growing
        V = g.V[:len(g.X)]
        mean = V.T @ solve_triangular(g.L, self.z, lower=True)
        return mean, np.maximum(g.var, 1e-12), V
