"""Per-element error bounds of a correct float32-accumulating kernel, one function per op family.

Each takes (workload, inputs, float64 reference outputs) and returns one float64 tolerance array per
output, broadcastable to it. inf marks an element no float32 kernel can be held to (an intermediate
beyond the dtype's range); verify leaves those unchecked. Constants are counts of roundings, each
justified where it is added; the only probabilistic factor is numerics.sum_bound (sqrt(n) growth).
"""
from __future__ import annotations

import numpy as np

from compiler_core.numerics import ACCUMULATION_DTYPE, rounding, sum_bound

ACC = rounding(ACCUMULATION_DTYPE)
# exp as the kernels compute it: glibc expf <= 1 ulp, our vector exp ~1 ulp, CUDA expf <= 2 ulp
# (CUDA C Programming Guide, "Mathematical functions"); 1 ulp = 2u.
EXP_ERROR_U = 4
# 1/sqrt as the kernels compute it: 1.0f / sqrtf (two correctly rounded ops) on CPU, rsqrtf (<= 2 ulp) on CUDA.
RSQRT_ERROR_U = 4


def output_rounding(ref: np.ndarray, dtype: str) -> np.ndarray:
    """A final rounding from the float32 accumulator to a narrower output dtype (none for float32)."""
    if dtype == ACCUMULATION_DTYPE:
        return np.zeros_like(ref)
    return rounding(dtype).u * np.abs(ref)


def output_floor(dtype: str) -> float:
    """Half the subnormal spacing of the output dtype: what rounding a subnormal result can cost."""
    out = rounding(dtype)
    return out.u * out.tiny


def storable(tol: np.ndarray, ref: np.ndarray, dtype: str) -> np.ndarray:
    """A result that may round past the output dtype's largest finite number (float16's 65504) is stored as
    inf by a correct kernel: unchecked there, like an intermediate beyond float32's range."""
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(ref) + tol >= rounding(dtype).max, np.inf, tol)


def _unchecked_beyond_range(tol: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Where the float64 magnitude of any intermediate exceeds float32's range, float32 overflows."""
    return np.where(magnitude > ACC.max, np.inf, tol)


def product_sums(magnitude: np.ndarray, ref: np.ndarray, k: int, dtype: str) -> np.ndarray:
    """sum_k a*b with |a|@|b| = magnitude: each product rounds once in float32 (exact for float16 inputs,
    charged anyway: +u), the k-term sum costs sum_bound(k); then the output rounding."""
    tol = (sum_bound(k) + ACC.u) * magnitude + output_rounding(ref, dtype) + output_floor(dtype) + k * ACC.u * ACC.tiny
    return storable(_unchecked_beyond_range(tol, magnitude), ref, dtype)


def gemm(w, ins, refs) -> list[np.ndarray]:
    a, b = (np.abs(x.astype(np.float64)) for x in ins)
    return [product_sums(np.matmul(a, b), refs[0], a.shape[-1], w.dtype)]


def conv2d(w, ins, refs) -> list[np.ndarray]:
    from compiler_core.ops.conv2d import _reference

    magnitude = _reference(w, [np.abs(x) for x in ins])[0]  # conv of |x| with |w|, in float64
    return [product_sums(magnitude, refs[0], w["C"] * w["R"] * w["S"], w.dtype)]


def reduce_sum(w, ins, refs) -> list[np.ndarray]:
    x = ins[0].astype(np.float64)
    magnitude = np.abs(x).sum(axis=-1)
    tol = sum_bound(x.shape[-1]) * magnitude + output_rounding(refs[0], w.dtype) + output_floor(w.dtype)
    return [storable(_unchecked_beyond_range(tol, magnitude), refs[0], w.dtype)]


def softmax(w, ins, refs) -> list[np.ndarray]:
    """y = exp(x - m) / s, relative per element:
    - s sums n positive terms: sum_bound(n) relative;
    - x - m rounds once (absolute u |x - m|), which exp turns into a relative error u |x - m|;
    - exp itself EXP_ERROR_U; 1/s and the product: 2 more roundings; the online variant's rescaling
      s * exp(m_old - m_new) is another exp and product per merge: EXP_ERROR_U + 1 more.
    Absolute floor: exp below float32's smallest normal flushes (our vector exp returns 0 under
    -87.34), which costs at most `tiny` of the output before the division by s >= 1 (charged twice, as
    before the half dtypes), and a subnormal output rounds to half the output dtype's subnormal spacing
    (float16's smallest normal, 6e-5, would be 1.5 % of a 1/257 output)."""
    x = ins[0].astype(np.float64)
    ref = refs[0]
    n = x.shape[-1]
    m = np.max(x, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        distance = np.where(np.isfinite(x) & np.isfinite(m), np.abs(x - m), 0.0)
    relative = sum_bound(n) + ACC.u * (2 * EXP_ERROR_U + 3 + distance)
    return [relative * np.abs(np.nan_to_num(ref)) + output_rounding(ref, w.dtype) + 2 * ACC.tiny
            + output_floor(w.dtype)]


def layernorm(w, ins, refs) -> list[np.ndarray]:
    """y = (x - mean) * rsqrt(var + eps) * gamma + beta, with s = sqrt(var + eps), xhat = (x - mean) / s.

    - centring: a kernel's statistics are of x shifted by a row element (exact for floats within a factor
      2, and |x - shift| <= range); their mean costs sum_bound(n) * range. Adding the shift back rounds
      once at the offset's scale, u |mean|, but never by more than the correction itself (<= range), so
      constant rows stay exact. Divided by s: the row's conditioning, |mean| / std.
    - variance: a sum of n squares sum_bound(n), relative to var + (mean - shift)^2 <= var + range^2 for
      the one-pass form E[d^2] - E[d]^2; halved by the square root, plus RSQRT_ERROR_U; relative to xhat
      with the subtraction and the product by rstd (2 more u).
    - then * gamma and + beta: 2 roundings of at most |gamma xhat| + |beta| (a fused multiply-add: fewer)."""
    x, gamma, beta = (a.astype(np.float64) for a in ins)
    n, eps = x.shape[-1], float(w["eps"])
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    s = np.sqrt(var + eps)
    spread = x.max(axis=-1, keepdims=True) - x.min(axis=-1, keepdims=True)
    centring = np.minimum(ACC.u * np.abs(mean), spread) + sum_bound(n) * spread
    variance = (sum_bound(n) + 2 * ACC.u) * (var + spread ** 2) / (var + eps)
    xhat = np.abs(x - mean) / s
    relative = variance / 2 + ACC.u * (RSQRT_ERROR_U + 2)
    scaled = np.abs(gamma) * (relative * xhat + centring / s)
    tol = scaled + 2 * ACC.u * (np.abs(gamma) * xhat + np.abs(beta)) + output_rounding(refs[0], w.dtype)
    return [storable(tol + ACC.tiny + output_floor(w.dtype), refs[0], w.dtype)]


def exact(w, ins, refs) -> list[np.ndarray]:
    """Data movement: every element must be bit-for-bit the input's (NaN where NaN)."""
    return [np.zeros(1) for _ in refs]


def attention(w, ins, refs) -> list[np.ndarray]:
    """o = sum_j p_j v_j with p = softmax(s), s_j = scale * q . k_j (all of a query row; masked keys have p = 0).

    - each score: a head_dim-term dot product, its product by scale and scale's own rounding to float32:
      delta_j = (sum_bound(d) + 3u) * scale * |q| . |k_j|. exp turns it into a relative error of p_j, and the
      denominator's (a p-weighted mean of the others') adds at most the row's largest: expm1(delta_j + max delta);
    - s_j - m rounds (u |s_j - m|; an online kernel's running max m' <= m splits it into m' - s_j and m - m', the
      same sum), exp EXP_ERROR_U, the division (or 1/den and a product) 2u;
    - the denominator and the p_j v_j sum: sum_bound(n) each, relative to sum p |v|; the products u;
    - an online kernel rescales its running sums by exp(m_old - m_new) whenever the max grows, at most n times,
      each EXP_ERROR_U + 1 roundings of both sums: independent, so sum_bound(n) (EXP_ERROR_U + 1) twice;
    - a tensor-core kernel rounds p to the input dtype for the second product: its u, and below the dtype's smallest
      normal an absolute u * tiny (float16's subnormals: a kernel that divides by the row's final max first, as
      WMMA's max_first, rounds the p of keys far below the max there), u * tiny * sum |v_j| over the keys seen;
    - exp underflow flushes terms below float32's smallest normal: n * tiny * max |v| (den >= 1);
    then the output rounding. A score beyond float32's range leaves its row unchecked."""
    from compiler_core.ops.attention import row_blocks, scale, scores

    q, k, v = (a.astype(np.float64) for a in ins)
    n, d, u = k.shape[1], q.shape[2], ACC.u
    per_sum = 2 * sum_bound(n) * (1 + EXP_ERROR_U + 1) + u * (EXP_ERROR_U + 3) + rounding(w.dtype).u
    p_floor = rounding(w.dtype).u * rounding(w.dtype).tiny
    tol = np.empty(refs[0].shape)
    for h, rows in row_blocks(w, q.shape[0]):
        s = scores(w, q[h, rows], k[h], rows)
        hidden = np.isneginf(s)
        magnitude = scale(w) * (np.abs(q[h, rows]) @ np.abs(k[h]).T)
        delta = np.where(hidden, 0.0, (sum_bound(d) + 3 * u) * magnitude)
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        p /= p.sum(axis=1, keepdims=True)
        distance = np.where(hidden, 0.0, m - s)
        each = np.expm1(delta + delta.max(axis=1, keepdims=True)) + u * distance
        av = np.abs(v[h])
        row = (p * each) @ av + per_sum * (p @ av) + n * ACC.tiny * av.max(initial=0.0) \
            + p_floor * ((~hidden) @ av)
        too_big = np.where(hidden, 0.0, magnitude).max(axis=1, keepdims=True) > ACC.max
        tol[h, rows] = np.where(too_big, np.inf, row)
    tol += output_rounding(refs[0], w.dtype) + output_floor(w.dtype)
    return [storable(tol, refs[0], w.dtype)]
