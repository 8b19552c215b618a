"""IR helpers shared by the CUDA row-op templates (softmax, layernorm, reduce_sum).

Thread layout: a block is `tpr` threads per row (threadIdx.x) times `rpb` rows (threadIdx.y); blockIdx.x picks the
group of rows, one group per block (no grid-stride loop, so every shared buffer below is written and read once per
block and never needs a second barrier before reuse). Thread tx walks its row in chunks of `vec` contiguous
elements: its k-th chunk is chunk index c = tx + k*tpr, so a warp touches 32*vec contiguous elements per step
(128-bit coalesced loads when vec is 4). Threads of a row past the last one, and chunks past the row's end, take part
in every shuffle and barrier with the reduction's identity instead of skipping them: the block size is a whole number
of warps and no barrier or shuffle sits inside a thread-dependent branch.

Reductions work in place on a small LOCAL buffer of per-thread values: a shfl_xor butterfly inside each group of
min(tpr, 32) lanes; when a row spans several warps, lane 0 of each warp writes its partial to shared memory, one
barrier, and every warp reduces the row's partials again with a butterfly; a final shfl from the group's first lane
makes every thread of the row hold bit-identical results (the merges are not bitwise symmetric once FMAs contract).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from compiler_core.errors import WorkloadError
from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.ir.expr import pow2_ceil
from compiler_core.space import Constraint, Knob, Space

WARP = 32  # the shuffles below exchange over 32 lanes (full-warp masks): spaces refuse other warp sizes
CACHE_MAX_FLOATS = 64  # register budget per thread for a row cached by `cache_row`
CACHE_OVERHEAD = 32  # registers a cached-row thread needs beside the cache (addresses, statistics, temporaries)
NEG_INF = float("-inf")
POW2_THREADS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
POW2_ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256)

Merge = Callable[[list, list], list]


# ---- the mapping of threads onto rows --------------------------------------------------------------------
@dataclass(frozen=True)
class RowMap:
    rows: int
    cols: int
    tpr: int  # threads per row: a power of two, 1..1024
    rpb: int  # rows per block
    vec: int  # contiguous elements per chunk (1 or 4; 4 needs cols % 4 == 0)
    bx: E.Var
    ty: E.Var
    tx: E.Var

    @property
    def nchunks(self) -> int:
        return -(-self.cols // self.vec)

    @property
    def iters(self) -> int:
        """Chunks the busiest thread of a row walks."""
        return -(-self.nchunks // self.tpr)

    @property
    def row(self) -> E.Expr:
        return self.bx * self.rpb + self.ty

    @property
    def lane(self) -> E.Expr:
        """Lane in the warp: tx is the fastest thread index and tpr divides 32 or is a multiple of it."""
        return (self.ty * self.tpr + self.tx) % WARP if self.tpr < WARP else self.tx % WARP

    def col(self, k: E.Expr) -> E.Expr:
        """First column of this thread's chunk ordinal k."""
        return (self.tx + k * self.tpr) * self.vec

    def guard(self, k: E.Expr, walked: int) -> E.Expr | None:
        """Condition that chunk ordinal k (0 <= k < walked) lies inside a real row; None when always true."""
        conds = []
        if walked * self.tpr != self.nchunks:
            conds.append(self.tx + k * self.tpr < self.nchunks)
        if self.rows % self.rpb:
            conds.append(self.row < self.rows)
        if not conds:
            return None
        return conds[0] if len(conds) == 1 else conds[0] & conds[1]


@contextlib.contextmanager
def row_threads(b: IRBuilder, rows: int, cols: int, config: dict):
    """Opens blockIdx.x / threadIdx.y / threadIdx.x loops and yields the RowMap of a row-op config."""
    tpr, rpb, vec = config["threads_per_row"], config["rows_per_block"], config["vec"]
    with b.loop("bx", E.ceil_div(rows, rpb), S.ForKind.BLOCK_X) as bx, \
            b.loop("ty", rpb, S.ForKind.THREAD_Y) as ty, \
            b.loop("tx", tpr, S.ForKind.THREAD_X) as tx:
        yield RowMap(rows, cols, tpr, rpb, vec, bx, ty, tx)


# ---- chunk copies between a global row and registers -------------------------------------------------------
def _copy(b: IRBuilder, dst: S.Buffer, dst_at, src: S.Buffer, src_at, vec: int, name: str) -> None:
    """dst[dst_at + l] = src[src_at + l] for l < vec: one 128-bit move once the vectorize pass has run."""
    with b.loop(name, vec, S.ForKind.VECTORIZED) as lv:
        b.store(dst, dst_at + lv, src[src_at + lv])


def load_chunk(b: IRBuilder, m: RowMap, src: S.Buffer, regs: S.Buffer, slot, k, walked: int,
               fill: float | None, per_row: bool = True) -> None:
    """regs[slot : slot+vec] = chunk ordinal k of this thread's row of `src` (or of the 1-D `src` when not per_row);
    `fill` goes where the chunk lies outside the row (nothing is read there)."""
    base = m.row * m.cols + m.col(k) if per_row else m.col(k)
    cond = m.guard(k, walked)
    if cond is None:
        _copy(b, regs, slot, src, base, m.vec, "lv")
        return
    with b.if_else(cond) as otherwise:
        _copy(b, regs, slot, src, base, m.vec, "lv")
        if fill is not None:
            otherwise()
            with b.loop("lf", m.vec, S.ForKind.UNROLLED) as lf:
                b.store(regs, slot + lf, E.FloatImm(fill))


def store_chunk(b: IRBuilder, m: RowMap, dst: S.Buffer, regs: S.Buffer, slot, k, walked: int) -> None:
    """Chunk ordinal k of this thread's row of `dst` = regs[slot : slot+vec], where it lies inside the row."""
    cond = m.guard(k, walked)
    if cond is None:
        _copy(b, dst, m.row * m.cols + m.col(k), regs, slot, m.vec, "sv")
        return
    with b.if_(cond):
        _copy(b, dst, m.row * m.cols + m.col(k), regs, slot, m.vec, "sv")


@contextlib.contextmanager
def streamed_walk(b: IRBuilder, m: RowMap, unroll: int, regs_name: str):
    """A serial walk over the row in groups of `unroll` chunks; yields (registers of one group, the chunk ordinal
    of group slot i as a function, chunks walked in all) inside the group loop."""
    groups = -(-m.iters // unroll)
    with b.loop(f"{regs_name}_g", groups, S.ForKind.SERIAL) as g, \
            b.allocate(regs_name, "float32", (unroll * m.vec,), S.Scope.LOCAL) as regs:
        yield regs, (lambda i: g * unroll + i), groups * unroll


# ---- expressions ---------------------------------------------------------------------------------------------
def tree(op: Callable[[E.Expr, E.Expr], E.Expr], values: list) -> E.Expr:
    """Balanced reduction tree of `values` (short dependency chains; no expression is duplicated)."""
    values = list(values)
    while len(values) > 1:
        values = [op(values[i], values[i + 1]) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def add(x, y) -> E.Expr:
    return x + y


def safe_max(mx: E.Expr) -> E.Expr:
    """The max to subtract before exp: 0 where it is -inf (a row with no finite value yet), so exp(-inf - 0) = 0
    instead of exp(NaN)."""
    return E.select(mx.eq(E.FloatImm(NEG_INF)), E.FloatImm(0.0), mx)


def exp(x: E.Expr) -> E.Expr:
    return E.call("exp", x)


# ---- merges: combine two partial results of the same row ---------------------------------------------------
def merge_sum(a: list, b: list) -> list:
    return [x + y for x, y in zip(a, b, strict=True)]


def merge_max(a: list, b: list) -> list:
    return [E.max_(x, y) for x, y in zip(a, b, strict=True)]


def merge_max_sum(a: list, b: list) -> list:
    """Online softmax: (max, sum of exp(x - max)) pairs; identity (-inf, 0)."""
    mx = E.max_(a[0], b[0])
    sh = safe_max(mx)
    return [mx, a[1] * exp(a[0] - sh) + b[1] * exp(b[0] - sh)]


def merge_welford(a: list, b: list) -> list:
    """Chan et al.: (count, mean, M2) triples with float counts; identity (0, 0, 0)."""
    n = a[0] + b[0]
    d = b[1] - a[1]
    f = b[0] / E.max_(n, E.FloatImm(1.0))  # nb / n, and 0 when both are empty
    return [n, a[1] + d * f, a[2] + b[2] + d * d * a[0] * f]


# ---- reductions ------------------------------------------------------------------------------------------------
def merge_into(b: IRBuilder, acc: S.Buffer, values: list, merge: Merge) -> None:
    """acc[:] = merge(acc, values), every new value computed before any is written."""
    n = acc.shape[0]
    new = merge([acc[i] for i in range(n)], values)
    if n == 1:
        b.store(acc, 0, new[0])
        return
    with b.allocate(f"{acc.name}_new", "float32", (n,), S.Scope.LOCAL) as tmp:
        for i in range(n):
            b.store(tmp, i, new[i])
        for i in range(n):
            b.store(acc, i, tmp[i])


def warp_butterfly(b: IRBuilder, acc: S.Buffer, merge: Merge, width: int) -> None:
    """shfl_xor steps width/2 .. 1: every lane of each aligned group of `width` lanes ends with the group's merge.
    All 32 lanes execute every shuffle."""
    n = acc.shape[0]
    off = width // 2
    while off >= 1:
        with b.allocate(f"{acc.name}_x{off}", "float32", (n,), S.Scope.LOCAL) as other:
            for i in range(n):
                b.store(other, i, E.call("shfl_xor", acc[i], off))
            merge_into(b, acc, [other[i] for i in range(n)], merge)
        off //= 2


def row_allreduce(b: IRBuilder, m: RowMap, acc: S.Buffer, merge: Merge) -> None:
    """Merges `acc` over the threads of each row; afterwards every thread of the row holds the same result.

    Must be reached by every thread of the block (it has a barrier when a row spans several warps). Its shared
    buffer is named after `acc`: give each reduction of a kernel its own `acc` name."""
    n = acc.shape[0]
    width = min(m.tpr, WARP)
    warp_butterfly(b, acc, merge, width)
    if m.tpr > WARP:
        nw = m.tpr // WARP
        with b.allocate(f"{acc.name}_red", "float32", (n, m.rpb, nw), S.Scope.SHARED) as red:
            with b.if_(m.lane.eq(0)):
                for i in range(n):
                    b.store(red, (i, m.ty, m.tx // WARP), acc[i])
            b.barrier()
            # each aligned group of nw lanes holds all the row's partials, so the butterfly completes in every lane
            for i in range(n):
                b.store(acc, i, red[i, m.ty, m.lane % nw])
            warp_butterfly(b, acc, merge, nw)
    if width > 1:
        first = (m.ty * m.tpr) % WARP if m.tpr < WARP else E.IntImm(0)
        for i in range(n):
            b.store(acc, i, E.call("shfl_idx", acc[i], first))


# ---- the knobs the three row ops share ----------------------------------------------------------------------------
def row_knobs(extra: tuple = ()) -> tuple:
    return (
        Knob("threads_per_row", POW2_THREADS, "threads sharing one row (a warp is 32; more use a block reduction)"),
        Knob("rows_per_block", POW2_ROWS, "rows handled by one block (threadIdx.y)"),
        Knob("vec", (1, 4), "contiguous elements per load: 4 is one 128-bit load"),
        Knob("unroll", (1, 2, 4), "chunks a thread loads before using them (loads in flight) in a streamed walk"),
        *extra,
    )


def chunks_per_thread(w, c: dict) -> int:
    nchunks = -(-w["cols"] // c["vec"])
    return -(-nchunks // c["threads_per_row"])


def row_constraints(w, target) -> tuple:
    rows, cols = w["rows"], w["cols"]
    if target.warp_size != WARP:
        raise WorkloadError(f"the CUDA row templates shuffle over {WARP}-lane warps; {target.arch} has "
                            f"{target.warp_size}-lane warps")

    def block(c):
        return c["threads_per_row"] * c["rows_per_block"]

    return (
        Constraint(f"threads_per_row * rows_per_block must be whole warps, {WARP}..{target.max_threads_per_block}",
                   lambda c: WARP <= block(c) <= target.max_threads_per_block and block(c) % WARP == 0),
        Constraint("vec 4 needs cols % 4 == 0 (aligned 128-bit loads)",
                   lambda c: c["vec"] == 1 or cols % 4 == 0),
        Constraint("threads_per_row must not exceed max(32, the row's chunks rounded up to a power of two)",
                   lambda c: c["threads_per_row"] <= max(WARP, pow2_ceil(-(-cols // c["vec"])))),
        Constraint("rows_per_block must not exceed max(rows rounded up to a power of two, 32 // threads_per_row)",
                   lambda c: c["rows_per_block"] <= max(pow2_ceil(rows), WARP // c["threads_per_row"])),
        Constraint("unroll must not exceed the chunks each thread walks",
                   lambda c: c["unroll"] <= max(1, chunks_per_thread(w, c))),
    )


def cache_fits(w, c: dict, target) -> bool:
    """The cached part of the row fits the thread's share of the register file beside CACHE_OVERHEAD others."""
    floats = chunks_per_thread(w, c) * c["vec"]
    share = target.register_file // (c["threads_per_row"] * c["rows_per_block"])
    return floats <= CACHE_MAX_FLOATS and floats + CACHE_OVERHEAD <= share


def cache_constraints(w, target) -> tuple:
    return (
        Constraint(f"cache_row needs ceil(cols / vec / threads_per_row) * vec <= {CACHE_MAX_FLOATS} floats, and "
                   f"{CACHE_OVERHEAD} more registers within {target.register_file} / block threads",
                   lambda c: not c["cache_row"] or cache_fits(w, c, target)),
        Constraint("cache_row walks the whole row unrolled: unroll must be 1",
                   lambda c: not c["cache_row"] or c["unroll"] == 1),
    )


def cached_row_space(w, target) -> Space:
    """The space of ops whose threads may keep their part of the row in registers (softmax, layernorm)."""
    knobs = row_knobs((Knob("cache_row", (0, 1), "keep the thread's part of the row in registers (X read once)"),))
    return Space(knobs, row_constraints(w, target) + cache_constraints(w, target))


def default_row_config(w, target, cache: bool) -> dict:
    """A sound untuned start: 128-bit loads when aligned, ~8 chunks per thread, ~128 threads per block."""
    rows, cols = w["rows"], w["cols"]
    vec = 4 if cols % 4 == 0 else 1
    nchunks = -(-cols // vec)
    tpr = min(1024, pow2_ceil(-(-nchunks // 8)))
    rpb = min(max(1, 128 // tpr), max(pow2_ceil(rows), WARP // tpr))
    iters = -(-nchunks // tpr)
    config = {"threads_per_row": tpr, "rows_per_block": rpb, "vec": vec}
    cached = cache and cache_fits(w, config, target)
    config["unroll"] = 1 if cached else max(u for u in (1, 2, 4) if u <= max(1, iters))
    if cache:
        config["cache_row"] = int(cached)
    return config
