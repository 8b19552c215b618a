"""The CPU GEMM's packed layouts and packers: B's kc x nr panels (once per call) and A's mr x kc panels, filled from
the operands (GemmOperands: B element by element or by `b_row`, a half type converted while packing), zero past M
and N; the bfloat16 pair layouts are gemm_bf16_dot's."""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu import gemm_bf16_dot as bf16_dot
from compiler_core.schedules.cpu.converted_copy import copy_converted, half_source
from compiler_core.schedules.cpu.gemm_blocks import block_len, cdiv


def panels(ops, plan) -> tuple[int, int]:
    """(B panels along N, kc blocks along K)."""
    return -(-ops.N // plan.nr), -(-ops.K // plan.kc)


def b_shape(ops, plan) -> tuple:
    n_panels, _ = panels(ops, plan)
    return (ops.K * n_panels * plan.nr,)


def b_offset(ops, plan, kb, klen, jp, p) -> E.Expr:
    """Where row p of panel jp of kc block kb starts in Bp: blocks of K, then panels of klen x nr."""
    n_panels, _ = panels(ops, plan)
    return kb * (plan.kc * n_panels * plan.nr) + (jp * klen + p) * plan.nr


def pack_b_panel(b: IRBuilder, ops, plan, Bp: S.Buffer, bt, jp) -> None:
    """Panel jp of B, every kc block: Bp[kb][jp][p][0:nr], zero past column N."""
    if plan.pairs:
        bf16_dot.pack_b_panel(b, ops, plan, Bp, bt, jp)
        return
    _, k_blocks = panels(ops, plan)
    with b.loop("kb", k_blocks) as kb:
        klen = block_len(ops.K, plan.kc, kb)
        with b.loop("p", klen) as p:
            k = kb * plan.kc + p
            base = b_offset(ops, plan, kb, klen, jp, p)
            if ops.b_row is not None:
                ops.b_row(b, Bp, base, bt, k, jp * plan.nr, plan.nr)
            else:
                pack_b_row(b, ops, plan, Bp, base, bt, k, jp)


def pack_b_row(b: IRBuilder, ops, plan, Bp: S.Buffer, base, bt, k, jp) -> None:
    """Row k of panel jp from `ops.b`, element by element: vectorized where the panel is whole."""
    full = E.IntImm(1, "bool") if ops.N % plan.nr == 0 else jp * plan.nr + plan.nr <= ops.N
    with b.if_else(full) as otherwise:
        source = half_source(ops.b(bt, k, jp * plan.nr))
        if source is not None:  # a half-typed row: its columns are contiguous, the last index
            *outer, col = source.indices
            copy_converted(b, Bp, lambda j: (base + j,), source.buffer, lambda j: (*outer, col + j), plan.nr,
                           plan.lanes, ("jv", "jt"))
        else:
            with b.loop("j", plan.nr, S.ForKind.VECTORIZED) as j:
                b.store(Bp, base + j, ops.b(bt, k, jp * plan.nr + j))
        otherwise()
        _pack_b_row_past_n(b, ops, plan, Bp, base, bt, k, jp)


def _pack_b_row_past_n(b: IRBuilder, ops, plan, Bp: S.Buffer, base, bt, k, jp) -> None:
    """Row k of a panel that reaches past column N: element by element, zero past N."""
    with b.loop("j", plan.nr) as j:
        col = jp * plan.nr + j
        b.store(Bp, base + j, E.select(col < ops.N, ops.b(bt, k, E.min_(col, ops.N - 1)), 0.0))


def pack_a_block(b: IRBuilder, ops, plan, Ap: S.Buffer, bt, i0, mlen, k0, klen) -> None:
    """Rows i0..i0+mlen of A, reduction k0..k0+klen: Ap[ir][p][0:mr], zero past row M."""
    with b.loop("pir", cdiv(mlen, plan.mr)) as ir:
        with b.loop("pi", plan.mr, S.ForKind.UNROLLED) as i:
            row = i0 + ir * plan.mr + i
            with b.if_else(row < ops.M) as otherwise:
                with b.loop("pk", klen) as p:
                    b.store(Ap, (ir * plan.kc + p) * plan.mr + i, ops.a(bt, row, k0 + p))
                otherwise()
                with b.loop("pk", klen) as p:
                    b.store(Ap, (ir * plan.kc + p) * plan.mr + i, E.FloatImm(0.0))
