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

// Warpgroup register reallocation: the producer gives registers back, consumers take them. R: 24..256, R % 8 == 0.
template <int R>
__device__ __forceinline__ void tf_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(R));
}

template <int R>
__device__ __forceinline__ void tf_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(R));
}

__device__ __forceinline__ void tf_wgmma_m64n128k16_f32_f16_ta0_tb1(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                                                    int scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, "
      "%8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, "
      "%40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}


// ---- knobs: bm=128, bn=128, bk=64, stages=4, consumers=2, persistent=True, group_m=8, cluster=1, out=same, b_kmajor=False; inputs float16 --------------------------------------------------------------
typedef __half out_t;
constexpr int BM = 128, BN = 128, BK = 64, STAGES = 4, CONSUMERS = 2, GROUP_M = 8;
constexpr int CLUSTER = 1;  // CTAs per cluster, stacked along M; they share (multicast) the B boxes
constexpr bool B_KMAJOR = false;
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int SLICES = BM / CONSUMERS / 64;  // m64 wgmma slices per consumer warpgroup
constexpr int ACC = BN / 2;                  // fp32 accumulators per thread per slice (64 x BN over 128 threads)

// Shared memory, from a 1024-byte aligned base (TMA's 128B swizzle and the descriptors' base offset 0 need it).
// Every stage buffer is a multiple of 1024 bytes, so each stays aligned.
constexpr uint32_t A_STAGE_BYTES = 16384;   // one box: BK (128 bytes, inner) x BM rows
constexpr uint32_t B_STAGE_BYTES = 16384;   // BN/64 boxes of 64 columns x BK rows (or one BK x BN K-major box)
constexpr uint32_t B_BOX_BYTES = 8192;       // one 64-column box of N-major B
constexpr uint32_t STAGE_TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;  // TMA counts whole boxes, edges included
constexpr uint32_t SMEM_A = 0, SMEM_B = 65536, SMEM_EPI = 131072, SMEM_BARS = 149504;
constexpr uint32_t SMEM_TOTAL = 149568;
constexpr int EPI_PITCH = 144;          // bytes per staged output row: 128 + bank-conflict padding
constexpr int EPI_COLS = 128 / sizeof(out_t);   // output columns per staged chunk (128 bytes of a row)
constexpr int VEC = 16 / sizeof(out_t);         // output elements per 16-byte store
static_assert(SMEM_B % 1024 == 0 && SMEM_EPI % 1024 == 0 && A_STAGE_BYTES % 1024 == 0, "aligned stages");
static_assert(BN % EPI_COLS == 0, "whole epilogue chunks");
static_assert(SMEM_TOTAL + 1024 <= 232448, "the ring, staging and barriers fit the opt-in shared memory");

// wgmma descriptors (see cuda_sm90.py): A K-major (LBO unused = 16, SBO = 1024 between 8-row groups, +32 bytes
// per k16 step); B N-major (LBO = one 64-column box, SBO = 1024 between 8-row groups of K, +2048 per k16 step)
// or K-major like A.
constexpr uint32_t A_LBO = 16, A_SBO = 1024, A_KSTEP = 32;
constexpr uint32_t B_LBO = 8192, B_SBO = 1024, B_KSTEP = 2048;


// Where the ring stands: stage index and the parity of its current phase (flips each pass around the ring).
struct Ring {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == STAGES) { stage = 0; phase ^= 1; }
  }
};

// The tiles of this CTA: cluster c of the grid takes tiles c, c + clusters, ... (one tile per cluster without a
// persistent grid). A tile is CLUSTER x BM rows by BN columns; CTA `rank` of the cluster computes its BM rows.
struct Schedule {
  int m_tiles, n_tiles, k_blocks, first, step;
  uint32_t rank;
};

__device__ __forceinline__ Schedule make_schedule(int M, int N, int K) {
  Schedule s;
  s.m_tiles = (M + BM * CLUSTER - 1) / (BM * CLUSTER);
  s.n_tiles = (N + BN - 1) / BN;
  s.k_blocks = (K + BK - 1) / BK;
  s.first = blockIdx.x / CLUSTER;
  s.step = gridDim.x / CLUSTER;
  s.rank = 0;
  return s;
}

struct TileOrigin { int m0, n0; };

// Grouped raster: GROUP_M tile rows form a group, walked column by column, so CTAs running together share B
// columns and A rows in L2. Producer and consumers call this with the same tile index.
__device__ __forceinline__ TileOrigin tile_origin(int tile, const Schedule& s) {
  const int group_tiles = GROUP_M * s.n_tiles;
  const int first_m = (tile / group_tiles) * GROUP_M;
  const int rows = min(s.m_tiles - first_m, GROUP_M);
  const int in_group = tile % group_tiles;
  return {(first_m + in_group % rows) * (BM * CLUSTER) + int(s.rank) * BM, (in_group / rows) * BN};
}

// ---- producer: one thread feeds the ring with TMA loads ------------------------------------------------------
__device__ __forceinline__ void run_producer(const tf_tensor_map* tm_a, const tf_tensor_map* tm_b,
                                             unsigned char* smem, uint64_t* full, uint64_t* empty,
                                             int M, int N, int K) {
  tf_prefetch_tensor_map(tm_a);
  tf_prefetch_tensor_map(tm_b);
  const Schedule sc = make_schedule(M, N, K);
  Ring ring;
  for (int tile = sc.first; tile < sc.m_tiles * sc.n_tiles; tile += sc.step) {
    const TileOrigin t = tile_origin(tile, sc);
    for (int kb = 0; kb < sc.k_blocks; ++kb) {
      // Wait until every consumer (of every CTA of the cluster) released this stage; on the first pass the
      // parity (phase ^ 1) = 1 of a fresh barrier counts as complete, so the ring fills without waiting.
      tf_mbar_wait(&empty[ring.stage], ring.phase ^ 1);
      uint64_t* bar = &full[ring.stage];
      tf_mbar_arrive_expect_tx(bar, STAGE_TX_BYTES);
      unsigned char* a = smem + SMEM_A + ring.stage * A_STAGE_BYTES;
      unsigned char* b = smem + SMEM_B + ring.stage * B_STAGE_BYTES;
      tf_tma_load_2d(a, tm_a, bar, kb * BK, t.m0);  // coordinates innermost first: (k, m)
      if (B_KMAJOR) {
        tf_tma_load_2d(b, tm_b, bar, kb * BK, t.n0);  // B^T is N x K: (k, n)
      } else {
#pragma unroll
        for (int j = 0; j < BN / 64; ++j) {
          if (CLUSTER == 1) {
            tf_tma_load_2d(b + j * B_BOX_BYTES, tm_b, bar, t.n0 + 64 * j, kb * BK);
          } else if (j % CLUSTER == int(sc.rank)) {  // each CTA loads every CLUSTER-th box, for all of them
          }
        }
      }
      ring.advance();
    }
  }
}

// ---- epilogue: accumulators -> this warp's staging rows -> C with 16-byte stores -----------------------------
__device__ __forceinline__ void store_pair(unsigned char* p, float x, float y) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y);
}

// Accumulator d[4j + q] of lane l in warp w of a warpgroup holds row 16w + l/4 + 8(q/2), column 8j + 2(l%4) + q%2
// of its m64 slice. Each warp stages its 16 rows 128 bytes of C at a time and writes them as 16-byte vectors.
__device__ __forceinline__ void store_tile(float (&acc)[SLICES][ACC], unsigned char* stage, out_t* c,
                                           int warp_row0, int n0, int M, int N, bool vec_ok) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int s = 0; s < SLICES; ++s) {
    const int row0 = warp_row0 + 64 * s;
    if (row0 >= M) continue;  // warp-uniform: the whole 16-row block lies below the matrix
#pragma unroll
    for (int chunk = 0; chunk < BN / EPI_COLS; ++chunk) {
#pragma unroll
      for (int j = 0; j < EPI_COLS / 8; ++j) {
        const int jj = chunk * (EPI_COLS / 8) + j;  // 8-column block within the slice
        const int col_bytes = (8 * j + 2 * (lane % 4)) * int(sizeof(out_t));
        store_pair(stage + (lane / 4) * EPI_PITCH + col_bytes, acc[s][4 * jj], acc[s][4 * jj + 1]);
        store_pair(stage + (lane / 4 + 8) * EPI_PITCH + col_bytes, acc[s][4 * jj + 2], acc[s][4 * jj + 3]);
      }
      __syncwarp();
#pragma unroll
      for (int it = 0; it < 16 * 8 / 32; ++it) {  // 16 rows x 8 vectors of 16 bytes over 32 lanes
        const int v = it * 32 + lane, r = v / 8, seg = v % 8;
        const int row = row0 + r, col = n0 + chunk * EPI_COLS + seg * VEC;
        const unsigned char* src = stage + r * EPI_PITCH + seg * 16;
        if (row < M && col < N) {
          out_t* dst = c + static_cast<size_t>(row) * N + col;
          if (vec_ok && col + VEC <= N) {
            *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
          } else {
            for (int e = 0; e < VEC && col + e < N; ++e) dst[e] = reinterpret_cast<const out_t*>(src)[e];
          }
        }
      }
      __syncwarp();  // the next chunk overwrites the staging rows
    }
  }
}

// ---- consumers: wgmma on each stage, release it, store the tile ---------------------------------------------
// A consumer warpgroup hands a stage back to every producer that writes into it: its own, and with a cluster the
// peers' (they multicast B into this CTA's stage), so it arrives on empty[s] of each CTA of the cluster.
__device__ __forceinline__ void release(uint64_t* empty_stage) {
  tf_mbar_arrive(empty_stage);
}

__device__ __forceinline__ void run_consumer(int cw, unsigned char* smem, uint64_t* full, uint64_t* empty,
                                             out_t* c, int M, int N, int K) {
  const Schedule sc = make_schedule(M, N, K);
  const int warp = (threadIdx.x % 128) / 32;
  const bool leader = threadIdx.x % 128 == 0;  // arrives on empty[] for the warpgroup
  const bool vec_ok = N % VEC == 0 && reinterpret_cast<uintptr_t>(c) % 16 == 0;
  unsigned char* staging = smem + SMEM_EPI + (cw * 4 + warp) * 16 * EPI_PITCH;
  // Descriptors of stage 0, k step 0 of this warpgroup's rows; the rest differ only in the start address, so
  // adding (byte offset >> 4) to the low field moves them (shared addresses stay below 2^18: no carry out).
  const uint64_t desc_a0 = tf_desc_sw128(tf_smem_u32(smem + SMEM_A) + cw * SLICES * 64 * 128, A_LBO, A_SBO);
  const uint64_t desc_b0 = tf_desc_sw128(tf_smem_u32(smem + SMEM_B), B_LBO, B_SBO);
  Ring ring;
  for (int tile = sc.first; tile < sc.m_tiles * sc.n_tiles; tile += sc.step) {
    const TileOrigin t = tile_origin(tile, sc);
    float acc[SLICES][ACC];
    int released = -1;  // the stage whose wgmma group is still reading
    for (int kb = 0; kb < sc.k_blocks; ++kb) {
      tf_mbar_wait(&full[ring.stage], ring.phase);  // TMA bytes of this stage have landed
      tf_wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
        for (int s = 0; s < SLICES; ++s) {
          const uint64_t da = desc_a0 + ((ring.stage * A_STAGE_BYTES + s * 64 * 128 + kk * A_KSTEP) >> 4);
          const uint64_t db = desc_b0 + ((ring.stage * B_STAGE_BYTES + kk * B_KSTEP) >> 4);
          tf_wgmma_m64n128k16_f32_f16_ta0_tb1(acc[s], da, db, (kb > 0 || kk > 0) ? 1 : 0);  // scale-d 0 starts the tile from A*B
        }
      }
      tf_wgmma_commit();
      tf_wgmma_wait<1>();  // the previous K block's group is done reading its stage: hand that stage back
      if (released >= 0 && leader) release(&empty[released]);
      released = ring.stage;
      ring.advance();
    }
    tf_wgmma_wait<0>();
    if (released >= 0 && leader) release(&empty[released]);
#pragma unroll
    for (int s = 0; s < SLICES; ++s) tf_fence_operands(acc[s]);
    store_tile(acc, staging, c, t.m0 + cw * SLICES * 64 + warp * 16, t.n0, M, N, vec_ok);
  }
}

// Parameters: each tensor map is 64-byte aligned in constant bank 0, whose parameter space starts at 0x210 on
// sm_90: they sit at offsets 0x30 and 0xb0, and the launcher packs its buffer at the offsets the cubin names.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
tf_sm90_gemm_f16_f16_128x128x64_s4_c2_g8(const __grid_constant__ tf_tensor_map tm_a, const __grid_constant__ tf_tensor_map tm_b,
       out_t* __restrict__ c, int M, int N, int K) {
  extern __shared__ unsigned char smem_raw[];
  // The dynamic shared window is not promised to be 1024-byte aligned: align by hand (the host adds 1024).
  unsigned char* smem = smem_raw + ((1024 - (tf_smem_u32(smem_raw) & 1023)) & 1023);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + SMEM_BARS);   // TMA data of stage s has landed
  uint64_t* empty = full + STAGES;                                   // every consumer is done with stage s
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      tf_mbar_init(&full[s], 1);           // the producer's arrive.expect_tx (+ the stage's TMA bytes)
      tf_mbar_init(&empty[s], CONSUMERS * CLUSTER);  // one arrive per consumer warpgroup of the cluster
    }
    tf_fence_mbar_init();
  }
  __syncthreads();
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    tf_setmaxnreg_dec<40>();  // one thread issues TMA: few registers
    if (threadIdx.x == 0) run_producer(&tm_a, &tm_b, smem, full, empty, M, N, K);
  } else {
    tf_setmaxnreg_inc<232>();  // room for the accumulators
    run_consumer(warpgroup - 1, smem, full, empty, c, M, N, K);
  }
}
