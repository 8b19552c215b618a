"""The second kernel of a split-K GEMM: sums each split's float32 partials into the output (SIMT and Hopper GEMMs)."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder

REDUCE_THREADS = 256


def split_k_sum(name: str, ws: S.Buffer, out: S.Buffer, size: int, split: int) -> S.PrimFunc:
    """out[e] = sum over splits of ws[s*size + e] for e < size, in float32, narrowed as stored where `out` is a
    half type: the partials already have the output's layout."""
    ib = IRBuilder()
    with ib.loop("bx", E.ceil_div(size, REDUCE_THREADS), S.ForKind.BLOCK_X) as bx, \
            ib.loop("tid", REDUCE_THREADS, S.ForKind.THREAD_X) as tid:
        e = bx * REDUCE_THREADS + tid
        with ib.if_(e < size):
            total = ws[e]
            for s in range(1, split):
                total = total + ws[s * size + e]
            ib.store(out, e, total)
    return S.PrimFunc(f"{name}_splitk_sum", (ws, out), ib.get())
