"""conv2d, NCHW input and KCRS filter, symmetric zero padding, dilation 1."""
from __future__ import annotations

import numpy as np

from compiler_core import te
from compiler_core.errors import WorkloadError
from compiler_core.ir.expr import FloatImm, select
from compiler_core.ops import error_models, hard_inputs
from compiler_core.ops.base import OpDef, dtype_param
from compiler_core.workload import Param


def out_size(w) -> tuple[int, int]:
    P = (w["H"] + 2 * w["pad"] - w["R"]) // w["stride"] + 1
    Q = (w["W"] + 2 * w["pad"] - w["S"]) // w["stride"] + 1
    return P, Q


def _define(w):
    N, C, H, W, K, R, S = (w[x] for x in "NCHWKRS")
    st, pad = w["stride"], w["pad"]
    P, Q = out_size(w)
    X = te.placeholder("X", (N, C, H, W), w.dtype)
    Wt = te.placeholder("Wt", (K, C, R, S), w.dtype)
    c, r, s = te.reduce_axis(C, "rc"), te.reduce_axis(R, "rr"), te.reduce_axis(S, "rs")

    def body(n, k, p, q):
        h = p * st + r.var - pad
        x = q * st + s.var - pad
        inside = (h >= 0) & (h < H) & (x >= 0) & (x < W)
        xv = select(inside, X[n, c.var, h, x], FloatImm(0.0))
        return te.sum_(xv * Wt[k, c.var, r.var, s.var], (c, r, s))

    Y = te.compute("Y", (N, K, P, Q), body, w.dtype)
    return [X, Wt], [Y]


def _reference(w, ins):
    x, wt = (a.astype(np.float64) for a in ins)
    st, pad = w["stride"], w["pad"]
    P, Q = out_size(w)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((w["N"], w["K"], P, Q))
    for r in range(w["R"]):
        for s in range(w["S"]):
            patch = xp[:, :, r:r + st * (P - 1) + 1:st, s:s + st * (Q - 1) + 1:st]  # N,C,P,Q
            out += np.einsum("ncpq,kc->nkpq", patch, wt[:, :, r, s], optimize=True)
    return [out]


def _normalize(w):
    padded_h, padded_w = w["H"] + 2 * w["pad"], w["W"] + 2 * w["pad"]
    if w["R"] > padded_h or w["S"] > padded_w:
        raise WorkloadError(f"conv2d: filter {w['R']}x{w['S']} larger than padded input {padded_h}x{padded_w}: "
                            f"R must be in [1, H + 2 pad] = [1, {padded_h}] and S in [1, W + 2 pad] = [1, {padded_w}]")
    if w["pad"] >= max(w["R"], w["S"]):  # a wider pad only adds output rows and columns that read zeros alone
        raise WorkloadError(f"conv2d: pad={w['pad']} must be smaller than the filter size: pad in "
                            f"[0, max(R, S) - 1] = [0, {max(w['R'], w['S']) - 1}]")
    return w


CONV2D = OpDef(
    name="conv2d",
    doc="Y[N,K,P,Q] = sum_{c,r,s} X[N,C,H,W] (zero-padded) * Wt[K,C,R,S]; dilation 1",
    params=(Param("N", hi=4096, doc="batch"), Param("C", hi=65536, doc="input channels"),
            Param("H", hi=16384), Param("W", hi=16384), Param("K", hi=65536, doc="output channels"),
            Param("R", hi=32, doc="filter height"), Param("S", hi=32, doc="filter width"),
            Param("stride", hi=16, default=1), Param("pad", lo=0, hi=16, default=0), dtype_param()),
    define=_define,
    reference=_reference,
    flops=lambda w: 2 * w["N"] * w["K"] * out_size(w)[0] * out_size(w)[1] * w["C"] * w["R"] * w["S"],
    normalize=_normalize,
    tolerance=error_models.conv2d,
    hard_inputs=hard_inputs.conv2d,
)
