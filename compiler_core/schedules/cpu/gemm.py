"""The shared CPU GEMM builder (BLIS-style) behind matmul, batch_matmul and conv2d.

Loop nest per thread, over the thread's rectangle of C (a range of M or of N, or whole images):

    for jc (nc columns):  for ic (mc rows):  for pc (kc of the reduction):
        pack A[ic, pc] into mr x kc panels (optional)
        for jr, ir (or ir, jr):  mr x nr microkernel over kc, accumulators in vector registers

B is packed once per call (per image) into contiguous kc x nr panels, zero-padded past N: by all
threads before the compute loop when they split M, by each thread for its own columns when they
split N. With `b_source` 'blocks' each thread packs only the kc x nc block it is about to use, in BLIS's
order (jc, pc, then ic: `_compute_rect_by_blocks`); B may also be read in place by the microkernel
(`GemmOperands.b_direct`) or streamed row by row past C for very few rows of A (`gemm_streamed`).
Edge tiles are computed in full on zero-padded panels and written back through a bounds-checked
scalar path, so every M, N, K is correct. float16 inputs are converted to float32 while packing; a
float16 result accumulates in a per-thread float32 block that is rounded once when the block is done.

The reduction loop is not unrolled: unrolled (under the -fassociative-math the project then built with),
GCC re-associated the accumulator chains, split the FMAs and spilled (measured: 180 -> 105 GFLOP/s at
1024^3), while the plain loop keeps mr*nr/lanes accumulators in registers, which is what hides the FMA latency.

Callers describe their operands with a `GemmOperands`; `space` and `build_gemm` do the rest. The packed layouts and
their packers are `gemm_pack`'s, the float32 FMA microkernel `gemm_fma`'s, the write-back of a microkernel's tile into
C `gemm_store`'s, the blocking arithmetic `gemm_blocks`', and the bfloat16 pair path (knob `dot`) `gemm_bf16_dot`'s.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.ir.builder import IRBuilder
from compiler_core.schedules.cpu import gemm_amx as amx
from compiler_core.schedules.cpu import gemm_bf16_dot as bf16_dot
from compiler_core.schedules.cpu import gemm_fma, gemm_pack, gemm_streamed
from compiler_core.schedules.cpu.gemm_blocks import block_len, cdiv, column_blocks, round_up, row_blocks, thread_extent
from compiler_core.schedules.cpu.gemm_store import round_block
from compiler_core.space import Constraint, Knob, Space

MR_CHOICES = (2, 4, 6, 8)
# A is read in place, not packed, by default where a thread has at most this many columns of C: a packed A panel
# serves each column tile once, so with few of them packing is a pass over A that buys little. Packed / in place at
# 32-256 columns (benchmarks/results/2026-12-01-cpu-gemm-a-in-place/): float32 0.98-1.94x on a Zen 5 (AVX-512, AVX2,
# SSE) and 1.07-1.43x on a Sapphire Rapids Xeon (AVX-512; AVX2 1.02-1.41x but 0.76x once); half types 1.11-1.66x with
# AVX-512, 0.81-1.18x with AVX2 and 0.59-0.80x with SSE, so a half A keeps its panels below AVX-512; past 256 columns
# 0.88-1.10x.
A_IN_PLACE_MAX_COLS = 256
MC_CHOICES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
NC_CHOICES = (64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096)
KC_CHOICES = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
LOCAL = S.Scope.LOCAL


@dataclass(frozen=True)
class GemmOperands:
    """C[bt, row, col] = sum_k a(bt, row, k) * b(bt, k, col) for `batch` independent problems.

    `a` and `b` return float32 expressions for in-range indices; `c_index` gives the flat index of a
    C element in `c`, with the columns of one row contiguous (the microkernel stores vectors along them).
    B is described one of three ways, exactly one given: `b`, element by element (the builder packs each panel row
    from it); `b_row`, which packs one row of a B panel itself, `b_row(ib, Bp, base, bt, k, col0, nr)`: it stores
    Bp[base + j] for j < nr, B's value at column col0 + j below N and 0 past it (conv2d's im2col uses it to copy
    runs of the image row by row instead of decoding every element's tap and pixel); or `b_direct`, (buffer,
    row_start), B read in place and never packed: B[bt, k, j] = buffer[row_start(bt, k) + j], a float32 buffer (or a
    half-typed one, widened as it is loaded) that holds nr - 1 readable elements past every row's column N - 1 (edge
    tiles read them; what they compute there is never stored). conv2d's padded-image path reads its shifted image
    rows this way. With `b_pairs`, b_direct is a bfloat16 buffer of pair rows for the pair dot products
    (gemm_bf16_dot): B[bt, 2p + t, j] = buffer[row_start(bt, p) + 2j + t], K even, 2(nr - 1) readable past each.
    `b_tiles` (rows, image, spacing) says the same pair rows are AMX tiles (gemm_amx): row_start(bt, p) =
    image(bt) + rows[p] with `rows` an int32 buffer, and each 16 pair rows from a multiple of 16 `spacing` elements
    apart, so that K's tiles read B in place.
    """
    M: int
    N: int
    K: int
    batch: int
    a: Callable
    b: Callable | None
    c: S.Buffer
    c_index: Callable
    b_row: Callable | None = None
    b_direct: tuple | None = None  # (S.Buffer, row_start(bt, k) -> flat index)
    b_pairs: bool = False  # b_direct holds pairs of K steps interleaved (for bfloat16 pair dot products, below)
    b_tiles: tuple | None = None  # (S.Buffer of int32 row offsets, image(bt) -> flat index, spacing): see above

    def load_b(self, bt, k, column: tuple, lanes: int) -> E.Expr:
        """B[bt, k, j .. j + lanes) read in place (b_direct), as float32, j the sum of `column`'s terms in order."""
        src, row_start = self.b_direct
        index = row_start(bt, k)
        for term in column:
            index = index + term
        return E.widen(E.Load(src, (index,), lanes))


@dataclass(frozen=True)
class GemmPlan:
    """A config applied to one problem: the blocks clipped to it (and to a thread's share of it)."""
    mr: int
    nr: int
    lanes: int
    mc: int
    nc: int
    kc: int
    pack_a: bool
    order: str
    parallel: str
    threads: int
    pairs: bool = False  # bfloat16 pair dot products (gemm_bf16_dot) instead of float32 FMAs
    streamed: bool = False  # B streamed row by row past C's block (gemm_streamed) instead of panel microkernels
    b_blocks: bool = False  # B packed per kc x nc block by each thread, BLIS's order (jc, pc, ic), not once per call
    amx: bool = False  # (with `pairs`: B's pair layout) AMX tile dot products (gemm_amx), not vector pair dots

    @property
    def nv(self) -> int:
        return self.nr // self.lanes


def _registers_needed(mr: int, nv: int) -> int:
    return mr * nv + nv + 1


# ---- the space ---------------------------------------------------------------------------------

def space(target, batch: int | None = None, tiles: bool = False) -> Space:
    """Knobs of every GEMM-shaped template; `batch` (when given) adds the parallel-over-batch choice; `tiles` the rows
    of AMX microkernels (gemm_amx) to `mr`, whose accumulators are tiles, not vector registers."""
    lanes = target.vector_lanes_f32
    registers = target.vector_registers
    parallel = ("m", "n") if batch is None else ("m", "n", "batch")
    constraints = [
        Constraint(f"the mr * nr/{lanes} accumulators, nr/{lanes} B vectors and one broadcast of A must fit in "
                   f"the {registers} vector registers (but for dot 'amx')",
                   lambda c: c.get("dot") == "amx" or _registers_needed(c["mr"], c["nr"] // lanes) <= registers),
        Constraint("mc must be a multiple of mr", lambda c: c["mc"] % c["mr"] == 0),
        Constraint("nc must be a multiple of nr", lambda c: c["nc"] % c["nr"] == 0),
    ]
    if batch is not None:
        constraints.append(Constraint(f"parallel='batch' needs batch >= threads ({target.cores})",
                                      lambda c: c["parallel"] != "batch" or batch >= target.cores))
    return Space(
        knobs=(
            Knob("mr", MR_CHOICES + (amx.TILE_MR if tiles else ()),
                 "microkernel rows (broadcast A values, or AMX tile rows)"),
            Knob("nr", tuple(lanes * v for v in (1, 2, 3, 4)), "microkernel columns (vectors of B)"),
            Knob("mc", MC_CHOICES, "rows of A packed per block (L2)"),
            Knob("nc", NC_CHOICES, "columns of C per block"),
            Knob("kc", KC_CHOICES, "reduction length per block (the packed panels' depth)"),
            Knob("pack_a", (0, 1), "pack A into mr x kc panels (else read A in place)"),
            Knob("order", ("jr_ir", "ir_jr"), "microtile loop order: B panel reused (jr_ir) or A panel (ir_jr)"),
            Knob("parallel", parallel, "what the OpenMP threads split: rows (m), columns (n) or the batch"),
        ),
        constraints=tuple(constraints),
    )


def default_config(target, M: int, N: int, batch: int | None = None, dtype: str = "float32",
                   parallel: str | None = None) -> dict:
    """A good untuned start: a 6-row microkernel as wide as the vector registers allow (2 vectors with 16
    registers, SSE and AVX2; 4 with AVX-512's 32: 6 x 64 measured 1.17-1.22x faster than 6 x 32 on matmul 512^3
    and 1024^3 on a 2-core AVX-512 host), blocks sized for 32 KiB L1 and 512 KiB L2, and A read in place where a
    thread has few columns of C (A_IN_PLACE_MAX_COLS). `parallel`, where given, is the caller's split (else the
    batch where it has a problem per thread, else the longer of M and N)."""
    lanes = target.vector_lanes_f32
    registers = target.vector_registers
    mr = 6 if _registers_needed(6, 2) <= registers else 4
    nv = max(v for v in (1, 2, 3, 4) if _registers_needed(mr, v) <= registers)
    if parallel is None:
        parallel = "batch" if batch is not None and batch >= target.cores else "m" if M >= N else "n"
    cols = -(-N // target.cores) if parallel == "n" else N
    # a half A read in place is converted at every use: it paid with AVX-512 only (AVX2 0.81-1.18x, SSE 0.59-0.80x)
    cheap_a = dtype == "float32" or target.vector_bytes >= 64
    pack_a = int(not cheap_a or cols > A_IN_PLACE_MAX_COLS)
    return {"mr": mr, "nr": nv * lanes, "mc": 96, "nc": 4096, "kc": 256, "pack_a": pack_a, "order": "jr_ir",
            "parallel": parallel}


def make_plan(ops: GemmOperands, config: dict, target) -> GemmPlan:
    """Clip the config's blocks to the problem (and to one thread's share of it)."""
    mr, nr, threads = config["mr"], config["nr"], max(1, target.cores)
    tiled = config.get("dot") == "amx"
    pairs = config.get("dot") == "bf16" or tiled
    if pairs and ((ops.b_direct is not None and not ops.b_pairs) or not target.bf16_dot):
        raise ValueError("dot 'bf16' needs B packed or read in place as pairs, and a target with AVX-512 BF16")
    if tiled and ((ops.b_direct is not None and ops.b_tiles is None) or not target.amx or not amx.fits(mr, nr)
                  or not config["pack_a"]):
        raise ValueError("dot 'amx' needs A packed, B packed or given as tiles, whole tiles that fit the tile "
                         "registers, and a target with AMX")
    if ops.b_pairs and not pairs:
        raise ValueError("B given as pairs of K steps is read by dot 'bf16' only")
    streamed = config.get("b_source") == "streamed"
    if streamed and ops.b_direct is None:
        raise ValueError("b_source 'streamed' reads B in place: the operands must give b_direct")
    b_blocks = config.get("b_source") == "blocks"
    if b_blocks and (ops.b_direct is not None or ops.b_row is not None or (pairs and not tiled)):
        raise ValueError("b_source 'blocks' packs B from its elements, for float32 FMAs or AMX's tiles")
    rows, cols = thread_extent(ops.M, ops.N, mr, nr, config["parallel"], threads)
    return GemmPlan(mr=mr, nr=nr, lanes=target.vector_lanes_f32, mc=min(config["mc"], rows),
                    nc=min(config["nc"], cols), kc=min(config["kc"], ops.K),
                    pack_a=bool(config["pack_a"]) and not streamed, order=config["order"],
                    parallel=config["parallel"], threads=threads, pairs=pairs, streamed=streamed, b_blocks=b_blocks,
                    amx=tiled)


# ---- the loop nest -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Buffers:
    """What the microkernel reads and writes besides the operands: packed B (shared by the threads or
    per thread), this thread's packed A, and its float32 block of C when C is not float32."""
    Bp: S.Buffer | None  # None: B is read in place (b_direct)
    Ap: S.Buffer | None
    Ct: S.Buffer | None  # float32 accumulation block when C is not float32


def build_gemm(ops: GemmOperands, config: dict, target) -> S.Stmt:
    plan = make_plan(ops, config, target)
    b = IRBuilder()
    if plan.parallel == "batch":
        _parallel_over_batch(b, ops, plan)
    else:
        _parallel_inside(b, ops, plan)
    return b.get()


def _b_pack(b: IRBuilder, ops: GemmOperands, plan: GemmPlan):
    """The packed-B buffer shared by a call, or None where B is read in place or packed per block per thread."""
    if ops.b_direct is not None or plan.b_blocks:
        return contextlib.nullcontext(None)
    if plan.pairs:
        return b.allocate("Bp", "bfloat16", bf16_dot.b_shape(ops, plan), LOCAL)
    return b.allocate("Bp", "float32", gemm_pack.b_shape(ops, plan), LOCAL)


@contextlib.contextmanager
def _thread_buffers(b: IRBuilder, ops: GemmOperands, plan: GemmPlan, Bp: S.Buffer | None):
    with contextlib.ExitStack() as stack:
        dtype, shape = ("bfloat16", amx.a_shape(plan) if plan.amx else bf16_dot.a_shape(plan)) if plan.pairs \
            else ("float32", (plan.mc * plan.kc,))
        Ap = stack.enter_context(b.allocate("Ap", dtype, shape, LOCAL)) if plan.pack_a else None
        if plan.b_blocks:  # this thread's kc x nc block of B (as pair rows for the tiles)
            dtype, rows = ("bfloat16", amx.depth(plan.kc)) if plan.amx else ("float32", plan.kc)
            Bp = stack.enter_context(b.allocate("Bb", dtype, (rows * round_up(plan.nc, plan.nr),), LOCAL))
        Ct = None
        # a row block's float32 sums (in BLIS's order, all the thread's rows'); AMX's tiles always sum there, whole
        if ops.c.dtype != "float32" or plan.amx:
            rows = ct_rows(ops, plan) if plan.b_blocks else plan.mc
            Ct = stack.enter_context(b.allocate("Ct", "float32", (rows * plan.nc,), LOCAL))
        if plan.amx:
            amx.thread_begins(b)
        yield _Buffers(Bp, Ap, Ct)
        if plan.amx:
            amx.thread_ends(b)


def ct_rows(ops: GemmOperands, plan: GemmPlan) -> int:
    """Rows of a thread's share of C (`thread_extent`)."""
    return thread_extent(ops.M, ops.N, plan.mr, plan.nr, plan.parallel, plan.threads)[0]


def _parallel_inside(b: IRBuilder, ops: GemmOperands, plan: GemmPlan) -> None:
    """Per problem, each thread computes its share of M or N. Splitting M, every thread reads all of B,
    so the threads pack it together first; splitting N, each packs just its own panels (one parallel
    region, no barrier between packing and use)."""
    n_panels, _ = gemm_pack.panels(ops, plan)
    with _b_pack(b, ops, plan) as Bp:
        with b.loop("bt", ops.batch) as bt:
            if plan.parallel == "m" and Bp is not None:
                with b.loop("jp", n_panels, S.ForKind.PARALLEL) as jp:
                    gemm_pack.pack_b_panel(b, ops, plan, Bp, bt, jp)
            with b.loop("t", plan.threads, S.ForKind.PARALLEL) as t:
                m_lo, m_len, n_lo, n_len = _thread_rect(ops, plan, t)
                if plan.parallel == "n" and Bp is not None:
                    with b.loop("jl", cdiv(n_len, plan.nr)) as jl:
                        gemm_pack.pack_b_panel(b, ops, plan, Bp, bt, n_lo // plan.nr + jl)
                with _thread_buffers(b, ops, plan, Bp) as bufs:
                    _compute_rect(b, ops, plan, bufs, bt, m_lo, m_len, n_lo, n_len)


def _parallel_over_batch(b: IRBuilder, ops: GemmOperands, plan: GemmPlan) -> None:
    """Each thread takes a contiguous run of problems and does each one alone."""
    n_panels, _ = gemm_pack.panels(ops, plan)
    per_thread = -(-ops.batch // plan.threads)
    with b.loop("t", plan.threads, S.ForKind.PARALLEL) as t:
        with _b_pack(b, ops, plan) as Bp:
            with _thread_buffers(b, ops, plan, Bp) as bufs:
                with b.loop("bi", per_thread) as bi:
                    with b.let("bt", t * per_thread + bi) as bt:
                        with b.if_(bt < ops.batch):
                            if Bp is not None:
                                with b.loop("jp", n_panels) as jp:
                                    gemm_pack.pack_b_panel(b, ops, plan, Bp, bt, jp)
                            _compute_rect(b, ops, plan, bufs, bt, 0, ops.M, 0, ops.N)


def _thread_rect(ops: GemmOperands, plan: GemmPlan, t: E.Var) -> tuple:
    """(row start, rows, col start, cols) of thread t: starts tile-aligned, counts possibly <= 0 (idle)."""
    if plan.parallel == "m":
        chunk = round_up(-(-ops.M // plan.threads), plan.mr)
        return t * chunk, E.min_(ops.M - t * chunk, chunk), 0, ops.N
    chunk = round_up(-(-ops.N // plan.threads), plan.nr)
    return 0, ops.M, t * chunk, E.min_(ops.N - t * chunk, chunk)


def _compute_rect(b: IRBuilder, ops, plan: GemmPlan, bufs: _Buffers, bt, m_lo, m_len, n_lo, n_len) -> None:
    """C[bt, m_lo : m_lo+m_len, n_lo : n_lo+n_len], block by block (B already packed)."""
    if plan.streamed:
        gemm_streamed.compute_rect(b, ops, plan, bufs.Ct, bt, m_lo, m_len, n_lo, n_len)
        return
    if plan.b_blocks:
        _compute_rect_by_blocks(b, ops, plan, bufs, bt, m_lo, m_len, n_lo, n_len)
        return
    _, k_blocks = gemm_pack.panels(ops, plan)
    with column_blocks(b, plan, n_lo, n_len) as (j0, nlen), row_blocks(b, plan, m_lo, m_len) as (i0, mlen):
        with b.loop("pc", k_blocks) as pc:
            klen = block_len(ops.K, plan.kc, pc)
            _pack_a(b, ops, plan, bufs.Ap, bt, i0, mlen, pc, klen)
            block = _Block(bt, i0, j0, pc, klen, cdiv(mlen, plan.mr), cdiv(nlen, plan.nr))
            _microtiles(b, ops, plan, bufs, block)
        if bufs.Ct is not None:
            round_block(b, ops, plan, bufs.Ct, bt, i0, mlen, j0, nlen)


def _compute_rect_by_blocks(b: IRBuilder, ops, plan: GemmPlan, bufs: _Buffers, bt, m_lo, m_len, n_lo, n_len) -> None:
    """As _compute_rect, in BLIS's order: each kc x nc block of B is packed by this thread just before the row blocks
    that use it, into a buffer that stays in L2 or L3, instead of all of B into one written to memory and read back.
    A C that is not float32 sums in a float32 block of all the thread's rows (`ct_rows`), rounded once per column
    block after its last reduction slice."""
    _, k_blocks = gemm_pack.panels(ops, plan)
    with column_blocks(b, plan, n_lo, n_len) as (j0, nlen):
        with b.loop("pc", k_blocks) as pc:
            klen = block_len(ops.K, plan.kc, pc)
            if plan.amx and ops.M <= amx.PACK_ACROSS_ROWS:  # panels of pair rows, klen padded to whole tiles
                bf16_dot.pack_block_pair_rows(b, ops, plan, bufs.Bp,
                                              lambda jl, p2: (jl * amx.pair_rows(klen) + p2) * (2 * plan.nr), bt, pc,
                                              klen, j0 // plan.nr, cdiv(nlen, plan.nr))
            elif plan.amx:
                with b.loop("jl", cdiv(nlen, plan.nr)) as jl:
                    bf16_dot.pack_pair_rows(b, ops, plan, bufs.Bp,
                                            lambda p2: (jl * amx.pair_rows(klen) + p2) * (2 * plan.nr), bt, pc, klen,
                                            j0 // plan.nr + jl)
            else:
                with b.loop("jl", cdiv(nlen, plan.nr)) as jl, b.loop("p", klen) as p:
                    base = (jl * klen + p) * plan.nr
                    gemm_pack.pack_b_row(b, ops, plan, bufs.Bp, base, bt, pc * plan.kc + p, j0 // plan.nr + jl)
            with row_blocks(b, plan, m_lo, m_len) as (i0, mlen):
                _pack_a(b, ops, plan, bufs.Ap, bt, i0, mlen, pc, klen)
                _microtiles(b, ops, plan, bufs, _Block(bt, i0, j0, pc, klen, cdiv(mlen, plan.mr),
                                                      cdiv(nlen, plan.nr), ct_i0=m_lo))
        if bufs.Ct is not None:
            round_block(b, ops, plan, bufs.Ct, bt, m_lo, m_len, j0, nlen)


def _pack_a(b: IRBuilder, ops, plan: GemmPlan, Ap: S.Buffer | None, bt, i0, mlen, pc, klen) -> None:
    """A's rows i0..i0+mlen in kc block pc, packed for the microkernel (nothing where A is read in place)."""
    if plan.amx:
        amx.pack_a_block(b, ops, plan, Ap, bt, i0, mlen, pc * plan.kc, klen)
    elif plan.pairs:
        bf16_dot.pack_a_block(b, ops, plan, Ap, bt, i0, mlen, pc * plan.kc, klen)
    elif Ap is not None:
        gemm_pack.pack_a_block(b, ops, plan, Ap, bt, i0, mlen, pc * plan.kc, klen)


@dataclass(frozen=True)
class _Block:
    """One (mc x nc block, kc slice) of a thread's work: where it starts, its depth, its tile counts."""
    bt: E.Expr
    i0: E.Expr
    j0: E.Expr
    pc: E.Expr
    klen: E.Expr
    row_tiles: E.Expr
    col_tiles: E.Expr
    ct_i0: E.Expr | None = None  # the row of C that the float32 block Ct starts at (None: i0)


def _microtiles(b: IRBuilder, ops, plan: GemmPlan, bufs: _Buffers, blk: _Block) -> None:
    outer, inner = (("jr", blk.col_tiles), ("ir", blk.row_tiles))
    if plan.order == "ir_jr":
        outer, inner = inner, outer
    with b.loop(*outer) as o, b.loop(*inner) as i:
        ir, jr = (i, o) if plan.order == "jr_ir" else (o, i)
        if plan.amx:
            amx.microkernel(b, ops, plan, bufs, blk, ir, jr)
        elif plan.pairs:
            bf16_dot.microkernel(b, ops, plan, bufs, blk, ir, jr)
        else:
            gemm_fma.microkernel(b, ops, plan, bufs, blk, ir, jr)
