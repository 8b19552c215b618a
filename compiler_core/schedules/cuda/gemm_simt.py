"""Float32 SIMT GEMM template shared by matmul, batch_matmul and conv2d (implicit GEMM).

It computes C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]. Ops describe their tensors with an `Operand`
per input (where element (b, row, col) lives, which axis is contiguous, an extra zero-padding guard)
and an `Output` (where C[b, m, n] goes); the kernel never sees the op.

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
so no 128-bit load of it is legal. The untuned default config is gemm_simt_default's.

With split_k > 1 every split writes its partial tile into its own slice of a workspace laid out like
the output, and a second kernel sums the slices (deterministic, needs no zeroed memory).
Every barrier sits in code all threads of a block reach the same number of times: loop trip counts
are block-uniform (workload constants, or chosen by the block's split index alone), no barrier is
under a thread-dependent condition, and the only condition around barriers, interior vs edge, reads
blockIdx alone, so all threads of a block take the same path.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cuda import gemm_simt_gather as gather
from compiler_core.schedules.cuda.gemm_simt_edges import Checks, KTiles, all_of, guarded, k_tiles, split_blocks
from compiler_core.space import Constraint, Knob, Space

LANES = 4  # float32 lanes of a 128-bit load/store
BASE_REGISTERS = 28  # indices, loop counters, tile origins beside the register arrays
REGISTERS_PER_LOAD = 2  # each global load keeps its own (64-bit) address live across the k loop
MAX_LOADS_PER_THREAD = 16  # more makes ptxas spill (measured with -Xptxas -v), and means too few threads
MAX_GRID_Z = 65535
MAX_WORKSPACE_ELEMS = 1 << 28  # split-K partials: at most 1 GiB of float32
REDUCE_THREADS = 256

KNOBS = (
    Knob("BM", (16, 32, 64, 128), "rows of C per block"),
    Knob("BN", (16, 32, 64, 128), "columns of C per block"),
    Knob("BK", (8, 16, 32), "k per shared-memory tile"),
    Knob("TM", (1, 2, 4, 8), "rows of C per thread (register tile)"),
    Knob("TN", (1, 2, 4, 8), "columns of C per thread (register tile)"),
    Knob("pad", (0, 4), "floats added to each shared tile row against bank conflicts"),
    Knob("vec", (1, 4), "global load width along an operand's contiguous axis (4 = 128-bit; operands "
                        "whose contiguous extent is not a multiple of 4 load scalars)"),
    Knob("double_buffer", (0, 1), "two shared stages; prefetch the next tile into registers during the math"),
    Knob("unroll_k", (1, 4, 8, 16, 32), "unroll factor of the inner k loop over a shared tile"),
    Knob("split_k", (1, 2, 4), "split the k range over blocks; a second kernel sums the partials"),
)


@dataclass(frozen=True)
class Operand:
    """A GEMM input: A has rows m and cols k, B rows k and cols n.

    `index(b, row, col)` is the flat element index in `buffer`; `contig` names the axis along which
    consecutive elements are adjacent ("k", or "mn" for m of A / n of B); with `vec_ok`, the four
    elements from a contiguous coordinate that is a multiple of 4 are adjacent, 16-byte aligned and
    all in or all out of range, and `index` is affine in that coordinate. `guard(b, row, col)`, if
    given, is an extra condition whose failure reads as zero (conv2d zero padding). `gather`, if given,
    splits `index` and `guard` into a part of k and a part of the row/column (gemm_simt_gather): the space
    then has a `gather` knob.
    """
    buffer: S.Buffer
    index: Callable
    contig: str
    vec_ok: bool = False
    guard: Callable | None = None
    gather: gather.Gather | None = None


@dataclass(frozen=True)
class Output:
    """Where C[b, m, n] is stored: flat `index(b, m, n)` in `buffer` of `size` elements; with `vec_ok`,
    four n from a multiple of 4 are adjacent, 16-byte aligned and all in or all out of range."""
    buffer: S.Buffer
    index: Callable
    size: int
    vec_ok: bool = False


@dataclass(frozen=True)
class Gemm:
    """The problem: `inputs` are the op's input buffers in the op's order (how the module is called);
    for conv2d that is (X, Wt) although the GEMM's A is the filter."""
    name: str
    batch: int
    M: int
    N: int
    K: int
    a: Operand
    b: Operand
    out: Output
    inputs: tuple


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _pow2_at_least(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


@dataclass(frozen=True)
class Tiling:
    """A config's derived quantities: what the constraints check and the kernel builder uses."""
    BM: int
    BN: int
    BK: int
    TM: int
    TN: int
    pad: int
    vec_a: int
    vec_b: int
    stages: int
    unroll: int
    split: int
    threads: int
    k_tiles: int
    tiles_per_split: int
    gather: str = "div"
    gathered: tuple = ()  # is_a of each operand with a Gather (True: A), where the gather knob is not "div"
    table_length: int = 0  # int32 entries of each gathered operand's k table (gather = "table")
    hoisted_words: int = 0  # registers holding the gathered operands' per-thread parts

    @classmethod
    def of(cls, g: Gemm, c: dict) -> Tiling:
        k_tiles = _ceil(g.K, c["BK"])
        mode, tiles_per_split = c.get("gather", "div"), _ceil(k_tiles, c["split_k"])
        tl = cls(c["BM"], c["BN"], c["BK"], c["TM"], c["TN"], c["pad"],
                   c["vec"] if g.a.vec_ok else 1, c["vec"] if g.b.vec_ok else 1,
                   2 if c["double_buffer"] else 1, c["unroll_k"], c["split_k"],
                   (c["BM"] // c["TM"]) * (c["BN"] // c["TN"]), k_tiles, tiles_per_split, mode,
                   () if mode == "div" else tuple(op is g.a for op in (g.a, g.b) if op.gather is not None),
                   gather.table_length(c["BK"], tiles_per_split) if mode == "table" else 0)
        words = sum(gather.hoisted_words(op.gather, tl.slots(op is g.a, op.contig))
                    for op in (g.a, g.b) if op.gather is not None and mode != "div")
        return dataclasses.replace(tl, hoisted_words=words)

    @property
    def loads_a(self) -> int:
        return _ceil(self.BM * self.BK // self.vec_a, self.threads)

    @property
    def loads_b(self) -> int:
        return _ceil(self.BK * self.BN // self.vec_b, self.threads)

    @property
    def shared_bytes(self) -> int:
        tables = 4 * len(self.gathered) * self.table_length
        return 4 * self.stages * self.BK * (self.BM + self.pad + self.BN + self.pad) + tables

    def slots(self, is_a: bool, contig: str) -> int:
        """Distinct rows (A) or columns (B) among one thread's loads of an operand: 1 where every load of the
        thread reads the same one (contiguous along m/n and a thread count that is a multiple of the loads
        across the tile's width), else one per load."""
        extent, vec, loads = (self.BM, self.vec_a, self.loads_a) if is_a else (self.BN, self.vec_b, self.loads_b)
        return 1 if loads == 1 or (contig == "mn" and self.threads % (extent // vec) == 0) else loads

    @property
    def loads(self) -> int:
        """Global loads (scalar or 128-bit) per thread per k tile."""
        return self.loads_a + self.loads_b

    @property
    def registers(self) -> int:
        staging = self.loads_a * self.vec_a + self.loads_b * self.vec_b
        return (BASE_REGISTERS + self.TM * self.TN + self.TM + self.TN + staging
                + REGISTERS_PER_LOAD * self.loads + self.hoisted_words)


def config_space(g: Gemm, target, config: dict) -> Space:
    """The space a config belongs to: one without a `gather` key is of the family before the knob (it lowers
    as gather = "div", the code it always built), so heads stored or pinned before it keep building."""
    return space(g, target, gather_knob=not isinstance(config, dict) or "gather" in config)


def space(g: Gemm, target, gather_knob: bool = True) -> Space:
    """`gather_knob=False`: the space without the gather knob even where an operand has a Gather."""
    def t(c):
        return Tiling.of(g, c)

    def fits_registers(c):
        tl = t(c)
        return tl.registers <= min(target.max_registers_per_thread, target.register_file // tl.threads)

    gathers = [op.gather for op in (g.a, g.b) if op.gather is not None] if gather_knob else []
    return Space(knobs=KNOBS + ((gather.KNOB,) if gathers else ()), constraints=(
        Constraint("threads per block (BM/TM)*(BN/TN) must be 32 .. the target's limit",
                   lambda c: 32 <= t(c).threads <= target.max_threads_per_block),
        Constraint("shared tiles (x2 with double_buffer) and gather tables must fit the target's shared memory",
                   lambda c: t(c).shared_bytes <= target.max_shared_bytes),
        Constraint("estimated registers per thread must fit (255, and a whole block in the register file)",
                   fits_registers),
        Constraint(f"at most {MAX_LOADS_PER_THREAD} global loads per thread per k tile",
                   lambda c: t(c).loads <= MAX_LOADS_PER_THREAD),
        Constraint("vec=4 needs an operand whose contiguous extent is a multiple of 4",
                   lambda c: c["vec"] == 1 or g.a.vec_ok or g.b.vec_ok),
        Constraint("unroll_k must not exceed BK", lambda c: c["unroll_k"] <= c["BK"]),
        Constraint("tiles no larger than the next power of two of M, N, K",
                   lambda c: c["BM"] <= max(16, _pow2_at_least(g.M)) and c["BN"] <= max(16, _pow2_at_least(g.N))
                   and c["BK"] <= max(8, _pow2_at_least(g.K))),
        Constraint("split_k must give every split at least one k tile",
                   lambda c: (c["split_k"] - 1) * t(c).tiles_per_split < t(c).k_tiles),
        Constraint("split_k partials must fit the workspace limit and the grid's z extent",
                   lambda c: c["split_k"] == 1 or (c["split_k"] * g.out.size <= MAX_WORKSPACE_ELEMS
                                                   and c["split_k"] * g.batch <= MAX_GRID_Z)),
        Constraint("double_buffer needs at least two k tiles per split",
                   lambda c: not c["double_buffer"] or t(c).tiles_per_split >= 2),
        *((Constraint("gather=table needs each table entry (k offset and shifts) to fit in 31 bits",
                      lambda c: c["gather"] != "table" or all(x.table_fits for x in gathers)),) if gathers else ()),
    ))


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
        tiles_n = _ceil(g.N, tl.BN)
        tiles = _ceil(g.M, tl.BM) * tiles_n
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


def split_k_sum(name: str, ws: S.Buffer, out: S.Buffer, size: int, split: int) -> S.PrimFunc:
    """out[e] = sum over splits of ws[s*size + e] for e < size, in float32, narrowed as stored where `out` is a
    half type: the partials already have the output's layout. (The Hopper GEMM's split-K sums its partials here
    too: schedules/cuda/gemm_sm90.py.)"""
    ib = IRBuilder()
    with ib.loop("bx", _ceil(size, REDUCE_THREADS), S.ForKind.BLOCK_X) as bx, \
            ib.loop("tid", REDUCE_THREADS, S.ForKind.THREAD_X) as tid:
        e = bx * REDUCE_THREADS + tid
        with ib.if_(e < size):
            total = ws[e]
            for s in range(1, split):
                total = total + ws[s * size + e]
            ib.store(out, e, total)
    return S.PrimFunc(f"{name}_splitk_sum", (ws, out), ib.get())
