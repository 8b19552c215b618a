"""CPU template for conv2d as an implicit GEMM on the shared GEMM builder (see `gemm`).

Per image n: Y[n] (K x P*Q) = Wt (K x C*R*S) @ patches (C*R*S x P*Q). The patches are never
materialised: packing B gathers them straight from X (im2col inside the kc x nr panels), with zeros
for the padding. The filter is A, read in place or packed like any A.

A panel row (one filter tap c, r, s over nr consecutive output pixels) is a few runs of one image row each:
per output row it touches, zeros where the tap falls in the padding and a strided copy of the image row between
(`_im2col_row`). Its bounds are worked out once per run, so the copy is a plain vector loop; decoding every
element's tap and pixel, the element form the GEMM builder's own packing takes, spent more time packing than the
GEMM spent computing.
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


def _im2col_row(w, X: S.Buffer):
    """The GEMM builder's `b_row` for conv2d: row k (filter tap c, r, s) of the B panel of image n whose columns
    start at output pixel col0, as runs over the output rows the panel touches."""
    C, H, W, R, Sw = w["C"], w["H"], w["W"], w["R"], w["S"]
    stride, pad = w["stride"], w["pad"]
    P, Q = out_size(w)
    pixels = P * Q

    def emit(ib, Bp: S.Buffer, base, n, k, col0, nr: int) -> None:
        c, r, s = k // (R * Sw), k // Sw % R, k % Sw
        # output columns q whose tap lands inside the image row: first_q <= q < end_q
        first_q = E.select(pad - s > 0, (pad - s + stride - 1) // stride, 0)
        end_q = E.min_(E.select(W - 1 + pad - s >= 0, (W - 1 + pad - s) // stride + 1, 0), Q)
        with ib.let("p0", col0 // Q) as p0:
            with ib.loop("run", (Q + nr - 2) // Q + 1) as run:  # output rows a panel of nr pixels touches
                p = p0 + run
                h = p * stride + r - pad
                lo = E.max_(E.min_(p * Q - col0, nr), 0)  # the run's columns within the panel: [lo, hi)
                hi = E.max_(E.min_(E.min_((p + 1) * Q, pixels) - col0, nr), lo)
                inside = (h >= 0) & (h < H)
                with ib.let("lo", lo) as lo_, ib.let("hi", hi) as hi_:
                    # the copy's columns: where the tap is inside the image, none where its row is padding
                    copy_lo = E.max_(E.min_(p * Q + first_q - col0, hi_), lo_)
                    with ib.let("copy_lo", copy_lo) as c_lo:
                        copy_hi = E.select(inside, E.max_(E.min_(p * Q + end_q - col0, hi_), c_lo), c_lo)
                        with ib.let("copy_hi", copy_hi) as c_hi:
                            with ib.loop("j", c_lo - lo_) as j:
                                ib.store(Bp, base + lo_ + j, 0.0)
                            row = ((n * C + c) * H + h) * W + (col0 - p * Q) * stride + s - pad
                            with ib.loop("j", c_hi - c_lo, S.ForKind.VECTORIZED) as j:
                                ib.store(Bp, base + c_lo + j, E.widen(X[row + (c_lo + j) * stride]))
                            with ib.loop("j", hi_ - c_hi) as j:
                                ib.store(Bp, base + c_hi + j, 0.0)
        with ib.loop("j", E.max_(col0 + nr - pixels, 0)) as j:  # past the last pixel: zeros
            ib.store(Bp, base + nr - 1 - j, 0.0)

    return emit


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
        b=None,
        c=Y,
        c_index=lambda n, k, pq: (n * K + k) * (P * Q) + pq,
        b_row=_im2col_row(w, X),
    )
    func = S.PrimFunc("conv2d_cpu", (X, Wt, Y), gemm.build_gemm(ops, config, target))
    return S.Module("conv2d", (func,), (X, Wt, Y), (), 2)
