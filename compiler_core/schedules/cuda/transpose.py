"""CUDA template for the 2-D transpose Y[cols, rows] = X[rows, cols]^T, tiled through shared memory.

A block moves one `tile` x `tile` square: `tile` x `block_rows` threads read it row by row (consecutive threads,
consecutive columns of X: coalesced), one barrier, then write it column by column (consecutive threads, consecutive
columns of Y: coalesced). The shared tile's rows are padded by `pad` words so that reading a column touches 32
banks. The grid is one-dimensional over all tiles, so neither dimension meets the 65535 limit of grid y.
"""
from __future__ import annotations

import contextlib

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.space import Constraint, Knob, Space


def space(w, target) -> Space:
    def threads(c):
        return c["tile"] * c["block_rows"]

    return Space(
        knobs=(
            Knob("tile", (16, 32, 64), "side of the square tile staged in shared memory"),
            Knob("block_rows", (1, 2, 4, 8, 16, 32, 64), "threadIdx.y extent: rows of the tile moved per pass"),
            Knob("pad", (0, 1), "extra words per shared row against bank conflicts"),
        ),
        constraints=(
            Constraint("block_rows must not exceed tile", lambda c: c["block_rows"] <= c["tile"]),
            Constraint(f"tile * block_rows must be 32..{target.max_threads_per_block} threads",
                       lambda c: 32 <= threads(c) <= target.max_threads_per_block),
            Constraint("the shared tile must fit the shared-memory limit",
                       lambda c: c["tile"] * (c["tile"] + c["pad"]) * 4 <= target.max_shared_bytes),
        ),
    )


def default_config(w, target) -> dict:
    return {"tile": 32, "block_rows": 8, "pad": 1}


def schedule(w, config, target) -> S.Module:
    rows, cols, dt = w["rows"], w["cols"], w.dtype
    X = S.Buffer("in_X", dt, (rows * cols,))
    Y = S.Buffer("out_Y", dt, (cols * rows,))
    func = transpose_func("transpose_cuda", X, Y, (1, rows, cols), config)
    return S.Module("transpose", (func,), (X, Y), (), 1)


def transpose_func(name: str, X: S.Buffer, Y: S.Buffer, shape: tuple, config: dict) -> S.PrimFunc:
    """Y[b, cols, rows] = X[b, rows, cols] for `shape` = (batch, rows, cols), both buffers flat: the kernel of this
    template, and the layout change other templates run before their main kernel (conv2d's NCHW -> NHWC)."""
    T, P = config["tile"], config["block_rows"]
    b = IRBuilder()
    with b.loop("bx", square_blocks(shape, config), S.ForKind.BLOCK_X) as bx, \
            b.loop("ty", P, S.ForKind.THREAD_Y) as ty, \
            b.loop("tx", T, S.ForKind.THREAD_X) as tx:
        _square_moves(b, bx, tx, ty, X, Y, shape, config)
    return S.PrimFunc(name, (X, Y), b.get())


def square_blocks(shape: tuple, config: dict) -> int:
    batch, rows, cols = shape
    return batch * E.ceil_div(cols, config["tile"]) * E.ceil_div(rows, config["tile"])


def _square_moves(b: IRBuilder, bx, tx, ty, X: S.Buffer, Y: S.Buffer, shape: tuple, config: dict) -> None:
    """Block `bx` of a square-tiled transpose, threads (tx, ty) of tile x block_rows."""
    batch, rows, cols = shape
    T, P = config["tile"], config["block_rows"]
    col_tiles = E.ceil_div(cols, T)
    tiles = col_tiles * E.ceil_div(rows, T)
    with b.allocate("tile", X.dtype, (T, T), S.Scope.SHARED, pad=config["pad"]) as tile, \
            contextlib.ExitStack() as lets:
        # one matrix: the tile index is bx (a batch adds each matrix's offset)
        base = lets.enter_context(b.let("base", (bx // tiles) * (rows * cols))) if batch > 1 else 0
        r0 = lets.enter_context(b.let("r0", ((bx % tiles if batch > 1 else bx) // col_tiles) * T))
        c0 = lets.enter_context(b.let("c0", (bx % col_tiles) * T))
        with b.loop("p", T // P, S.ForKind.UNROLLED) as p:  # read: tile[i][j] = X[r0 + i, c0 + j]
            i, j = ty + p * P, tx
            _guarded_store(b, T, [(r0 + i, rows), (c0 + j, cols)], tile, (i, j),
                           X[base + (r0 + i) * cols + c0 + j])
        b.barrier()
        with b.loop("q", T // P, S.ForKind.UNROLLED) as q:  # write: Y[c0 + i, r0 + j] = tile[j][i]
            i, j = ty + q * P, tx
            _guarded_store(b, T, [(c0 + i, cols), (r0 + j, rows)], Y, base + (c0 + i) * rows + r0 + j, tile[j, i])


NARROW_THREADS = 256  # threads of a narrow transpose's block
NARROW_ROWS = 256  # rows of X a narrow transpose's block moves, all their columns
NARROW_BELOW = 32  # columns under which a transpose is narrow: a square tile would leave lanes of each warp idle


def narrow_transpose_func(name: str, X: S.Buffer, Y: S.Buffer, shape: tuple) -> S.PrimFunc:
    """transpose_func's result where `cols` is below a warp (a 3 x 3 filter's 9 taps): a square tile would leave
    all but `cols` of each 32 lanes idle. A block instead moves NARROW_ROWS whole rows, a contiguous run of X read
    with consecutive threads on consecutive elements, then writes each of its `cols` output rows as a run of
    NARROW_ROWS elements. On an H200 the square tile took 11.6 us for a 512 x 512 3 x 3 filter
    (benchmarks/results/2026-12-01-sm90-conv-parts/)."""
    b = IRBuilder()
    with b.loop("bx", narrow_blocks(shape), S.ForKind.BLOCK_X) as bx, \
            b.loop("tx", NARROW_THREADS, S.ForKind.THREAD_X) as tx:
        _narrow_moves(b, bx, tx, X, Y, shape)
    return S.PrimFunc(name, (X, Y), b.get())


def is_narrow(shape: tuple) -> bool:
    """Whether a (batch, rows, cols) transpose moves whole rows (narrow_transpose_func) rather than square tiles."""
    return shape[2] < NARROW_BELOW


def narrow_blocks(shape: tuple) -> int:
    batch, rows, _ = shape
    return batch * E.ceil_div(rows, NARROW_ROWS)


def _narrow_moves(b: IRBuilder, bx, tx, X: S.Buffer, Y: S.Buffer, shape: tuple) -> None:
    """Block `bx` of a narrow transpose, thread tx of NARROW_THREADS."""
    batch, rows, cols = shape
    run, row_blocks = NARROW_ROWS * cols, E.ceil_div(rows, NARROW_ROWS)
    passes = -(-run // NARROW_THREADS)
    with b.allocate("rows_tile", X.dtype, (NARROW_ROWS, cols), S.Scope.SHARED) as tile, \
            contextlib.ExitStack() as lets:
        base = lets.enter_context(b.let("base", (bx // row_blocks) * (rows * cols))) if batch > 1 else 0
        r0 = lets.enter_context(b.let("r0", (bx % row_blocks if batch > 1 else bx) * NARROW_ROWS))
        with b.loop("p", passes, S.ForKind.UNROLLED) as p:  # read: tile[i][j] = X[r0 + i, j], e = i * cols + j
            e = tx + p * NARROW_THREADS
            with b.if_((e < run) & (r0 * cols + e < rows * cols)):
                b.store(tile, (e // cols, e % cols), X[base + r0 * cols + e])
        b.barrier()
        with b.loop("q", passes, S.ForKind.UNROLLED) as q:  # write: Y[j, r0 + i] = tile[i][j], e = j * ROWS + i
            e = tx + q * NARROW_THREADS
            i, j = e % NARROW_ROWS, e // NARROW_ROWS
            with b.if_((e < run) & (r0 + i < rows)):
                b.store(Y, base + j * rows + r0 + i, tile[i, j])


def layout_transpose(name: str, X: S.Buffer, Y: S.Buffer, shape: tuple, config: dict) -> S.PrimFunc:
    """The layout change another template runs before its main kernel: `config`'s square tiles, or the narrow
    transpose where `cols` is below a warp."""
    if is_narrow(shape):
        return narrow_transpose_func(name, X, Y, shape)
    return transpose_func(name, X, Y, shape, config)


def layout_transposes(name: str, moves: tuple, config: dict) -> S.PrimFunc:
    """Several layout changes ((X, Y, shape) each) as one launch: the blocks of each in turn, every block of
    NARROW_THREADS threads (`config`'s square tiles must have as many). conv2d's copies of X and of its filter
    are one launch instead of two, where a launch costs about as much as a small copy."""
    T, P = config["tile"], config["block_rows"]
    assert T * P == NARROW_THREADS, "the square tiles' blocks must be as large as the narrow ones'"
    counts = [narrow_blocks(shape) if is_narrow(shape) else square_blocks(shape, config)
              for _x, _y, shape in moves]
    b = IRBuilder()
    with b.loop("bx", sum(counts), S.ForKind.BLOCK_X) as bx, \
            b.loop("tx", NARROW_THREADS, S.ForKind.THREAD_X) as tx:
        _dispatch(b, bx, tx, moves, counts, config)
    buffers = tuple(x for x, _y, _s in moves) + tuple(y for _x, y, _s in moves)
    return S.PrimFunc(name, buffers, b.get())


def _dispatch(b: IRBuilder, bx, tx, moves: tuple, counts: list, config: dict) -> None:
    """Block bx runs the first move whose blocks it falls in (bx counted from that move's first block)."""
    (X, Y, shape), *rest = moves
    if not rest:
        _move(b, bx, tx, X, Y, shape, config)
        return
    with b.if_else(bx < counts[0]) as otherwise:
        _move(b, bx, tx, X, Y, shape, config)
        otherwise()
        _dispatch(b, bx - counts[0], tx, tuple(rest), counts[1:], config)


def _move(b: IRBuilder, bx, tx, X: S.Buffer, Y: S.Buffer, shape: tuple, config: dict) -> None:
    if is_narrow(shape):
        _narrow_moves(b, bx, tx, X, Y, shape)
    else:
        _square_moves(b, bx, tx % config["tile"], tx // config["tile"], X, Y, shape, config)


def _guarded_store(b: IRBuilder, T: int, bounds: list, buf: S.Buffer, index, value: E.Expr) -> None:
    """Store where every (index, extent) of `bounds` is in range; a check is left out where whole tiles of T
    cover the extent (the index is then always inside)."""
    conds = [idx < extent for idx, extent in bounds if extent % T]
    if not conds:
        b.store(buf, index, value)
        return
    with b.if_(conds[0] if len(conds) == 1 else conds[0] & conds[1]):
        b.store(buf, index, value)
