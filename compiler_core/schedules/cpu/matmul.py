"""CPU template for matmul: the shared BLIS-style GEMM (see `gemm`) over C[M,N] = A[M,K] @ B[K,N]."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.schedules.cpu import gemm, gemm_b_source

space = gemm_b_source.space
config_space = gemm_b_source.config_space
default_config = gemm_b_source.default_config


def schedule(w, config, target) -> S.Module:
    M, N, K, dt = w["M"], w["N"], w["K"], w.dtype
    A = S.Buffer("in_A", dt, (M, K))
    B = S.Buffer("in_B", dt, (K, N))
    C = S.Buffer("out_C", dt, (M, N))
    ops = gemm.GemmOperands(
        M=M, N=N, K=K, batch=1,
        a=lambda bt, i, k: E.cast("float32", A[i, k]),
        **gemm_b_source.b_operands(config, B, lambda bt, k, j: E.cast("float32", B[k, j]), lambda bt, k: k * N),
        c=C,
        c_index=lambda bt, i, j: i * N + j,
    )
    func = S.PrimFunc("matmul_cpu", (A, B, C), gemm.build_gemm(ops, config, target))
    return S.Module("matmul", (func,), (A, B, C), (), 2)
