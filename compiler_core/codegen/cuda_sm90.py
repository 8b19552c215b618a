"""Hopper (sm_90a) device functions rendered as CUDA C text: mbarriers, TMA bulk tensor loads, proxy fences,
wgmma (fence / commit / wait / mma_async with shared-memory descriptors) and setmaxnreg.

Each piece is a `__device__ __forceinline__` wrapper around inline PTX; `prelude(...)` returns the text of the
requested pieces (with the pieces they need) so a kernel generator writes readable code against `tf_*` names.
The Python helpers below the pieces (`smem_descriptor`, `swizzle_128b`, ...) compute the same numbers as the
device code, so the layout arithmetic is unit-tested without a GPU.

PTX facts relied on (PTX ISA 8.x, sm_90a; the wgmma and setmaxnreg instructions need the `a` target, built with
`-gencode=arch=compute_90a,code=sm_90a`):
- mbarrier: a 64-bit shared-memory object; a phase completes when its pending arrival count reaches zero AND its
  pending transaction count (expect_tx minus complete_tx bytes) is zero. `try_wait.parity P` succeeds once the
  phase with parity P has completed; a freshly initialised barrier is in phase 0, and waiting for parity 1 on it
  succeeds at once (the phase "before" phase 0 counts as complete): producers wait on empty barriers with the
  flipped parity so that their first pass through the ring does not block.
- TMA (`cp.async.bulk.tensor`) runs in the async proxy and signals the mbarrier with complete_tx of the FULL box
  size in bytes, also for boxes that are partly (or wholly) outside the tensor: those elements are filled (zero
  with OOB fill NONE), so expect_tx is always the box bytes. The destination must be 128-byte aligned; with the
  128B swizzle the swizzle pattern repeats every 1024 bytes and is a function of the shared address bits, so
  tiles start 1024-byte aligned for the wgmma descriptor's base offset to be 0.
- `.shared::cluster` destination with a CTA-local shared address: a shared::cta address is a valid
  shared::cluster address of the executing CTA, so the same instruction serves clusters of one.
- mbarrier.init is a generic-proxy write; `fence.mbarrier_init.release.cluster` makes it visible to the async
  proxy (TMA complete_tx) and to other CTAs of a cluster; a CTA barrier after it publishes it to the CTA's threads.
- wgmma.mma_async reads shared memory through descriptors and accumulates into registers asynchronously:
  `wgmma.fence` must precede the first wgmma that reads registers written by other instructions (zeroed
  accumulators), `commit_group` closes a group, `wait_group N` waits until at most N groups are pending. Only after
  the wait may the accumulator registers be read, or the shared tiles be overwritten. The compiler does not know
  the registers are written late, so `tf_fence_operands` ties each accumulator to an empty volatile asm after the
  wait (the trick CUTLASS calls warpgroup_fence_operand) so no read of them is hoisted above the wait.
- wgmma is warpgroup-wide (.sync.aligned): all 128 threads of a warpgroup (4 consecutive warps, the first at a warp
  index divisible by 4) execute it convergently with the same descriptors.
- Shared-memory matrix descriptor (64 bits): start address >> 4 in bits 0-13, leading-dimension byte offset >> 4
  in bits 16-29, stride-dimension byte offset >> 4 in bits 32-45, base offset in bits 49-51, swizzle mode in bits
  62-63 (0 none, 1 = 128B, 2 = 64B, 3 = 32B). In 128B-swizzle layouts (CUTLASS's canonical GMMA layouts):
    K-major (A, and B given K-major): rows of 128 bytes, 8-row groups of 1024 bytes; SBO = the stride between
      8-row groups (1024 for a dense tile), LBO unused by the hardware (set to 1, i.e. 16 bytes, by convention).
      The k-th 16-element slice of a 64-element (128-byte) row starts 32*k bytes further: the start address moves,
      the swizzle (applied to absolute address bits) stays right because the tile is 1024-byte aligned.
    MN-major (B row-major, N contiguous; imm-trans-b = 1): columns of 64 elements (128 bytes) per row of K; LBO =
      the stride between 64-element column blocks (one TMA box each), SBO = the stride between 8-row groups of K
      (1024). The k-th 16-row slice starts 16*128 = 2048 bytes further.
- setmaxnreg.{inc,dec}.sync.aligned.u32 R: R in 24..256, a multiple of 8; all warps of a warpgroup execute the same
  one; it only takes effect when the kernel has a register cap at entry (__launch_bounds__(threads, 1)).
- Clusters: a multicast TMA load lands at the same CTA-relative shared offset in every CTA of its mask and signals
  complete_tx on the mbarrier at the same offset in each; a CTA's transaction count may go negative for a while
  (a peer's bytes landing before the local expect_tx) and the phase still completes only when the local arrival
  count and the count both reach zero. `mapa` maps a local shared address to a peer's shared::cluster address for
  a remote arrive. barrier.cluster is released by threads exiting, but CTAs must not exit while peers may still
  arrive on their barriers, hence a cluster barrier at the end.
"""
from __future__ import annotations

from dataclasses import dataclass

WARPGROUP_THREADS = 128
SWIZZLE_128B_BYTES = 128  # the row width of a 128B-swizzled tile
SWIZZLE_ATOM_BYTES = 1024  # 8 rows x 128 bytes: the period of the 128B swizzle pattern
DESC_SWIZZLE = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
WGMMA_K = 16  # k of wgmma.m64nNk16 for 16-bit inputs
WGMMA_M = 64
AB_TYPES = {"float16": "f16", "bfloat16": "bf16"}


# ---- pieces of CUDA C -------------------------------------------------------------------------------------------
_BASE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

// The 128-byte opaque CUtensorMap (cuda.h declares it the same way), passed by value as a
// `const __grid_constant__` kernel parameter: its address is then a param-space address that TMA reads.
struct __align__(64) tf_tensor_map { unsigned long long opaque[16]; };
static_assert(sizeof(tf_tensor_map) == 128, "CUtensorMap is 128 bytes");

// 32-bit shared-window address of a generic pointer into shared memory (what PTX shared-space operands take).
__device__ __forceinline__ uint32_t tf_smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
"""

_MBARRIER = r"""
// mbarrier.init: `count` arrivals complete a phase (plus any expected transaction bytes).
__device__ __forceinline__ void tf_mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(tf_smem_u32(bar)), "r"(count) : "memory");
}

// Makes the initialised barriers visible to the async proxy (TMA) and to the cluster; a CTA barrier must follow.
__device__ __forceinline__ void tf_fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrival (release semantics: this thread's earlier memory accesses happen before the phase completes).
__device__ __forceinline__ void tf_mbar_arrive(uint64_t* bar) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared::cta.b64 state, [%0];\n}"
               :: "r"(tf_smem_u32(bar)) : "memory");
}

// One arrival that also raises the phase's expected transaction count by `bytes`; the TMA loads issued next
// against this barrier bring it back to zero with complete_tx as their data lands.
__device__ __forceinline__ void tf_mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(tf_smem_u32(bar)), "r"(bytes) : "memory");
}

// Spins until the phase with parity `parity` has completed (try_wait may time out and return false: loop).
__device__ __forceinline__ void tf_mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(tf_smem_u32(bar)), "r"(parity) : "memory");
  } while (!done);
}
"""

_TMA = r"""
// Brings the tensor map (in param space) into the descriptor cache before the first load uses it.
__device__ __forceinline__ void tf_prefetch_tensor_map(const tf_tensor_map* map) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// TMA: the box at element coordinates (c0 innermost, c1) of a 2-D tensor map into shared memory at `dst`
// (128-byte aligned; 1024 for 128B swizzle), completing `box bytes` of transactions on `bar`.
__device__ __forceinline__ void tf_tma_load_2d(void* dst, const tf_tensor_map* map, uint64_t* bar,
                                               int32_t c0, int32_t c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4}], [%2];"
               :: "r"(tf_smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(tf_smem_u32(bar)),
                  "r"(c0), "r"(c1) : "memory");
}

// The same for a 3-D map (batched operands: c2 is the batch index).
__device__ __forceinline__ void tf_tma_load_3d(void* dst, const tf_tensor_map* map, uint64_t* bar,
                                               int32_t c0, int32_t c1, int32_t c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5}], [%2];"
               :: "r"(tf_smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(tf_smem_u32(bar)),
                  "r"(c0), "r"(c1), "r"(c2) : "memory");
}
"""

_TMA_IM2COL = r"""
// TMA im2col (4-D NHWC map): `pixels per column` consecutive output pixels, starting at the window origin
// (w, h) of image n, times the map's channels from channel c, each pixel shifted by the filter tap (off_w, off_h):
// one row of channels per pixel at `dst`, zeros outside the tensor.
__device__ __forceinline__ void tf_tma_load_im2col_4d(void* dst, const tf_tensor_map* map, uint64_t* bar,
                                                      int32_t c, int32_t w, int32_t h, int32_t n,
                                                      uint16_t off_w, uint16_t off_h) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};"
               :: "r"(tf_smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(tf_smem_u32(bar)),
                  "r"(c), "r"(w), "r"(h), "r"(n), "h"(off_w), "h"(off_h) : "memory");
}
"""

_FENCE_PROXY = r"""
// Orders this thread's generic-proxy shared-memory writes (st.shared, stmatrix) before later async-proxy
// accesses (TMA store, wgmma operand reads) of the same bytes; a barrier must still publish them to other threads.
__device__ __forceinline__ void tf_fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
"""

_WGMMA_SYNC = r"""
// Orders earlier register (accumulator) and shared-memory accesses before the wgmma operations that follow.
__device__ __forceinline__ void tf_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

// Closes the wgmma operations issued since the last commit into one wgmma-group.
__device__ __forceinline__ void tf_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// Waits until at most N wgmma-groups of this warpgroup are pending (N is an immediate).
template <int N>
__device__ __forceinline__ void tf_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}

// Keeps the compiler from moving accesses of the accumulators across this point (see the module notes).
template <int N>
__device__ __forceinline__ void tf_fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}
"""

_DESCRIPTOR = r"""
// wgmma shared-memory matrix descriptor for a 128B-swizzled tile whose 1024-byte swizzle atoms are aligned
// (base offset 0): start >> 4 in bits 0-13, LBO >> 4 in 16-29, SBO >> 4 in 32-45, swizzle 128B (1) in 62-63.
// Adding (bytes >> 4) to the result moves the start address (it stays below 2^18: all shared memory does).
__device__ __forceinline__ uint64_t tf_desc_sw128(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  uint64_t desc = (smem_addr & 0x3FFFF) >> 4;
  desc |= static_cast<uint64_t>((lbo_bytes & 0x3FFFF) >> 4) << 16;
  desc |= static_cast<uint64_t>((sbo_bytes & 0x3FFFF) >> 4) << 32;
  desc |= static_cast<uint64_t>(1) << 62;
  return desc;
}
"""

_SETMAXNREG = r"""
// Warpgroup register reallocation: the producer gives registers back, consumers take them. R: 24..256, R % 8 == 0.
template <int R>
__device__ __forceinline__ void tf_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(R));
}

template <int R>
__device__ __forceinline__ void tf_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(R));
}
"""

_CLUSTER = r"""
// This CTA's rank in its cluster (0 .. cluster size - 1).
__device__ __forceinline__ uint32_t tf_cluster_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// Every thread of every CTA of the cluster: arrive (release) then wait (acquire). Not .aligned, so diverged warps
// may call it; threads that have exited do not hold it up.
__device__ __forceinline__ void tf_cluster_sync() {
  asm volatile("barrier.cluster.arrive;\n barrier.cluster.wait;" ::: "memory");
}

// One arrival on the barrier at the same shared offset as `bar` in CTA `rank` of the cluster (own rank too):
// mapa turns the local shared address into that CTA's shared::cluster address.
__device__ __forceinline__ void tf_mbar_arrive_cluster(uint64_t* bar, uint32_t rank) {
  asm volatile("{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %0, %1;\n"
               " mbarrier.arrive.shared::cluster.b64 _, [remote];\n}"
               :: "r"(tf_smem_u32(bar)), "r"(rank) : "memory");
}

// TMA multicast: the box lands at the same shared offset in every CTA of `cta_mask` and signals complete_tx on
// the barrier at the same offset in each of them (each CTA's barrier expects the bytes that land in it).
__device__ __forceinline__ void tf_tma_load_2d_multicast(void* dst, const tf_tensor_map* map, uint64_t* bar,
                                                         uint16_t cta_mask, int32_t c0, int32_t c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%4, %5}], [%2], %3;"
               :: "r"(tf_smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(tf_smem_u32(bar)),
                  "h"(cta_mask), "r"(c0), "r"(c1) : "memory");
}
"""

_DSMEM = r"""
// 16 bytes of CTA `rank`'s shared memory at the offset of the local shared address `local` (distributed shared
// memory: mapa turns it into that CTA's shared::cluster address; own rank too).
__device__ __forceinline__ float4 tf_ld_cluster_f4(uint32_t local, uint32_t rank) {
  float4 v;
  asm volatile("{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %4, %5;\n"
               " ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [remote];\n}"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(local), "r"(rank) : "memory");
  return v;
}
"""

_MULTICAST_3D = r"""
// TMA multicast of a 3-D map's box (batched operands: c2 is the batch index), as tf_tma_load_2d_multicast.
__device__ __forceinline__ void tf_tma_load_3d_multicast(void* dst, const tf_tensor_map* map, uint64_t* bar,
                                                         uint16_t cta_mask, int32_t c0, int32_t c1, int32_t c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%4, %5, %6}], [%2], %3;"
               :: "r"(tf_smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(tf_smem_u32(bar)),
                  "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
"""

PIECES = {
    "base": _BASE,
    "mbarrier": _MBARRIER,
    "tma": _TMA,
    "tma_im2col": _TMA_IM2COL,
    "fence_proxy": _FENCE_PROXY,
    "wgmma_sync": _WGMMA_SYNC,
    "descriptor": _DESCRIPTOR,
    "setmaxnreg": _SETMAXNREG,
    "cluster": _CLUSTER,
    "multicast_3d": _MULTICAST_3D,
    "dsmem": _DSMEM,
}
_NEEDS = {"mbarrier": ("base",), "tma": ("base",), "tma_im2col": ("tma", "base"), "fence_proxy": (), "wgmma_sync": (),
          "descriptor": ("base",),
          "setmaxnreg": (), "base": (), "cluster": ("base",),
          "multicast_3d": ("cluster", "base"), "dsmem": ("cluster", "base")}


# ---- wgmma.mma_async -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Wgmma:
    """One wgmma.mma_async.m64nNk16 variant: fp32 accumulators, B from shared memory (a descriptor), A from shared
    memory too or, with `a_regs`, from registers (four 32-bit pairs a lane: the layout of an m16n8k16 A fragment per
    warp, which is also the layout of the fp32 accumulators narrowed pairwise: FlashAttention's P)."""
    n: int
    ab: str = "float16"  # "float16" | "bfloat16": both inputs
    trans_a: int = 0  # 0: A K-major (row-major M x K)
    trans_b: int = 1  # 1: B N-major (row-major K x N); 0: B K-major (N x K, "B transposed")
    a_regs: bool = False  # A from registers (PTX's register form has no imm-trans-a)

    def __post_init__(self) -> None:
        if self.n % 8 or not 8 <= self.n <= 256:
            raise ValueError(f"wgmma m64nNk16 with 16-bit inputs takes N in 8..256, a multiple of 8; got {self.n}")
        if self.ab not in AB_TYPES:
            raise ValueError(f"wgmma inputs must be one of {sorted(AB_TYPES)}, got {self.ab!r}")
        if self.trans_a not in (0, 1) or self.trans_b not in (0, 1):
            raise ValueError("imm-trans-a/b are 0 or 1")
        if self.a_regs and self.trans_a:
            raise ValueError("wgmma with A in registers takes A K-major (trans_a 0)")

    @property
    def accumulators(self) -> int:
        """fp32 accumulator registers per thread: 64 x N values over 128 threads."""
        return WGMMA_M * self.n // WARPGROUP_THREADS

    @property
    def name(self) -> str:
        a = "_ar" if self.a_regs else f"_ta{self.trans_a}"
        return f"tf_wgmma_m64n{self.n}k16_f32_{AB_TYPES[self.ab]}{a}_tb{self.trans_b}"


def wgmma_function(w: Wgmma) -> str:
    """`void NAME(float (&d)[N/2], uint64_t desc_a, uint64_t desc_b, int scale_d)`: d = A*B + (scale_d ? d : 0).

    The accumulators are "+f" operands %0..%(N/2-1) in the order the PTX fragment lists them (d[4j..4j+3] hold
    rows r, r, r+8, r+8 and columns 8j + 2*(lane%4) + {0,1,0,1}, r = 16*warp + lane/4); the array is indexed only
    by constants, so it stays in registers. scale-d is a predicate operand: set from `scale_d` with setp.
    imm-scale-a/b are 1 (no negation); imm-trans-a/b are baked into the name (only 16-bit inputs allow them).
    With `a_regs` the second parameter is `const uint32_t (&a)[4]`, A's fragment, instead of A's descriptor."""
    count = w.accumulators
    t = AB_TYPES[w.ab]
    rows = [", ".join(f"%{i}" for i in range(r, min(r + 8, count))) for r in range(0, count, 8)]
    reg_text = "\n".join(f'      "{row}{"}, " if r == len(rows) - 1 else ", "}"' for r, row in enumerate(rows))
    outs = [", ".join(f'"+f"(d[{i}])' for i in range(r, min(r + 8, count))) for r in range(0, count, 8)]
    out_text = ",\n".join(f"        {row}" for row in outs)
    if w.a_regs:
        db, sd = count + 4, count + 5
        a_param, a_operand = "const uint32_t (&a)[4]", f"{{%{count}, %{count + 1}, %{count + 2}, %{count + 3}}}"
        a_inputs, trans = '"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3])', f"{w.trans_b}"
    else:
        db, sd = count + 1, count + 2
        a_param, a_operand, a_inputs, trans = "uint64_t desc_a", f"%{count}", '"l"(desc_a)', f"{w.trans_a}, {w.trans_b}"
    return "\n".join((
        f"__device__ __forceinline__ void {w.name}(float (&d)[{count}], {a_param}, uint64_t desc_b,",
        f"{' ' * (len(w.name) + 33)}int scale_d) {{",
        "  asm volatile(",
        f'      "{{\\n .reg .pred p;\\n setp.ne.b32 p, %{sd}, 0;\\n"',
        f'      " wgmma.mma_async.sync.aligned.m64n{w.n}k16.f32.{t}.{t} {{"',
        reg_text,
        f'      "{a_operand}, %{db}, p, 1, 1, {trans};\\n}}\\n"',
        f"      : {out_text.lstrip()}",
        f'      : {a_inputs}, "l"(desc_b), "r"(scale_d));',
        "}",
        "",
    ))


def prelude(pieces: tuple[str, ...] | list[str], wgmmas: tuple[Wgmma, ...] | list[Wgmma] = ()) -> str:
    """The CUDA C text of the requested pieces (and the pieces they need, in a fixed order), then one function per
    distinct wgmma variant."""
    return "\n".join(prelude_blocks(pieces, wgmmas))


def prelude_blocks(pieces: tuple[str, ...] | list[str], wgmmas: tuple[Wgmma, ...] | list[Wgmma] = ()) -> tuple:
    """`prelude` as separate blocks, one per piece or wgmma variant, each needing only blocks before it: a module
    of several kernels emits the union of theirs, each block once (codegen/cuda.py)."""
    unknown = set(pieces) - set(PIECES)
    if unknown:
        raise ValueError(f"unknown sm90 pieces {sorted(unknown)}; known: {sorted(PIECES)}")
    wanted = set(pieces)
    for piece in list(wanted):
        wanted.update(_NEEDS[piece])
    if wgmmas:
        wanted.add("base")
    text = [PIECES[name].strip("\n") + "\n" for name in PIECES if name in wanted]
    text += [wgmma_function(w) for w in dict.fromkeys(wgmmas)]
    return tuple(text)


# ---- the same arithmetic in Python (for generators and tests) ------------------------------------------------
def smem_descriptor(start: int, lbo: int, sbo: int, swizzle: str = "128B", base_offset: int = 0) -> int:
    """The 64-bit wgmma shared-memory descriptor `tf_desc_sw128` builds (any swizzle mode here)."""
    for name, value in (("start", start), ("lbo", lbo), ("sbo", sbo)):
        if value % 16 or not 0 <= value < 1 << 18:
            raise ValueError(f"descriptor {name} must be a multiple of 16 below 256 KiB, got {value}")
    if not 0 <= base_offset < 8:
        raise ValueError(f"base offset is 3 bits, got {base_offset}")
    return ((start >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | base_offset << 49
            | DESC_SWIZZLE[swizzle] << 62)


def decode_descriptor(desc: int) -> dict:
    """The fields of a descriptor, in bytes (start, lbo, sbo), for messages and tests."""
    swizzle = {v: k for k, v in DESC_SWIZZLE.items()}[(desc >> 62) & 3]
    return {"start": (desc & 0x3FFF) << 4, "lbo": ((desc >> 16) & 0x3FFF) << 4, "sbo": ((desc >> 32) & 0x3FFF) << 4,
            "base_offset": (desc >> 49) & 7, "swizzle": swizzle}


def swizzle_128b(address: int) -> int:
    """Where the 128B swizzle (CUTLASS Swizzle<3,4,3>) puts byte `address`: its 16-byte chunk index within a
    128-byte row (address bits 4-6) XOR the row index within the 1024-byte atom (bits 7-9). TMA writes tiles this
    way and wgmma reads them this way; both apply it to the absolute shared address."""
    return address ^ (((address >> 7) & 7) << 4)


def kmajor_operand_address(start: int, sbo: int, row: int, k: int, elem_bytes: int = 2) -> int:
    """Shared address wgmma reads for element (row, k) of a K-major 128B-swizzled operand slice (64 or N rows x
    16 k) whose descriptor has `start` and `sbo`: the canonical layout ((8,m),(16 el)) : ((128 B, SBO), el)."""
    return swizzle_128b(start + (row // 8) * sbo + (row % 8) * SWIZZLE_128B_BYTES + k * elem_bytes)


def mnmajor_operand_address(start: int, lbo: int, sbo: int, k: int, n: int, elem_bytes: int = 2) -> int:
    """Shared address wgmma reads for element (k, n) of an MN-major 128B-swizzled B slice (16 k x N): the
    canonical layout ((64 el, n/64), (8, k/8)) : ((el, LBO), (128 B, SBO))."""
    per_row = SWIZZLE_128B_BYTES // elem_bytes
    offset = (n // per_row) * lbo + (k // 8) * sbo + (k % 8) * SWIZZLE_128B_BYTES + (n % per_row) * elem_bytes
    return swizzle_128b(start + offset)


def tma_box_address(base: int, row: int, col: int, elem_bytes: int = 2) -> int:
    """Where a TMA load with 128B swizzle into `base` puts element (row, col) of its box (rows of 128 bytes)."""
    return swizzle_128b(base + row * SWIZZLE_128B_BYTES + col * elem_bytes)
