"""CUDA text of a FlashAttention-2 forward kernel on mma.sync tensor cores (float16 / bfloat16, sm_80+), with an
optional split of the keys over blocks (FlashDecoding) and the kernel that combines the splits.

Why text and not the loop IR: the kernel's speed comes from keeping the scores in the tensor cores' accumulator
registers between the two products: the m16n8k16 accumulator layout of S is, pair by pair, the A-operand layout of
P, so softmax runs on registers and P never touches shared memory. WMMA's fragments are opaque (attention_wmma.py
goes through shared memory twice per tile), and the IR has no register fragments with a layout.

A block holds BR = 16 x warps x row_frags query rows of one head; warp w owns rows w x 16 x row_frags ... of them.
Its query rows are staged in shared memory once; each tile of BC keys and values is staged by cp.async (16-byte
chunks, zeros past the end of the head), `stages` tiles in flight. Per tile, each warp:
1. S = Q K^T on mma.sync m16n8k16, operands read by ldmatrix (K's rows are B's columns: no transpose);
2. scales S by log2(e) / sqrt(d) (so exp2 is the exponential), masks keys past the end and, under causal, keys
   after the query; the tile's row max joins the 4 lanes of a row by two shuffles; the running sum and the output
   accumulators are rescaled once by exp2(old max - new max);
3. P = exp2(S - max), rounded to the input type, is the A operand of O += P V directly (V through ldmatrix.trans).
The epilogue divides by the row sums. With kv_splits > 1 each block walks one contiguous share of the key tiles
and writes its float32 unnormalised rows and (max, sum) into workspaces; the combine kernel rescales and sums them.
Row padding (PAD halves per shared row) keeps ldmatrix's 8 row reads on distinct banks.

The three warp-level instructions are device functions of the prelude (mma, ldmatrix, ldmatrix.trans); a CPU
emulator defines TUNEFARM_EMULATED_MMA and gives its own (tests/cpu/cuda_emulation_device.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

FRAG_ROWS = 16  # rows of an m16n8k16 A fragment
PAD = 8  # halves added to each shared row: a 16-byte shift per row spreads ldmatrix's 8 rows over the 32 banks
COMBINE_THREADS = 256
# per dtype: the CUDA type, its conversion from float, and its name in PTX (and in the helpers' names)
ELEM = {"float16": ("__half", "__float2half", "f16"), "bfloat16": ("__nv_bfloat16", "__float2bfloat16", "bf16")}


@dataclass(frozen=True)
class FlashTiles:
    """A FlashAttention kernel's workload shape and the tiles of its grid, from a config's `rows` (query rows of a
    block) and `kv_tile`: the base of this kernel's config and the Hopper kernel's (flash_attention_sm90.py)."""
    heads: int
    seq_q: int
    seq_kv: int
    head_dim: int
    causal: int
    dtype: str

    @property
    def q_tiles(self) -> int:
        return -(-self.seq_q // self.rows)

    @property
    def kv_tiles(self) -> int:
        return -(-self.seq_kv // self.kv_tile)

    @property
    def tiles_walked(self) -> int:
        """Key tiles all blocks walk together (under causal each query tile stops at its last row's key)."""
        if not self.causal:
            return self.heads * self.q_tiles * self.kv_tiles
        per_head = sum(min(self.kv_tiles, (min((qt + 1) * self.rows, self.seq_q) - 1) // self.kv_tile + 1)
                       for qt in range(self.q_tiles))
        return self.heads * per_head


@dataclass(frozen=True)
class FlashConfig(FlashTiles):
    """One kernel: the workload's shape baked in, plus the knobs."""
    warps: int = 4
    row_frags: int = 1
    kv_tile: int = 64
    stages: int = 2
    kv_splits: int = 1

    @property
    def rows(self) -> int:
        return FRAG_ROWS * self.warps * self.row_frags

    @property
    def threads(self) -> int:
        return 32 * self.warps

    @property
    def units(self) -> int:
        return self.heads * self.q_tiles * self.kv_splits

    @property
    def shared_bytes(self) -> int:
        return (self.rows + 2 * self.stages * self.kv_tile) * (self.head_dim + PAD) * 2

    @property
    def accumulators(self) -> int:
        """float32 registers a lane holds for O and S."""
        return self.row_frags * (self.head_dim + self.kv_tile) // 2

    @property
    def name(self) -> str:
        return (f"attention_mma_w{self.warps}r{self.row_frags}t{self.kv_tile}s{self.stages}"
                f"k{self.kv_splits}{ELEM[self.dtype][2]}")


def scale_log2(head_dim: int) -> float:
    """The scores' factor for exp2: log2(e) / sqrt(head_dim), as the float32 the kernel multiplies by."""
    return float(np.float32(math.log2(math.e) / math.sqrt(head_dim)))


def prelude_blocks(dtype: str) -> tuple:
    elem, _, ptx = ELEM[dtype]
    headers = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_pipeline.h>\n#include <stdint.h>\n"
    # each block guarded: a translation unit may hold several modules' kernels (a build of many configs)
    helpers = f"""#if !defined(TUNEFARM_EMULATED_MMA) && !defined(TF_MMA_{ptx.upper()})
#define TF_MMA_{ptx.upper()}
// D (16x8 float32) += A (16x16, 4 registers of {elem} pairs) B (16x8, 2 registers), the warp's lanes together
static __device__ __forceinline__ void tf_mma_{ptx}(float* d, const uint32_t* a, uint32_t b0, uint32_t b1) {{
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{ptx}.{ptx}.f32 {{%0, %1, %2, %3}}, "
               "{{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};\\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}}
#endif
"""
    ldsm = r"""#if !defined(TUNEFARM_EMULATED_MMA) && !defined(TF_LDSM_X4)
#define TF_LDSM_X4
// four 8x8 matrices of 16-bit elements from shared memory; lane l gives the address of row l % 8 of matrix l / 8
static __device__ __forceinline__ void tf_ldsm_x4(uint32_t* r, const void* row) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
// the same, each matrix transposed
static __device__ __forceinline__ void tf_ldsm_x4_t(uint32_t* r, const void* row) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
#endif
"""
    return headers, helpers, ldsm


def _constants(cfg: FlashConfig) -> str:
    elem, narrow, _ = ELEM[cfg.dtype]
    return f"""typedef {elem} elem;
constexpr int H = {cfg.heads}, SQ = {cfg.seq_q}, D = {cfg.head_dim}, SPLITS = {cfg.kv_splits};
constexpr float LOWEST = -3.4028234663852886e38f;  // a running max's start: exp2(LOWEST - max) is 0, never NaN
static __device__ __forceinline__ elem narrow(float x) {{ return {narrow}(x); }}
"""


def _main_constants(cfg: FlashConfig) -> str:
    ptx = ELEM[cfg.dtype][2]
    return f"""constexpr int SKV = {cfg.seq_kv}, CAUSAL = {cfg.causal};
constexpr int WARPS = {cfg.warps}, RF = {cfg.row_frags}, BC = {cfg.kv_tile}, STAGES = {cfg.stages};
constexpr int BR = 16 * WARPS * RF, THREADS = 32 * WARPS, LDS = D + {PAD};
constexpr int Q_TILES = (SQ + BR - 1) / BR, KV_TILES = (SKV + BC - 1) / BC;
constexpr float SCALE_LOG2 = {scale_log2(cfg.head_dim)!r}f;
static __device__ __forceinline__ void mma(float* d, const uint32_t* a, uint32_t b0, uint32_t b1) {{
  tf_mma_{ptx}(d, a, b0, b1);
}}
"""


# The kernel's body: the same for every config (the constants above decide the loops' extents).
_BODY = r"""
static __device__ __forceinline__ uint32_t pack(float lo, float hi) {  // two values as the A operand's pair
  elem a = narrow(lo), b = narrow(hi);
  return (uint32_t)*reinterpret_cast<uint16_t*>(&a) | ((uint32_t)*reinterpret_cast<uint16_t*>(&b) << 16);
}

// rows [row0, row0 + n) of a head's (rows x D) matrix into shared rows of LDS halves; zeros past `limit`
static __device__ __forceinline__ void stage(elem* dst, const elem* src, int row0, int limit, int n) {
  constexpr int CHUNKS = D / 8;  // 16-byte chunks per row
  for (int c = threadIdx.x; c < n * CHUNKS; c += THREADS) {
    const int r = c / CHUNKS, col = c % CHUNKS * 8;
    if (row0 + r < limit) {
      __pipeline_memcpy_async(dst + r * LDS + col, src + (size_t)(row0 + r) * D + col, 16);
    } else {
      uint4 zero = {0u, 0u, 0u, 0u};
      *reinterpret_cast<uint4*>(dst + r * LDS + col) = zero;
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS) KERNEL_NAME(const elem* __restrict__ Q,
    const elem* __restrict__ K, const elem* __restrict__ V, OUT_PARAMS) {
  extern __shared__ __align__(128) unsigned char smem[];
  elem* Qs = reinterpret_cast<elem*>(smem);
  elem* Ks = Qs + BR * LDS;  // STAGES tiles of BC rows
  elem* Vs = Ks + STAGES * BC * LDS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
  // units in order of query tile, last first, then head, then split: under causal the longest blocks of every head
  // start first and the short ones fill the last wave (blocks start in blockIdx order)
  const int split = blockIdx.x % SPLITS, h = blockIdx.x / SPLITS % H;
  const int qt = Q_TILES - 1 - (int)(blockIdx.x / (SPLITS * H)), q0 = qt * BR, wrow = warp * 16 * RF;
  // the key tiles some row of this block sees, and this split's contiguous share of them
  const int seen = CAUSAL ? min(KV_TILES, (min(q0 + BR, SQ) - 1) / BC + 1) : KV_TILES;
  const int per = (seen + SPLITS - 1) / SPLITS, t0 = min(seen, split * per), t1 = min(seen, t0 + per);
  const elem* Qh = Q + (size_t)h * SQ * D;
  const elem* Kh = K + (size_t)h * SKV * D;
  const elem* Vh = V + (size_t)h * SKV * D;

  stage(Qs, Qh, q0, SQ, BR);
  if (t0 < t1) {
    stage(Ks, Kh, t0 * BC, SKV, BC);
    stage(Vs, Vh, t0 * BC, SKV, BC);
  }
  __pipeline_commit();

  float o[RF][D / 8][4], mx[RF][2], sum[RF][2];
  #pragma unroll
  for (int f = 0; f < RF; ++f) {
    #pragma unroll
    for (int n = 0; n < D / 8; ++n) o[f][n][0] = o[f][n][1] = o[f][n][2] = o[f][n][3] = 0.f;
    mx[f][0] = mx[f][1] = LOWEST;
    sum[f][0] = sum[f][1] = 0.f;
  }

  for (int t = t0; t < t1; ++t) {
    const int buf = STAGES == 2 ? (t - t0) & 1 : 0;
    if (STAGES == 1 && t > t0) {
      stage(Ks, Kh, t * BC, SKV, BC);
      stage(Vs, Vh, t * BC, SKV, BC);
      __pipeline_commit();
    }
    if (STAGES == 2 && t + 1 < t1) {
      stage(Ks + (buf ^ 1) * BC * LDS, Kh, (t + 1) * BC, SKV, BC);
      stage(Vs + (buf ^ 1) * BC * LDS, Vh, (t + 1) * BC, SKV, BC);
      __pipeline_commit();
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
    const elem* Kt = Ks + buf * BC * LDS;
    const elem* Vt = Vs + buf * BC * LDS;

    float s[RF][BC / 8][4];
    #pragma unroll
    for (int f = 0; f < RF; ++f)
      #pragma unroll
      for (int n = 0; n < BC / 8; ++n) s[f][n][0] = s[f][n][1] = s[f][n][2] = s[f][n][3] = 0.f;
    #pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[RF][4];
      #pragma unroll
      for (int f = 0; f < RF; ++f)
        tf_ldsm_x4(a[f], Qs + (wrow + f * 16 + lane % 8 + (lane / 8 % 2) * 8) * LDS + kk * 16 + lane / 16 * 8);
      #pragma unroll
      for (int nb = 0; nb < BC / 16; ++nb) {
        uint32_t b[4];
        tf_ldsm_x4(b, Kt + (nb * 16 + lane % 8 + lane / 16 * 8) * LDS + kk * 16 + (lane / 8 % 2) * 8);
        #pragma unroll
        for (int f = 0; f < RF; ++f) {
          mma(s[f][2 * nb], a[f], b[0], b[1]);
          mma(s[f][2 * nb + 1], a[f], b[2], b[3]);
        }
      }
    }

    // keys past the end (the last tile), or after a query under causal, score -inf
    const bool edge = SKV % BC != 0 && t == KV_TILES - 1;
    const bool diagonal = CAUSAL && (t + 1) * BC - 1 > q0 + wrow;
    #pragma unroll
    for (int f = 0; f < RF; ++f)
      #pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int qi = q0 + wrow + f * 16 + g + half * 8;
        float m = mx[f][half];
        #pragma unroll
        for (int n = 0; n < BC / 8; ++n)
          #pragma unroll
          for (int e = 0; e < 2; ++e) {
            float v = s[f][n][2 * half + e] * SCALE_LOG2;
            const int kj = t * BC + n * 8 + 2 * tq + e;
            if ((edge && kj >= SKV) || (diagonal && kj > qi)) v = -INFINITY;
            s[f][n][2 * half + e] = v;
            m = fmaxf(m, v);
          }
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        const float alpha = exp2f(mx[f][half] - m);
        mx[f][half] = m;
        float part = 0.f;
        #pragma unroll
        for (int n = 0; n < BC / 8; ++n)
          #pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float p = exp2f(s[f][n][2 * half + e] - m);
            s[f][n][2 * half + e] = p;
            part += p;
          }
        sum[f][half] = sum[f][half] * alpha + part;
        #pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          o[f][n][2 * half] *= alpha;
          o[f][n][2 * half + 1] *= alpha;
        }
      }

    #pragma unroll
    for (int kc = 0; kc < BC / 16; ++kc) {
      uint32_t pa[RF][4];
      #pragma unroll
      for (int f = 0; f < RF; ++f) {
        pa[f][0] = pack(s[f][2 * kc][0], s[f][2 * kc][1]);
        pa[f][1] = pack(s[f][2 * kc][2], s[f][2 * kc][3]);
        pa[f][2] = pack(s[f][2 * kc + 1][0], s[f][2 * kc + 1][1]);
        pa[f][3] = pack(s[f][2 * kc + 1][2], s[f][2 * kc + 1][3]);
      }
      #pragma unroll
      for (int db = 0; db < D / 16; ++db) {
        uint32_t b[4];
        tf_ldsm_x4_t(b, Vt + (kc * 16 + lane % 8 + (lane / 8 % 2) * 8) * LDS + db * 16 + lane / 16 * 8);
        #pragma unroll
        for (int f = 0; f < RF; ++f) {
          mma(o[f][2 * db], pa[f], b[0], b[1]);
          mma(o[f][2 * db + 1], pa[f], b[2], b[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with this buffer before a later tile is staged into it
  }

  #pragma unroll
  for (int f = 0; f < RF; ++f)
    #pragma unroll
    for (int half = 0; half < 2; ++half) {
      float l = sum[f][half];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const int qi = q0 + wrow + f * 16 + g + half * 8;
      if (qi >= SQ) continue;
      EPILOGUE
    }
}
"""

_STORE = r"""const float inv = 1.f / l;
      uint32_t* row = reinterpret_cast<uint32_t*>(O + ((size_t)h * SQ + qi) * D);
#pragma unroll
      for (int n = 0; n < D / 8; ++n) row[n * 4 + tq] = pack(o[f][n][2 * half] * inv, o[f][n][2 * half + 1] * inv);"""

_PARTIAL = r"""const size_t r = ((size_t)split * H + h) * SQ + qi;
      float2* row = reinterpret_cast<float2*>(part + r * D);
#pragma unroll
      for (int n = 0; n < D / 8; ++n) row[n * 4 + tq] = make_float2(o[f][n][2 * half], o[f][n][2 * half + 1]);
      if (tq == 0) stats[r] = make_float2(mx[f][half], l);"""

# The combine kernel of a split of the keys, for any kernel whose constants define elem, narrow, H, SQ, D, SPLITS,
# LOWEST and COMBINE_THREADS and whose splits write float32 partial rows and float2 (max in log2 units, sum) stats
COMBINE_BODY = r"""
// O = sum over splits of part * exp2(max_s - M) / sum over splits of l_s exp2(max_s - M), M the largest max
extern "C" __global__ void __launch_bounds__(COMBINE_THREADS) COMBINE_NAME(const float* __restrict__ part,
    const float2* __restrict__ stats, elem* __restrict__ O) {
  const size_t e = (size_t)blockIdx.x * COMBINE_THREADS + threadIdx.x;
  if (e >= (size_t)H * SQ * D) return;
  const size_t r = e / D;
  float M = LOWEST;
  for (int s = 0; s < SPLITS; ++s) M = fmaxf(M, stats[s * (size_t)H * SQ + r].x);
  float l = 0.f, acc = 0.f;
  for (int s = 0; s < SPLITS; ++s) {
    const float2 st = stats[s * (size_t)H * SQ + r];
    const float w = exp2f(st.x - M);
    l += st.y * w;
    acc += part[s * (size_t)H * SQ * D + e] * w;
  }
  O[e] = narrow(acc / l);
}
"""


def combine_name(cfg: FlashConfig) -> str:
    return f"{cfg.name}_combine"


def render_kernel(cfg: FlashConfig) -> str:
    """The main kernel's source (constants, helpers, the entry); with splits it writes partials."""
    split = cfg.kv_splits > 1
    out = "float* __restrict__ part, float2* __restrict__ stats" if split else "elem* __restrict__ O"
    body = (_BODY.replace("KERNEL_NAME", cfg.name).replace("OUT_PARAMS", out)
            .replace("EPILOGUE", _PARTIAL if split else _STORE))
    return _constants(cfg) + _main_constants(cfg) + body


def render_combine(cfg: FlashConfig) -> str:
    """The combine kernel's source: one thread per output element."""
    return (_constants(cfg) + f"constexpr int COMBINE_THREADS = {COMBINE_THREADS};\n"
            + COMBINE_BODY.replace("COMBINE_NAME", combine_name(cfg)))
