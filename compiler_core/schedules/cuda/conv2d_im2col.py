"""conv2d as an explicit im2col then a plain GEMM on the SIMT template: a first kernel copies the im2col matrix of X
(C*R*S rows by N*P*Q output pixels, zeros in the padding) into a workspace, and the GEMM reads it as a row-major
B with 128-bit loads, without the gathered addressing and padding guards of the implicit form.

Why both forms: the implicit GEMM moves no extra bytes but pays integer work and scalar loads for every B element
in its k loop; the explicit copy costs one pass over C*R*S*N*P*Q elements (written once, read by the GEMM's
M/BM row blocks) and then runs at plain-GEMM speed. Which wins depends on the layer, so it is a knob (`im2col`,
conv2d.py), offered where the workspace stays under MAX_WORKSPACE_BYTES.
"""
from __future__ import annotations

import dataclasses

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ops.conv2d import out_size
from compiler_core.schedules.cuda import gemm_simt, gemm_simt_kernel
from compiler_core.space import Knob

KNOB = Knob("im2col", ("implicit", "explicit"),
            "B gathered from X inside the GEMM's k loop, or copied first into a C*R*S x N*P*Q workspace (one more "
            "kernel; the GEMM then loads B as a plain row-major matrix)")
MAX_WORKSPACE_BYTES = 1 << 30  # the explicit form is offered only below this much device memory
COPY_THREADS = 256


def fits(w) -> bool:
    P, Q = out_size(w)
    return w["C"] * w["R"] * w["S"] * w["N"] * P * Q * 4 <= MAX_WORKSPACE_BYTES


def problem(w, implicit: gemm_simt.Gemm) -> tuple[gemm_simt.Gemm, S.Buffer]:
    """(the GEMM over the workspace, the workspace): conv2d's implicit GEMM (`implicit`, conv2d.problem) with B
    replaced by the im2col matrix, row-major C*R*S x N*P*Q; A (the filter) and C (Y in NCHW) stay. The GEMM's
    inputs are (filter, workspace): the kernel's parameters."""
    cols = S.Buffer("ws_im2col", "float32", (implicit.K * implicit.N,))
    NPQ = implicit.N
    b = gemm_simt.Operand(cols, lambda _, kk, j: kk * NPQ + j, "mn", NPQ % gemm_simt.LANES == 0)
    return dataclasses.replace(implicit, b=b, inputs=(implicit.a.buffer, cols)), cols


def copy_func(w, X: S.Buffer, cols: S.Buffer) -> S.PrimFunc:
    """cols[kk, j] = X[n, c, p*stride - pad + r, q*stride - pad + s] (0 outside X), kk = (c, r, s), j = (n, p, q):
    blockIdx.y walks kk (its decomposition is per block), threads walk j (consecutive q: coalesced both ways);
    half inputs are widened to float32 here."""
    N, C, H, W, R, S_ = (w[x] for x in "NCHWRS")
    stride, pad = w["stride"], w["pad"]
    P, Q = out_size(w)
    PQ, NPQ = P * Q, N * P * Q
    ib = IRBuilder()
    with ib.loop("by", C * R * S_, S.ForKind.BLOCK_Y) as kk, \
            ib.loop("bx", -(-NPQ // COPY_THREADS), S.ForKind.BLOCK_X) as bx, \
            ib.loop("tx", COPY_THREADS, S.ForKind.THREAD_X) as tx, \
            ib.let("j", bx * COPY_THREADS + tx) as j:
        with ib.if_(j < NPQ), ib.let("h", j // Q % P * stride - pad + kk // S_ % R) as h, \
                ib.let("x", j % Q * stride - pad + kk % S_) as x:
            index = ((j // PQ * C + kk // (R * S_)) * H + h) * W + x
            value = X[index]
            if pad:  # the padding reads as zero; the load only happens inside X
                inside = (h >= 0) & (h < H) & (x >= 0) & (x < W)
                value = E.select(inside, X[index], E.FloatImm(0.0, X.dtype))
            ib.store(cols, kk * NPQ + j, value)
    return S.PrimFunc("conv2d_im2col", (X, cols), ib.get())


def schedule(w, implicit: gemm_simt.Gemm, config: dict, target) -> S.Module:
    """The copy kernel, then the GEMM's kernel(s); `config` holds the GEMM's knobs (im2col and gather dropped)."""
    g, cols = problem(w, implicit)
    X = implicit.inputs[0]
    gemm = gemm_simt_kernel.schedule(g, config, target)
    # the copy writes every element of its workspace before the GEMM reads it, and split-K partials are written
    # whole by every split (gemm_simt_kernel): nothing to zero
    assert gemm.overwrites_workspaces or not gemm.workspaces
    return S.Module(w.op, (copy_func(w, X, cols), *gemm.kernels), (X, g.inputs[0], g.out.buffer),
                    (cols, *gemm.workspaces), 2, overwrites_workspaces=True)
