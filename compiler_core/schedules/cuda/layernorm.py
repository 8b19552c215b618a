"""CUDA template for layernorm over the last axis: Welford statistics per thread, merged across the row with
Chan's pairwise (count, mean, M2) formula in shuffles and (past one warp) a small shared buffer, then
Y = (X - mean) * rsqrt(var + eps) * gamma + beta.

Statistics are of x - x[row, 0] (variance is shift-invariant): the running float32 mean then stays on the scale
of the spread, not of the row's offset, so a row with mean 100 and std 1 loses no digits. Per-thread statistics
come from groups of chunks held in registers: the group's mean, then the sum of squared deviations from it (two
passes over registers, exact), merged into the running triple. With `cache_row` the
group is the thread's whole part of the row and X is read once; otherwise groups of `unroll` chunks stream by and
the normalising pass re-reads the row (from L2 for rows in flight). gamma and beta are read per chunk (cached).
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cuda.block_reduce import (
    add,
    cached_row_space,
    default_row_config,
    load_chunk,
    merge_into,
    merge_welford,
    row_allreduce,
    row_threads,
    store_chunk,
    streamed_walk,
    tree,
)
from compiler_core.space import Space


def space(w, target) -> Space:
    return cached_row_space(w, target)


def default_config(w, target) -> dict:
    return default_row_config(w, target, cache=True)


def schedule(w, config, target) -> S.Module:
    rows, cols, dt = w["rows"], w["cols"], w.dtype
    X = S.Buffer("in_X", dt, (rows * cols,))
    G = S.Buffer("in_gamma", dt, (cols,))
    B = S.Buffer("in_beta", dt, (cols,))
    Y = S.Buffer("out_Y", dt, (rows * cols,))
    eps = float(w["eps"])
    b = IRBuilder()
    with row_threads(b, rows, cols, config) as m, \
            b.allocate("st", "float32", (3,), S.Scope.LOCAL) as st, \
            b.allocate("x0", "float32", (1,), S.Scope.LOCAL) as x0:  # running (count, mean, M2); the row's shift
        for i in range(3):
            b.store(st, i, E.FloatImm(0.0))
        _load_shift(b, m, X, x0)
        if config["cache_row"]:
            with b.allocate("v", "float32", (m.iters * m.vec,), S.Scope.LOCAL) as v:
                with b.loop("k", m.iters, S.ForKind.UNROLLED) as k:
                    load_chunk(b, m, X, v, k * m.vec, k, m.iters, fill=0.0)
                _merge_group(b, m, st, x0[0], v, lambda i: E.IntImm(i), m.iters)
                _finish_stats(b, m, st, eps)
                with b.loop("k2", m.iters, S.ForKind.UNROLLED) as k:
                    _normalize_chunk(b, m, (X, G, B, Y), st, x0[0], v, k * m.vec, k, m.iters)
        else:
            unroll = config["unroll"]
            with streamed_walk(b, m, unroll, "t") as (t, chunk, walked):
                with b.loop("i", unroll, S.ForKind.UNROLLED) as i:
                    load_chunk(b, m, X, t, i * m.vec, chunk(i), walked, fill=0.0)
                _merge_group(b, m, st, x0[0], t, chunk, walked)
            _finish_stats(b, m, st, eps)
            with streamed_walk(b, m, unroll, "u") as (u, chunk, walked):
                with b.loop("i2", unroll, S.ForKind.UNROLLED) as i:
                    load_chunk(b, m, X, u, i * m.vec, chunk(i), walked, fill=0.0)
                with b.loop("i3", unroll, S.ForKind.UNROLLED) as i:
                    _normalize_chunk(b, m, (X, G, B, Y), st, x0[0], u, i * m.vec, chunk(i), walked)
    func = S.PrimFunc("layernorm_cuda", (X, G, B, Y), b.get())
    return S.Module("layernorm", (func,), (X, G, B, Y), (), 3)


def _load_shift(b: IRBuilder, m, X: S.Buffer, x0: S.Buffer) -> None:
    """x0[0] = X[row, 0] (one broadcast load per row), 0 for a row past the end."""
    b.store(x0, 0, E.FloatImm(0.0))
    if m.rows % m.rpb == 0:
        b.store(x0, 0, X[m.row * m.cols])
        return
    with b.if_(m.row < m.rows):
        b.store(x0, 0, X[m.row * m.cols])


def _merge_group(b: IRBuilder, m, st: S.Buffer, shift: E.Expr, regs: S.Buffer, chunk, walked: int) -> None:
    """Merges the statistics of the group in `regs`, shifted by `shift`, into the running triple `st`; chunks
    outside the row count nothing."""
    per = regs.shape[0] // m.vec
    valid = [m.guard(chunk(i), walked) for i in range(per)]

    def masked(i, value):
        return value if valid[i] is None else E.select(valid[i], value, E.FloatImm(0.0))

    count = tree(add, [masked(i, E.FloatImm(float(m.vec))) for i in range(per)])
    total = tree(add, [masked(i, regs[i * m.vec + lane] - shift) for i in range(per) for lane in range(m.vec)])
    with b.let(f"{regs.name}_n", count, "float32") as n, \
            b.let(f"{regs.name}_mean", total / E.max_(n, E.FloatImm(1.0)), "float32") as mean:
        squares = []
        for i in range(per):
            for lane in range(m.vec):
                d = regs[i * m.vec + lane] - shift - mean
                squares.append(masked(i, d * d))
        merge_into(b, st, [n, mean, tree(add, squares)], merge_welford)


def _finish_stats(b: IRBuilder, m, st: S.Buffer, eps: float) -> None:
    """Row statistics in every thread: st[1] = mean, st[2] = rsqrt(var + eps) (biased variance, like PyTorch)."""
    row_allreduce(b, m, st, merge_welford)
    b.store(st, 2, E.call("rsqrt", st[2] / E.FloatImm(float(m.cols)) + E.FloatImm(eps)))


def _normalize_chunk(b: IRBuilder, m, tensors, st: S.Buffer, shift: E.Expr, regs: S.Buffer, slot, k,
                     walked: int) -> None:
    """regs[slot : slot+vec] = chunk k normalised with st = (count, mean of x - shift, rstd), then stored to Y."""
    _, G, B, Y = tensors
    with b.allocate("gb", "float32", (2 * m.vec,), S.Scope.LOCAL) as gb:  # gamma then beta of the chunk
        load_chunk(b, m, G, gb, 0, k, walked, fill=0.0, per_row=False)
        load_chunk(b, m, B, gb, m.vec, k, walked, fill=0.0, per_row=False)
        with b.loop("ln", m.vec, S.ForKind.UNROLLED) as ln:
            b.store(regs, slot + ln, (regs[slot + ln] - shift - st[1]) * st[2] * gb[ln] + gb[m.vec + ln])
        store_chunk(b, m, Y, regs, slot, k, walked)
