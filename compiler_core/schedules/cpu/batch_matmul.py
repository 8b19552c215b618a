"""CPU template for batch_matmul: the shared GEMM (see `gemm`) per problem, threads over the batch or inside."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.schedules.cpu import gemm, gemm_b_source

space = gemm_b_source.space
config_space = gemm_b_source.config_space
default_config = gemm_b_source.default_config


def schedule(w, config, target) -> S.Module:
    Bt, M, N, K, dt = w["batch"], w["M"], w["N"], w["K"], w.dtype
    A = S.Buffer("in_A", dt, (Bt, M, K))
    B = S.Buffer("in_B", dt, (Bt, K, N))
    C = S.Buffer("out_C", dt, (Bt, M, N))
    ops = gemm.GemmOperands(
        M=M, N=N, K=K, batch=Bt,
        a=lambda bt, i, k: E.cast("float32", A[bt, i, k]),
        **gemm_b_source.b_operands(config, B, lambda bt, k, j: E.cast("float32", B[bt, k, j]),
                                   lambda bt, k: (bt * K + k) * N),
        c=C,
        c_index=lambda bt, i, j: (bt * M + i) * N + j,
    )
    func = S.PrimFunc("batch_matmul_cpu", (A, B, C), gemm.build_gemm(ops, config, target))
    return S.Module("batch_matmul", (func,), (A, B, C), (), 2)
