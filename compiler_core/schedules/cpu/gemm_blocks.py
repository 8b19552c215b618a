"""The CPU GEMM's blocking arithmetic, shared by its FMA, bfloat16-pair and streamed paths: sizes rounded to whole
tiles, a thread's extent of C and its float32 block, trip counts and block lengths as loop-IR expressions, and the
loops over a thread's column and row blocks."""
from __future__ import annotations

import contextlib

from compiler_core.ir import expr as E


def round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def thread_extent(M: int, N: int, mr: int, nr: int, parallel: str, threads: int) -> tuple[int, int]:
    """Rows and columns of C one thread computes, in whole tiles (edge tiles are stored in full): all of M and N, but
    the thread's share of the one the threads split."""
    rows, cols = round_up(M, mr), round_up(N, nr)
    if parallel == "m":
        rows = round_up(-(-M // threads), mr)
    elif parallel == "n":
        cols = round_up(-(-N // threads), nr)
    return rows, cols


def blocks_ct_bytes(M: int, N: int, config: dict, target) -> int:
    """Bytes of the float32 block of C that a thread sums in when `b_source` is 'blocks' (a C that is not float32, or
    AMX's tiles): its rows (`gemm.ct_rows`) x the config's nc clipped to its columns, as `gemm.make_plan` and the
    thread's buffers size it."""
    rows, cols = thread_extent(M, N, config["mr"], config["nr"], config["parallel"], max(1, target.cores))
    return 4 * rows * min(config["nc"], cols)


def cdiv(x, y: int) -> E.Expr:
    """ceil(x / y) for an expression x (a non-positive x gives 0 or less: an empty loop)."""
    return E.binop("//", E.binop("+", x, y - 1), y)


def block_len(total: int, block: int, idx: E.Expr) -> E.Expr:
    """Length of block `idx` of `total` split by `block`: a constant when every block is full."""
    if total % block == 0:
        return E.IntImm(block)
    return E.min_(total - idx * block, block)


@contextlib.contextmanager
def column_blocks(b, plan, n_lo, n_len):
    """for jc: yields (j0, nlen), the columns [j0, j0 + nlen) of each nc block of the thread's n_lo .. n_lo + n_len."""
    with b.loop("jc", cdiv(n_len, plan.nc)) as jc:
        with b.let("j0", n_lo + jc * plan.nc) as j0, b.let("nlen", E.min_(n_len - jc * plan.nc, plan.nc)) as nlen:
            yield j0, nlen


@contextlib.contextmanager
def row_blocks(b, plan, m_lo, m_len):
    """for ic: yields (i0, mlen), the rows [i0, i0 + mlen) of each mc block of the thread's m_lo .. m_lo + m_len."""
    with b.loop("ic", cdiv(m_len, plan.mc)) as ic:
        with b.let("i0", m_lo + ic * plan.mc) as i0, b.let("mlen", E.min_(m_len - ic * plan.mc, plan.mc)) as mlen:
            yield i0, mlen
