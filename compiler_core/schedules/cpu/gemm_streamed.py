"""The CPU GEMM with B streamed row by row (`b_source` 'streamed'): for few rows of A, where each element of B is used
by few multiply-adds, the kernel is a walk over B's memory, and this walks it in order.

The panel microkernel reads B in nr-column strips down each kc block: with B read in place, every step of a strip is
a new row, kilobytes away, and the hardware prefetchers (which follow one page) leave most of those reads to miss.
Here each step takes `mr` whole rows of B, nr columns at a time from left to right (mr * nr/lanes vectors held in
registers, the same count as the microkernel's accumulators, so the GEMM's register constraint holds unchanged), and
applies them to every row of A's block: C's block, mc x nc float32, is loaded, added to and stored per step, and stays
in L1 or L2 while B streams past once. So the `mr` knob counts B rows per step, `nr` the columns per step, `mc`, `nc`
and `kc` block C and the reduction as in the panel path, and `pack_a` and `order` have no meaning here (the space
fixes them). Columns past the last whole nr strip of a block are done element by element, so any N is exact.
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu.gemm_blocks import column_blocks, row_blocks
from compiler_core.schedules.cpu.gemm_store import round_block

LOCAL = S.Scope.LOCAL


def compute_rect(b: IRBuilder, ops, plan, Ct: S.Buffer | None, bt, m_lo, m_len, n_lo, n_len) -> None:
    """C[bt, m_lo : m_lo+m_len, n_lo : n_lo+n_len] (+ Ct, the float32 block of a C that is not float32)."""
    with column_blocks(b, plan, n_lo, n_len) as (j0, nlen), row_blocks(b, plan, m_lo, m_len) as (i0, mlen):
        blk = _CBlock(ops, plan, Ct, bt, i0, mlen, j0, nlen)
        with b.loop("zi", mlen) as i, b.loop("zj", nlen, S.ForKind.VECTORIZED) as j:
            b.store(blk.buf, blk.index(i, j), E.FloatImm(0.0))
        with b.loop("pc", ops.K // plan.kc) as pc:
            _steps(b, blk, pc * plan.kc, plan.kc)
        if ops.K % plan.kc:
            _steps(b, blk, ops.K // plan.kc * plan.kc, ops.K % plan.kc)
        if Ct is not None:
            round_block(b, ops, plan, Ct, bt, i0, mlen, j0, nlen)


class _CBlock:
    """One mc x nc block of C: where its elements live (C itself, or the float32 block Ct) and what feeds it."""

    def __init__(self, ops, plan, Ct, bt, i0, mlen, j0, nlen):
        self.ops, self.plan, self.Ct, self.bt = ops, plan, Ct, bt
        self.i0, self.mlen, self.j0, self.nlen = i0, mlen, j0, nlen
        self.buf = Ct if Ct is not None else ops.c

    def index(self, i, j) -> E.Expr:
        """Row i, column j of the block (from its corner)."""
        if self.Ct is not None:
            return i * self.plan.nc + j
        return self.ops.c_index(self.bt, self.i0 + i, self.j0 + j)

    def b_load(self, k, j, lanes: int) -> E.Expr:
        """B[k, j0 + j .. + lanes], widened to float32."""
        return self.ops.load_b(self.bt, k, (self.j0, j), lanes)


def _steps(b: IRBuilder, blk: _CBlock, k0, klen: int) -> None:
    """Rows k0 .. k0+klen of B (klen a constant): steps of mr rows, then one step of the rows left."""
    mr = blk.plan.mr
    with b.loop("s", klen // mr) as s:
        _step(b, blk, k0 + s * mr, mr)
    if klen % mr:
        _step(b, blk, k0 + klen // mr * mr, klen % mr)


def _step(b: IRBuilder, blk: _CBlock, k, rows: int) -> None:
    """C's block += A[:, k : k+rows] @ B[k : k+rows, :]: whole nr strips from registers, then the ragged columns."""
    plan, ops = blk.plan, blk.ops
    lanes, nv, nr = plan.lanes, plan.nv, plan.nr
    vec = f"float32x{lanes}"

    def a_values(i) -> list:
        return [E.Broadcast(ops.a(blk.bt, blk.i0 + i, k + u), lanes) for u in range(rows)]

    with b.loop("jr", blk.nlen // nr) as jr:
        with b.allocate("bv", vec, (rows * nv,), LOCAL) as bv:
            for u in range(rows):
                for v in range(nv):
                    b.store(bv, u * nv + v, blk.b_load(k + u, jr * nr + v * lanes, lanes))
            with b.loop("i", blk.mlen) as i:
                a = a_values(i)
                for v in range(nv):
                    idx = blk.index(i, jr * nr + v * lanes)
                    total = E.Load(blk.buf, (idx,), lanes)
                    for u in range(rows):
                        total = total + a[u] * bv[u * nv + v]
                    b.store(blk.buf, idx, total, lanes=lanes)
    with b.loop("jt", blk.nlen % nr) as jt:
        j = blk.nlen // nr * nr + jt
        with b.loop("i", blk.mlen) as i:
            idx = blk.index(i, j)
            total = blk.buf[idx]
            for u in range(rows):
                total = total + ops.a(blk.bt, blk.i0 + i, k + u) * blk.b_load(k + u, j, 1)
            b.store(blk.buf, idx, total)

