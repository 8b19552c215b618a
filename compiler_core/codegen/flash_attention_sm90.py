"""CUDA text of a FlashAttention forward kernel on Hopper (sm_90a): TMA loads and wgmma tensor cores, the softmax
on the accumulators in registers (FlashAttention-3's structure: producer and consumer warpgroups, and optionally
its overlap of one tile's softmax with the previous tile's second product).

Why a kernel beside flash_attention.py (mma.sync): a warp's mma.sync issues at most about half of the H100/H200's
tensor-core rate; wgmma, one instruction for a warpgroup's 64 rows, reads its operands from shared memory by
descriptor and runs asynchronously. The FlashAttention-2 trick carries over: wgmma's accumulator layout per warp is
mma.sync's, so the scores narrowed pairwise are the A operand of P V, given from registers (wgmma's register form).

A block holds CONSUMERS warpgroups of 64 query rows of one head and one producer warpgroup whose first thread issues
every TMA load: the block's query rows once, then for each tile of BC keys its K tile and V tile into a ring of
STAGES buffers, each guarded by a full and an empty mbarrier (the consumers' warps arrive on empty once their wgmma
has read it). Per tile a consumer warpgroup:
1. S = Q K^T: head_dim / 16 wgmma m64nBCk16, Q (K-major) and K (K-major: a key's row is B's column) from shared memory;
2. releases K; scales S by log2(e) / sqrt(d), masks keys past the end and, under causal, keys after the query; the
   row max joins the 4 lanes of a row by two shuffles; the running sum and O are rescaled once per tile;
3. O += P V: BC / 16 wgmma m64n(head_dim)k16 with P from registers and V (N-major: transposed by the descriptor)
   from shared memory; releases V.
With `overlap` (FlashAttention-3's pipelining inside a warpgroup) tile t's S = Q K^T is issued together with tile
t - 1's P V, and tile t's softmax runs while that P V is still on the tensor cores; O is rescaled once it is done.
Tiles are 128B-swizzled TMA boxes of 64 columns (128 bytes of a row): Q, K and V as DBOX boxes side by side. Rows past
the end of a head arrive as zeros (3-D maps: head, row, column). The epilogue divides by the row sums and stores.
"""
from __future__ import annotations

from dataclasses import dataclass

from compiler_core.codegen import cuda_sm90 as sm90
from compiler_core.codegen.flash_attention import ELEM, FlashTiles, scale_log2

BOX_COLS = 64  # columns of a TMA box: one 128-byte swizzled row of 16-bit elements
BOX_ROW_BYTES = 128
WG_ROWS = 64  # query rows of a consumer warpgroup: wgmma's M
KV_STEP_BYTES = 16 * BOX_ROW_BYTES  # a k16 step down an N-major V box: 16 rows of 128 bytes
REGISTER_FILE = 65536  # 32-bit registers of an SM, shared by the block (one block per SM)
PRODUCER_REGISTERS = 24  # the producer warpgroup's registers after setmaxnreg.dec: one thread issues TMA loads
REGISTER_OVERHEAD = 64  # a consumer lane's registers beside S and O: P's fragment, statistics, addresses, temporaries


@dataclass(frozen=True)
class Sm90FlashConfig(FlashTiles):
    """One kernel: the workload's shape baked in, plus the knobs."""
    consumers: int = 2
    kv_tile: int = 128
    stages: int = 2
    overlap: int = 1  # tile t's softmax runs while tile t - 1's P V is on the tensor cores
    pingpong: int = 0  # (2 consumers, overlap) the warpgroups take turns issuing their products
    fold: int = 1  # the scores' scale folds into the exponent's fused multiply-add (the max kept unscaled)

    @property
    def rows(self) -> int:
        return WG_ROWS * self.consumers

    @property
    def threads(self) -> int:
        return sm90.WARPGROUP_THREADS * (self.consumers + 1)

    @property
    def units(self) -> int:
        return self.heads * self.q_tiles

    @property
    def boxes(self) -> int:
        """64-column boxes side by side in a row of Q, K or V."""
        return -(-self.head_dim // BOX_COLS)

    @property
    def q_bytes(self) -> int:
        """One consumer's query rows in shared memory."""
        return self.boxes * WG_ROWS * BOX_ROW_BYTES

    @property
    def kv_box_bytes(self) -> int:
        return self.kv_tile * BOX_ROW_BYTES

    @property
    def kv_bytes(self) -> int:
        """A tile of keys (or of values)."""
        return self.boxes * self.kv_box_bytes

    @property
    def barriers_offset(self) -> int:
        return self.consumers * self.q_bytes + 2 * self.stages * self.kv_bytes

    @property
    def shared_bytes(self) -> int:
        """What the block asks for: the tiles, 1 + 4 x stages mbarriers and the slack to align the base to 1024."""
        return self.barriers_offset + (1 + 4 * self.stages) * 8 + sm90.SWIZZLE_ATOM_BYTES

    @property
    def consumer_registers(self) -> int:
        """A consumer lane's registers after setmaxnreg.inc: the file less the producer's, a multiple of 8, <= 240."""
        share = (REGISTER_FILE - sm90.WARPGROUP_THREADS * PRODUCER_REGISTERS) // (sm90.WARPGROUP_THREADS
                                                                                  * self.consumers)
        return min(240, share // 8 * 8)

    @property
    def accumulators(self) -> int:
        """Registers a consumer lane holds for S and O (float32) and, with overlap, P's packed pairs beside them."""
        return (self.kv_tile + self.head_dim) // 2 + (self.kv_tile // 4 if self.overlap else 0)

    @property
    def name(self) -> str:
        return (f"attention_wgmma_c{self.consumers}t{self.kv_tile}s{self.stages}o{self.overlap}p{self.pingpong}"
                f"f{self.fold}{'c' if self.causal else ''}{ELEM[self.dtype][2]}")

    def wgmmas(self) -> tuple[sm90.Wgmma, sm90.Wgmma]:
        """S = Q K^T (both K-major), and O += P V (P from registers, V N-major)."""
        return (sm90.Wgmma(self.kv_tile, self.dtype, trans_a=0, trans_b=0),
                sm90.Wgmma(self.head_dim, self.dtype, trans_b=1, a_regs=True))


def prelude_blocks(cfg: Sm90FlashConfig) -> tuple:
    return sm90.prelude_blocks(["mbarrier", "tma", "wgmma_sync", "descriptor", "setmaxnreg"], list(cfg.wgmmas()))


def _constants(cfg: Sm90FlashConfig) -> str:
    elem, narrow, _ = ELEM[cfg.dtype]
    qk, pv = cfg.wgmmas()
    regs = (f"tf_setmaxnreg_dec<{PRODUCER_REGISTERS}>();", f"tf_setmaxnreg_inc<{cfg.consumer_registers}>();") \
        if cfg.consumers > 1 else ("", "")  # one consumer: 256 threads, each may hold 255 registers already
    return f"""typedef {elem} elem;
constexpr int H = {cfg.heads}, SQ = {cfg.seq_q}, SKV = {cfg.seq_kv}, D = {cfg.head_dim}, CAUSAL = {cfg.causal};
constexpr int CONSUMERS = {cfg.consumers}, BC = {cfg.kv_tile}, STAGES = {cfg.stages}, OVERLAP = {cfg.overlap};
constexpr int PINGPONG = {cfg.pingpong}, FOLD = {cfg.fold};
constexpr int BM = 64 * CONSUMERS, THREADS = 128 * (CONSUMERS + 1), DBOX = {cfg.boxes};
constexpr int Q_TILES = (SQ + BM - 1) / BM, KV_TILES = (SKV + BC - 1) / BC;
constexpr uint32_t Q_BYTES = {cfg.q_bytes}, KV_BOX = {cfg.kv_box_bytes}, KV_BYTES = {cfg.kv_bytes};
constexpr uint32_t SMEM_K = CONSUMERS * Q_BYTES, SMEM_V = SMEM_K + STAGES * KV_BYTES;
constexpr uint32_t SMEM_BARS = {cfg.barriers_offset};
constexpr float SCALE_LOG2 = {scale_log2(cfg.head_dim)!r}f;
constexpr float LOWEST = -3.4028234663852886e38f;  // a running max's start: exp2(LOWEST - max) is 0, never NaN
static_assert(SMEM_V + STAGES * KV_BYTES == SMEM_BARS && Q_BYTES % 1024 == 0 && KV_BOX % 1024 == 0, "layout");
static __device__ __forceinline__ elem narrow(float x) {{ return {narrow}(x); }}
static __device__ __forceinline__ void wgmma_s(float (&d)[BC / 2], uint64_t da, uint64_t db, int scale_d) {{
  {qk.name}(d, da, db, scale_d);
}}
static __device__ __forceinline__ void wgmma_o(float (&d)[D / 2], const uint32_t (&a)[4], uint64_t db, int scale_d) {{
  {pv.name}(d, a, db, scale_d);
}}
static __device__ __forceinline__ void producer_registers() {{ {regs[0]} }}
static __device__ __forceinline__ void consumer_registers() {{ {regs[1]} }}
"""


_BODY = r"""
static __device__ __forceinline__ uint32_t pack(float lo, float hi) {  // two values as one pair of P's fragment
  elem a = narrow(lo), b = narrow(hi);
  return (uint32_t)*reinterpret_cast<uint16_t*>(&a) | ((uint32_t)*reinterpret_cast<uint16_t*>(&b) << 16);
}

// The key tiles some row of query tile qt sees (under causal its last row's).
static __device__ __forceinline__ int tiles_seen(int q0) {
  return CAUSAL ? min(KV_TILES, (min(q0 + BM, SQ) - 1) / BC + 1) : KV_TILES;
}

static __device__ __forceinline__ void run_producer(const tf_tensor_map* tm_q, const tf_tensor_map* tm_k,
    const tf_tensor_map* tm_v, unsigned char* smem, uint64_t* q_full, uint64_t* k_full, uint64_t* v_full,
    uint64_t* k_empty, uint64_t* v_empty, int h, int q0) {
  tf_prefetch_tensor_map(tm_q);
  tf_prefetch_tensor_map(tm_k);
  tf_prefetch_tensor_map(tm_v);
  tf_mbar_arrive_expect_tx(q_full, CONSUMERS * Q_BYTES);
  for (int c = 0; c < CONSUMERS; ++c)
    for (int b = 0; b < DBOX; ++b)
      tf_tma_load_3d(smem + c * Q_BYTES + b * 64 * 128, tm_q, q_full, 64 * b, q0 + 64 * c, h);
  const int seen = tiles_seen(q0);
  int stage = 0;
  uint32_t phase = 0;
  for (int t = 0; t < seen; ++t) {
    // a fresh barrier's phase "before 0" counts as complete: the first pass through the ring does not wait
    tf_mbar_wait(&k_empty[stage], phase ^ 1);
    tf_mbar_arrive_expect_tx(&k_full[stage], KV_BYTES);
    for (int b = 0; b < DBOX; ++b)
      tf_tma_load_3d(smem + SMEM_K + stage * KV_BYTES + b * KV_BOX, tm_k, &k_full[stage], 64 * b, t * BC, h);
    tf_mbar_wait(&v_empty[stage], phase ^ 1);
    tf_mbar_arrive_expect_tx(&v_full[stage], KV_BYTES);
    for (int b = 0; b < DBOX; ++b)
      tf_tma_load_3d(smem + SMEM_V + stage * KV_BYTES + b * KV_BOX, tm_v, &v_full[stage], 64 * b, t * BC, h);
    if (++stage == STAGES) { stage = 0; phase ^= 1; }
  }
}

// Named barriers 1 and 2 (0 is __syncthreads'): the two consumer warpgroups' turns, 256 threads each (one
// warpgroup waits, the other arrives)
static __device__ __forceinline__ void turn_wait(int id) { asm volatile("bar.sync %0, 256;" :: "r"(id) : "memory"); }
static __device__ __forceinline__ void turn_give(int id) { asm volatile("bar.arrive %0, 256;" :: "r"(id) : "memory"); }

// A consumer warp's share of the block: its query rows, the shared-memory descriptors, and the state of its rows.
struct Rows {
  int lane, g, tq, wrow;  // wrow: the warp's first query row in the block
  uint64_t desc_q, desc_k, desc_v;
  float mx[2], sum[2];
};

// S = Q K^T of the tile in `stage`: head_dim / 16 wgmmas (k16 step kk: box kk / 4, 32 bytes further inside it),
// issued and committed as one group
static __device__ __forceinline__ void issue_s(float (&s)[BC / 2], const Rows& r, int stage) {
  tf_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint32_t at = (kk / 4) * 64 * 128 + (kk % 4) * 32;
    const uint32_t kt = stage * KV_BYTES + (kk / 4) * KV_BOX + (kk % 4) * 32;
    wgmma_s(s, r.desc_q + (at >> 4), r.desc_k + (kt >> 4), kk > 0);
  }
  tf_wgmma_commit();
}

// O += P V of the tile in `stage`, P's k16 chunks from registers, issued and committed as one group
static __device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&p)[BC / 16][4], const Rows& r,
                                                int stage) {
  tf_wgmma_fence();
#pragma unroll
  for (int kc = 0; kc < BC / 16; ++kc) wgmma_o(o, p[kc], r.desc_v + ((stage * KV_BYTES + kc * 2048) >> 4), 1);
  tf_wgmma_commit();
}

// A product with nothing to overlap it: issued, waited for, and its tile released (each warp once its part of the
// wgmma has read it)
static __device__ __forceinline__ void s_alone(float (&s)[BC / 2], const Rows& r, int stage, uint32_t phase,
                                               uint64_t* k_full, uint64_t* k_empty) {
  tf_mbar_wait(&k_full[stage], phase);
  issue_s(s, r, stage);
  tf_wgmma_wait<0>();
  tf_fence_operands(s);
  if (r.lane == 0) tf_mbar_arrive(&k_empty[stage]);
}

static __device__ __forceinline__ void pv_alone(float (&o)[D / 2], const uint32_t (&p)[BC / 16][4], const Rows& r,
                                                int stage, uint32_t phase, uint64_t* v_full, uint64_t* v_empty) {
  tf_mbar_wait(&v_full[stage], phase);
  issue_pv(o, p, r, stage);
  tf_wgmma_wait<0>();
  tf_fence_operands(o);
  if (r.lane == 0) tf_mbar_arrive(&v_empty[stage]);
}

// Tile t's scores in place: scaled, masked (keys past the end; under causal keys after the query), then
// exp2(score - the new row max); the row max moves on, alpha is exp2(old max - new max), part the tile's row sum.
// s[4j + q] is row wrow + g + 8 (q / 2), key t BC + 8j + 2 tq + q % 2.
static __device__ __forceinline__ void softmax_tile(float (&s)[BC / 2], Rows& r, int t, int q0, float (&alpha)[2],
                                                    float (&part)[2]) {
  const bool edge = SKV % BC != 0 && t == KV_TILES - 1;
  const bool diagonal = CAUSAL && (t + 1) * BC - 1 > q0 + r.wrow;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int qi = q0 + r.wrow + r.g + 8 * half;
    float m = r.mx[half];
#pragma unroll
    for (int j = 0; j < BC / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float v = FOLD ? s[4 * j + 2 * half + e] : s[4 * j + 2 * half + e] * SCALE_LOG2;
        const int kj = t * BC + 8 * j + 2 * r.tq + e;
        if ((edge && kj >= SKV) || (diagonal && kj > qi)) v = -INFINITY;
        s[4 * j + 2 * half + e] = v;
        m = fmaxf(m, v);
      }
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    // FOLD: the running max is kept unscaled and the scale folds into one fused multiply-add per score
    alpha[half] = exp2f(FOLD ? (r.mx[half] - m) * SCALE_LOG2 : r.mx[half] - m);
    r.mx[half] = m;
    const float shift = FOLD ? m * SCALE_LOG2 : m;
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < BC / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float x = s[4 * j + 2 * half + e];
        const float p = exp2f(FOLD ? fmaf(x, SCALE_LOG2, -shift) : x - shift);
        s[4 * j + 2 * half + e] = p;
        sum += p;
      }
    part[half] = sum;
  }
}

// The running sums and O move to the new row max; P's k16 chunk kc is accumulators 8 kc .. 8 kc + 7 narrowed
// pairwise, packed before the wgmmas that read them (no register they read is written between them: ptxas would
// fence each one)
static __device__ __forceinline__ void rescale_and_pack(float (&o)[D / 2], const float (&s)[BC / 2], Rows& r,
                                                        const float (&alpha)[2], const float (&part)[2],
                                                        uint32_t (&p)[BC / 16][4]) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    r.sum[half] = r.sum[half] * alpha[half] + part[half];
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      o[4 * n + 2 * half] *= alpha[half];
      o[4 * n + 2 * half + 1] *= alpha[half];
    }
  }
#pragma unroll
  for (int kc = 0; kc < BC / 16; ++kc)
#pragma unroll
    for (int i = 0; i < 4; ++i) p[kc][i] = pack(s[8 * kc + 2 * i], s[8 * kc + 2 * i + 1]);
}

static __device__ __forceinline__ void run_consumer(int cw, unsigned char* smem, uint64_t* q_full, uint64_t* k_full,
    uint64_t* v_full, uint64_t* k_empty, uint64_t* v_empty, elem* __restrict__ O, int h, int q0) {
  Rows r;
  r.lane = threadIdx.x % 32;
  r.g = r.lane / 4;
  r.tq = r.lane % 4;
  r.wrow = 64 * cw + 16 * ((threadIdx.x % 128) / 32);
  // K-major Q and K: 8-row groups 1024 bytes apart (LBO unused); N-major V: 64-column boxes KV_BOX apart
  r.desc_q = tf_desc_sw128(tf_smem_u32(smem + cw * Q_BYTES), 16, 1024);
  r.desc_k = tf_desc_sw128(tf_smem_u32(smem + SMEM_K), 16, 1024);
  r.desc_v = tf_desc_sw128(tf_smem_u32(smem + SMEM_V), KV_BOX, 1024);
  r.mx[0] = r.mx[1] = LOWEST;
  r.sum[0] = r.sum[1] = 0.f;
  float o[D / 2], s[BC / 2], alpha[2], part[2];
  uint32_t p[BC / 16][4];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
  tf_mbar_wait(q_full, 0);
  const int seen = tiles_seen(q0);
  int stage = 0;
  uint32_t phase = 0;
  if (!OVERLAP) {
    for (int t = 0; t < seen; ++t) {
      s_alone(s, r, stage, phase, k_full, k_empty);
      softmax_tile(s, r, t, q0, alpha, part);
      rescale_and_pack(o, s, r, alpha, part, p);
      pv_alone(o, p, r, stage, phase, v_full, v_empty);
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
    }
  } else {
    // FlashAttention-3's overlap inside a warpgroup: tile t's scores are computed and exponentiated while the
    // tensor cores still run tile t - 1's O += P V; O is rescaled only once that group is done.
    s_alone(s, r, 0, 0, k_full, k_empty);
    softmax_tile(s, r, 0, q0, alpha, part);
    rescale_and_pack(o, s, r, alpha, part, p);
    // ping-pong (FlashAttention-3): the warpgroups take turns issuing their two products, so one's softmax runs
    // while the other's products hold the tensor cores; warpgroup 0 goes first, and warpgroup 1 gives no turn
    // after its last tile (no wait would take it)
    if (PINGPONG && cw == 1 && seen > 1) turn_give(1);
    for (int t = 1; t < seen; ++t) {
      const int prev = stage;
      const uint32_t prev_phase = phase;
      if (++stage == STAGES) { stage = 0; phase ^= 1; }
      if (PINGPONG) turn_wait(1 + cw);
      tf_mbar_wait(&k_full[stage], phase);
      issue_s(s, r, stage);
      tf_mbar_wait(&v_full[prev], prev_phase);
      issue_pv(o, p, r, prev);
      if (PINGPONG && !(cw == 1 && t == seen - 1)) turn_give(2 - cw);
      tf_wgmma_wait<1>();  // S is done; P V may still run
      tf_fence_operands(s);
      if (r.lane == 0) tf_mbar_arrive(&k_empty[stage]);
      softmax_tile(s, r, t, q0, alpha, part);
      tf_wgmma_wait<0>();
      tf_fence_operands(o);
      if (r.lane == 0) tf_mbar_arrive(&v_empty[prev]);
      rescale_and_pack(o, s, r, alpha, part, p);
    }
    pv_alone(o, p, r, stage, phase, v_full, v_empty);
  }

#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float l = r.sum[half];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int qi = q0 + r.wrow + r.g + 8 * half;
    if (qi >= SQ) continue;
    const float inv = 1.f / l;
    uint32_t* row = reinterpret_cast<uint32_t*>(O + ((size_t)h * SQ + qi) * D);
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      row[n * 4 + r.tq] = pack(o[4 * n + 2 * half] * inv, o[4 * n + 2 * half + 1] * inv);
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ tf_tensor_map tm_q,
    const __grid_constant__ tf_tensor_map tm_k, const __grid_constant__ tf_tensor_map tm_v, elem* __restrict__ O) {
  extern __shared__ unsigned char smem_raw[];
  // the dynamic window is not promised 1024-byte aligned (the 128B swizzle's atoms): align by hand (+1024 asked)
  unsigned char* smem = smem_raw + ((1024 - (tf_smem_u32(smem_raw) & 1023)) & 1023);
  uint64_t* q_full = reinterpret_cast<uint64_t*>(smem + SMEM_BARS);
  uint64_t* k_full = q_full + 1;
  uint64_t* v_full = k_full + STAGES;
  uint64_t* k_empty = v_full + STAGES;
  uint64_t* v_empty = k_empty + STAGES;
  if (threadIdx.x == 0) {
    tf_mbar_init(q_full, 1);
    for (int s = 0; s < STAGES; ++s) {
      tf_mbar_init(&k_full[s], 1);  // the producer's arrive.expect_tx (+ the tile's TMA bytes)
      tf_mbar_init(&v_full[s], 1);
      tf_mbar_init(&k_empty[s], 4 * CONSUMERS);  // every consumer warp, once its wgmma has read the tile
      tf_mbar_init(&v_empty[s], 4 * CONSUMERS);
    }
    tf_fence_mbar_init();
  }
  __syncthreads();
  // query tiles last first, then heads: under causal the longest blocks of every head start first
  const int h = blockIdx.x % H, q0 = (Q_TILES - 1 - (int)(blockIdx.x / H)) * BM;
  const int warpgroup = threadIdx.x / 128;
  if (warpgroup == 0) {
    producer_registers();
    if (threadIdx.x == 0) run_producer(&tm_q, &tm_k, &tm_v, smem, q_full, k_full, v_full, k_empty, v_empty, h, q0);
  } else {
    consumer_registers();
    run_consumer(warpgroup - 1, smem, q_full, k_full, v_full, k_empty, v_empty, O, h, q0);
  }
}
"""


def render_kernel(cfg: Sm90FlashConfig) -> str:
    """The kernel's source without its prelude: constants, device functions and the extern "C" entry."""
    return _constants(cfg) + _BODY.replace("KERNEL_NAME", cfg.name)
