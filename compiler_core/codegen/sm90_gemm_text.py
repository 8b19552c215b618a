"""The CUDA text of the Hopper GEMM kernel (codegen/sm90_gemm.py renders it): knob constants and the kernel body
with format slots, and the GEMM's own operand slots (its producer loads and output stores; codegen/sm90_conv.py
holds the implicit-GEMM conv2d's). Braces the C++ needs are doubled in the templates that go through format()."""
from __future__ import annotations

# The GEMM's producer loads per K block: A's box, then B's (K-major box, or 64-column N-major boxes, multicast);
# {d}: the maps' rank, {z}: the batch coordinate of 3-D maps (codegen/sm90_gemm_units.py); {da} and {za} are A's,
# the same unless every batch entry shares one A (a 2-D map).
GEMM_LOADS = """tf_tma_load_{da}d(a, tm_a, bar, kb * BK, t.m0{za});  // coordinates innermost first: (k, m)
      if (B_KMAJOR) {
        tf_tma_load_{d}d(b, tm_b, bar, kb * BK, t.n0{z});  // B^T is N x K: (k, n)
      } else {
#pragma unroll
        for (int j = 0; j < BN / 64; ++j) {
          if (CLUSTER == 1) {
            tf_tma_load_{d}d(b + j * B_BOX_BYTES, tm_b, bar, t.n0 + 64 * j, kb * BK{z});
          } else if (j % CLUSTER == int(sc.rank)) {  // each CTA loads every CLUSTER-th box, for all of them
            {multicast}
          }
        }
      }"""

# The GEMM's global write of one lane's 16 staged bytes: C row-major, a vector where whole and aligned.
GEMM_STORE = """out_t* dst = c + static_cast<size_t>(row) * N + col;
          if (vec_ok && col + VEC <= N) {
            *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
          } else {
            for (int e = 0; e < VEC && col + e < N; ++e) dst[e] = reinterpret_cast<const out_t*>(src)[e];
          }"""

PAIR_STORE = {
    "float16": "*reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y);",
    "bfloat16": "*reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y);",
    "float32": "*reinterpret_cast<float2*>(p) = make_float2(x, y);",
}

CONSTANTS = r"""
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

BODY = r"""
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
{unit_helpers}
// ---- producer: one thread feeds the ring with TMA loads ------------------------------------------------------
__device__ __forceinline__ void run_producer(const tf_tensor_map* tm_a, const tf_tensor_map* tm_b,
                                             unsigned char* smem, uint64_t* full, uint64_t* empty,
                                             int M, int N, int K{sk_param}) {{
  tf_prefetch_tensor_map(tm_a);
  tf_prefetch_tensor_map(tm_b);
  const Schedule sc = make_schedule(M, N, K);
  Ring ring;
  {loop_head}
    {unit_line}
    const TileOrigin t = tile_origin({tile_of_unit}, sc);
    {tile_setup}
    for (int kb = {kb_begin}; kb < {kb_end}; ++kb) {{
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
{write_out}
      __syncwarp();  // the next chunk overwrites the staging rows
    }}
  }}
}}
{split_reduce}
// ---- consumers: wgmma on each stage, release it, store the tile ---------------------------------------------
// A consumer warpgroup hands a stage back to every producer that writes into it: its own, and with a cluster the
// peers' (they multicast B into this CTA's stage), so it arrives on empty[s] of each CTA of the cluster.
__device__ __forceinline__ void release(uint64_t* empty_stage) {{
  {release}
}}

__device__ __forceinline__ void run_consumer(int cw, unsigned char* smem, uint64_t* full, uint64_t* empty,
                                             out_t* c, int M, int N, int K{sk_param}) {{
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
  {loop_head}
    {unit_line}
    const TileOrigin t = tile_origin({tile_of_unit}, sc);
    float acc[SLICES][ACC];
    int released = -1;  // the stage whose wgmma group is still reading
    for (int kb = {kb_begin}; kb < {kb_end}; ++kb) {{
      tf_mbar_wait(&full[ring.stage], ring.phase);  // TMA bytes of this stage have landed
      tf_wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {{
#pragma unroll
        for (int s = 0; s < SLICES; ++s) {{
          const uint64_t da = desc_a0 + ((ring.stage * A_STAGE_BYTES + s * 64 * 128 + kk * A_KSTEP) >> 4);
          const uint64_t db = desc_b0 + ((ring.stage * B_STAGE_BYTES + kk * B_KSTEP) >> 4);
          {wgmma}(acc[s], da, db, (kb > {kb_begin} || kk > 0) ? 1 : 0);  // scale-d 0 starts the tile from A*B
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
    {epilogue}
  }}
}}

// Parameters: each tensor map is 64-byte aligned in constant bank 0, whose parameter space starts at 0x210 on
// sm_90: they sit at offsets 0x30 and 0xb0, and the launcher packs its buffer at the offsets the cubin names.
extern "C" __global__ void __launch_bounds__(THREADS, 1){cluster_dims}
{name}(const __grid_constant__ tf_tensor_map tm_a, const __grid_constant__ tf_tensor_map tm_b,
       out_t* __restrict__ c, int M, int N, int K{sk_kernel_params}) {{
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
    if (threadIdx.x == 0) run_producer(&tm_a, &tm_b, smem, full, empty, M, N, K{sk_arg});
    {producer_syncs}
  }} else {{
    {inc_line}
    run_consumer(warpgroup - 1, smem, full, empty, c, M, N, K{sk_arg});
  }}
  {end_sync}
}}
"""

# How a warp writes its staged chunk (16 rows x EPI_COLS outputs) to global memory, in store_tile: each lane takes
# 16-byte segments, 8 lanes a row ({store}: the segment's write), ...
VECTOR_WRITE_OUT = """#pragma unroll
      for (int it = 0; it < 16 * 8 / 32; ++it) {  // 16 rows x 8 vectors of 16 bytes over 32 lanes
        const int v = it * 32 + lane, r = v / 8, seg = v % 8;
        const int row = row0 + r, col = n0 + chunk * EPI_COLS + seg * VEC;
        const unsigned char* src = stage + r * EPI_PITCH + seg * 16;
        if (row < M && col < N) {
          {store}
        }
      }"""
# ... or, where an output's runs are shorter than a vector (codegen/sm90_conv.py: NCHW images of an odd or 196
# pixels), a row at a time, lane l on column l and l + 32: consecutive lanes write consecutive outputs, so a store
# instruction covers 64 contiguous bytes, not a 512-byte span 2 bytes in 16. {element}: the address of (row, col).
ELEMENT_WRITE_OUT = """      for (int r = 0; r < 16; ++r) {
        const int row = row0 + r;
        if (row >= M) break;  // warp-uniform
#pragma unroll
        for (int h = 0; h < EPI_COLS / 32; ++h) {
          const int cc = h * 32 + lane, col = n0 + chunk * EPI_COLS + cc;
          if (col < N) *({element}) = reinterpret_cast<const out_t*>(stage + r * EPI_PITCH)[cc];
        }
      }"""

# The plain epilogue: each warp stages its rows and stores them (store_tile above).
STORE_EPILOGUE = "store_tile(acc, staging, {c_tile}, t.m0 + cw * SLICES * 64 + warp * 16, t.n0, M, N, vec_ok);"
# split_cluster's: the cluster sums its partials (SPLIT_REDUCE below).
REDUCE_EPILOGUE = "reduce_split(acc, smem, {c_tile}, t.m0, t.n0, cw, M, N, vec_ok);"
# The producer warpgroup's part in the reduction's two cluster barriers (every thread of the cluster arrives).
REDUCE_PRODUCER_SYNCS = ("tf_cluster_sync();  // reduce_split's first barrier: every partial is written\n"
                         "    tf_cluster_sync();  // and its second: every peer has read this CTA's partial")

QUAD_CONVERT = {"float16": "__float2half_rn", "bfloat16": "__float2bfloat16_rn", "float32": ""}
QUAD_VECTOR = {
    "float16": "const __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);\n"
               "    *reinterpret_cast<uint2*>(dst) = make_uint2(*reinterpret_cast<const uint32_t*>(&lo), "
               "*reinterpret_cast<const uint32_t*>(&hi));",
    "bfloat16": "const __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);\n"
                "    *reinterpret_cast<uint2*>(dst) = make_uint2(*reinterpret_cast<const uint32_t*>(&lo), "
                "*reinterpret_cast<const uint32_t*>(&hi));",
    "float32": "*reinterpret_cast<float4*>(dst) = v;",
}

SPLIT_REDUCE = r"""
// ---- split_cluster: the SPLIT_K CTAs of this cluster computed one tile over its SPLIT_K K ranges
// Each writes its float32 partial tile into its own shared memory (over the ring: every TMA load of the CTA's one
// unit has landed and every wgmma has read its stage), then, after a cluster barrier, CTA r sums rows
// [r * OWN_ROWS, (r + 1) * OWN_ROWS) of the tile across the cluster's partials (distributed shared memory: 16-byte
// reads along a row, conflict-free) and stores them into C. A second barrier keeps every CTA, and its partial,
// alive until each peer has read it.
constexpr uint32_t SMEM_PART = {smem_part};
constexpr int PART_PITCH = {part_pitch};  // bytes per partial row: BN floats + 32 bytes against bank conflicts
constexpr int OWN_ROWS = BM / SPLIT_K;    // rows of the tile this CTA sums and stores
static_assert(BM % SPLIT_K == 0 && SMEM_PART + BM * PART_PITCH <= SMEM_BARS, "the partial tile below the barriers");

__device__ __forceinline__ void store_quad(out_t* dst, float4 v, bool vec) {{
  if (vec) {{
    {quad_vector}
  }} else {{
    dst[0] = {convert}(v.x); dst[1] = {convert}(v.y); dst[2] = {convert}(v.z); dst[3] = {convert}(v.w);
  }}
}}

__device__ __forceinline__ void reduce_split(float (&acc)[SLICES][ACC], unsigned char* smem, out_t* c, int m0,
                                             int n0, int cw, int M, int N, bool vec_ok) {{
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  // every consumer warpgroup of this CTA is past its last wgmma before the partial overwrites the ring
  asm volatile("bar.sync 1, %0;" :: "n"(CONSUMERS * 128) : "memory");
  unsigned char* part = smem + SMEM_PART;
#pragma unroll
  for (int s = 0; s < SLICES; ++s) {{
    const int row = cw * SLICES * 64 + 64 * s + 16 * warp + lane / 4;  // the accumulator layout of store_tile
#pragma unroll
    for (int j = 0; j < ACC / 4; ++j) {{
      unsigned char* p = part + row * PART_PITCH + (8 * j + 2 * (lane % 4)) * 4;
      *reinterpret_cast<float2*>(p) = make_float2(acc[s][4 * j], acc[s][4 * j + 1]);
      *reinterpret_cast<float2*>(p + 8 * PART_PITCH) = make_float2(acc[s][4 * j + 2], acc[s][4 * j + 3]);
    }}
  }}
  tf_cluster_sync();  // every CTA's partial is written (the barrier releases and acquires at cluster scope)
  const uint32_t rank = tf_cluster_rank(), part_u32 = tf_smem_u32(part);
  for (int v = threadIdx.x - 128; v < OWN_ROWS * (BN / 4); v += CONSUMERS * 128) {{
    const int r = int(rank) * OWN_ROWS + v / (BN / 4), col = (v % (BN / 4)) * 4;
    const uint32_t at = part_u32 + r * PART_PITCH + col * 4;
    float4 sum = tf_ld_cluster_f4(at, 0);
#pragma unroll
    for (uint32_t peer = 1; peer < SPLIT_K; ++peer) {{
      const float4 x = tf_ld_cluster_f4(at, peer);
      sum.x += x.x; sum.y += x.y; sum.z += x.z; sum.w += x.w;
    }}
    if (m0 + r < M && n0 + col < N) store_quad(c + static_cast<size_t>(m0 + r) * N + n0 + col, sum, vec_ok);
  }}
  tf_cluster_sync();  // every peer has read this CTA's partial: it may leave
}}
"""
