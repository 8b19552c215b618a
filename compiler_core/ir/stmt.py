"""Statement nodes, buffers and the kernel/module containers of the loop IR."""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field

from compiler_core.ir.expr import Expr, Var


class ForKind(enum.Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"  # OpenMP on C
    UNROLLED = "unrolled"
    VECTORIZED = "vectorized"
    BLOCK_X = "blockIdx.x"
    BLOCK_Y = "blockIdx.y"
    BLOCK_Z = "blockIdx.z"
    THREAD_X = "threadIdx.x"
    THREAD_Y = "threadIdx.y"
    THREAD_Z = "threadIdx.z"

    @property
    def is_thread_binding(self) -> bool:
        return "Idx" in self.value


class Scope(enum.Enum):
    GLOBAL = "global"
    SHARED = "shared"  # static: declared in the kernel, at most the target's max_shared_bytes per block
    SHARED_DYN = "shared.dyn"  # carved from the launch's dynamic shared memory (up to the opt-in limit)
    LOCAL = "local"  # registers / stack
    WMMA_A = "wmma.matrix_a"
    WMMA_B = "wmma.matrix_b"  # loaded from a row-major (k rows) tile
    WMMA_B_COL = "wmma.matrix_b.col_major"  # loaded from a column-major (k contiguous) tile
    WMMA_ACC = "wmma.accumulator"


DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8, "bool": 1}


def dtype_bytes(dtype: str) -> int:
    """Bytes of a scalar or vector dtype ('float32x8' -> 32)."""
    from compiler_core.ir.expr import lanes_of, scalar_of

    return DTYPE_BYTES[scalar_of(dtype)] * lanes_of(dtype)


@dataclass(eq=False)
class Buffer:
    """A named array. `pad` adds elements to the innermost row stride (shared-memory bank-conflict padding).

    `dtype` may be a vector type ('float32x8'): a local array of vector registers on C targets.
    """
    name: str
    dtype: str
    shape: tuple
    scope: Scope = Scope.GLOBAL
    pad: int = 0
    align: int = 16

    @property
    def strides(self) -> tuple:
        strides, acc = [], 1
        for i, extent in enumerate(reversed(self.shape)):
            strides.append(acc)
            acc *= extent + (self.pad if i == 0 and len(self.shape) > 1 else 0)
        return tuple(reversed(strides))

    @property
    def physical_elems(self) -> int:
        if not self.shape:
            return 1
        return self.strides[0] * self.shape[0] if len(self.shape) > 1 else self.shape[0]

    @property
    def nbytes(self) -> int:
        return self.physical_elems * dtype_bytes(self.dtype)

    def __getitem__(self, idx) -> Expr:
        from compiler_core.ir.expr import Load, as_expr
        idx = idx if isinstance(idx, tuple) else (idx,)
        return Load(self, tuple(as_expr(i) for i in idx))

    __hash__ = object.__hash__


class Stmt:
    __hash__ = object.__hash__


@dataclass(eq=False)
class For(Stmt):
    var: Var
    extent: Expr
    kind: ForKind
    body: Stmt
    min: Expr | None = None


@dataclass(eq=False)
class Seq(Stmt):
    stmts: tuple


@dataclass(eq=False)
class IfThenElse(Stmt):
    """`then_share`, when the template knows it, is the fraction of the executions over a launch that take the
    then branch (e.g. the interior blocks of a tiled kernel); None: unknown."""
    cond: Expr
    then: Stmt
    else_: Stmt | None = None
    then_share: float | None = None


@dataclass(eq=False)
class Store(Stmt):
    buffer: Buffer
    indices: tuple
    value: Expr
    lanes: int = 1


@dataclass(eq=False)
class Allocate(Stmt):
    """Declares a shared/local buffer visible in `body`."""
    buffer: Buffer
    body: Stmt


@dataclass(eq=False)
class LetStmt(Stmt):
    var: Var
    value: Expr
    body: Stmt


@dataclass(eq=False)
class Barrier(Stmt):
    """__syncthreads() on CUDA; nothing on C (each OpenMP iteration is independent)."""


@dataclass(eq=False)
class Evaluate(Stmt):
    """An intrinsic called for its effect (cp.async, mma, wmma store)."""
    value: Expr


@dataclass(eq=False)
class PrimFunc:
    """One kernel: global buffers and scalar params in, a body; launch dims filled by lowering."""
    name: str
    params: tuple
    body: Stmt
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    shared_bytes: int = 0  # static shared memory (Scope.SHARED buffers)
    attrs: dict = field(default_factory=dict)
    dynamic_shared_bytes: int = 0  # launched with this much dynamic shared memory (Scope.SHARED_DYN buffers)
    dynamic_offsets: dict = field(default_factory=dict)  # SHARED_DYN buffer name -> byte offset in it

    def with_body(self, body: Stmt) -> PrimFunc:
        """The same kernel with a rewritten body (what a pass returns)."""
        return dataclasses.replace(self, body=body)


@dataclass(eq=False)
class Module:
    """Kernels run in order over `args` (inputs then outputs) plus `workspaces`, zeroed before each run unless
    `overwrites_workspaces` (the kernels write every workspace element before reading it: a layout copy, where
    a memset would only cost time). Workspaces in `kept_zero` are never zeroed per run: the kernels find them zero
    and leave them zero (stream-K's flags, codegen/sm90_stream_k.py), so whoever allocates one zeroes it once."""
    name: str
    kernels: tuple
    args: tuple
    workspaces: tuple = ()
    num_inputs: int = 0
    overwrites_workspaces: bool = False
    kept_zero: tuple = ()

    def with_kernels(self, kernels) -> Module:
        return Module(self.name, tuple(kernels), self.args, self.workspaces, self.num_inputs,
                      self.overwrites_workspaces, self.kept_zero)

    def zeroed_per_run(self) -> tuple:
        """The workspaces a runtime zeroes before each run."""
        return () if self.overwrites_workspaces else tuple(w for w in self.workspaces if w not in self.kept_zero)

    def zeroed_once(self, workspace) -> bool:
        """Whether `workspace` must be zero where it is allocated (and its runs then keep it so)."""
        return workspace in self.kept_zero or workspace in self.zeroed_per_run()

    def map_funcs(self, fn) -> Module:
        """`fn` over the PrimFuncs; kernels a template rendered itself (ir.opaque.OpaqueKernel) pass unchanged."""
        return self.with_kernels(fn(k) if isinstance(k, PrimFunc) else k for k in self.kernels)
