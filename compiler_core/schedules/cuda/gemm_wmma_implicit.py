"""Implicit-GEMM B operands of the WMMA template (conv2d's im2col on tensor cores), loaded element by element.

conv2d in NCHW is C[m, j] = A[m, kk] @ B[kk, j] with A the filter (row-major [K, C*R*S]: plain 16-byte copies)
and B the im2col of X, whose element (kk, j) lives at a gathered address and is zero in the padding: no chunk
of B is contiguous in general, so B moves one half at a time, through registers. Its address splits into a part
of kk and a part of j (gemm_simt_gather.Gather); the `gather` knob picks how the kernel evaluates it, as in the
SIMT template: "div" recomputes both per element, "hoist" keeps the thread's j parts in registers, "table" also
reads the kk part from a shared-memory table of the whole K range, filled at kernel start.

Thread layout: element e of the block's B tile (bk x bn) is row e // bn, column e % bn, and thread tx takes
e = i * threads + tx for its i-th load. Tile sizes and thread counts are powers of two, so a thread sees
max(1, bn / threads) distinct columns ("slots"): their j parts are hoisted once per kernel.

With a cp.async ring (stages >= 2), A is copied asynchronously while B is software-pipelined through registers:
`fetch` issues the global loads of step kt + stages - 1 before the tensor-core math of step kt and `put` stores
them to shared memory after it, so global latency hides behind the math.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from compiler_core.ir import expr as E
from compiler_core.ir import stmt as S
from compiler_core.schedules.cuda import gemm_simt_gather as gather
from compiler_core.schedules.cuda.gemm_simt_edges import all_of
from compiler_core.space import Constraint

MAX_STAGED = 32  # B elements a thread holds in registers per step (register-staged pipelining)


@dataclass(frozen=True)
class KMajorB:
    """B[k, j] at flat `index(j, k)` of a source where k is contiguous (conv2d's im2col of an NHWC copy of X): copied
    like A, in chunks of `vw` k (which the source guarantees adjacent and 16-byte aligned), into a j-major shared
    tile read by column-major fragments; a chunk where `guard(j, k)` fails is zero (padding)."""
    index: Callable
    guard: Callable | None
    vw: int


@dataclass(frozen=True)
class Implicit:
    """An implicit GEMM: A at flat index m*K + k of `a`; B[k, j] from `b`, either gathered element by element
    through `gather` or, with `kmajor`, copied in chunks; C[m, j] stored at flat `out_index(m, j)` of `out`;
    `inputs` are the op's input buffers in the op's order."""
    a: S.Buffer
    b: S.Buffer
    gather: gather.Gather | None
    out: S.Buffer
    out_index: Callable
    inputs: tuple
    kmajor: KMajorB | None = None
    prologue: tuple = ()  # kernels that run first (layout changes into the workspaces)
    workspaces: tuple = ()


def loads_per_thread(config: dict, threads: int) -> int:
    return config["block_k"] * config["block_n"] // threads


def slots(config: dict, threads: int) -> int:
    """Distinct B columns one thread loads (see the module doc)."""
    return max(1, config["block_n"] // threads)


def extra_registers(imp: Implicit, config: dict, threads: int) -> int:
    """Registers beyond the fragments: staged B elements (pipelined rings), hoisted j parts and the table entry."""
    staged = loads_per_thread(config, threads) if config["stages"] >= 2 else 0
    hoisted = gather.hoisted_words(imp.gather, slots(config, threads)) if config["gather"] != "div" else 0
    return staged + hoisted + 2


def table_bytes(config: dict, K: int) -> int:
    """The kk table of gather = "table": one int32 per kk of the whole K range, partial step included."""
    return 4 * -(-K // config["block_k"]) * config["block_k"] if config["gather"] == "table" else 0


def constraints(imp: Implicit, threads_of: Callable) -> tuple:
    return (
        Constraint(f"a thread stages at most {MAX_STAGED} B elements per step (block_k*block_n/threads)",
                   lambda c: loads_per_thread(c, threads_of(c)) <= MAX_STAGED),
        Constraint("gather=table needs each table entry (k offset and shifts) to fit in 31 bits",
                   lambda c: c["gather"] != "table" or imp.gather.table_fits),
    )


class GatheredB:
    """Emits B's loads for one block: `setup` (table and hoisted j parts, before the k loop), then per step either
    `direct` (load and store) or `fetch` + `put` (through the staging registers)."""

    def __init__(self, b, imp: Implicit, smem: S.Buffer, config: dict, threads: int, K: int, N: int, tx, n0):
        self.b, self.imp, self.smem = b, imp, smem
        self.bk, self.bn, self.mode = config["block_k"], config["block_n"], config["gather"]
        self.threads, self.K, self.N, self.tx, self.n0 = threads, K, N, tx, n0
        self.loads = loads_per_thread(config, threads)
        self.slots = slots(config, threads)
        self.table = self.hoisted = self.staged = None

    def _row_col(self, i):
        e = i * self.threads + self.tx
        return e // self.bn, e % self.bn

    def _slot(self, i):
        return i % self.slots if self.slots > 1 else 0

    @contextlib.contextmanager
    def setup(self, staged: bool):
        """Allocations that live through the k loop: the staging registers, the table, the hoisted parts."""
        dtype = self.smem.dtype
        with contextlib.ExitStack() as stack:
            if staged:
                self.staged = stack.enter_context(self.b.allocate("b_stage", dtype, (self.loads,), S.Scope.LOCAL))
            if self.mode == "table":
                length = -(-self.K // self.bk) * self.bk
                self.table = stack.enter_context(self.b.allocate("b_table", "int32", (length,), S.Scope.SHARED))
                gather.fill_table(self.b, self.imp.gather, self.table, 0, self.K, length > self.K, self.tx,
                                  self.threads)
            if self.mode != "div":
                def column(slot):
                    return self.n0 + (slot * self.threads + self.tx) % self.bn
                self.hoisted = stack.enter_context(
                    gather.hoist(self.b, self.imp.gather, "b", self.slots, None, column))
            yield

    def _value(self, i, kt, emit: Callable) -> None:
        """emit(value) with B's element for load i of step kt (zero in the padding, past K and past N)."""
        g, row, col = self.imp.gather, *self._row_col(i)
        kk, j = kt * self.bk + row, self.n0 + col
        ok = all_of(kk < self.K if self.K % self.bk else None, j < self.N if self.N % self.bn else None)
        zero = E.FloatImm(0.0, self.smem.dtype)
        if self.hoisted is None:
            offset, shifts = g.k_parts(kk)
            base, starts = g.x_parts(None, j)
        else:
            base, starts = self.hoisted.parts(self._slot(i))
            if self.table is None:
                offset, shifts = g.k_parts(kk)
            else:
                with self.b.let("ent", self.table[kk]) as entry:
                    offset, shifts = g.unpack(entry)
                    valid = all_of(ok, g.inside(starts, shifts))
                    emit(self._guarded_load(offset + base, valid, zero))
                return
        emit(self._guarded_load(offset + base, all_of(ok, g.inside(starts, shifts)), zero))

    def _guarded_load(self, index, valid, zero):
        src = self.imp.b
        return src[index] if valid is None else E.select(valid, src[index], zero)

    def direct(self, kt, stage) -> None:
        with self.b.loop("bi", self.loads, S.ForKind.UNROLLED) as i:
            row, col = self._row_col(i)
            self._value(i, kt, lambda v: self.b.store(self.smem, (stage, row, col), v))

    def fetch(self, kt) -> None:
        with self.b.loop("bi", self.loads, S.ForKind.UNROLLED) as i:
            self._value(i, kt, lambda v: self.b.store(self.staged, i, v))

    def put(self, stage) -> None:
        with self.b.loop("bi", self.loads, S.ForKind.UNROLLED) as i:
            row, col = self._row_col(i)
            self.b.store(self.smem, (stage, row, col), self.staged[i])
