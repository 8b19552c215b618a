"""Adversarial ("hard") inputs per op family: the rows where wrong kernels and loose checks part ways.

Row ops cycle through a list of row patterns (row i gets pattern i % len), so any shape with a few rows
sees all of them. Every pattern stays where a correct float32 kernel is correct within its error model:
no intermediate leaves float32's range, and where the math is finite the result is finite (a masked
softmax row always keeps a finite element). Inputs and results stay representable in the storage dtype
too: magnitudes and offsets scale with its range and precision where float16's 65504 or a half type's
8- or 11-bit mantissa would otherwise turn a pattern into infinities or constants.
"""
from __future__ import annotations

import numpy as np

from compiler_core.dtypes import numpy_dtype
from compiler_core.numerics import rounding


def _rows(rng, shape, patterns) -> np.ndarray:
    rows, cols = shape
    x = np.empty((rows, cols))
    for i in range(rows):
        x[i] = patterns[i % len(patterns)](rng, cols)
    return x


def _uniform(lo, hi):
    return lambda rng, n: rng.uniform(lo, hi, n)


def _masked(finite_at, lo=-4.0, hi=4.0):
    """-inf everywhere except the columns finite_at(n) picks (a slice or index array)."""
    def pattern(rng, n):
        row = np.full(n, -np.inf)
        row[finite_at(n)] = rng.uniform(lo, hi, n)[finite_at(n)]
        return row
    return pattern


def _last_dominant(scale, last):
    """Small values with a last column that dominates the row: dropping the last term shows at any length."""
    def pattern(rng, n):
        row = rng.uniform(-scale, scale, n)
        row[-1] = last
        return row
    return pattern


def _random_masks(rng, n):
    row = rng.uniform(-30.0, 30.0, n)
    row[rng.random(n) < 0.5] = -np.inf
    row[rng.integers(n)] = rng.uniform(-30.0, 30.0)
    return row


SOFTMAX_ROWS = (
    _uniform(1e4 - 8, 1e4 + 8),  # offset: x - max is exact, but a kernel that loses it is off by ulp(1e4)
    lambda rng, n: np.full(n, 3.0),  # constant: every output 1/n
    _masked(lambda n: slice(n - 1, n)),  # -inf except the last element: the output is one-hot
    _uniform(-1e4, 1e4),  # large magnitudes: almost every exp underflows
    _masked(lambda n: slice(n // 2, n)),  # masked prefix: an online max must not become -inf - -inf
    _last_dominant(1.0, 12.0),  # the last column carries a large share of the denominator
    _masked(lambda n: slice(0, 1)),  # -inf except the first element
    _random_masks,
)


def _layernorm_rows(offset: float) -> tuple:
    return (
        _uniform(offset - 1, offset + 1),  # offset, spread 1: |mean| / std ~ 2 offset
        lambda rng, n: np.full(n, 7.1),  # constant: 7.1 is not a float, so a float32 mean is not exactly it
        _uniform(-1e4, 1e4),  # large magnitudes
        _last_dominant(1e-3, 100.0),  # one outlier in a row of small values
        _uniform(-3e3 - 10, -3e3 + 10),  # negative offset
        _uniform(1 - 1e-4, 1 + 1e-4),  # variance far below eps
    )


def _reduce_sum_rows(big: float) -> tuple:
    return (
        _uniform(0.0, 2 * big),  # magnitudes `big` (1e5 where the output dtype allows) ...
        _uniform(0.0, 2e-3),  # ... next to 1e-3: a per-row bound, not the whole output's
        lambda rng, n: _cancelling(rng, n),  # sums to exactly 0
        lambda rng, n: np.full(n, 0.25),  # constant (a power of two: float32 sums of it are exact)
        _last_dominant(1e-3, 1e3),  # dropping the last term shows at any row length
        _uniform(-big, big),
    )


def _offset(dtype: str) -> float:
    """A row offset at which a spread of 1 still spans 16+ steps of the dtype (1e4 for float32; 128 for
    float16, 16 for bfloat16, whose spacing at 1e4 is 8 and 64)."""
    return min(1e4, 1 / (16 * rounding(dtype).u))


def _big(dtype: str, n: int) -> float:
    """1e5, or less where n terms of it would sum past a quarter of the dtype's range (float16)."""
    return min(1e5, rounding(dtype).max / 4 / max(n, 1))


def _cancelling(rng, n):
    half = rng.uniform(1.0, 1e3, n // 2)
    row = np.concatenate([half, -half, np.zeros(n % 2)])
    return rng.permutation(row)


def softmax(w, rng):
    return [_rows(rng, (w["rows"], w["cols"]), SOFTMAX_ROWS).astype(numpy_dtype(w.dtype))]


def layernorm(w, rng):
    cols = w["cols"]
    gamma = rng.uniform(0.5, 2.0, cols) * rng.choice([-1.0, 1.0], cols)
    beta = rng.uniform(-3.0, 3.0, cols)
    beta[::7] = 100.0  # a beta much larger than gamma * xhat: its rounding dominates there
    x = _rows(rng, (w["rows"], cols), _layernorm_rows(_offset(w.dtype)))
    return [a.astype(numpy_dtype(w.dtype)) for a in (x, gamma, beta)]


def reduce_sum(w, rng):
    rows = _reduce_sum_rows(_big(w.dtype, w["cols"]))
    return [_rows(rng, (w["rows"], w["cols"]), rows).astype(numpy_dtype(w.dtype))]


def transpose(w, rng):
    """Special values must move bit for bit: infinities, NaN, signed zero, subnormals, the extremes (of the
    dtype); the rest alternates huge and plain magnitudes."""
    r = rounding(w.dtype)
    huge = min(1e30, r.max)
    x = rng.uniform(-huge, huge, w["rows"] * w["cols"])
    x[1::2] = rng.uniform(-1.0, 1.0, x[1::2].size)
    smallest = r.tiny * 2 * r.u  # the smallest subnormal
    special = np.array([np.inf, -np.inf, np.nan, -0.0, 3 * smallest, -r.max, r.max, smallest])
    x[: min(x.size, special.size)] = special[: x.size]
    return [x.reshape(w["rows"], w["cols"]).astype(numpy_dtype(w.dtype))]


def _scaled(rng, shape, decades, axis) -> np.ndarray:
    """uniform(-1, 1) with a magnitude of 10^uniform(-decades, decades) per slice along axis."""
    axis %= len(shape)
    scales = 10.0 ** rng.uniform(-decades, decades, shape[axis])
    return rng.uniform(-1.0, 1.0, shape) * np.expand_dims(scales, [d for d in range(len(shape)) if d != axis])


def _decades(dtype: str, k: int) -> float:
    """Magnitude spread that keeps sum_k |a b| within a quarter of the output dtype's range."""
    return max(0.0, min(2.0, 0.5 * np.log10(rounding(dtype).max / 4 / k)))


def gemm(w, rng):
    """Rows of A and columns of B of mixed magnitudes, and every third row/column pair cancelling exactly:
    A's row alternates +v, -v over pairs of k, B's column repeats each pair's entry, so the sum is 0."""
    a_shape, b_shape = (s.shape for s in _specs(w)[:2])
    k = a_shape[-1]
    d = _decades(w.dtype, k)
    a = _scaled(rng, a_shape, d, axis=-2)
    b = _scaled(rng, b_shape, d, axis=-1)
    pairs = k - k % 2
    a[..., 2::3, :pairs] = np.abs(a[..., 2::3, :pairs:2]).repeat(2, axis=-1) * np.tile([1.0, -1.0], pairs // 2)
    b[..., 1:pairs:2, 2::3] = b[..., 0:pairs:2, 2::3]
    return [a.astype(numpy_dtype(w.dtype)), b.astype(numpy_dtype(w.dtype))]


def conv2d(w, rng):
    """Input channels and filters of mixed magnitudes; every other filter sums to zero over its window and
    sees a constant image in channel 0, so interior outputs cancel there."""
    x_spec, w_spec = _specs(w)[:2]
    d = _decades(w.dtype, w["C"] * w["R"] * w["S"])
    x = _scaled(rng, x_spec.shape, d, axis=1)
    wt = _scaled(rng, w_spec.shape, d, axis=0)
    x[:, 0] = 0.75
    wt[::2, 0] -= wt[::2, 0].mean(axis=(-2, -1), keepdims=True)
    return [x.astype(numpy_dtype(w.dtype)), wt.astype(numpy_dtype(w.dtype))]


def _elementwise_scales(dtype: str) -> tuple:
    """Per row: large for the functions, small, plain, underflowing (products of 1e-20 leave float32's
    normal range; in float16, whose inputs cannot be that small, subnormal inputs)."""
    return (8.0, 1e-3, 1.0, max(1e-20, rounding(dtype).tiny / 8))


def elementwise(w, rng):
    """Per row a magnitude from _elementwise_scales; every fifth row gives all inputs the same values (a - b
    cancels to 0, a / b is 1) and every fifth+1 the negated values (a + b cancels)."""
    from compiler_core.ops.elementwise import vector_names

    rows, cols = w["rows"], w["cols"]
    base = rng.uniform(-1.0, 1.0, (rows, cols))
    scales = _elementwise_scales(w.dtype)
    scale = np.array([scales[i % len(scales)] for i in range(rows)])[:, None]
    vectors = set(vector_names(w))
    out = []
    for k, spec in enumerate(_specs(w)[:-1]):
        full = rng.uniform(-1.0, 1.0, (rows, cols)) * scale
        full[0::5] = base[0::5] * scale[0::5]
        full[1::5] = (-1) ** k * base[1::5] * scale[1::5]
        out.append((full[0] if spec.name in vectors else full).astype(numpy_dtype(w.dtype)))
    return out


def _specs(w):
    from compiler_core.ops import get_op

    return get_op(w.op).tensor_specs(w)


ATTENTION_QUERIES = (
    lambda rng, n: rng.standard_normal(n),  # plain
    lambda rng, n: np.zeros(n),  # every score 0: the output is the mean of the (visible) values
    lambda rng, n: 6.0 * rng.standard_normal(n),  # peaked: most exps underflow, the max must be right
    _uniform(0.0, 1.0),  # positive: the last key (below) dominates, so dropping the last keys shows at any length
)


def attention(w, rng):
    """Query rows cycle through ATTENTION_QUERIES; the last key of each head is large and positive; a third of
    the value columns sit on an offset of 100 (its rounding dominates there)."""
    H, Sq, Skv, D = w["heads"], w["seq_q"], w["seq_kv"], w["head_dim"]
    q = np.stack([_rows(rng, (Sq, D), ATTENTION_QUERIES) for _ in range(H)])
    k = rng.standard_normal((H, Skv, D))
    k[:, -1, :] = 3.0
    v = rng.standard_normal((H, Skv, D))
    v[:, :, ::3] += 100.0
    return [a.astype(numpy_dtype(w.dtype)) for a in (q, k, v)]
