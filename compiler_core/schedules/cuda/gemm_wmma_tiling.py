"""The WMMA GEMM's problem and what a config derives from it: tiling, shared buffers, registers (gemm_wmma)."""
from __future__ import annotations

from dataclasses import dataclass

from compiler_core.ir import stmt as S
from compiler_core.passes.verify_resources import BASE_REGISTERS
from compiler_core.schedules.cuda import gemm_wmma_implicit as implicit_b

FRAG = 16  # WMMA m16n16k16
WARP = 32  # WMMA fragments are warp-wide: 32 lanes on every NVIDIA GPU with tensor cores
FRAGMENT_WORDS = 8  # what verify_resources counts per fragment
SMEM_ALIGN = 32  # WMMA loads/stores need 256-bit aligned pointers


@dataclass(frozen=True)
class Problem:
    batch: int
    M: int
    N: int
    K: int
    batched: bool
    dtype: str  # of A, B and C: float16 | bfloat16
    implicit: implicit_b.Implicit | None = None  # conv2d: B gathered element by element (gemm_wmma_implicit)


# the tensor-core family each input type needs (Target.tensor_cores)
TENSOR_CORES = {"float16": "wmma_f16", "bfloat16": "mma_bf16"}


@dataclass(frozen=True)
class Tiling:
    bm: int
    bn: int
    bk: int
    wm: int
    wn: int
    pad: int
    stages: int
    group: int

    @classmethod
    def of(cls, c: dict) -> Tiling:
        return cls(c["block_m"], c["block_n"], c["block_k"], c["warps_m"], c["warps_n"], c["pad"],
                   c["stages"], c["group_m"])

    @property
    def warps(self) -> int:
        return self.wm * self.wn

    @property
    def threads(self) -> int:
        return WARP * self.warps

    @property
    def fm(self) -> int:
        """Fragment rows per warp."""
        return self.bm // (FRAG * self.wm)

    @property
    def fn(self) -> int:
        return self.bn // (FRAG * self.wn)

    @property
    def registers(self) -> int:
        """verify_resources' estimate: its base plus 8 words per A, B and accumulator fragment."""
        return BASE_REGISTERS + FRAGMENT_WORDS * (self.fm + self.fn + self.fm * self.fn)


def shared_buffers(t: Tiling, dtype: str = "float16", b_kmajor: bool = False) -> tuple:
    """The A and B tile rings (of the inputs' 2-byte type: the sizes are the same for either; B j-major where its
    source is k-contiguous) and the per-warp float32 staging tiles of the epilogue."""
    a = S.Buffer("As", dtype, (t.stages, t.bm, t.bk), S.Scope.SHARED, t.pad, SMEM_ALIGN)
    b_shape = (t.stages, t.bn, t.bk) if b_kmajor else (t.stages, t.bk, t.bn)
    b = S.Buffer("Bs", dtype, b_shape, S.Scope.SHARED, t.pad, SMEM_ALIGN)
    c = S.Buffer("Cs", "float32", (t.warps, FRAG, FRAG), S.Scope.SHARED, 0, SMEM_ALIGN)
    return a, b, c


def shared_bytes(config: dict, p: Problem | None = None) -> int:
    """Static shared memory: the rings, the staging tiles and an implicit B's kk table."""
    gathered = p is not None and b_gathered(p)
    table = implicit_b.table_bytes(config, p.K) if gathered else 0
    return sum(buf.nbytes for buf in shared_buffers(Tiling.of(config), b_kmajor=_kmajor(p))) + table


def b_gathered(p: Problem | None) -> bool:
    return p is not None and p.implicit is not None and p.implicit.gather is not None


def _kmajor(p: Problem | None) -> bool:
    return p is not None and p.implicit is not None and p.implicit.kmajor is not None


def registers(config: dict, p: Problem) -> int:
    t = Tiling.of(config)
    return t.registers + (implicit_b.extra_registers(p.implicit, config, t.threads) if b_gathered(p) else 0)


def vector_width(n: int) -> int:
    """Halves per copy chunk along a row of length n: 8 (128-bit), 4, 2 or 1, whichever divides n."""
    return next(v for v in (8, 4, 2, 1) if n % v == 0)
