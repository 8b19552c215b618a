"""The CPU GEMM's write-back: a microkernel's accumulators into C (or into the float32 block of a C that is not
float32), whole vectors where the tile lies inside M x N and element by element at the edges, and the finished
float32 block rounded into C's dtype. Shared by the FMA and bfloat16-pair microkernels (gemm, gemm_bf16_dot)."""
from __future__ import annotations

from collections.abc import Callable

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu.converted_copy import copy_converted

LOCAL = S.Scope.LOCAL


def write_tile(b: IRBuilder, ops, plan, Ct: S.Buffer | None, blk, acc, row0, col0) -> None:
    """C tile (+)= acc: '=' in the first kc block, '+=' after it; into the float32 block Ct where C is not float32."""
    first = blk.pc.eq(0)
    if Ct is not None:  # the padded float32 block: always a full tile
        ct_i0 = blk.i0 if blk.ct_i0 is None else blk.ct_i0
        _store_vectors(b, plan, Ct, lambda i, j: (row0 - ct_i0 + i) * plan.nc + col0 - blk.j0 + j, acc,
                       first)
        return
    index = lambda i, j: ops.c_index(blk.bt, row0 + i, col0 + j)  # noqa: E731
    full = E.IntImm(1, "bool")  # tiles start tile-aligned, so only a ragged M or N has partial tiles
    if ops.M % plan.mr:
        full = row0 + plan.mr <= ops.M
    if ops.N % plan.nr:
        full = (col0 + plan.nr <= ops.N) if ops.M % plan.mr == 0 else full & (col0 + plan.nr <= ops.N)
    with b.if_else(full) as otherwise:
        _store_vectors(b, plan, ops.c, index, acc, first)
        otherwise()
        _store_edge(b, ops, plan, index, acc, first, row0, col0)


def _store_vectors(b: IRBuilder, plan, buf: S.Buffer, index: Callable, acc, first) -> None:
    with b.if_else(first) as otherwise:
        for i in range(plan.mr):
            for v in range(plan.nv):
                b.store(buf, index(i, v * plan.lanes), acc[i * plan.nv + v], lanes=plan.lanes)
        otherwise()
        for i in range(plan.mr):
            for v in range(plan.nv):
                idx = index(i, v * plan.lanes)
                b.store(buf, idx, E.Load(buf, (idx,), plan.lanes) + acc[i * plan.nv + v], lanes=plan.lanes)


def _store_edge(b: IRBuilder, ops, plan, index: Callable, acc, first, row0, col0) -> None:
    """Spill the tile to a local array, then write the elements inside M x N one by one."""
    with b.allocate("edge", "float32", (plan.mr * plan.nr,), LOCAL) as edge:
        for i in range(plan.mr):
            for v in range(plan.nv):
                b.store(edge, i * plan.nr + v * plan.lanes, acc[i * plan.nv + v], lanes=plan.lanes)
        with b.loop("ei", plan.mr) as ei, b.loop("ej", plan.nr) as ej:
            with b.if_((row0 + ei < ops.M) & (col0 + ej < ops.N)):
                idx = index(ei, ej)
                value = edge[ei * plan.nr + ej]
                b.store(ops.c, idx, E.select(first, value, ops.c[idx] + value))


def round_block(b: IRBuilder, ops, plan, Ct: S.Buffer, bt, i0, mlen, j0, nlen) -> None:
    """The finished float32 block goes to C in C's dtype. float16 a vector at a time (GCC leaves a loop of its
    casts scalar), the row's last nlen % lanes one by one; other types by a loop GCC vectorizes (bfloat16 by
    whole-vector narrowing ran bfloat16 batch_matmul 5x slower on Zen 5, its stall not pinned down, 2026-11-30)."""
    if ops.c.dtype != "float16":
        with b.loop("ci", mlen) as i, b.loop("cj", nlen, S.ForKind.VECTORIZED) as j:
            b.store(ops.c, ops.c_index(bt, i0 + i, j0 + j), E.cast(ops.c.dtype, Ct[i * plan.nc + j]))
        return
    with b.loop("ci", mlen) as i:
        copy_converted(b, ops.c, lambda j: (ops.c_index(bt, i0 + i, j0 + j),), Ct, lambda j: (i * plan.nc + j,),
                       nlen, plan.lanes)
