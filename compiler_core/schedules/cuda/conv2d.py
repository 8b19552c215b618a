"""CUDA template for conv2d (NCHW, KCRS) as an implicit GEMM on the SIMT GEMM template, float32 math for every
dtype (half inputs are widened as they are loaded, and the output narrowed as it is stored, element by element).

Y[n, k, p, q] = sum_{c,r,s} Wt[k, c, r, s] * X[n, c, p*stride + r - pad, q*stride + s - pad], i.e.
C[m, j] = A[m, kk] @ B[kk, j] with m = k (output channel), kk = (c, r, s), j = (n, p, q):
A is the filter viewed as a row-major [K, C*R*S] matrix (128-bit loads when C*R*S % 4 == 0), B the
im2col of X, gathered on the fly with zero padding, and C scatters to NCHW, contiguous along j within
an image (128-bit stores when P*Q % 4 == 0).
"""
from __future__ import annotations

from compiler_core.ir import stmt as S
from compiler_core.ops.conv2d import out_size
from compiler_core.schedules.cuda import gemm_simt, gemm_simt_default, gemm_simt_gather

LANES = gemm_simt.LANES


def problem(w) -> gemm_simt.Gemm:
    N, C, H, W, K, R, S_ = (w[x] for x in "NCHWKRS")
    stride, pad = w["stride"], w["pad"]
    P, Q = out_size(w)
    PQ, RS, CRS = P * Q, R * S_, C * R * S_
    X = S.Buffer("in_X", w.dtype, (N, C, H, W))
    Wt = S.Buffer("in_Wt", w.dtype, (K, C, R, S_))
    Y = S.Buffer("out_Y", w.dtype, (N, K, P, Q))

    def window(kk, j):
        """(image, channel, input row, input column) that im2col element (kk, j) reads."""
        c, r, s = kk // RS, kk // S_ % R, kk % S_
        img, p, q = j // PQ, j // Q % P, j % Q
        return img, c, p * stride + r - pad, q * stride + s - pad

    def x_index(b, kk, j):
        img, c, h, x = window(kk, j)
        return ((img * C + c) * H + h) * W + x

    def x_inside(b, kk, j):
        _, _, h, x = window(kk, j)
        return (0 <= h) & (h < H) & (0 <= x) & (x < W)

    def k_parts(kk):
        """X offset of (c, r, s) from the window's top-left corner, and (r, s) for the padding test."""
        c, r, s = kk // RS, kk // S_ % R, kk % S_
        return (c * H + r) * W + s, (r, s)

    def j_parts(b, j):
        """X offset of the window's top-left corner (may lie in the padding), and that corner's (row, column)."""
        img, p, q = j // PQ, j // Q % P, j % Q
        h0, x0 = p * stride - pad, q * stride - pad
        return (img * (C * H) + h0) * W + x0, (h0, x0)

    padded = (H, W) if pad else ()
    gather = gemm_simt_gather.Gather(k_parts, j_parts, padded, (R, S_) if pad else (), C * H * W)
    pointwise = R == 1 and S_ == 1 and stride == 1 and pad == 0  # im2col is X itself, contiguous along j
    a = gemm_simt.Operand(Wt, lambda b, m, kk: m * CRS + kk, "k", CRS % LANES == 0)
    bop = gemm_simt.Operand(X, x_index, "mn", pointwise and PQ % LANES == 0, x_inside if pad else None, gather)
    out = gemm_simt.Output(Y, lambda b, m, j: (j // PQ * K + m) * PQ + j % PQ, N * K * PQ, PQ % LANES == 0)
    return gemm_simt.Gemm("conv2d", 1, K, N * PQ, CRS, a, bop, out, (X, Wt))


def space(w, target):
    return gemm_simt.space(problem(w), target)


def config_space(w, target, config):
    """Configs from before the gather knob still lower (as gather = "div"): see gemm_simt.config_space."""
    return gemm_simt.config_space(problem(w), target, config)


def schedule(w, config, target) -> S.Module:
    return gemm_simt.schedule(problem(w), config, target)


def default_config(w, target) -> dict:
    return gemm_simt_default.default_config(problem(w), target)
