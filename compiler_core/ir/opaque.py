"""Kernels a template renders itself (the Hopper TMA + wgmma GEMM): source text plus typed launch parameters, carried
through passes, codegen and launch without anything looking inside.

Why a node of its own rather than a PrimFunc with a special body: the loop IR cannot say what such a kernel does
(warp-specialised roles, mbarrier rings, asynchronous tensor-core groups), so every pass would have to learn to
leave a fake body alone, and features would walk nothing. An OpaqueKernel states instead what the pipeline needs:
its launch shape (block, dynamic shared memory, a grid rule, cluster), its parameters (buffers, scalars and TMA
tensor maps that the runtime encodes from the bound addresses) and a profile of its work for the cost model.
Passes transform PrimFuncs only (`Module.map_funcs`); verify_resources checks an OpaqueKernel's declared numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from compiler_core.ir.stmt import Buffer, dtype_bytes


@dataclass(frozen=True)
class ScalarParam:
    """An integer passed by value; its value is fixed when the template schedules (M, N, K of the workload)."""
    name: str
    value: int
    kind: str = "int32"  # a kind of runtime.tensor_map.PARAM_KINDS


@dataclass(frozen=True)
class TensorMapParam:
    """A TMA tensor map (a 128-byte CUtensorMap passed as `const __grid_constant__`) over `buffer` seen as a
    row-major (rows, cols) matrix whose rows lie `cols` elements apart, loaded in `box` = (rows, cols) tiles into
    shared memory with `swizzle`; or, where `spec` is given, the map it describes (a runtime.tensor_map.TiledMap of
    any rank, or an Im2colMap: conv2d's windows). The runtime encodes it from the buffer's device address at
    launch (tensor_map.spec_of)."""
    buffer: Buffer
    shape: tuple[int, int] = ()
    box: tuple[int, int] = ()
    swizzle: str = "128B"
    spec: object = None

    @property
    def row_bytes(self) -> int:
        """The row stride TMA sees: it must be a multiple of 16 bytes."""
        return self.shape[1] * dtype_bytes(self.buffer.dtype)


@dataclass(frozen=True)
class KernelProfile:
    """What the template knows of one launch's work, in the units of the IR walk's totals (feature_walk), plus the
    tiling facts that have no loop to be read from. Bytes and flops count over the whole launch."""
    flops: float  # executed, padding of edge tiles included
    global_load_bytes: float
    global_store_bytes: float
    shared_load_bytes: float
    shared_store_bytes: float
    mma: float  # tensor-core instructions issued (warpgroup-wide wgmma)
    global_accesses: float  # load/store instructions to global memory (a TMA box counts one)
    barriers: float  # barrier waits over all threads (mbarrier phases, cluster syncs)
    registers: int  # per thread, the template's estimate
    tile: tuple[int, int, int]  # (m, n, k) of one CTA's output tile and K step
    tiles: int  # CTA work units of the problem: output tiles (of every batch entry) x K ranges
    k_steps: int  # K steps per unit
    stages: int  # shared-memory buffers in flight
    raster_group: int = 1  # tile rows walked together, column by column, for L2 reuse (1: row-major order)
    split_k: int = 1  # K ranges per tile, each its own work unit (counted in `tiles`) writing partials
    balanced_rounds: bool = False  # stream-K: the last round's work spread evenly over every CTA (no idle SMs)


@dataclass(eq=False)
class OpaqueKernel:
    """One kernel rendered by its template; `grid` follows from `units`, `persistent`, `cluster` and the SMs."""
    name: str
    source: str  # the kernel's own text: constants, device functions and the extern "C" entry, no prelude
    prelude: tuple  # blocks of CUDA text it needs before it, each emitted once per module
    params: tuple  # Buffer (a pointer) | ScalarParam | TensorMapParam, in signature order
    block: tuple
    dynamic_shared_bytes: int
    units: int  # pieces of work: clusters of output tiles
    persistent: bool = False  # launch at most one cluster per `cluster` SMs, each striding over the units
    cluster: int = 1  # CTAs per cluster along x, compiled in (__cluster_dims__)
    sm_count: int = 0  # the target's SMs when the schedule knew them; 0: the runtime asks the device
    requires: tuple = ()  # Target.tensor_cores families the kernel executes
    profile: KernelProfile | None = None
    shared_bytes: int = 0  # static shared memory (declared in the source): 0, all of it is dynamic here
    attrs: dict = field(default_factory=dict)

    def grid_for(self, sm_count: int) -> tuple:
        """CTAs along x: a cluster per unit, or, persistent, as many clusters as the SMs hold at once (one CTA each);
        with sm_count 0 (unknown) the persistent grid is not capped."""
        clusters = self.units
        if self.persistent and sm_count:
            clusters = min(self.units, max(1, sm_count // self.cluster))
        return (clusters * self.cluster, 1, 1)

    @property
    def grid(self) -> tuple:
        return self.grid_for(self.sm_count)

    @property
    def param_kinds(self) -> tuple:
        """Each parameter's kind in runtime.tensor_map.PARAM_KINDS' names."""
        return tuple("pointer" if isinstance(p, Buffer) else "tensor_map" if isinstance(p, TensorMapParam)
                     else p.kind for p in self.params)

    @property
    def tensor_maps(self) -> tuple:
        return tuple(p for p in self.params if isinstance(p, TensorMapParam))

    @property
    def bound_buffers(self) -> tuple:
        """The buffers whose addresses the launch reads, in parameter order (a tensor map's included)."""
        return tuple(p if isinstance(p, Buffer) else p.buffer for p in self.params
                     if isinstance(p, (Buffer, TensorMapParam)))
