"""A Hopper GEMM kernel rendered from knobs: C[M,N] = A[M,K] @ B[K,N], fp16 or bf16 inputs, fp32 accumulation,
C in fp16, bf16 or fp32. A probe for what TMA + mbarrier pipelines + wgmma reach before this becomes a schedule
template (benchmarks/hopper_gemm_probe.py runs it).

The kernel, one CTA of (consumers + 1) warpgroups:
- warpgroup 0 is the producer: one thread walks the CTA's tiles and their K blocks, and for each K block waits
  until ring stage s is empty, announces the stage's bytes on full[s] (arrive.expect_tx) and issues the TMA loads
  of the A box (BK x BM, 128B swizzle) and the B boxes (64 columns x BK rows each) into stage s.
- warpgroups 1..consumers each own BM/consumers rows of the tile, as m64 slices: per K block they wait on full[s],
  issue BK/16 x slices wgmma.m64nBNk16 from shared memory (descriptors), commit, wait until the previous K block's
  group has finished and then release that block's stage (one arrive per warpgroup on empty[s]).
- the ring (stage, phase) runs on across tiles, so the producer loads the next tile while the consumers store C.
- the epilogue converts the fp32 accumulators, stages each warp's 16 rows x 128 bytes through its own padded
  shared buffer and writes C with 16-byte stores (element stores at the right/bottom edge or for unaligned rows).
- persistent: gridDim.x CTAs stride over the tiles in a grouped raster (group_m tile rows walked column by
  column, for L2 reuse); non-persistent: one tile per CTA, the same code.
- cluster 2: two CTAs (__cluster_dims__) take the two BM-row halves of a 2*BM x BN tile; each loads its own A and
  every other B box, multicast into both CTAs' stage, so B crosses L2 once per pair. Each CTA's full[s] still
  expects A + all of B (the bytes that land in it, whoever issued them; a peer's bytes may land before the local
  expect_tx, which the transaction count allows), and empty[s] counts the consumer warpgroups of both CTAs: a
  stage is refilled only when every CTA it is multicast into has released it.

B is row-major (K x N, PyTorch's layout) by default and is consumed N-major (imm-trans-b = 1: the descriptor's
LBO steps between 64-column boxes); `b_kmajor` takes B as N x K row-major (B transposed, K contiguous) and
consumes it K-major like A.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from compiler_core.codegen import sm90_conv
from compiler_core.codegen.cuda_sm90 import SWIZZLE_ATOM_BYTES, Wgmma
from compiler_core.codegen.cuda_sm90 import prelude_blocks as sm90_prelude_blocks
from compiler_core.codegen.sm90_conv import ConvGeometry
from compiler_core.errors import ConfigError

ELEM_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
C_TYPES = {"float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float"}
MAX_DYNAMIC_SMEM = 232448  # 227 KiB: sm_90's opt-in limit per block
ROW_BYTES = 128  # one 128B-swizzled row: 64 16-bit elements
B_BOX_COLS = 64  # B (N-major) arrives in boxes 64 columns wide
REGS_PRODUCER, REGS_CONSUMER = 40, 232  # setmaxnreg with two consumer warpgroups: 40*128 + 232*256 <= 65536


@dataclass(frozen=True)
class HopperGemmConfig:
    bm: int = 128  # rows of C per CTA tile (split over the consumer warpgroups, 64 per wgmma)
    bn: int = 128  # columns of C per tile = the wgmma N
    bk: int = 64  # K per stage: 64 16-bit elements = one 128-byte swizzled row
    stages: int = 4
    consumers: int = 2  # consumer warpgroups
    persistent: bool = True
    group_m: int = 8  # raster: tile rows per group
    cluster: int = 1  # CTAs per cluster along M, sharing B boxes by TMA multicast
    out: str = "same"  # C's dtype: float16 | bfloat16 | float32 | same (as the inputs)
    b_kmajor: bool = False  # B given as N x K (K contiguous) instead of K x N

    @classmethod
    def of(cls, knobs: dict) -> HopperGemmConfig:
        unknown = set(knobs) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"unknown knobs {sorted(unknown)}")
        return cls(**knobs)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def threads(self) -> int:
        return 128 * (self.consumers + 1)

    @property
    def slices(self) -> int:
        """m64 wgmma slices per consumer warpgroup."""
        return self.bm // (64 * self.consumers)

    @property
    def accumulators(self) -> int:
        """fp32 accumulator registers per consumer thread."""
        return self.slices * self.bn // 2

    def out_dtype(self, ab: str) -> str:
        return ab if self.out == "same" else self.out

    def short(self) -> str:
        return (f"{self.bm}x{self.bn}x{self.bk} s{self.stages} c{self.consumers} "
                f"{'P' if self.persistent else 'NP'} g{self.group_m} out={self.out}{' Bk' if self.b_kmajor else ''}")


@dataclass(frozen=True)
class SmemLayout:
    a_stage: int
    b_stage: int
    epi_pitch: int  # bytes per staged output row (128 + padding against bank conflicts)
    a: int  # offsets from the 1024-aligned base
    b: int
    epi: int
    bars: int
    total: int  # bytes used from the aligned base
    dynamic: int  # bytes to request: total + alignment slack


def smem_layout(cfg: HopperGemmConfig, ab: str) -> SmemLayout:
    out_bytes = ELEM_BYTES[cfg.out_dtype(ab)]
    a_stage = cfg.bm * ROW_BYTES
    b_stage = cfg.bn * ROW_BYTES if cfg.b_kmajor else (cfg.bn // B_BOX_COLS) * cfg.bk * ROW_BYTES
    # Epilogue rows: 2-byte outputs are written as 4-byte pairs, 8 rows x 4 lanes per instruction: a 16-byte pad
    # puts row r on banks 4r..4r+3. fp32 pairs are 8 bytes, served per half-warp (4 rows): a 32-byte pad puts
    # row r on banks 8r..8r+7. Reads are 16 bytes per lane, one 128-byte row per quarter-warp: conflict-free.
    epi_pitch = ROW_BYTES + (32 if out_bytes == 4 else 16)
    a, b = 0, cfg.stages * a_stage
    epi = b + cfg.stages * b_stage
    bars = epi + cfg.consumers * 4 * 16 * epi_pitch
    total = bars + 2 * cfg.stages * 8
    return SmemLayout(a_stage, b_stage, epi_pitch, a, b, epi, bars, total, total + SWIZZLE_ATOM_BYTES)


def check(cfg: HopperGemmConfig, ab: str = "float16", conv: ConvGeometry | None = None) -> None:
    """Raises ConfigError naming the first rule the knobs break."""
    rules = (
        (conv is None or (cfg.b_kmajor and cfg.cluster == 1),
         "conv2d reads B (im2col rows of channels) K-major, without a cluster: b_kmajor=True, cluster=1"),
        (ab in ("float16", "bfloat16"), f"inputs must be float16 or bfloat16, got {ab!r}"),
        (cfg.out in ("same", *ELEM_BYTES), f"out must be same|float16|bfloat16|float32, got {cfg.out!r}"),
        (cfg.bk == 64, "bk must be 64: one 128-byte swizzled row of 16-bit elements per stage"),
        (cfg.consumers in (1, 2), "consumers must be 1 or 2 warpgroups"),
        (cfg.bm in (64, 128, 256) and cfg.bm % (64 * cfg.consumers) == 0,
         "bm must be 64, 128 or 256 and give each consumer warpgroup whole m64 slices"),
        (cfg.bn % B_BOX_COLS == 0 and 64 <= cfg.bn <= 256, "bn must be 64, 128, 192 or 256"),
        (2 <= cfg.stages <= 8, "stages must be 2..8"),
        (cfg.accumulators <= 128, f"{cfg.accumulators} fp32 accumulators per thread: at most 128 fit"),
        (cfg.group_m >= 1, "group_m must be >= 1"),
        (cfg.cluster in (1, 2), "cluster must be 1 or 2 CTAs"),
        (cfg.cluster == 1 or not cfg.b_kmajor, "cluster 2 multicasts N-major B boxes: use b_kmajor=False"),
    )
    for ok, message in rules:
        if not ok:
            raise ConfigError(message)
    need = smem_layout(cfg, ab).dynamic
    if need > MAX_DYNAMIC_SMEM:
        raise ConfigError(f"needs {need} bytes of shared memory, over the {MAX_DYNAMIC_SMEM}-byte limit")


def kernel_name(cfg: HopperGemmConfig, ab: str, conv: ConvGeometry | None = None) -> str:
    out = cfg.out_dtype(ab)
    short = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}
    return (f"tf_sm90_{'conv' if conv else 'gemm'}_{short[ab]}_{short[out]}_{cfg.bm}x{cfg.bn}x{cfg.bk}_s{cfg.stages}"
            f"_c{cfg.consumers}_g{cfg.group_m}{'_bk' if cfg.b_kmajor else ''}{'_cl2' if cfg.cluster == 2 else ''}")


def wgmma_variant(cfg: HopperGemmConfig, ab: str) -> Wgmma:
    return Wgmma(cfg.bn, ab, trans_a=0, trans_b=0 if cfg.b_kmajor else 1)


def b_descriptor_fields(cfg: HopperGemmConfig) -> tuple[int, int, int]:
    """(LBO, SBO, bytes per k16 step) of B's descriptor: K-major like A, or N-major across 64-column boxes."""
    if cfg.b_kmajor:
        return 16, SWIZZLE_ATOM_BYTES, 32
    return cfg.bk * ROW_BYTES, SWIZZLE_ATOM_BYTES, 16 * ROW_BYTES


def a_descriptor_fields() -> tuple[int, int, int]:
    """(LBO, SBO, bytes per k16 step) of A's descriptor: K-major, 8-row groups of 1024 bytes."""
    return 16, SWIZZLE_ATOM_BYTES, 32


def render(cfg: HopperGemmConfig, ab: str = "float16", conv: ConvGeometry | None = None) -> str:
    """The complete CUDA source of the kernel `kernel_name(cfg, ab, conv)`."""
    return _drop_blank_lines("\n".join(prelude_blocks(cfg, ab, conv)) + "\n" + render_kernel(cfg, ab, conv))


def prelude_blocks(cfg: HopperGemmConfig, ab: str = "float16", conv: ConvGeometry | None = None) -> tuple:
    """The sm90 prelude the kernel needs (cuda_sm90.prelude_blocks): what a module emits once before its kernels."""
    pieces = ["mbarrier", "tma", "wgmma_sync", "descriptor", "setmaxnreg"] + (["cluster"] if cfg.cluster > 1 else [])
    return sm90_prelude_blocks(pieces + (["tma_im2col"] if conv else []), [wgmma_variant(cfg, ab)])


def _operand_slots(cfg: HopperGemmConfig, conv: ConvGeometry | None) -> dict:
    """The text that differs between a GEMM and an implicit-GEMM conv2d (codegen/sm90_conv.py)."""
    if conv is not None:
        return dict(k_blocks=sm90_conv.K_BLOCKS, tile_setup=sm90_conv.TILE_SETUP, loads=sm90_conv.LOADS,
                    store=sm90_conv.STORE, helpers=sm90_conv.HELPERS, vec_ok=sm90_conv.VEC_OK)
    multicast = ("tf_tma_load_2d_multicast(b + j * B_BOX_BYTES, tm_b, bar, (1u << CLUSTER) - 1, t.n0 + 64 * j, "
                 "kb * BK);" if cfg.cluster > 1 else "")
    return dict(k_blocks="(K + BK - 1) / BK", tile_setup="", loads=_GEMM_LOADS.replace("{multicast}", multicast),
                store=_GEMM_STORE, helpers="", vec_ok="N % VEC == 0 && reinterpret_cast<uintptr_t>(c) % 16 == 0")


def render_kernel(cfg: HopperGemmConfig, ab: str = "float16", conv: ConvGeometry | None = None) -> str:
    """The kernel without its prelude: knob constants, device functions and the extern "C" entry."""
    check(cfg, ab, conv)
    lay = smem_layout(cfg, ab)
    w = wgmma_variant(cfg, ab)
    a_lbo, a_sbo, a_kstep = a_descriptor_fields()
    b_lbo, b_sbo, b_kstep = b_descriptor_fields(cfg)
    out = cfg.out_dtype(ab)
    knobs = ", ".join(f"{k}={v}" for k, v in cfg.as_dict().items())
    consts = _CONSTANTS.format(
        knobs=knobs, ab=ab, bm=cfg.bm, bn=cfg.bn, bk=cfg.bk, stages=cfg.stages, consumers=cfg.consumers,
        group_m=cfg.group_m, cluster=cfg.cluster, max_smem=MAX_DYNAMIC_SMEM, out_t=C_TYPES[out],
        a_stage=lay.a_stage, b_stage=lay.b_stage,
        b_box=cfg.bk * ROW_BYTES, epi_pitch=lay.epi_pitch, smem_a=lay.a, smem_b=lay.b, smem_epi=lay.epi,
        smem_bars=lay.bars, smem_total=lay.total, a_lbo=a_lbo, a_sbo=a_sbo, a_kstep=a_kstep, b_lbo=b_lbo,
        b_sbo=b_sbo, b_kstep=b_kstep, b_kmajor="true" if cfg.b_kmajor else "false")
    if conv is not None:
        consts += sm90_conv.constants(conv, 16 // ELEM_BYTES[out])
    pair = _PAIR_STORE[out]
    body = _BODY.format(wgmma=w.name, name=kernel_name(cfg, ab, conv), pair=pair, **_operand_slots(cfg, conv),
                        release="for (uint32_t r = 0; r < CLUSTER; ++r) tf_mbar_arrive_cluster(empty_stage, r);"
                        if cfg.cluster > 1 else "tf_mbar_arrive(empty_stage);",
                        start_sync="tf_cluster_sync();  // the peers' barriers exist before any multicast or remote "
                                   "arrive" if cfg.cluster > 1 else "__syncthreads();",
                        end_sync="tf_cluster_sync();  // no CTA leaves while a peer may still arrive on its barriers"
                                 if cfg.cluster > 1 else "",
                        rank_expr="tf_cluster_rank()" if cfg.cluster > 1 else "0",
                        dec_line=f"tf_setmaxnreg_dec<{REGS_PRODUCER}>();  // one thread issues TMA: few registers"
                        if cfg.consumers == 2 else "",
                        inc_line=f"tf_setmaxnreg_inc<{REGS_CONSUMER}>();  // room for the accumulators"
                        if cfg.consumers == 2 else "",
                        cluster_dims=f" __cluster_dims__({cfg.cluster}, 1, 1)" if cfg.cluster > 1 else "")
    return _drop_blank_lines(f"{consts}\n{body}")


def _drop_blank_lines(text: str) -> str:
    """Lines left holding only indentation by empty knob-dependent slots go; empty lines stay."""
    return "\n".join(line for line in text.splitlines() if line.strip() or not line) + "\n"


# The GEMM's producer loads per K block: A's box, then B's (K-major box, or 64-column N-major boxes, multicast).
_GEMM_LOADS = """tf_tma_load_2d(a, tm_a, bar, kb * BK, t.m0);  // coordinates innermost first: (k, m)
      if (B_KMAJOR) {
        tf_tma_load_2d(b, tm_b, bar, kb * BK, t.n0);  // B^T is N x K: (k, n)
      } else {
#pragma unroll
        for (int j = 0; j < BN / 64; ++j) {
          if (CLUSTER == 1) {
            tf_tma_load_2d(b + j * B_BOX_BYTES, tm_b, bar, t.n0 + 64 * j, kb * BK);
          } else if (j % CLUSTER == int(sc.rank)) {  // each CTA loads every CLUSTER-th box, for all of them
            {multicast}
          }
        }
      }"""

# The GEMM's global write of one lane's 16 staged bytes: C row-major, a vector where whole and aligned.
_GEMM_STORE = """out_t* dst = c + static_cast<size_t>(row) * N + col;
          if (vec_ok && col + VEC <= N) {
            *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
          } else {
            for (int e = 0; e < VEC && col + e < N; ++e) dst[e] = reinterpret_cast<const out_t*>(src)[e];
          }"""

_PAIR_STORE = {
    "float16": "*reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y);",
    "bfloat16": "*reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y);",
    "float32": "*reinterpret_cast<float2*>(p) = make_float2(x, y);",
}

_CONSTANTS = r"""
// ---- knobs: {knobs}; inputs {ab} --------------------------------------------------------------
typedef {out_t} out_t;
constexpr int BM = {bm}, BN = {bn}, BK = {bk}, STAGES = {stages}, CONSUMERS = {consumers}, GROUP_M = {group_m};
constexpr int CLUSTER = {cluster};  // CTAs per cluster, stacked along M; they share (multicast) the B boxes
constexpr bool B_KMAJOR = {b_kmajor};
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int SLICES = BM / CONSUMERS / 64;  // m64 wgmma slices per consumer warpgroup
constexpr int ACC = BN / 2;                  // fp32 accumulators per thread per slice (64 x BN over 128 threads)

// Shared memory, from a 1024-byte aligned base (TMA's 128B swizzle and the descriptors' base offset 0 need it).
// Every stage buffer is a multiple of 1024 bytes, so each stays aligned.
constexpr uint32_t A_STAGE_BYTES = {a_stage};   // one box: BK (128 bytes, inner) x BM rows
constexpr uint32_t B_STAGE_BYTES = {b_stage};   // BN/64 boxes of 64 columns x BK rows (or one BK x BN K-major box)
constexpr uint32_t B_BOX_BYTES = {b_box};       // one 64-column box of N-major B
constexpr uint32_t STAGE_TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;  // TMA counts whole boxes, edges included
constexpr uint32_t SMEM_A = {smem_a}, SMEM_B = {smem_b}, SMEM_EPI = {smem_epi}, SMEM_BARS = {smem_bars};
constexpr uint32_t SMEM_TOTAL = {smem_total};
constexpr int EPI_PITCH = {epi_pitch};          // bytes per staged output row: 128 + bank-conflict padding
constexpr int EPI_COLS = 128 / sizeof(out_t);   // output columns per staged chunk (128 bytes of a row)
constexpr int VEC = 16 / sizeof(out_t);         // output elements per 16-byte store
static_assert(SMEM_B % 1024 == 0 && SMEM_EPI % 1024 == 0 && A_STAGE_BYTES % 1024 == 0, "aligned stages");
static_assert(BN % EPI_COLS == 0, "whole epilogue chunks");
static_assert(SMEM_TOTAL + 1024 <= {max_smem}, "the ring, staging and barriers fit the opt-in shared memory");

// wgmma descriptors (see cuda_sm90.py): A K-major (LBO unused = 16, SBO = 1024 between 8-row groups, +32 bytes
// per k16 step); B N-major (LBO = one 64-column box, SBO = 1024 between 8-row groups of K, +2048 per k16 step)
// or K-major like A.
constexpr uint32_t A_LBO = {a_lbo}, A_SBO = {a_sbo}, A_KSTEP = {a_kstep};
constexpr uint32_t B_LBO = {b_lbo}, B_SBO = {b_sbo}, B_KSTEP = {b_kstep};
"""

_BODY = r"""
// Where the ring stands: stage index and the parity of its current phase (flips each pass around the ring).
struct Ring {{
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {{
    if (++stage == STAGES) {{ stage = 0; phase ^= 1; }}
  }}
}};

// The tiles of this CTA: cluster c of the grid takes tiles c, c + clusters, ... (one tile per cluster without a
// persistent grid). A tile is CLUSTER x BM rows by BN columns; CTA `rank` of the cluster computes its BM rows.
struct Schedule {{
  int m_tiles, n_tiles, k_blocks, first, step;
  uint32_t rank;
}};

__device__ __forceinline__ Schedule make_schedule(int M, int N, int K) {{
  Schedule s;
  s.m_tiles = (M + BM * CLUSTER - 1) / (BM * CLUSTER);
  s.n_tiles = (N + BN - 1) / BN;
  s.k_blocks = {k_blocks};
  s.first = blockIdx.x / CLUSTER;
  s.step = gridDim.x / CLUSTER;
  s.rank = {rank_expr};
  return s;
}}

struct TileOrigin {{ int m0, n0; }};

// Grouped raster: GROUP_M tile rows form a group, walked column by column, so CTAs running together share B
// columns and A rows in L2. Producer and consumers call this with the same tile index.
__device__ __forceinline__ TileOrigin tile_origin(int tile, const Schedule& s) {{
  const int group_tiles = GROUP_M * s.n_tiles;
  const int first_m = (tile / group_tiles) * GROUP_M;
  const int rows = min(s.m_tiles - first_m, GROUP_M);
  const int in_group = tile % group_tiles;
  return {{(first_m + in_group % rows) * (BM * CLUSTER) + int(s.rank) * BM, (in_group / rows) * BN}};
}}

// ---- producer: one thread feeds the ring with TMA loads ------------------------------------------------------
__device__ __forceinline__ void run_producer(const tf_tensor_map* tm_a, const tf_tensor_map* tm_b,
                                             unsigned char* smem, uint64_t* full, uint64_t* empty,
                                             int M, int N, int K) {{
  tf_prefetch_tensor_map(tm_a);
  tf_prefetch_tensor_map(tm_b);
  const Schedule sc = make_schedule(M, N, K);
  Ring ring;
  for (int tile = sc.first; tile < sc.m_tiles * sc.n_tiles; tile += sc.step) {{
    const TileOrigin t = tile_origin(tile, sc);
    {tile_setup}
    for (int kb = 0; kb < sc.k_blocks; ++kb) {{
      // Wait until every consumer (of every CTA of the cluster) released this stage; on the first pass the
      // parity (phase ^ 1) = 1 of a fresh barrier counts as complete, so the ring fills without waiting.
      tf_mbar_wait(&empty[ring.stage], ring.phase ^ 1);
      uint64_t* bar = &full[ring.stage];
      tf_mbar_arrive_expect_tx(bar, STAGE_TX_BYTES);
      unsigned char* a = smem + SMEM_A + ring.stage * A_STAGE_BYTES;
      unsigned char* b = smem + SMEM_B + ring.stage * B_STAGE_BYTES;
      {loads}
      ring.advance();
    }}
  }}
}}

// ---- epilogue: accumulators -> this warp's staging rows -> C with 16-byte stores -----------------------------
{helpers}__device__ __forceinline__ void store_pair(unsigned char* p, float x, float y) {{
  {pair}
}}

// Accumulator d[4j + q] of lane l in warp w of a warpgroup holds row 16w + l/4 + 8(q/2), column 8j + 2(l%4) + q%2
// of its m64 slice. Each warp stages its 16 rows 128 bytes of C at a time and writes them as 16-byte vectors.
__device__ __forceinline__ void store_tile(float (&acc)[SLICES][ACC], unsigned char* stage, out_t* c,
                                           int warp_row0, int n0, int M, int N, bool vec_ok) {{
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int s = 0; s < SLICES; ++s) {{
    const int row0 = warp_row0 + 64 * s;
    if (row0 >= M) continue;  // warp-uniform: the whole 16-row block lies below the matrix
#pragma unroll
    for (int chunk = 0; chunk < BN / EPI_COLS; ++chunk) {{
#pragma unroll
      for (int j = 0; j < EPI_COLS / 8; ++j) {{
        const int jj = chunk * (EPI_COLS / 8) + j;  // 8-column block within the slice
        const int col_bytes = (8 * j + 2 * (lane % 4)) * int(sizeof(out_t));
        store_pair(stage + (lane / 4) * EPI_PITCH + col_bytes, acc[s][4 * jj], acc[s][4 * jj + 1]);
        store_pair(stage + (lane / 4 + 8) * EPI_PITCH + col_bytes, acc[s][4 * jj + 2], acc[s][4 * jj + 3]);
      }}
      __syncwarp();
#pragma unroll
      for (int it = 0; it < 16 * 8 / 32; ++it) {{  // 16 rows x 8 vectors of 16 bytes over 32 lanes
        const int v = it * 32 + lane, r = v / 8, seg = v % 8;
        const int row = row0 + r, col = n0 + chunk * EPI_COLS + seg * VEC;
        const unsigned char* src = stage + r * EPI_PITCH + seg * 16;
        if (row < M && col < N) {{
          {store}
        }}
      }}
      __syncwarp();  // the next chunk overwrites the staging rows
    }}
  }}
}}

// ---- consumers: wgmma on each stage, release it, store the tile ---------------------------------------------
// A consumer warpgroup hands a stage back to every producer that writes into it: its own, and with a cluster the
// peers' (they multicast B into this CTA's stage), so it arrives on empty[s] of each CTA of the cluster.
__device__ __forceinline__ void release(uint64_t* empty_stage) {{
  {release}
}}

__device__ __forceinline__ void run_consumer(int cw, unsigned char* smem, uint64_t* full, uint64_t* empty,
                                             out_t* c, int M, int N, int K) {{
  const Schedule sc = make_schedule(M, N, K);
  const int warp = (threadIdx.x % 128) / 32;
  const bool leader = threadIdx.x % 128 == 0;  // arrives on empty[] for the warpgroup
  const bool vec_ok = {vec_ok};
  unsigned char* staging = smem + SMEM_EPI + (cw * 4 + warp) * 16 * EPI_PITCH;
  // Descriptors of stage 0, k step 0 of this warpgroup's rows; the rest differ only in the start address, so
  // adding (byte offset >> 4) to the low field moves them (shared addresses stay below 2^18: no carry out).
  const uint64_t desc_a0 = tf_desc_sw128(tf_smem_u32(smem + SMEM_A) + cw * SLICES * 64 * 128, A_LBO, A_SBO);
  const uint64_t desc_b0 = tf_desc_sw128(tf_smem_u32(smem + SMEM_B), B_LBO, B_SBO);
  Ring ring;
  for (int tile = sc.first; tile < sc.m_tiles * sc.n_tiles; tile += sc.step) {{
    const TileOrigin t = tile_origin(tile, sc);
    float acc[SLICES][ACC];
    int released = -1;  // the stage whose wgmma group is still reading
    for (int kb = 0; kb < sc.k_blocks; ++kb) {{
      tf_mbar_wait(&full[ring.stage], ring.phase);  // TMA bytes of this stage have landed
      tf_wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {{
#pragma unroll
        for (int s = 0; s < SLICES; ++s) {{
          const uint64_t da = desc_a0 + ((ring.stage * A_STAGE_BYTES + s * 64 * 128 + kk * A_KSTEP) >> 4);
          const uint64_t db = desc_b0 + ((ring.stage * B_STAGE_BYTES + kk * B_KSTEP) >> 4);
          {wgmma}(acc[s], da, db, (kb > 0 || kk > 0) ? 1 : 0);  // scale-d 0 starts the tile from A*B
        }}
      }}
      tf_wgmma_commit();
      tf_wgmma_wait<1>();  // the previous K block's group is done reading its stage: hand that stage back
      if (released >= 0 && leader) release(&empty[released]);
      released = ring.stage;
      ring.advance();
    }}
    tf_wgmma_wait<0>();
    if (released >= 0 && leader) release(&empty[released]);
#pragma unroll
    for (int s = 0; s < SLICES; ++s) tf_fence_operands(acc[s]);
    store_tile(acc, staging, c, t.m0 + cw * SLICES * 64 + warp * 16, t.n0, M, N, vec_ok);
  }}
}}

// Parameters: each tensor map is 64-byte aligned in constant bank 0, whose parameter space starts at 0x210 on
// sm_90: they sit at offsets 0x30 and 0xb0, and the launcher packs its buffer at the offsets the cubin names.
extern "C" __global__ void __launch_bounds__(THREADS, 1){cluster_dims}
{name}(const __grid_constant__ tf_tensor_map tm_a, const __grid_constant__ tf_tensor_map tm_b,
       out_t* __restrict__ c, int M, int N, int K) {{
  extern __shared__ unsigned char smem_raw[];
  // The dynamic shared window is not promised to be 1024-byte aligned: align by hand (the host adds 1024).
  unsigned char* smem = smem_raw + ((1024 - (tf_smem_u32(smem_raw) & 1023)) & 1023);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + SMEM_BARS);   // TMA data of stage s has landed
  uint64_t* empty = full + STAGES;                                   // every consumer is done with stage s
  if (threadIdx.x == 0) {{
    for (int s = 0; s < STAGES; ++s) {{
      tf_mbar_init(&full[s], 1);           // the producer's arrive.expect_tx (+ the stage's TMA bytes)
      tf_mbar_init(&empty[s], CONSUMERS * CLUSTER);  // one arrive per consumer warpgroup of the cluster
    }}
    tf_fence_mbar_init();
  }}
  {start_sync}
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {{
    {dec_line}
    if (threadIdx.x == 0) run_producer(&tm_a, &tm_b, smem, full, empty, M, N, K);
  }} else {{
    {inc_line}
    run_consumer(warpgroup - 1, smem, full, empty, c, M, N, K);
  }}
  {end_sync}
}}
"""
