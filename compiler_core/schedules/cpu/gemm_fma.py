"""The CPU GEMM's float32 FMA microkernel: an mr x nr tile of C as mr * nv vector accumulators, each K step loading nv
vectors of B and broadcasting mr elements of A (packed, or read in place), then written into C (gemm_store); the
last column tile, where N leaves it a few vectors wide, as a kernel of just those vectors. Its siblings for other
dot products: gemm_bf16_dot (bfloat16 pairs) and gemm_amx (AMX tiles)."""
from __future__ import annotations

from dataclasses import replace

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu import gemm_pack
from compiler_core.schedules.cpu.gemm_store import write_tile

LOCAL = S.Scope.LOCAL


def tail_vectors(ops, plan) -> int:
    """Vectors of B the last column tile needs where N is not a multiple of nr and that tile needs fewer than nv
    (0: every tile takes nv). Tiles start at multiples of nr, so only the tile through column N - 1 is narrow."""
    rest = ops.N % plan.nr
    used = -(-rest // plan.lanes)
    return used if rest and used < plan.nv else 0


def microkernel(b: IRBuilder, ops, plan, bufs, blk, ir, jr) -> None:
    """The mr x nr tile at (ir, jr); the last column tile, where N leaves it a few vectors wide, as a kernel of just
    those vectors (`tail_vectors`): at 7x7 images the folded conv2d's last panel holds 5 of 64 columns, and a full
    kernel there spent a tenth of the layer's multiplies on columns never stored."""
    tail = tail_vectors(ops, plan)
    if not tail:
        _tile(b, ops, plan, bufs, blk, ir, jr, plan.nv)
        return
    with b.if_else(blk.j0 + (jr + 1) * plan.nr <= ops.N) as otherwise:
        _tile(b, ops, plan, bufs, blk, ir, jr, plan.nv)
        otherwise()
        _tile(b, ops, plan, bufs, blk, ir, jr, tail)


def _tile(b: IRBuilder, ops, plan, bufs, blk, ir, jr, nv: int) -> None:
    """The microkernel over the first nv vectors of the tile's nr columns (B's panels stay nr wide)."""
    lanes, mr, nr = plan.lanes, plan.mr, plan.nr
    vec = f"float32x{lanes}"
    row0 = blk.i0 + ir * mr
    if plan.b_blocks:  # the thread's block: panels of klen x nr from the block's first column
        b_base = jr * blk.klen * nr
    else:
        b_base = gemm_pack.b_offset(ops, plan, blk.pc, blk.klen, blk.j0 // nr + jr, 0)
    k0 = blk.pc * plan.kc

    def a_value(i: int, p) -> E.Expr:
        if bufs.Ap is not None:
            return bufs.Ap[(ir * plan.kc + p) * mr + i]
        row = row0 + i if ops.M % mr == 0 else E.min_(row0 + i, ops.M - 1)  # rows past M: computed, never stored
        return ops.a(blk.bt, row, k0 + p)

    with b.allocate("acc", vec, (mr * nv,), LOCAL) as acc, b.allocate("bv", vec, (nv,), LOCAL) as bv:
        for k in range(mr * nv):
            b.store(acc, k, E.Broadcast(E.FloatImm(0.0), lanes))

        def b_vector(p, v: int) -> E.Expr:
            if bufs.Bp is None:
                return ops.load_b(blk.bt, k0 + p, (blk.j0, jr * nr, v * lanes), lanes)
            return E.Load(bufs.Bp, (b_base + p * nr + v * lanes,), lanes)

        def step(p) -> None:
            for v in range(nv):
                b.store(bv, v, b_vector(p, v))
            for i in range(mr):
                a = E.Broadcast(a_value(i, p), lanes)
                for v in range(nv):
                    b.store(acc, i * nv + v, acc[i * nv + v] + a * bv[v])

        with b.loop("p", blk.klen) as p:
            step(p)
        narrow = plan if nv == plan.nv else replace(plan, nr=nv * lanes)  # what the write-back sees
        write_tile(b, ops, narrow, bufs.Ct, blk, acc, row0, blk.j0 + jr * nr)
