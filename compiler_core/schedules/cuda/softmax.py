"""CUDA template for softmax over the last axis: one row per `threads_per_row` threads, reduced in registers,
shuffles and (past one warp) a small shared buffer.

Two walks of the row (knob `cache_row`):
- cached: the thread's chunks stay in registers (at most CACHE_MAX_FLOATS), so X is read once: max, one block
  max-reduction, exp in place, sum, one block sum-reduction, scale and store.
- streamed: one online pass keeps a running (max, sum of exp) per thread, merged across the row in a single
  reduction, then a second pass re-reads the row (from L2 for rows in flight) to write exp(x - max) / sum.
A row of -inf stays NaN like the reference; -inf entries in a finite row give 0 (the max is made safe before exp).
"""
from __future__ import annotations

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cuda.block_reduce import (
    NEG_INF,
    add,
    cached_row_space,
    default_row_config,
    exp,
    load_chunk,
    merge_max,
    merge_max_sum,
    merge_sum,
    row_allreduce,
    row_threads,
    safe_max,
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
    rows, cols = w["rows"], w["cols"]
    X = S.Buffer("in_X", w.dtype, (rows * cols,))
    Y = S.Buffer("out_Y", w.dtype, (rows * cols,))
    b = IRBuilder()
    with row_threads(b, rows, cols, config) as m:
        if config["cache_row"]:
            _cached(b, m, X, Y)
        else:
            _streamed(b, m, X, Y, config["unroll"])
    func = S.PrimFunc("softmax_cuda", (X, Y), b.get())
    return S.Module("softmax", (func,), (X, Y), (), 1)


def _cached(b: IRBuilder, m, X: S.Buffer, Y: S.Buffer) -> None:
    n, vec = m.iters * m.vec, m.vec
    with b.allocate("v", "float32", (n,), S.Scope.LOCAL) as v:
        with b.loop("k", m.iters, S.ForKind.UNROLLED) as k:
            load_chunk(b, m, X, v, k * vec, k, m.iters, fill=NEG_INF)
        with b.allocate("mx", "float32", (1,), S.Scope.LOCAL) as mx:
            b.store(mx, 0, tree(E.max_, [v[j] for j in range(n)]))
            row_allreduce(b, m, mx, merge_max)
            with b.let("shift", safe_max(mx[0]), "float32") as shift:
                with b.loop("j", n, S.ForKind.UNROLLED) as j:
                    b.store(v, j, exp(v[j] - shift))
        with b.allocate("den", "float32", (1,), S.Scope.LOCAL) as den:
            b.store(den, 0, tree(add, [v[j] for j in range(n)]))
            row_allreduce(b, m, den, merge_sum)
            with b.let("inv", E.FloatImm(1.0) / den[0], "float32") as inv:
                with b.loop("j2", n, S.ForKind.UNROLLED) as j:
                    b.store(v, j, v[j] * inv)
        with b.loop("k2", m.iters, S.ForKind.UNROLLED) as k:
            store_chunk(b, m, Y, v, k * vec, k, m.iters)


def _streamed(b: IRBuilder, m, X: S.Buffer, Y: S.Buffer, unroll: int) -> None:
    n, vec = unroll * m.vec, m.vec
    with b.allocate("st", "float32", (2,), S.Scope.LOCAL) as st:  # running (max, sum of exp(x - max))
        b.store(st, 0, E.FloatImm(NEG_INF))
        b.store(st, 1, E.FloatImm(0.0))
        with streamed_walk(b, m, unroll, "t") as (t, chunk, walked):
            with b.loop("i", unroll, S.ForKind.UNROLLED) as i:
                load_chunk(b, m, X, t, i * vec, chunk(i), walked, fill=NEG_INF)
            with b.let("gmax", E.max_(st[0], tree(E.max_, [t[j] for j in range(n)])), "float32") as gmax:
                with b.let("gshift", safe_max(gmax), "float32") as sh:
                    terms = [st[1] * exp(st[0] - sh)] + [exp(t[j] - sh) for j in range(n)]
                    b.store(st, 1, tree(add, terms))
                    b.store(st, 0, gmax)
        row_allreduce(b, m, st, merge_max_sum)
        with b.let("shift", safe_max(st[0]), "float32") as shift, \
                b.let("inv", E.FloatImm(1.0) / st[1], "float32") as inv:
            with streamed_walk(b, m, unroll, "u") as (u, chunk, walked):
                with b.loop("i2", unroll, S.ForKind.UNROLLED) as i:
                    load_chunk(b, m, X, u, i * vec, chunk(i), walked, fill=0.0)
                with b.loop("j3", n, S.ForKind.UNROLLED) as j:
                    b.store(u, j, exp(u[j] - shift) * inv)
                with b.loop("i3", unroll, S.ForKind.UNROLLED) as i:
                    store_chunk(b, m, Y, u, i * vec, chunk(i), walked)
