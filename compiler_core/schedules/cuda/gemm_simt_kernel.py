"""The SIMT GEMM's kernel (gemm_simt): the IR a config builds, one method per phase of a block's work.

One block computes a BM x BN tile of C for one (batch, split) pair: the tiles run along blockIdx.x,
batch x split_k along blockIdx.z. Its (BM/TM) x (BN/TN) threads each own a TM x TN register tile,
made of chunks of up to 4 contiguous rows/columns spaced BM*q/TM apart, so fragment reads from
shared memory are 128-bit and conflict-free. Per BK step every thread loads its share of the A and
B tiles from global memory into registers (128-bit loads along the contiguous axis when `vec` = 4),
stores them into shared tiles As[BK][BM+pad], Bs[BK][BN+pad] (k-major, so A is stored transposed),
then runs BK rank-1 updates acc[TM][TN] += a_frag[TM] x b_frag[TN]. With double buffering the next
tile is fetched into registers while the current one is multiplied, and one barrier per step
suffices.

Any shape is exact, and odd shapes keep full-tile speed (gemm_simt_edges): blocks whose tile lies
inside C run a path with no bounds checks at all; only edge blocks (the last row or column of tiles)
run a copy that clamps out-of-range rows and columns onto the last one in range on load (what they
feed is never stored, so the loads need no condition) and skips them on store. A partial
k tile (K % BK != 0) runs first, so only the block's first k tile checks k and the k loop never
does. Checks a shape provably never needs are left out. An operand whose contiguous extent is not a
multiple of 4 loads scalars (coalesced) in interior blocks too: its rows start at every alignment,
so no 128-bit load of it is legal.

With split_k > 1 every split writes its partial tile into its own slice of a workspace laid out like
the output, and a second kernel sums the slices (gemm_split_k: deterministic, needs no zeroed memory).
Every barrier sits in code all threads of a block reach the same number of times: loop trip counts
are block-uniform (workload constants, or chosen by the block's split index alone), no barrier is
under a thread-dependent condition, and the only condition around barriers, interior vs edge, reads
blockIdx alone, so all threads of a block take the same path.
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cuda import gemm_simt_gather as gather
from compiler_core.schedules.cuda.gemm_simt import LANES, Gemm, Operand, Tiling
from compiler_core.schedules.cuda.gemm_simt_edges import Checks, KTiles, all_of, guarded, k_tiles, split_blocks
from compiler_core.schedules.cuda.gemm_split_k import split_k_sum


@dataclass(frozen=True)
class _Side:
    """One operand as the block loads it: its tile has `extent` rows/cols along m (A) or n (B)."""
    op: Operand
    is_a: bool
    extent: int
    vec: int
    loads: int
    origin: E.Expr
    limit: int
    regs: S.Buffer
    tile: S.Buffer

    def element(self, x, k):
        return (x, k) if self.is_a else (k, x)


class _Kernel:
    """Builds the main kernel's body; one method per phase."""

    def __init__(self, g: Gemm, tl: Tiling, dst: S.Buffer) -> None:
        self.g, self.tl, self.dst, self.ib = g, tl, dst, IRBuilder()
        self.lets = 0

    def let(self, name: str, value):
        self.lets += 1
        return self.ib.let(f"{name}_{self.lets}", value)

    def build(self) -> S.Stmt:
        g, tl, ib = self.g, self.tl, self.ib
        tiles_n = E.ceil_div(g.N, tl.BN)
        tiles = E.ceil_div(g.M, tl.BM) * tiles_n
        with ib.loop("bz", g.batch * tl.split, S.ForKind.BLOCK_Z) as bz, \
                ib.loop("bx", tiles, S.ForKind.BLOCK_X) as bx, \
                ib.loop("tid", tl.threads, S.ForKind.THREAD_X) as tid, \
                self.let("batch", bz // tl.split) as batch, \
                (self.let("split", bz % tl.split) if tl.split > 1 else contextlib.nullcontext(E.IntImm(0))) as split, \
                self.let("m0", bx // tiles_n * tl.BM) as m0, self.let("n0", bx % tiles_n * tl.BN) as n0, \
                self.let("ty", tid // (tl.BN // tl.TN)) as ty, self.let("tx", tid % (tl.BN // tl.TN)) as tx:
            self.batch, self.split, self.tid, self.ty, self.tx = batch, split, tid, ty, tx
            self.m0, self.n0 = m0, n0
            self._with_buffers()
        return ib.get()

    def _with_buffers(self) -> None:
        g, tl, ib = self.g, self.tl, self.ib
        local, shared = S.Scope.LOCAL, S.Scope.SHARED
        with ib.allocate("As", "float32", (tl.stages, tl.BK, tl.BM), shared, tl.pad) as As, \
                ib.allocate("Bs", "float32", (tl.stages, tl.BK, tl.BN), shared, tl.pad) as Bs, \
                ib.allocate("acc", "float32", (tl.TM * tl.TN,), local) as acc, \
                ib.allocate("a_frag", "float32", (tl.TM,), local) as a_frag, \
                ib.allocate("b_frag", "float32", (tl.TN,), local) as b_frag, \
                ib.allocate("a_ld", "float32", (tl.loads_a * tl.vec_a,), local) as a_ld, \
                ib.allocate("b_ld", "float32", (tl.loads_b * tl.vec_b,), local) as b_ld:
            self.acc, self.a_frag, self.b_frag = acc, a_frag, b_frag
            self.sa = _Side(g.a, True, tl.BM, tl.vec_a, tl.loads_a, self.m0, g.M, a_ld, As)
            self.sb = _Side(g.b, False, tl.BN, tl.vec_b, tl.loads_b, self.n0, g.N, b_ld, Bs)
            with ib.loop("i", tl.TM * tl.TN, S.ForKind.UNROLLED) as i:
                ib.store(acc, i, 0.0)
            with self._gather_tables():
                self._paths()

    def _paths(self) -> None:
        g, tl, ib = self.g, self.tl, self.ib
        kt = k_tiles(g.K, tl.BK, tl.split, tl.tiles_per_split, self.split)
        blocks = split_blocks(g.M, g.N, tl.BM, tl.BN, self.m0, self.n0)
        if blocks.only is not None:
            self._path(kt, blocks.only)
            return
        with ib.if_else(blocks.interior, blocks.interior_share) as edge:  # block-uniform: reads blockIdx only
            self._path(kt, Checks())
            edge()
            self._path(kt, blocks.edge)

    def _gathered_sides(self) -> list:
        return [side for side in (self.sa, self.sb) if side.is_a in self.tl.gathered]

    @contextlib.contextmanager
    def _gather_tables(self):
        """gather = "table": each gathered operand's k table of the block's split range, filled at kernel start."""
        self.tables, self.k_begin = {}, self.split * (self.tl.tiles_per_split * self.tl.BK)
        with contextlib.ExitStack() as stack:
            if self.tl.gather == "table":
                for side in self._gathered_sides():
                    name = f"{side.regs.name[0]}_tab"
                    table = stack.enter_context(self.ib.allocate(name, "int32", (self.tl.table_length,),
                                                                 S.Scope.SHARED))
                    gather.fill_table(self.ib, side.op.gather, table, self.k_begin, self.g.K,
                                      self.tl.split * self.tl.table_length > self.g.K, self.tid, self.tl.threads)
                    self.tables[side.is_a] = table
            yield

    def _path(self, kt: KTiles, checks: Checks) -> None:
        """The whole tile (k loop and epilogue), checking the bounds `checks` names; gathered operands' per-thread
        address parts are computed first, once."""
        self.hoisted = {}
        with contextlib.ExitStack() as stack:
            for side in self._gathered_sides():
                x_of_slot = functools.partial(self._slot_x, side, checks)
                slots = self.tl.slots(side.is_a, side.op.contig)
                self.hoisted[side.is_a] = stack.enter_context(
                    gather.hoist(self.ib, side.op.gather, side.regs.name[0], slots, self.batch, x_of_slot))
            self._main_loop(kt, checks)
            self._epilogue(checks)

    def _slot_x(self, side: _Side, checks: Checks, slot):
        """The (clamped) row or column that this thread's load `slot` reads."""
        _, x = self._tile_coords(side, slot * self.tl.threads + self.tid)
        return self._clamp(side, side.origin + x, checks)

    def _clamp(self, side: _Side, gx, checks: Checks):
        if checks.m if side.is_a else checks.n:
            return E.min_(gx, side.limit - (side.vec if side.op.contig == "mn" else 1))  # keeps 128-bit alignment
        return gx

    def _main_loop(self, kt: KTiles, checks: Checks) -> None:
        """Position 0 checks k where it may be the partial tile; every later position is a full tile."""
        ib, first = self.ib, Checks(checks.m, checks.n, kt.check_first)
        if self.tl.stages == 1:
            after = kt.count
            if kt.check_first:  # the first step peeled: the loop's loads never check k
                self._step(kt.first, first)
                after = kt.count_after_first
            with ib.loop("kt", after) as t:
                self._step(kt.k0(t, 1 if kt.check_first else 0), checks)
            return
        self._load_global(kt.first, first)
        self._store_shared(0)
        ib.barrier()
        with ib.loop("kt", kt.count) as t:
            more = t + 1 < kt.count
            with ib.if_(more):
                self._load_global(kt.k0(t, 1), checks)
            self._compute(t % 2)
            with ib.if_(more):
                self._store_shared((t + 1) % 2)
            ib.barrier()  # outside both ifs: every thread reaches it once per k tile

    def _step(self, k0, checks: Checks) -> None:
        """One single-stage k step: load, stage in shared memory, multiply."""
        self._load_global(k0, checks)
        self._store_shared(0)
        self.ib.barrier()
        self._compute(0)
        self.ib.barrier()

    def _tile_coords(self, side: _Side, flat):
        """(k, x) of the first element of load `flat` within the tile; the contiguous axis is fastest."""
        if side.op.contig == "k":
            per = self.tl.BK // side.vec
            return flat % per * side.vec, flat // per
        per = side.extent // side.vec
        return flat // per, flat % per * side.vec

    def _loads(self, side: _Side, body) -> None:
        """Runs body(i, k, x) for each of this thread's loads of the tile; threads past the tile idle."""
        count = side.extent * self.tl.BK // side.vec
        with self.ib.loop(f"{side.regs.name}_i", side.loads, S.ForKind.UNROLLED) as i:
            flat = i * self.tl.threads + self.tid
            with guarded(self.ib, None if count % self.tl.threads == 0 else flat < count):
                body(i, *self._tile_coords(side, flat))

    def _load_global(self, k0, checks: Checks) -> None:
        for side in (self.sa, self.sb):
            self._loads(side, lambda i, k, x, side=side: self._load_one(side, i, k0 + k, side.origin + x, checks))

    def _load_one(self, side: _Side, i, gk, gx, checks: Checks) -> None:
        """Rows (A) or columns (B) past the edge are clamped onto the last one in range, not zero-filled: they
        feed only rows or columns of C that are never stored, and the load needs no condition. k past K feeds
        every element of C, so it is zero-filled."""
        k_ok = gk < self.g.K if checks.k else None
        if side.is_a in self.hoisted:
            self._load_gathered(side, i, gk, k_ok)
            return
        row, col = side.element(self._clamp(side, gx, checks), gk)
        guard = side.op.guard(self.batch, row, col) if side.op.guard else None
        self._load_at(side, i, side.op.index(self.batch, row, col), all_of(k_ok, guard))

    def _load_at(self, side: _Side, i, index, valid) -> None:
        """Load i of the side from `index`, zero where `valid` (None: always) fails."""
        ib, src, v = self.ib, side.op.buffer, side.vec
        if v == 1:
            ib.store(side.regs, i, src[index] if valid is None else E.select(valid, src[index], 0.0))
            return
        if valid is None:
            self._vector_load(side, i, index)
            return
        with ib.if_else(valid) as otherwise:
            self._vector_load(side, i, index)
            otherwise()
            with ib.loop("e", v, S.ForKind.UNROLLED) as e:
                ib.store(side.regs, i * v + e, 0.0)

    def _load_gathered(self, side: _Side, i, gk, k_ok) -> None:
        """Load i from the hoisted x part and the k part (the table entry, read once, or divisions). k past K
        (in the partial tile) reads a table entry of 0; `k_ok` zero-fills the load."""
        gat = side.op.gather
        base, starts = self.hoisted[side.is_a].parts(i)
        table = self.tables.get(side.is_a)
        if table is None:
            offset, shifts = gat.k_parts(gk)
            self._load_at(side, i, offset + base, all_of(k_ok, gat.inside(starts, shifts)))
            return
        with self.let("ent", table[gk - self.k_begin]) as entry:
            offset, shifts = gat.unpack(entry)
            self._load_at(side, i, offset + base, all_of(k_ok, gat.inside(starts, shifts)))

    def _vector_load(self, side: _Side, i, index) -> None:
        with self.ib.loop("e", side.vec, S.ForKind.VECTORIZED) as e:  # one 128-bit load
            self.ib.store(side.regs, i * side.vec + e, side.op.buffer[index + e])

    def _store_shared(self, stage) -> None:
        for side in (self.sa, self.sb):
            self._loads(side, lambda i, k, x, side=side: self._store_one(side, i, stage, k, x))

    def _store_one(self, side: _Side, i, stage, k, x) -> None:
        v = side.vec
        if side.op.contig == "k":  # transposing store, one float at a time
            with self.ib.loop("e", v, S.ForKind.UNROLLED) as e:
                self.ib.store(side.tile, (stage, k + e, x), side.regs[i * v + e])
        else:
            with self.ib.loop("e", v, S.ForKind.VECTORIZED) as e:
                self.ib.store(side.tile, (stage, k, x + e), side.regs[i * v + e])

    def _fragment(self, frag: S.Buffer, tile: S.Buffer, stage, k, per_thread: int, extent: int, t) -> None:
        """frag[c*q + e] = tile[stage, k, c*(extent*q/per_thread) + t*q + e], q = min(4, per_thread)."""
        q = min(LANES, per_thread)
        with self.ib.loop(f"{frag.name}_c", per_thread // q, S.ForKind.UNROLLED) as c:
            with self.ib.loop("e", q, S.ForKind.VECTORIZED) as e:
                self.ib.store(frag, c * q + e, tile[stage, k, c * (extent * q // per_thread) + t * q + e])

    def _compute(self, stage) -> None:
        tl, ib = self.tl, self.ib
        with ib.loop("ko", tl.BK // tl.unroll) as ko, ib.loop("ki", tl.unroll, S.ForKind.UNROLLED) as ki:
            k = ko * tl.unroll + ki
            self._fragment(self.a_frag, self.sa.tile, stage, k, tl.TM, tl.BM, self.ty)
            self._fragment(self.b_frag, self.sb.tile, stage, k, tl.TN, tl.BN, self.tx)
            with ib.loop("i", tl.TM, S.ForKind.UNROLLED) as i, ib.loop("j", tl.TN, S.ForKind.UNROLLED) as j:
                ib.store(self.acc, i * tl.TN + j, self.acc[i * tl.TN + j] + self.a_frag[i] * self.b_frag[j])

    def _epilogue(self, checks: Checks) -> None:
        g, tl, ib = self.g, self.tl, self.ib
        qm, qn = min(LANES, tl.TM), min(LANES, tl.TN)
        out, dst = g.out, self.dst
        base = self.split * out.size if tl.split > 1 else 0
        vector = qn == LANES and out.vec_ok
        with ib.loop("ci", tl.TM // qm, S.ForKind.UNROLLED) as ci, ib.loop("ei", qm, S.ForKind.UNROLLED) as ei, \
                ib.loop("cj", tl.TN // qn, S.ForKind.UNROLLED) as cj:
            m = self.m0 + ci * (tl.BM * qm // tl.TM) + self.ty * qm + ei
            n = self.n0 + cj * (tl.BN * qn // tl.TN) + self.tx * qn
            row = (ci * qm + ei) * tl.TN + cj * qn
            m_ok = m < g.M if checks.m else None
            if vector:  # one 128-bit store; the 4 columns are all in or all out of range
                with guarded(ib, all_of(m_ok, n < g.N if checks.n else None)):
                    with ib.loop("ej", LANES, S.ForKind.VECTORIZED) as ej:
                        ib.store(dst, base + out.index(self.batch, m, n) + ej, self.acc[row + ej])
            else:
                with ib.loop("ej", qn, S.ForKind.UNROLLED) as ej:
                    with guarded(ib, all_of(m_ok, n + ej < g.N if checks.n else None)):
                        ib.store(dst, base + out.index(self.batch, m, n + ej), self.acc[row + ej])


def schedule(g: Gemm, config: dict, target) -> S.Module:
    tl = Tiling.of(g, config)
    out = g.out
    ws = S.Buffer(f"ws_{g.name}_partials", "float32", (tl.split * out.size,)) if tl.split > 1 else None
    dst = ws if ws is not None else out.buffer
    main = S.PrimFunc(f"{g.name}_simt", (*g.inputs, dst), _Kernel(g, tl, dst).build())
    args = (*g.inputs, out.buffer)
    if ws is None:
        return S.Module(g.name, (main,), args, (), len(g.inputs))
    # every split writes every element of its slice before the sum reads it: no memset (a launch and, for a
    # large C, tens of microseconds)
    return S.Module(g.name, (main, split_k_sum(g.name, ws, out.buffer, out.size, tl.split)), args, (ws,),
                    len(g.inputs), overwrites_workspaces=True)
