"""matmul and batch_matmul: C = A @ B, half (float16, bfloat16) inputs accumulate in float32."""
from __future__ import annotations

import numpy as np

from compiler_core import te
from compiler_core.ir.expr import cast
from compiler_core.ops import error_models, hard_inputs
from compiler_core.ops.base import OpDef, dtype_param
from compiler_core.workload import Param


def _define_matmul(w):
    M, N, K, dt = w["M"], w["N"], w["K"], w.dtype
    A = te.placeholder("A", (M, K), dt)
    B = te.placeholder("B", (K, N), dt)
    k = te.reduce_axis(K, "k")
    C = te.compute("C", (M, N), lambda i, j: cast(dt, te.sum_(
        cast("float32", A[i, k.var]) * cast("float32", B[k.var, j]), k)), dt)
    return [A, B], [C]


def _define_batch_matmul(w):
    Bt, M, N, K, dt = w["batch"], w["M"], w["N"], w["K"], w.dtype
    A = te.placeholder("A", (Bt, M, K), dt)
    B = te.placeholder("B", (Bt, K, N), dt)
    k = te.reduce_axis(K, "k")
    C = te.compute("C", (Bt, M, N), lambda b, i, j: cast(dt, te.sum_(
        cast("float32", A[b, i, k.var]) * cast("float32", B[b, k.var, j]), k)), dt)
    return [A, B], [C]


MATMUL = OpDef(
    name="matmul",
    doc="C[M,N] = A[M,K] @ B[K,N]; half inputs accumulate in float32",
    params=(Param("M", doc="rows of A and C"), Param("N", doc="columns of B and C"),
            Param("K", doc="reduction length"), dtype_param()),
    define=_define_matmul,
    reference=lambda w, ins: [ins[0].astype(np.float64) @ ins[1].astype(np.float64)],
    flops=lambda w: 2 * w["M"] * w["N"] * w["K"],
    tolerance=error_models.gemm,
    hard_inputs=hard_inputs.gemm,
)

BATCH_MATMUL = OpDef(
    name="batch_matmul",
    doc="C[b,M,N] = A[b,M,K] @ B[b,K,N]; half inputs accumulate in float32",
    params=(Param("batch", hi=4096, doc="number of independent matmuls"), Param("M"), Param("N"), Param("K"),
            dtype_param()),
    define=_define_batch_matmul,
    reference=lambda w, ins: [np.matmul(ins[0].astype(np.float64), ins[1].astype(np.float64))],
    flops=lambda w: 2 * w["batch"] * w["M"] * w["N"] * w["K"],
    tolerance=error_models.gemm,
    hard_inputs=hard_inputs.gemm,
)
