"""A/B of the CPU GEMM's float16 conversions: B's panel rows and the finished block converted element by element in
`omp simd` loops (before 2026-11-30: GCC 12 leaves a loop of _Float16 casts scalar) against a vector at a time
(now), kernels of each built in one process and timed in interleaved rounds (benchmarks/cpu_ab.py).

    ISA=sse PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-bf16/ab_gemm_half.py \
        "batch_matmul:batch=8,M=256,N=256,K=256,dtype=float16"

Prints, per case, the time before / now: median [min, max] of 5 rounds (> 1: faster now).
"""
import contextlib
from unittest.mock import patch

from benchmarks.cpu_ab import before_now_main
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.schedules.cpu import gemm, gemm_pack


def pack_b_row_before(b, ops, plan, Bp, base, bt, k, jp) -> None:
    full = E.IntImm(1, "bool") if ops.N % plan.nr == 0 else jp * plan.nr + plan.nr <= ops.N
    with b.if_else(full) as otherwise:
        with b.loop("j", plan.nr, S.ForKind.VECTORIZED) as j:
            b.store(Bp, base + j, ops.b(bt, k, jp * plan.nr + j))
        otherwise()
        gemm_pack._pack_b_row_past_n(b, ops, plan, Bp, base, bt, k, jp)


def round_block_before(b, ops, plan, Ct, bt, i0, mlen, j0, nlen) -> None:
    with b.loop("ci", mlen) as i, b.loop("cj", nlen, S.ForKind.VECTORIZED) as j:
        b.store(ops.c, ops.c_index(bt, i0 + i, j0 + j), E.cast(ops.c.dtype, Ct[i * plan.nc + j]))


def patched() -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    stack.enter_context(patch.object(gemm_pack, "pack_b_row", pack_b_row_before))
    stack.enter_context(patch.object(gemm, "round_block", round_block_before))
    return stack


def main() -> None:
    before_now_main(patched)

if __name__ == "__main__":
    main()
