"""CPU template for reduce_sum over the last axis: per-row sums with several vector accumulators.

split=1: OpenMP over rows. split>1 (for few long rows): each row is cut into column chunks (a multiple
of the vector width), OpenMP runs over (row, chunk) pairs writing partial sums to a zero-initialised
workspace, and a second kernel adds each row's partials.
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu import rowloops as R
from compiler_core.space import Constraint, Knob, Space

MIN_CHUNK = 64  # columns per chunk below which splitting a row cannot pay for its workspace pass


def space(w, target) -> Space:
    cols = w["cols"]
    return Space(
        knobs=(
            R.rows_knob(),
            *R.vector_knobs(),
            Knob("split", (1, 2, 4, 8, 16), "column chunks per row, reduced by separate OpenMP tasks"),
        ),
        constraints=(
            Constraint(f"split > 1 needs at least {MIN_CHUNK} columns per chunk",
                       lambda c: c["split"] == 1 or c["split"] * MIN_CHUNK <= cols),
        ),
    )


def default_config(w, target) -> dict:
    """Split rows only while there are fewer than four (row, chunk) tasks per core."""
    rows, cols = w["rows"], w["cols"]
    split = 1
    while split < 16 and rows * split < 4 * target.cores and 2 * split * MIN_CHUNK <= cols:
        split *= 2
    return {"rows_per_task": 1, "vector": R.EXPLICIT, "accumulators": 4, "split": split}


def chunking(cols: int, split: int, lanes: int) -> tuple[int, int]:
    """(chunk, chunks): chunk columns, rounded up to whole vectors; the last chunk takes the rest."""
    chunk = E.ceil_div(E.ceil_div(cols, split), lanes) * lanes
    return chunk, E.ceil_div(cols, chunk)


def _row_sum(X, i) -> R.Reduction:
    return R.Reduction(init=(0.0,), update=lambda rl, st, j, lanes: [st[0] + rl.load(X, (i, j), lanes)],
                       merge=lambda rl, a, b: [a[0] + b[0]])


def schedule(w, config, target) -> S.Module:
    rows, cols, dt = w["rows"], w["cols"], w.dtype
    X = S.Buffer("in_X", dt, (rows, cols))
    Y = S.Buffer("out_Y", dt, (rows,))
    lanes = R.lanes_for(target)
    chunk, chunks = chunking(cols, config["split"], lanes)
    if chunks == 1:
        b = IRBuilder()
        rl = R.RowLoops(b, config["vector"], lanes, config["accumulators"])
        with R.parallel_rows(b, rows, config["rows_per_task"]) as i:
            with rl.reduce(_row_sum(X, i), cols) as (s,):
                b.store(Y, i, s)
        func = S.PrimFunc("reduce_sum_cpu", (X, Y), b.get())
        return S.Module("reduce_sum", (func,), (X, Y), (), 1)
    ws = S.Buffer("ws_partial", "float32", (rows, chunks))
    kernels = (_partial_sums(X, ws, config, lanes, chunk, chunks), _add_partials(ws, Y, config, chunks))
    return S.Module("reduce_sum", kernels, (X, Y), (ws,), 1)


def _partial_sums(X, ws, config, lanes, chunk, chunks) -> S.PrimFunc:
    rows, cols = X.shape
    last = cols - (chunks - 1) * chunk
    b = IRBuilder()
    rl = R.RowLoops(b, config["vector"], lanes, config["accumulators"])
    with b.loop("t", rows * chunks, S.ForKind.PARALLEL) as t:
        with b.let("i", t // chunks) as i, b.let("c", t % chunks) as c:
            def chunk_sum(n, start):
                with rl.reduce(_row_sum(X, i), n, start) as (s,):
                    b.store(ws, (i, c), s)

            if last == chunk:
                chunk_sum(chunk, c * chunk)
            else:
                with b.if_else(c < chunks - 1) as otherwise:
                    chunk_sum(chunk, c * chunk)
                    otherwise()
                    chunk_sum(last, (chunks - 1) * chunk)
    return S.PrimFunc("reduce_sum_partial", (X, ws), b.get())


def _add_partials(ws, Y, config, chunks) -> S.PrimFunc:
    rows = ws.shape[0]
    b = IRBuilder()
    with R.parallel_rows(b, rows, config["rows_per_task"]) as i:
        with b.allocate("total", "float32", (1,), S.Scope.LOCAL) as total:
            b.store(total, 0, ws[i, 0])
            with b.loop("c", chunks - 1) as c:
                b.store(total, 0, total[0] + ws[i, c + 1])
            b.store(Y, i, total[0])
    return S.PrimFunc("reduce_sum_add", (ws, Y), b.get())
