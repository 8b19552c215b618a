"""CUDA template for row sums Y[r] = sum_c X[r, c].

Row walk (knobs as softmax: threads_per_row, rows_per_block, vec, unroll): each thread sums its chunks, the row's
threads merge with shuffles and (past one warp) a shared buffer, and the row's first thread writes the sum.

Staged (knob `stage_shared`, short rows only, one thread per row): X is row-major, so a block's rows are one
contiguous span; the block copies that span into shared memory with fully coalesced loads (consecutive threads,
consecutive addresses), one barrier, then each thread sums its own row from shared memory. Rows are padded to an
odd stride so that the threads' row reads hit 32 different banks.
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cuda.block_reduce import (
    add,
    default_row_config,
    load_chunk,
    merge_sum,
    row_allreduce,
    row_constraints,
    row_knobs,
    row_threads,
    streamed_walk,
    tree,
)
from compiler_core.space import Constraint, Knob, Space

STAGE_MAX_COLS = 64  # staging pays only for rows too short to give a warp contiguous work


def space(w, target) -> Space:
    cols = w["cols"]
    knobs = row_knobs((Knob("stage_shared", (0, 1), "one thread per row, the block's rows staged in shared memory "
                                                     "by coalesced loads (short rows)"),))

    def staged_ok(c):
        return (c["threads_per_row"] == 1 and c["vec"] == 1 and c["unroll"] == 1 and cols <= STAGE_MAX_COLS
                and c["rows_per_block"] * _stride(cols) * 4 <= target.max_shared_bytes)

    staged = Constraint(f"stage_shared needs threads_per_row 1, vec 1, unroll 1, cols <= {STAGE_MAX_COLS} and the "
                        "block's rows within the shared-memory limit", lambda c: not c["stage_shared"] or staged_ok(c))
    return Space(knobs, row_constraints(w, target) + (staged,))


def default_config(w, target) -> dict:
    config = dict(default_row_config(w, target, cache=False), stage_shared=0)
    if w["cols"] <= 16:  # a warp would otherwise cover few contiguous bytes per load
        config.update(threads_per_row=1, vec=1, unroll=1, stage_shared=1,
                      rows_per_block=min(128, max(32, 1 << (w["rows"] - 1).bit_length())))
    return config


def _stride(cols: int) -> int:
    return cols + 1 - cols % 2  # odd, so rows of consecutive threads start in different banks


def schedule(w, config, target) -> S.Module:
    rows, cols, dt = w["rows"], w["cols"], w.dtype
    X = S.Buffer("in_X", dt, (rows * cols,))
    Y = S.Buffer("out_Y", dt, (rows,))
    b = IRBuilder()
    if config["stage_shared"]:
        _staged(b, rows, cols, config["rows_per_block"], X, Y)
    else:
        _row_walk(b, rows, cols, config, X, Y)
    func = S.PrimFunc("reduce_sum_cuda", (X, Y), b.get())
    return S.Module("reduce_sum", (func,), (X, Y), (), 1)


def _row_walk(b: IRBuilder, rows: int, cols: int, config: dict, X: S.Buffer, Y: S.Buffer) -> None:
    unroll = config["unroll"]
    with row_threads(b, rows, cols, config) as m, b.allocate("acc", "float32", (1,), S.Scope.LOCAL) as acc:
        b.store(acc, 0, E.FloatImm(0.0))
        with streamed_walk(b, m, unroll, "t") as (t, chunk, walked):
            with b.loop("i", unroll, S.ForKind.UNROLLED) as i:
                load_chunk(b, m, X, t, i * m.vec, chunk(i), walked, fill=0.0)
            b.store(acc, 0, acc[0] + tree(add, [t[j] for j in range(t.shape[0])]))
        row_allreduce(b, m, acc, merge_sum)
        first = m.tx.eq(0)
        with b.if_(first if rows % m.rpb == 0 else first & (m.row < rows)):
            b.store(Y, m.row, acc[0])


def _staged(b: IRBuilder, rows: int, cols: int, rpb: int, X: S.Buffer, Y: S.Buffer) -> None:
    total = rows * cols
    with b.loop("bx", E.ceil_div(rows, rpb), S.ForKind.BLOCK_X) as bx, \
            b.loop("tx", rpb, S.ForKind.THREAD_X) as tx, \
            b.allocate("tile", "float32", (rpb, cols), S.Scope.SHARED, pad=_stride(cols) - cols) as tile:
        with b.loop("e", cols, S.ForKind.UNROLLED) as e:
            with b.let("flat", e * rpb + tx) as flat:  # element of the block's span, consecutive across threads
                src = bx * (rpb * cols) + flat
                if rows % rpb == 0:
                    b.store(tile, (flat // cols, flat % cols), X[src])
                else:
                    with b.if_(src < total):
                        b.store(tile, (flat // cols, flat % cols), X[src])
        b.barrier()
        row = bx * rpb + tx
        value = tree(add, [tile[tx, j] for j in range(cols)])
        if rows % rpb == 0:
            b.store(Y, row, value)
        else:
            with b.if_(row < rows):
                b.store(Y, row, value)
