"""CPU template for batch_matmul: the shared GEMM (see `gemm`) per problem, threads over the batch or inside."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.schedules.cpu import gemm
from compiler_core.space import Space


def space(w, target, b_source_knob: bool = True) -> Space:
    base = gemm.space(target, batch=w["batch"])
    return gemm.with_b_source(base, w.dtype, w["N"]) if b_source_knob else base


def config_space(w, target, config) -> Space:
    """A config without `b_source` was stored before the knob: B packed, in the space it came from."""
    return space(w, target, b_source_knob=not isinstance(config, dict) or "b_source" in config)


def default_config(w, target) -> dict:
    config = gemm.default_config(target, w["M"], w["N"], batch=w["batch"])
    return dict(config, b_source=gemm.default_b_source(config, target, w.dtype, w["K"], w["N"]))


def schedule(w, config, target) -> S.Module:
    Bt, M, N, K, dt = w["batch"], w["M"], w["N"], w["K"], w.dtype
    A = S.Buffer("in_A", dt, (Bt, M, K))
    B = S.Buffer("in_B", dt, (Bt, K, N))
    C = S.Buffer("out_C", dt, (Bt, M, N))
    ops = gemm.GemmOperands(
        M=M, N=N, K=K, batch=Bt,
        a=lambda bt, i, k: E.cast("float32", A[bt, i, k]),
        b=None if config.get("b_source") == "in_place" else lambda bt, k, j: E.cast("float32", B[bt, k, j]),
        c=C,
        c_index=lambda bt, i, j: (bt * M + i) * N + j,
        b_direct=(B, lambda bt, k: (bt * K + k) * N) if config.get("b_source") == "in_place" else None,
    )
    func = S.PrimFunc("batch_matmul_cpu", (A, B, C), gemm.build_gemm(ops, config, target))
    return S.Module("batch_matmul", (func,), (A, B, C), (), 2)
