"""CUDA template for matmul and batch_matmul: float32 on the SIMT GEMM, the half types on tensor cores (WMMA)."""
from __future__ import annotations

from compiler_core.ir import stmt as S
from compiler_core.ir.expr import HALF_TYPES
from compiler_core.schedules.cuda import gemm_simt, gemm_simt_default


def _wmma():
    from compiler_core.schedules.cuda import gemm_wmma  # imported when used: the half path is its own module

    return gemm_wmma


def problem(w) -> gemm_simt.Gemm:
    """C[b] = A[b] @ B[b], all row-major: A is contiguous along k, B and C along n."""
    batch = w["batch"] if w.op == "batch_matmul" else 1
    M, N, K = w["M"], w["N"], w["K"]
    lead = (batch,) if w.op == "batch_matmul" else ()
    A = S.Buffer("in_A", "float32", (*lead, M, K))
    B = S.Buffer("in_B", "float32", (*lead, K, N))
    C = S.Buffer("out_C", "float32", (*lead, M, N))
    a = gemm_simt.Operand(A, lambda b, m, k: (b * M + m) * K + k, "k", K % gemm_simt.LANES == 0)
    bop = gemm_simt.Operand(B, lambda b, k, n: (b * K + k) * N + n, "mn", N % gemm_simt.LANES == 0)
    out = gemm_simt.Output(C, lambda b, m, n: (b * M + m) * N + n, batch * M * N, N % gemm_simt.LANES == 0)
    return gemm_simt.Gemm(w.op, batch, M, N, K, a, bop, out, (A, B))


def space(w, target):
    if w.dtype in HALF_TYPES:
        return _wmma().space(w, target)
    return gemm_simt.space(problem(w), target)


def schedule(w, config, target) -> S.Module:
    if w.dtype in HALF_TYPES:
        return _wmma().schedule(w, config, target)
    return gemm_simt.schedule(problem(w), config, target)


def default_config(w, target) -> dict:
    if w.dtype in HALF_TYPES:
        return _wmma().default_config(w, target)
    return gemm_simt_default.default_config(problem(w), target)
