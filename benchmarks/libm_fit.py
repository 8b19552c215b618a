"""Fits the polynomials of the C backend's inline float32 log, tanh and erf (compiler_core/codegen/c_libm.py).

Each is a weighted minimax fit (Lawson's iteration over least squares on a dense grid, weights = 1 / |target|, so
the error is relative where the function's result is what the error model bounds), in float64, then rounded to
float32. It prints, per polynomial, the coefficients as C literals and the float64 relative error of the rounded
fit. The float32 evaluation's error, rounding included, is what `benchmarks/libm_accuracy.py` measures.

    python3 benchmarks/libm_fit.py
"""
from __future__ import annotations

import math

import numpy as np

ERFC_SPLIT = 0.875  # erf: the odd polynomial below, a polynomial in x - ERF_MID above
ERF_TOP = 4.0  # erf rounds to 1 in float32 from about 3.93
ERF_MID = (ERFC_SPLIT + ERF_TOP) / 2  # 2.4375, exact in float32
TANH_SPLIT = 0.625  # tanh: the odd polynomial below, 1 - 2 / (exp(2x) + 1) above
SQRT_HALF = math.sqrt(0.5)


def lawson(basis, target, scale, iterations: int = 200) -> np.ndarray:
    """Coefficients c minimising max |basis @ c - target| * scale (approximately): least squares, reweighted by
    each point's error (Lawson), which converges to the minimax fit on the grid."""
    a, b = basis * scale[:, None], target * scale
    weights = np.full(len(b), 1.0 / len(b))
    c = None
    for _ in range(iterations):
        sw = np.sqrt(weights)
        c, *_ = np.linalg.lstsq(a * sw[:, None], b * sw, rcond=None)
        err = np.abs(a @ c - b)
        weights = weights * err
        weights /= weights.sum()
    return c


def fit_float32(basis, target, scale) -> tuple[np.ndarray, float]:
    """Float32 coefficients and their max weighted error (|fit - target| * scale: the function's relative error
    that the polynomial's error makes). Each coefficient, lowest first, is rounded to float32 and the higher ones
    refitted to what the rounded ones leave, so the rounding is not left to chance."""
    fixed: list[float] = []
    for k in range(basis.shape[1]):
        rest = target - basis[:, :k] @ np.array(fixed) if fixed else target
        fixed.append(float(np.float32(lawson(basis[:, k:], rest, scale)[0])))
    c32 = np.array(fixed)
    return c32, float(np.max(np.abs(basis @ c32 - target) * scale))


def erf_vals(x):
    return np.array([math.erf(v) for v in x])


def fits() -> dict[str, tuple[np.ndarray, float]]:
    out = {}
    # log1p(f) = f - f^2/2 + f^3 P(f), f = m - 1 with m in [sqrt(1/2), sqrt(2))
    f = np.linspace(SQRT_HALF - 1, math.sqrt(2) - 1, 40001)
    f = f[np.abs(f) > 1e-3]
    target = (np.log1p(f) - f + 0.5 * f * f) / f ** 3
    basis = np.vander(f, 8, increasing=True)
    out["log P(f), degree 7"] = fit_float32(basis, target, np.abs(f ** 3 / np.log1p(f)))
    # tanh(x) = x + x^3 P(x^2) on |x| < TANH_SPLIT
    x = np.linspace(1e-3, TANH_SPLIT, 40001)
    target = (np.tanh(x) - x) / x ** 3
    basis = np.vander(x * x, 5, increasing=True)
    out["tanh P(x^2), degree 4"] = fit_float32(basis, target, x ** 3 / np.tanh(x))
    # erf(x) = x + x P(x^2) on |x| < ERFC_SPLIT (P's constant 2/sqrt(pi) - 1 rounds with less error than 2/sqrt(pi))
    x = np.linspace(1e-4, ERFC_SPLIT, 40001)
    target = erf_vals(x) / x - 1.0
    basis = np.vander(x * x, 7, increasing=True)
    out["erf P(x^2), degree 6"] = fit_float32(basis, target, x / erf_vals(x))
    # erf(x) = M(x - ERF_MID) on ERFC_SPLIT <= x <= ERF_TOP: no division and no exp, where erf's slope is small enough
    # that a polynomial in x itself meets float32 (erfc(x) exp(x^2) in 1/x needed both: gelu chains took 1.4-1.7x as
    # long on AVX2 and AVX-512, benchmarks/results/2026-11-30-cpu-erf/)
    x = np.linspace(ERFC_SPLIT, ERF_TOP, 40001)
    basis = np.vander(x - ERF_MID, 15, increasing=True)
    out["erf M(x - 2.4375), degree 14"] = fit_float32(basis, erf_vals(x), 1.0 / erf_vals(x))
    return out


def main() -> None:
    for name, (c, err) in fits().items():
        literals = ", ".join(f"{np.float32(v)!r}f".replace("np.float32(", "").replace(")", "") for v in c)
        print(f"{name}: the result's relative error from it {err:.3g} (float32 u = {2.0 ** -24:.3g})\n  {{{literals}}}")


if __name__ == "__main__":
    main()
