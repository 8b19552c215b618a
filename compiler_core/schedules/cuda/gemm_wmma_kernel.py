"""The WMMA GEMM's kernel (gemm_wmma): the IR a config builds for one block's tile, main loop and epilogue.

Per block_k step the A tile (block_m x block_k) and the B tile (block_k x block_n) are copied into
shared memory, rows padded by `pad` halves against bank conflicts, in chunks of 8/4/2 halves
(the widest that divides K for A, N for B, so every chunk is aligned and lies wholly in or out of
range; global arrays must start 16-byte aligned, as cudaMalloc's do) or single halves. Out-of-range
chunks are zero-filled with plain stores, so any shape is exact.
With `stages` >= 2 (sm_80+) chunks travel by cp.async into a ring of `stages` buffers, one barrier
per step; with stages = 1 they go through registers, two barriers per step.

The epilogue stores each accumulator fragment into a per-warp 16x16 float32 staging tile in shared
memory; the warp's lanes convert it to half and write C with bounds guards. Every barrier sits in
code all threads run the same number of times (loop trip counts are workload constants).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cuda import gemm_wmma_implicit as implicit_b
from compiler_core.schedules.cuda.gemm_wmma_tiling import (
    FRAG,
    WARP,
    Problem,
    Tiling,
    b_gathered,
    shared_buffers,
    vector_width,
)

COPY_WORDS = 16  # registers a thread may fill with loads before storing them to shared memory


@dataclass(frozen=True)
class _Operand:
    """How one input's tile reaches shared memory: `rows` x `cols` from (row0, col0) into ring `smem`."""
    src: S.Buffer
    smem: S.Buffer
    rows: int
    cols: int
    row_limit: int | None  # None where the tiles divide the dimension: no guard needed
    col_limit: int | None
    vw: int  # halves per chunk
    batch: E.Expr | None  # blockIdx.z for batch_matmul
    flat: Callable | None = None  # (r, c) -> flat index, for a source whose shape is not (rows, cols) (conv2d's)
    guard: Callable | None = None  # (r, c) -> whether the chunk holds data (else zeros: conv2d's padding)

    def at(self, r, c) -> tuple:
        return (self.flat(r, c),) if self.flat is not None else _at(self.batch, r, c)

    def in_range(self, r, c):
        """The guard of a chunk starting at global (r, c), or None where every chunk is in range."""
        limits = _all_below(((r, self.row_limit), (c, self.col_limit)))
        extra = self.guard(r, c) if self.guard is not None else None
        return limits if extra is None else extra if limits is None else limits & extra


def _at(batch, r, c) -> tuple:
    """Index of element (r, c) of a matmul operand, or of batch entry `batch` of a batch_matmul one."""
    return (r, c) if batch is None else (batch, r, c)


def _all_below(pairs):
    """`v0 < limit0 && ...` over the pairs whose limit is not None; None if there are none."""
    conds = [v < limit for v, limit in pairs if limit is not None]
    return None if not conds else conds[0] if len(conds) == 1 else conds[0] & conds[1]


def _when(b: IRBuilder, cond):
    """`if (cond)` around the block's statements, or nothing where cond is None."""
    return contextlib.nullcontext() if cond is None else b.if_(cond)


def problem_schedule(name: str, p: Problem, config: dict) -> S.Module:
    t = Tiling.of(config)
    lead = (p.batch,) if p.batched else ()
    if p.implicit is None:
        A = S.Buffer("in_A", p.dtype, (*lead, p.M, p.K))
        B = S.Buffer("in_B", p.dtype, (*lead, p.K, p.N))
        C = S.Buffer("out_C", p.dtype, (*lead, p.M, p.N))
        args = (A, B, C)
    else:
        A, B, C = p.implicit.a, p.implicit.b, p.implicit.out
        args = (*p.implicit.inputs, C)
    b = IRBuilder()
    with contextlib.ExitStack() as loops:
        bz = loops.enter_context(b.loop("bz", p.batch, S.ForKind.BLOCK_Z)) if p.batched else None
        tiles = E.ceil_div(p.M, t.bm) * E.ceil_div(p.N, t.bn)
        bx = loops.enter_context(b.loop("bx", tiles, S.ForKind.BLOCK_X))
        tx = loops.enter_context(b.loop("tx", t.threads, S.ForKind.THREAD_X))
        b.emit(_block(p, t, config, (A, B, C), bz, bx, tx))
    imp = p.implicit
    workspaces, prologue = (imp.workspaces, imp.prologue) if imp is not None else ((), ())
    func = S.PrimFunc(f"{name}_wmma", args + workspaces, b.get())
    # the prologue's layout copies write every workspace element before the GEMM reads it
    return S.Module(name, (*prologue, func), args, workspaces, len(args) - 1, overwrites_workspaces=bool(prologue))


def _block(p: Problem, t: Tiling, config: dict, globals_: tuple, bz, bx, tx) -> S.Stmt:
    """One block's work, wrapped in its shared-memory and fragment allocations."""
    A, B, C = globals_
    kmajor = p.implicit.kmajor if p.implicit is not None else None
    As, Bs, Cs = shared_buffers(t, p.dtype, kmajor is not None)
    frags = (S.Buffer("a_frag", p.dtype, (t.fm,), S.Scope.WMMA_A),
             S.Buffer("b_frag", p.dtype, (t.fn,), S.Scope.WMMA_B if kmajor is None else S.Scope.WMMA_B_COL),
             S.Buffer("acc", "float32", (t.fm * t.fn,), S.Scope.WMMA_ACC))
    flat_a = (lambda r, c: r * p.K + c) if p.implicit is not None else None
    a_op = _Operand(A, As, t.bm, t.bk, _limit(p.M, t.bm), _limit(p.K, t.bk), vector_width(p.K), bz, flat_a)
    if kmajor is None:
        b_op = _Operand(B, Bs, t.bk, t.bn, _limit(p.K, t.bk), _limit(p.N, t.bn), vector_width(p.N), bz)
    else:  # rows j, columns k, like A
        b_op = _Operand(B, Bs, t.bn, t.bk, _limit(p.N, t.bn), _limit(p.K, t.bk), kmajor.vw, None, kmajor.index,
                        kmajor.guard)
    b = IRBuilder()
    with contextlib.ExitStack() as lets:
        def let(name, value):
            return lets.enter_context(b.let(name, value))

        tm, tn = _raster(let, bx, t.group, E.ceil_div(p.M, t.bm), E.ceil_div(p.N, t.bn))
        m0, n0, warp = let("m0", tm * t.bm), let("n0", tn * t.bn), let("warp", tx // WARP)
        wrow, wcol = let("wrow", (warp // t.wn) * (t.fm * FRAG)), let("wcol", (warp % t.wn) * (t.fn * FRAG))

        gathered = None if not b_gathered(p) else implicit_b.GatheredB(b, p.implicit, Bs, config, t.threads, p.K,
                                                                        p.N, tx, n0)

        def load(kt, stage, use_async: bool) -> None:
            _copy(b, a_op, stage, m0, kt * t.bk, tx, t.threads, use_async)
            if kmajor is not None:
                _copy(b, b_op, stage, n0, kt * t.bk, tx, t.threads, use_async)
            elif gathered is None:
                _copy(b, b_op, stage, kt * t.bk, n0, tx, t.threads, use_async)
            else:
                gathered.direct(kt, stage)

        def prefetch(kt, stage) -> None:
            """The ring's refill inside the k loop; an implicit B only reaches its staging registers here."""
            if gathered is None:
                load(kt, stage, use_async=True)
                return
            _copy(b, a_op, stage, m0, kt * t.bk, tx, t.threads, True)
            gathered.fetch(kt)

        def mma(stage) -> None:
            _mma_step(b, t, As, Bs, frags, stage, wrow, wcol, kmajor is not None)

        with b.loop("f", t.fm * t.fn, S.ForKind.UNROLLED) as f:
            b.evaluate(E.call("wmma_fill", frags[2][f], E.FloatImm(0.0)))
        k_steps = E.ceil_div(p.K, t.bk)
        with gathered.setup(staged=t.stages > 1) if gathered else contextlib.nullcontext():
            if t.stages == 1:
                _main_loop_sync(b, k_steps, load, mma)
            else:
                _main_loop_async(b, t.stages, k_steps, (load, prefetch), mma, gathered.put if gathered else None)
        store_at = _at if p.implicit is None else (lambda _, r, c: (p.implicit.out_index(r, c),))
        _epilogue(b, p, t, (C, store_at), Cs, frags[2], bz, (m0 + wrow, n0 + wcol), warp, tx % WARP)
    body = b.get()
    for buf in reversed((As, Bs, Cs, *frags)):
        body = S.Allocate(buf, body)
    return body


def _address(buf: S.Buffer, indices: tuple) -> E.Address:
    return E.Address(buf, tuple(E.as_expr(i) for i in indices))


def _limit(extent: int, tile: int) -> int | None:
    return extent if extent % tile else None


def _raster(let, bx, group: int, m_tiles: int, n_tiles: int) -> tuple:
    """(tile row, tile column) of block bx: row-major, or in groups of `group` tile rows taken column by column."""
    if group == 1:
        return let("tm", bx // n_tiles), let("tn", bx % n_tiles)
    width = group * n_tiles
    first = let("first_m", (bx // width) * group)
    rows = let("group_rows", E.min_(m_tiles - first, group))
    return let("tm", first + (bx % width) % rows), let("tn", (bx % width) // rows)


def _main_loop_sync(b: IRBuilder, k_steps: int, load, mma) -> None:
    """stages = 1: copy through registers, barrier, compute, barrier (before the next copy overwrites)."""
    with b.loop("kt", k_steps) as kt:
        load(kt, 0, use_async=False)
        b.barrier()
        mma(0)
        b.barrier()


def _main_loop_async(b: IRBuilder, stages: int, k_steps: int, loads: tuple, mma, put=None) -> None:
    """A ring of `stages` buffers filled by cp.async, one commit group per K step (empty ones included),
    so that at step kt `wait_prior(stages - 2)` means: this thread's copies of step kt have landed.
    `loads` = (fill of a step before the loop, refill inside it). `put(stage)`, if given, stores what the refill
    staged in registers after the step's math: into the buffer the barrier freed, published by the next one."""
    load, prefetch = loads
    ahead = stages - 1
    for s in range(ahead):
        if s < k_steps:
            load(s, s, use_async=True)
        b.evaluate(E.call("cp_async_commit"))
    with b.loop("kt", k_steps) as kt:
        b.evaluate(E.call("cp_async_wait", stages - 2))
        # Publishes every thread's copies of step kt and ends all reads of step kt-1's buffer,
        # which the prefetch below refills: (kt + ahead) % stages == (kt - 1) % stages.
        b.barrier()
        with b.if_(kt + ahead < k_steps):
            prefetch(kt + ahead, (kt + ahead) % stages)
        b.evaluate(E.call("cp_async_commit"))
        mma(kt % stages)
        if put is not None:
            with b.if_(kt + ahead < k_steps):
                put((kt + ahead) % stages)


def _copy(b: IRBuilder, op: _Operand, stage, row0, col0, tx, threads: int, use_async: bool) -> None:
    """The block's threads copy the tile chunk by chunk, consecutive threads taking consecutive chunks of a
    row. In-range chunks move whole; out-of-range ones (wholly out, as vw divides the row length) become zeros."""
    per_row = op.cols // op.vw
    chunks = op.rows * per_row
    rounds = E.ceil_div(chunks, threads)  # a power of two, as are all tile sizes and thread counts
    # cp.async holds no registers: unroll fully. Moves through registers: at most COPY_WORDS in flight.
    unroll = rounds if use_async and op.vw >= 2 else min(rounds, COPY_WORDS // max(1, op.vw // 2))
    with b.loop("ro", rounds // unroll) as ro, b.loop("ri", unroll, S.ForKind.UNROLLED) as ri:
        c = (ro * unroll + ri) * threads + tx
        with _when(b, c < chunks if chunks % threads else None):
            r, col = c // per_row, (c % per_row) * op.vw
            guard = op.in_range(row0 + r, col0 + col)
            if guard is None:
                _move_chunk(b, op, stage, r, col, row0 + r, col0 + col, use_async)
            else:
                with b.if_else(guard) as otherwise:
                    _move_chunk(b, op, stage, r, col, row0 + r, col0 + col, use_async)
                    otherwise()
                    with b.loop("e", op.vw, S.ForKind.UNROLLED) as e:
                        b.store(op.smem, (stage, r, col + e), E.FloatImm(0.0, op.smem.dtype))


def _move_chunk(b: IRBuilder, op: _Operand, stage, r, col, grow, gcol, use_async: bool) -> None:
    if use_async and op.vw >= 2:  # cp.async moves 4, 8 or 16 bytes
        b.evaluate(E.call("cp_async", _address(op.smem, (stage, r, col)), _address(op.src, op.at(grow, gcol)),
                          op.vw * 2))
        return
    with b.loop("e", op.vw, S.ForKind.VECTORIZED) as e:  # one 32/64/128-bit move (vectorize pass)
        b.store(op.smem, (stage, r, col + e), op.src[op.at(grow, gcol + e)])


def _mma_step(b: IRBuilder, t: Tiling, As, Bs, frags: tuple, stage, wrow, wcol, b_kmajor: bool) -> None:
    """The warp's fragment tile += A tile x B tile of one shared buffer, 16 deep at a time (B's tile j-major, read
    by column-major fragments, where `b_kmajor`)."""
    a, bf, acc = frags
    with b.loop("kk", t.bk // FRAG, S.ForKind.UNROLLED) as kk:
        with b.loop("i", t.fm, S.ForKind.UNROLLED) as i:
            b.evaluate(E.call("wmma_load", a[i], _address(As, (stage, wrow + i * FRAG, kk * FRAG)), t.bk + t.pad))
        with b.loop("j", t.fn, S.ForKind.UNROLLED) as j:
            if b_kmajor:
                b.evaluate(E.call("wmma_load", bf[j], _address(Bs, (stage, wcol + j * FRAG, kk * FRAG)), t.bk + t.pad))
            else:
                b.evaluate(E.call("wmma_load", bf[j], _address(Bs, (stage, kk * FRAG, wcol + j * FRAG)), t.bn + t.pad))
        with b.loop("i", t.fm, S.ForKind.UNROLLED) as i:
            with b.loop("j", t.fn, S.ForKind.UNROLLED) as j:
                f = i * t.fn + j
                b.evaluate(E.call("wmma_mma", acc[f], a[i], bf[j], acc[f]))


def _epilogue(b: IRBuilder, p: Problem, t: Tiling, out: tuple, Cs, acc, bz, origin: tuple, warp, lane) -> None:
    """Fragment by fragment: store it to the warp's float32 staging tile, then each lane converts and
    writes 8 of its 256 elements (two 16-wide rows per step: 32-byte runs of C). Barriers are block-wide
    (there is no warp barrier intrinsic), so all warps walk the same fragment count."""
    (C, store_at), (row0, col0) = out, origin
    with b.loop("i", t.fm, S.ForKind.UNROLLED) as i:
        with b.loop("j", t.fn, S.ForKind.UNROLLED) as j:
            b.evaluate(E.call("wmma_store", _address(Cs, (warp, 0, 0)), acc[i * t.fn + j], FRAG))
            b.barrier()
            with b.loop("q", FRAG * FRAG // WARP, S.ForKind.UNROLLED) as q:
                r, c = q * (WARP // FRAG) + lane // FRAG, lane % FRAG
                grow, gcol = row0 + i * FRAG + r, col0 + j * FRAG + c
                with _when(b, _all_below(((grow, _limit(p.M, t.bm)), (gcol, _limit(p.N, t.bn))))):
                    b.store(C, store_at(bz, grow, gcol), E.cast(C.dtype, Cs[warp, r, c]))
            b.barrier()
