"""Float32 SIMT GEMM template shared by matmul, batch_matmul and conv2d (implicit GEMM): its problem and space.

It computes C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]. Ops describe their tensors with an `Operand`
per input (where element (b, row, col) lives, which axis is contiguous, an extra zero-padding guard)
and an `Output` (where C[b, m, n] goes); the kernel never sees the op. A config's derived quantities
(`Tiling`) are what the space's constraints check; gemm_simt_kernel builds the kernel a config names,
and the untuned default config is gemm_simt_default's.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from compiler_core.ir import stmt as S
from compiler_core.ir.expr import pow2_ceil
from compiler_core.schedules.cuda import gemm_simt_gather as gather
from compiler_core.space import Constraint, Knob, Space

LANES = 4  # float32 lanes of a 128-bit load/store
BASE_REGISTERS = 28  # indices, loop counters, tile origins beside the register arrays
REGISTERS_PER_LOAD = 2  # each global load keeps its own (64-bit) address live across the k loop
MAX_LOADS_PER_THREAD = 16  # more makes ptxas spill (measured with -Xptxas -v), and means too few threads
MAX_GRID_Z = 65535
MAX_WORKSPACE_ELEMS = 1 << 28  # split-K partials: at most 1 GiB of float32

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
                   lambda c: c["BM"] <= max(16, pow2_ceil(g.M)) and c["BN"] <= max(16, pow2_ceil(g.N))
                   and c["BK"] <= max(8, pow2_ceil(g.K))),
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
