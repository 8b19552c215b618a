"""The CPU GEMM's bfloat16 pair dot product: where the ISA has AVX-512 BF16, A and B stay bfloat16, packed as pairs
of consecutive K steps, and each microkernel instruction (vdpbf16ps) multiplies and adds two K steps of 16 columns
into float32 accumulators: 32 multiply-adds where an FMA does 16, from panels half the bytes.

Packed layouts (one kc block; a pair's second half is zero past the block's last K step, so an odd K is exact):

    B panel jp:  Bp[kb][jp][p2][j][t] = B[kb*kc + 2*p2 + t][jp*nr + j]     (zero past column N)
    A panel ir:  Ap[ir][p2][i][t]     = A[i0 + ir*mr + i][k0 + 2*p2 + t]    (zero past row M)

The microkernel broadcasts one A pair (32 bits) per row and reads nr/16 B vectors of 32 bfloat16 per pair step.
Products of two bfloat16 are exact in float32 and the instruction adds them in order with round-to-nearest, as two
FMAs would; unlike them it flushes subnormal inputs and results to zero (Intel's definition of VDPBF16PS).
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu import gemm_amx as amx
from compiler_core.schedules.cpu.converted_copy import half_source
from compiler_core.schedules.cpu.gemm_blocks import block_len, cdiv
from compiler_core.schedules.cpu.gemm_store import write_tile
from compiler_core.space import Constraint, Knob, Space

DOTS = ("fma", "bf16")  # the knob `dot`: float32 FMAs on converted panels, or bfloat16 pair dot products ...
AMX_DOTS = DOTS + ("amx",)  # ... or, where the target has AMX, tile dot products (gemm_amx) on the same B pairs
PAIR_LANES = 32  # bfloat16 values in one 512-bit B vector: 16 columns x 2 K steps
ZERO = E.FloatImm(0.0, "bfloat16")


def offered(dtype: str, target) -> bool:
    """Whether a GEMM of `dtype` operands on `target` gets the `dot` knob."""
    return dtype == "bfloat16" and target.bf16_dot


def with_knob(space: Space, dtype: str, target, packs: str | None, tiles: tuple[str, ...] = ()) -> Space:
    """`space` and, where `offered`, the knob `dot` with its constraints. The pairs read A from its packed pairs, and B
    packed as pairs or read in place as pairs: `packs` is the template's `b_source` that packs B (the one a space
    without that knob has), the only one the pairs take; None where every `b_source` gives pairs (conv2d). AMX's
    tiles (where `amx.offered`) read A from packed panels and B from packed pairs only: `tiles` are the `b_source`s
    that pack B as pairs, the first the one a space without that knob has (`packs` alone when empty)."""
    if not offered(dtype, target):
        return space
    constraints = [Constraint("dot 'bf16' and 'amx' read A from packed panels: they need pack_a = 1",
                              lambda c: c["dot"] == "fma" or c["pack_a"] == 1)]
    if packs is not None:
        constraints.append(Constraint(f"dot 'bf16' packs B into pairs of K steps: it needs b_source '{packs}'",
                                      lambda c: c["dot"] != "bf16" or c.get("b_source", packs) == packs))
    dots = DOTS
    if amx.offered(dtype, target):
        dots, tiled = AMX_DOTS, tiles or (packs,)
        constraints.append(Constraint(f"dot 'amx' reads B packed as pairs: it needs b_source in {tiled}",
                                      lambda c: c["dot"] != "amx" or c.get("b_source", tiled[0]) in tiled))
        constraints += amx.constraints()
    return space.with_knob(
        Knob("dot", dots, "multiply-adds: float32 FMAs on converted panels, bfloat16 pair dot products "
                          "(AVX-512 BF16) on bfloat16 panels, or AMX tile dot products where the CPU has them"),
        *constraints)


PAIRS = {"dot": "bf16", "pack_a": 1}  # pair dot products, A read from its packed pairs (conv2d's default too)
# The GEMMs' default on a target with AVX-512 BF16 but not AMX's tiles (AMX targets take gemm_amx.DEFAULT): pair dot
# products, A's and B's panels packed. Pairs / FMAs ran 1.6-2.0x on a Zen 5 and 1.56-1.97x on 8 of 10 shapes on a
# Zen 4 (two ties), but 0.60-0.72x on a Sapphire Rapids Xeon (benchmarks/results/2026-11-30-cpu-bf16-dot/,
# 2026-12-01-cpu-bf16-pairs/). Such a Xeon is in this class only where Linux does not grant it AMX's tiles (a kernel
# before 5.16): the hosts of the class are otherwise AMD's Zen 4 and 5 (and Cooper Lake).
PAIRS_DEFAULT = {**PAIRS, "b_source": "packed"}


def with_default(config: dict, dtype: str, target) -> dict:
    """`config` with `dot` where `offered`: FMAs, for the defaults that keep them (the streamed rows, whose B is not
    packed; an AMX target's layers off the tiles, where the pairs lost on a Xeon; conv2d's FMA path)."""
    return dict(config, dot="fma") if offered(dtype, target) else config


def pair_depth(kc: int) -> int:
    """K steps a packed kc block holds: kc rounded up to whole pairs."""
    return kc + kc % 2


def _pairs(klen) -> E.Expr:
    return cdiv(klen, 2)


def _block_depth(plan) -> int:
    """K steps of a packed kc block of B: whole pairs, or whole tiles for AMX."""
    return amx.depth(plan.kc) if plan.amx else pair_depth(plan.kc)


def _block_pairs(plan, klen) -> E.Expr:
    """Pair rows of a packed block of klen K steps."""
    return amx.pair_rows(klen) if plan.amx else _pairs(klen)


def _padded(ops, plan) -> bool:
    """Whether a packed block's pair rows may reach past its K steps, and so are tested: the last pair of an odd K
    is half zero, and AMX's blocks are padded to whole tiles."""
    return bool(ops.K % 2 or plan.amx)


def b_shape(ops, plan) -> tuple:
    n_panels, k_blocks = -(-ops.N // plan.nr), -(-ops.K // plan.kc)
    return (k_blocks * _block_depth(plan) * n_panels * plan.nr,)


def b_offset(ops, plan, kb, klen, jp, p2) -> E.Expr:
    """Where pair row p2 of panel jp of kc block kb starts in Bp."""
    n_panels = -(-ops.N // plan.nr)
    return kb * (_block_depth(plan) * n_panels * plan.nr) + (jp * _block_pairs(plan, klen) + p2) * (2 * plan.nr)


def a_shape(plan) -> tuple:
    return (plan.mc * pair_depth(plan.kc),)


def bf16_operand(value: E.Expr) -> E.Expr:
    """The bfloat16 load under an operand's float32 cast (or `cond ? that : 0`, an operand zero outside its
    tensor)."""
    if isinstance(value, E.Select) and isinstance(value.false_value, E.FloatImm) and value.false_value.value == 0:
        return E.select(value.cond, bf16_operand(value.true_value), ZERO)
    source = half_source(value)
    if source is None or source.dtype != "bfloat16":
        raise ValueError("dot 'bf16' needs bfloat16 operands read element by element")
    return source


def pack_b_panel(b: IRBuilder, ops, plan, Bp: S.Buffer, bt, jp) -> None:
    """Panel jp of B, every kc block, as pairs of K steps; whole panels of even K copy without a test."""
    if ops.b_row is not None:
        _pack_b_panel_by_rows(b, ops, plan, Bp, bt, jp)
        return
    k_blocks = -(-ops.K // plan.kc)
    with b.loop("kb", k_blocks) as kb:
        klen = block_len(ops.K, plan.kc, kb)
        pack_pair_rows(b, ops, plan, Bp, lambda p2: b_offset(ops, plan, kb, klen, jp, p2), bt, kb, klen, jp)


def pack_pair_rows(b: IRBuilder, ops, plan, dst: S.Buffer, base, bt, kb, klen, jp) -> None:
    """The pair rows of panel jp in kc block kb (klen K steps) from `ops.b`, pair row p2 at dst[base(p2)]: zero past
    column N and past klen (AMX pads whole tiles)."""
    with b.loop("kp", _block_pairs(plan, klen)) as p2:
        _pair_row(b, ops, plan, dst, base(p2), bt, kb, klen, jp, p2)


def pack_block_pair_rows(b: IRBuilder, ops, plan, dst: S.Buffer, base, bt, kb, klen, jp0, panels) -> None:
    """As `pack_pair_rows` for `panels` panels from jp0 (a thread's kc x nc block), pair row by pair row across the
    panels (pair row p2 of panel jp0 + jl at dst[base(jl, p2)]): B's two rows of each pair are read once, along
    their length, not a panel's width at a time down all of K (B's row pitch apart, a page or more each step)."""
    with b.loop("kp", _block_pairs(plan, klen)) as p2:
        with b.loop("jl", panels) as jl:
            _pair_row(b, ops, plan, dst, base(jl, p2), bt, kb, klen, jp0 + jl, p2)


def _pair_row(b: IRBuilder, ops, plan, dst: S.Buffer, start, bt, kb, klen, jp, p2) -> None:
    """Pair row p2 of panel jp in kc block kb at dst[start]: K steps 2 p2 and 2 p2 + 1 interleaved, column by column."""
    whole_cols = ops.N % plan.nr == 0
    with b.loop("j", plan.nr, S.ForKind.VECTORIZED) as j:
        col = jp * plan.nr + j
        col_in = E.IntImm(1, "bool") if whole_cols else col < ops.N
        read_col = col if whole_cols else E.min_(col, ops.N - 1)
        for t in (0, 1):
            k = kb * plan.kc + 2 * p2 + t
            if _padded(ops, plan):
                inside = (2 * p2 + t < klen) if whole_cols else (2 * p2 + t < klen) & col_in
                k = E.min_(k, ops.K - 1)
            else:
                inside = col_in
            b.store(dst, start + 2 * j + t, E.select(inside, bf16_operand(ops.b(bt, k, read_col)), ZERO))


def _pack_b_panel_by_rows(b: IRBuilder, ops, plan, Bp: S.Buffer, bt, jp) -> None:
    """Panel jp from `ops.b_row` (conv2d's im2col): each pair's two rows packed into a bfloat16 staging row by the
    operand's own row packer, then interleaved."""
    nr = plan.nr
    with b.allocate("pair_rows", "bfloat16", (2 * nr,), S.Scope.LOCAL) as rows:
        with b.loop("kb", -(-ops.K // plan.kc)) as kb:
            klen = block_len(ops.K, plan.kc, kb)
            with b.loop("kp", _block_pairs(plan, klen)) as p2:
                with b.loop("kt", 2) as t:  # a loop, not two copies: the row packer's names are declared once
                    k = kb * plan.kc + 2 * p2 + t
                    if _padded(ops, plan):
                        with b.if_else(2 * p2 + t < klen) as otherwise:
                            ops.b_row(b, rows, t * nr, bt, k, jp * nr, nr)
                            otherwise()
                            with b.loop("jz", nr) as j:
                                b.store(rows, t * nr + j, ZERO)
                    else:
                        ops.b_row(b, rows, t * nr, bt, k, jp * nr, nr)
                base = b_offset(ops, plan, kb, klen, jp, p2)
                with b.loop("j", nr, S.ForKind.VECTORIZED) as j:
                    for t in (0, 1):
                        b.store(Bp, base + 2 * j + t, rows[t * nr + j])


def pack_a_block(b: IRBuilder, ops, plan, Ap: S.Buffer, bt, i0, mlen, k0, klen) -> None:
    """Rows i0..i0+mlen of A, K steps k0..k0+klen, as pairs: Ap[ir][p2][i][t], zero past row M and past klen."""
    half = pair_depth(plan.kc) // 2
    with b.loop("pir", cdiv(mlen, plan.mr)) as ir:
        with b.loop("pi", plan.mr, S.ForKind.UNROLLED) as i:
            row = i0 + ir * plan.mr + i
            with b.loop("pk", _pairs(klen)) as p2:
                at = lambda t: ((ir * half + p2) * plan.mr + i) * 2 + t  # noqa: E731
                with b.if_else(row < ops.M) as otherwise:
                    for t in (0, 1):
                        k = 2 * p2 + t
                        if ops.K % 2 == 0:
                            b.store(Ap, at(t), bf16_operand(ops.a(bt, row, k0 + k)))
                        else:
                            value = bf16_operand(ops.a(bt, row, k0 + E.min_(k, klen - 1)))
                            b.store(Ap, at(t), E.select(k < klen, value, ZERO))
                    otherwise()
                    for t in (0, 1):
                        b.store(Ap, at(t), ZERO)


def microkernel(b: IRBuilder, ops, plan, bufs, blk, ir, jr) -> None:
    """acc[mr x nr] = A panel ir . B panel jr over the block's pairs, then into C (gemm_store.write_tile)."""
    Ap, Bp = bufs.Ap, bufs.Bp
    lanes, nv, mr, nr = plan.lanes, plan.nv, plan.mr, plan.nr
    half = pair_depth(plan.kc) // 2

    def b_vector(p2, v: int) -> E.Expr:
        if Bp is None:  # pair rows read in place (GemmOperands.b_pairs): kc and K are even, so blocks hold whole pairs
            src, row_start = ops.b_direct
            return E.Load(src, (row_start(blk.bt, blk.pc * (plan.kc // 2) + p2) + (blk.j0 + jr * nr) * 2
                                + v * PAIR_LANES,), PAIR_LANES)
        b_base = b_offset(ops, plan, blk.pc, blk.klen, blk.j0 // nr + jr, 0)
        return E.Load(Bp, (b_base + p2 * (2 * nr) + v * PAIR_LANES,), PAIR_LANES)

    with b.allocate("acc", f"float32x{lanes}", (mr * nv,), S.Scope.LOCAL) as acc, \
            b.allocate("bv", f"bfloat16x{PAIR_LANES}", (nv,), S.Scope.LOCAL) as bv:
        for k in range(mr * nv):
            b.store(acc, k, E.Broadcast(E.FloatImm(0.0), lanes))
        with b.loop("p2", _pairs(blk.klen)) as p2:
            for v in range(nv):
                b.store(bv, v, b_vector(p2, v))
            for i in range(mr):
                pair = E.Load(Ap, (((ir * half + p2) * mr + i) * 2,), 2)
                for v in range(nv):
                    acc_v = acc[i * nv + v]
                    b.store(acc, i * nv + v, E.call("bf16_dot", acc_v, pair, bv[v], dtype=f"float32x{lanes}"))
        write_tile(b, ops, plan, bufs.Ct, blk, acc, blk.i0 + ir * mr, blk.j0 + jr * nr)
