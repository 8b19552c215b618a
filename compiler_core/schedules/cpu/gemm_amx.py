"""The CPU GEMM on AMX tiles (`dot` 'amx'): where the target has AMX, bfloat16 A and B are multiplied by tdpbf16ps,
each instruction a 16 x 16 float32 tile of C += 16 x 32 of A by 32 x 16 of B (8,192 multiply-adds, where an AVX-512
FMA does 16 and a pair dot product 32).

The microkernel is mr x nr of C, mr 16 or 32 rows and nr a multiple of 16 columns: (mr/16) x (nr/16) C tiles, summed
over the kc block in 32-step slices, loaded from and stored to the thread's float32 block of C (gemm's Ct, whole
tiles, which the tiles always get). Its C, A and B tiles must fit the 8 tile registers (c_amx.tiles_needed).

Packed layouts (one kc block, depth D = kc rounded up to 32; zero past M, N and the block's last K step, so every
tile is full and the tile configuration never changes):

    A panel ir:  Ap[ir][i][k]          = A[i0 + ir*mr + i][k0 + k]                     (row-major, D per row)
    B panel jp:  Bp[kb][jp][p2][j][t]  = B[kb*kc + 2*p2 + t][jp*nr + j]                (gemm_bf16_dot's pair rows,
                                                                                         padded to 16 per 32 K steps)

An A tile is 16 rows of a panel (64 bytes each, D * 2 bytes apart); a B tile is 16 pair rows of 16 columns of a panel
(64 bytes each, 4 * nr bytes apart). B is packed once per call, or per kc x nc block by each thread (b_source
'blocks', the same layout per block), or read in place where the operands give its pair rows as tiles
(GemmOperands.b_tiles: conv2d's padded copy, conv2d_pairs). Each thread configures the tiles before its first tile
instruction and releases them when done (another library, oneDNN under PyTorch, may configure them otherwise between
our calls).

gemm_bf16_dot, whose `dot` knob offers the tiles and whose pair layout of B they share, imports this module; this
one takes that module's names where it uses them."""
from __future__ import annotations

from compiler_core.codegen.c_amx import TILE_K, TILE_REGISTERS, TILE_ROWS, tiles_needed
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu.gemm_blocks import cdiv, round_up
from compiler_core.space import Constraint

TILE_MR = (16, 32)  # the microkernel rows AMX adds to the GEMM's `mr` (one or two A tiles)
ZERO = E.FloatImm(0.0, "bfloat16")


# The untuned default where tiles are offered: 2 x 2 tiles, mc 128 and kc 512. On a Sapphire Rapids Xeon's two cores
# (benchmarks/results/2026-12-01-cpu-amx/) these ran 2.9-4.1x the FMA default on bfloat16 GEMMs of 64-2048 rows, at
# 0.92-1.24x PyTorch's (oneDNN on AMX) speed; 2 x 2 tiles beat 1 x 3 on four of five shapes, and kc 256-1024 and mc
# 64-256 were within 0.8-1.2x of each other, no size best everywhere.
DEFAULT = {"dot": "amx", "mr": 32, "nr": 32, "pack_a": 1, "mc": 128, "kc": 512}
# With at most 16 rows of A the default's C is one row of tiles (mr 16): two would multiply 16 rows of zeros. 16 x 4096
# x 4096, 2 x 2 tiles / 1 x 2 on that Xeon: 1.76x on 2 cores, 1.32x on 16 (benchmarks/results/2026-11-30-amx-few-rows/).
ONE_TILE_ROW = 16
# B's block per thread (b_source 'blocks') is packed pair row by pair row across the block's panels (B's rows read
# along their length) where A has at most this many rows; with more, panel by panel down K. Across / down on that
# Xeon (benchmarks/results/2026-11-30-amx-few-rows/): 1.05-1.29x at 16-256 rows on 2 and 16 cores, 0.94-0.97x at
# 1024, where many row blocks share the block and its panel-ordered writes pay.
PACK_ACROSS_ROWS = 256
# conv2d's tiles read its padded copy in place where C is a multiple of 32 (conv2d_pairs), the default there: 2.2-3.4x
# the FMA default on five layers of a Sapphire Rapids Xeon, PyTorch / ours 1.04-2.01. Elsewhere they read
# im2col panels, whose packing costs per output channel what the tiles save: tiles / the FMA default measured
# 0.5-0.7x with 64 and 128 output channels, 1.3-2x with 256 and 512.
CONV_MIN_OUT_CHANNELS = 256


def offered(dtype: str, target) -> bool:
    """Whether a GEMM of `dtype` operands on `target` gets `dot` 'amx'."""
    return dtype == "bfloat16" and target.amx


def fits(mr: int, nr: int) -> bool:
    """Whether an mr x nr microkernel is whole tiles that fit the tile registers."""
    return mr % TILE_ROWS == 0 and nr % TILE_ROWS == 0 and \
        tiles_needed(mr // TILE_ROWS, nr // TILE_ROWS) <= TILE_REGISTERS


def constraints() -> list[Constraint]:
    return [Constraint(f"dot 'amx' multiplies whole tiles: mr in {TILE_MR}, nr a multiple of {TILE_ROWS}, and its "
                       f"(mr/16) x (nr/16) C tiles, mr/16 A tiles and nr/16 B tiles at most {TILE_REGISTERS}",
                       lambda c: c["dot"] != "amx" or fits(c["mr"], c["nr"]))]


def depth(kc: int) -> int:
    """K steps a packed kc block holds: kc rounded up to whole tiles."""
    return round_up(kc, TILE_K)


def pair_rows(klen) -> E.Expr:
    """Pair rows of a block of klen K steps in a packed B panel: whole tiles of 16."""
    return cdiv(klen, TILE_K) * (TILE_K // 2)


def a_shape(plan) -> tuple:
    return (plan.mc * depth(plan.kc),)


def pack_a_block(b: IRBuilder, ops, plan, Ap: S.Buffer, bt, i0, mlen, k0, klen) -> None:
    """Rows i0..i0+mlen of A, K steps k0..k0+klen, as row-major panels Ap[ir][i][k], zero past row M and past klen up
    to the next whole tile."""
    from compiler_core.schedules.cpu.gemm_bf16_dot import bf16_operand  # (it imports this module: see the top)

    stride = depth(plan.kc)
    padded = cdiv(klen, TILE_K) * TILE_K
    with b.loop("pir", cdiv(mlen, plan.mr)) as ir, b.loop("pi", plan.mr) as i:
        row, base = i0 + ir * plan.mr + i, (ir * plan.mr + i) * stride
        with b.if_else(row < ops.M) as otherwise:
            with b.loop("pk", klen, S.ForKind.VECTORIZED) as k:
                b.store(Ap, base + k, bf16_operand(ops.a(bt, row, k0 + k)))
            with b.loop("pz", padded - klen) as k:
                b.store(Ap, base + klen + k, ZERO)
            otherwise()
            with b.loop("pk", padded, S.ForKind.VECTORIZED) as k:
                b.store(Ap, base + k, ZERO)


def microkernel(b: IRBuilder, ops, plan, bufs, blk, ir, jr) -> None:
    """C tile (+)= A panel ir . B panel jr over the block's tiles (c_amx.tile_helper), loaded from and stored to the
    float32 block of C (`bufs.Ct`, whole tiles): the sums stay float32 between kc blocks with no vector pass over
    them, and gemm_store.round_block writes the finished block into C."""
    from compiler_core.schedules.cpu.gemm_bf16_dot import b_offset  # (it imports this module: see the top)

    mr, nr = plan.mr, plan.nr
    stride = depth(plan.kc)
    ct_i0 = blk.i0 if blk.ct_i0 is None else blk.ct_i0
    c = E.Address(bufs.Ct, ((blk.i0 + ir * mr - ct_i0) * plan.nc + jr * nr,))
    a = (E.Address(bufs.Ap, (ir * (mr * stride),)), E.IntImm(2 * stride))
    shape = (cdiv(blk.klen, TILE_K), E.IntImm(mr // TILE_ROWS), E.IntImm(nr // TILE_ROWS))
    if ops.b_tiles is not None:  # in place: each step's 16 pair rows evenly spaced, the steps where `rows` says
        src, _ = ops.b_direct
        rows, image, spacing = ops.b_tiles
        b_args = (E.Address(src, (image(blk.bt) + (blk.j0 + jr * nr) * 2,)), E.IntImm(2 * spacing), *shape,
                  E.Address(rows, (blk.pc * (plan.kc // 2),)))
    else:
        if plan.b_blocks:  # the thread's block: panels of pair rows from the block's first column
            b_base = jr * pair_rows(blk.klen) * (2 * nr)
        else:
            b_base = b_offset(ops, plan, blk.pc, blk.klen, blk.j0 // nr + jr, 0)
        b_args = (E.Address(bufs.Bp, (b_base,)), E.IntImm(4 * nr), *shape)
    b.evaluate(E.call("amx_tile", c, E.IntImm(4 * plan.nc), blk.pc, *a, *b_args, dtype="int32"))


def thread_begins(b: IRBuilder) -> None:
    """Before a thread's first tile instruction of a call: the tile state asked for and configured."""
    b.evaluate(E.call("amx_setup", dtype="int32"))


def thread_ends(b: IRBuilder) -> None:
    b.evaluate(E.call("amx_release", dtype="int32"))
