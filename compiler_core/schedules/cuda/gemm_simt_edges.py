"""Where a SIMT GEMM block's tile meets the edges of the problem (see gemm_simt_kernel): which blocks are interior,
which bounds each code path checks, and the order in which a block runs its k tiles.

A block is interior when its BM x BN tile of C lies wholly inside C. Interior blocks run a path whose loads
and stores check no row or column; only the blocks of the last row or column of tiles (edge blocks) run the
path that clamps their loads onto the last row or column in range (unconditional loads: edge blocks keep
pace, which matters where one wave of blocks runs and the slowest block sets the time) and checks their
stores. The test reads blockIdx alone (through the tile origin), so every thread of a block takes the same
path, and the barriers inside each path stay legal: each is reached by all threads of the block the same
number of times. Where the tiles divide M and N (no edge blocks), or where M < BM or N < BN (no interior
blocks), there is one path and no test.

Along k, a block runs its split's tiles with the partial tile (K % BK != 0; only the last split holds it)
first and the full tiles after it. Only position 0 checks k: with double buffering that is the load before
the pipelined loop, without it a peeled first step, so the k loop itself never checks k. Splits other than the
last run exactly their own tiles, and the last split runs what is left, so no split loads tiles past K.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from compiler_core.ir import expr as E


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def all_of(*conds):
    """AND of the conditions that are not None (None: always true)."""
    out = None
    for c in conds:
        if c is not None:
            out = c if out is None else out & c
    return out


@contextlib.contextmanager
def guarded(ib, cond):
    """`if (cond)` around the block, or nothing when cond is None (statically true)."""
    if cond is None:
        yield
    else:
        with ib.if_(cond):
            yield


@dataclass(frozen=True)
class Checks:
    """The bounds one code path checks: rows m (of A and C), columns n (of B and C), k (of A and B)."""
    m: bool = False
    n: bool = False
    k: bool = False


@dataclass(frozen=True)
class Blocks:
    """The interior/edge split of a launch: `interior` is the test, or None where all blocks run one path,
    `only` (no checks where every block is interior, the edge checks where none is)."""
    interior: E.Expr | None
    interior_share: float  # interior blocks / all blocks: the then-branch share for features
    edge: Checks
    only: Checks | None


def split_blocks(M: int, N: int, BM: int, BN: int, m0: E.Expr, n0: E.Expr) -> Blocks:
    """`m0`, `n0`: the block's tile origin, a function of blockIdx only."""
    edge = Checks(m=M % BM != 0, n=N % BN != 0)
    share = (M // BM) * (N // BN) / (_ceil(M, BM) * _ceil(N, BN))
    if share in (0, 1):
        return Blocks(None, share, edge, edge if share == 0 else Checks())
    interior = all_of(m0 + BM <= M if edge.m else None, n0 + BN <= N if edge.n else None)
    return Blocks(interior, share, edge, None)


@dataclass(frozen=True)
class KTiles:
    """The k tiles one block runs: `count` of them (block-uniform: a constant, or a select on the split), the
    one at position 0 starting at k = `first` (checked against K when `check_first`), the one at position
    p >= 1 at k = (offset + p) * BK, always a full tile."""
    count: E.Expr
    count_after_first: E.Expr
    first: E.Expr
    offset: E.Expr
    check_first: bool
    BK: int

    def k0(self, t, ahead: int = 0) -> E.Expr:
        """k of the tile at position t + ahead, for positions >= 1 (or any position when not check_first)."""
        return ((self.offset + ahead) + t) * self.BK


def k_tiles(K: int, BK: int, split_k: int, tiles_per_split: int, split: E.Expr) -> KTiles:
    """`split`: this block's split index (block-uniform; the constant 0 when split_k is 1)."""
    full, partial = divmod(K, BK)
    k_tile_count = full + (1 if partial else 0)
    last_count = k_tile_count - (split_k - 1) * tiles_per_split
    is_last = split.eq(split_k - 1) if split_k > 1 else E.IntImm(1, "bool")
    if last_count == tiles_per_split:
        count, after_first = E.as_expr(last_count), E.as_expr(last_count - 1)
    else:
        count = E.select(is_last, last_count, tiles_per_split)
        after_first = E.select(is_last, last_count - 1, tiles_per_split - 1)
    start = split * tiles_per_split
    if not partial:
        return KTiles(count, after_first, start * BK, E.as_expr(start), False, BK)
    lead = E.select(is_last, 1, 0)  # the partial tile goes first and shifts the full ones by one position
    return KTiles(count, after_first, E.select(is_last, full * BK, start * BK), start - lead, True, BK)
