"""CPU template for conv2d as an implicit GEMM on the shared GEMM builder (see `gemm`).

Per image n: Y[n] (K x P*Q) = Wt (K x C*R*S) @ patches (C*R*S x P*Q). The patches are never
materialised: packing B gathers them straight from X (im2col inside the kc x nr panels), with zeros
for the padding. The filter is A, read in place or packed like any A.
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ops.conv2d import out_size
from compiler_core.schedules.cpu import gemm
from compiler_core.space import Space


def space(w, target) -> Space:
    return gemm.space(target, batch=w["N"])


def default_config(w, target) -> dict:
    return gemm.default_config(target, w["K"], out_size(w)[0] * out_size(w)[1], batch=w["N"])


def _patch_reader(w, X: S.Buffer):
    """(n, crs, pq) -> the input value under filter tap crs for output pixel pq (0 in the padding)."""
    C, H, W, R, Sw = w["C"], w["H"], w["W"], w["R"], w["S"]
    stride, pad = w["stride"], w["pad"]
    _, Q = out_size(w)

    def read(n, k, col):
        c, r, s = k // (R * Sw), k // Sw % R, k % Sw
        h = col // Q * stride + r - pad
        x = col % Q * stride + s - pad
        value = E.widen(X[((n * C + c) * H + h) * W + x])  # GemmOperands read float32
        if pad == 0:  # every tap of every output pixel lies inside the image
            return value
        return E.select((h >= 0) & (h < H) & (x >= 0) & (x < W), value, 0.0)

    return read


def schedule(w, config, target) -> S.Module:
    N, C, H, W, K, R, Sw = (w[x] for x in "NCHWKRS")
    P, Q = out_size(w)
    X = S.Buffer("in_X", w.dtype, (N, C, H, W))
    Wt = S.Buffer("in_Wt", w.dtype, (K, C, R, Sw))
    Y = S.Buffer("out_Y", w.dtype, (N, K, P, Q))
    crs = C * R * Sw
    ops = gemm.GemmOperands(
        M=K, N=P * Q, K=crs, batch=N,
        a=lambda n, k, j: E.widen(Wt[k * crs + j]),
        b=_patch_reader(w, X),
        c=Y,
        c_index=lambda n, k, pq: (n * K + k) * (P * Q) + pq,
    )
    func = S.PrimFunc("conv2d_cpu", (X, Wt, Y), gemm.build_gemm(ops, config, target))
    return S.Module("conv2d", (func,), (X, Wt, Y), (), 2)
