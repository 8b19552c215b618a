"""CUDA text of a FlashAttention forward kernel on SIMT lanes with register tiles: each thread computes a
thread_rows x (kv_tile / lanes) block of scores and a thread_rows x (head_dim / lanes) block of outputs, as a SIMT
GEMM's thread computes its C tile, so every value read from shared memory feeds several fused multiply-adds.

Why text and not the loop IR: the kernel's speed comes from register arrays indexed by unrolled loops, 16-byte
shared-memory reads and a layout chosen so they meet no bank conflict; the IR has no vector loads of shared memory.
The float32 answer for any dtype (float16 and bfloat16 are converted as they are staged); on GPUs with tensor cores
the half types have faster engines, and float32 (TF32 off) has none.

A block holds BQ query rows of one head and THREADS = BQ / TM x LX threads: thread (ty, tx) = (tid / LX, tid % LX)
owns query rows ty*TM ... ty*TM + TM - 1, the keys tx, tx + LX, ... of each tile and the output columns
tx*CO ... tx*CO + CO - 1. Its query rows are staged in shared memory once (float32, zeros past head_dim and past the
end of the head); each tile of BK keys and values is staged (cp.async, `stages` tiles in flight, where float32 rows
of 16-byte multiples allow it; else loaded and converted). Per tile, each thread:
1. S = Q K^T for its TM x CS scores: 16-byte reads of its query rows (the lanes of a row group read the same
   address: a broadcast) and of its keys (consecutive lanes, consecutive rows whose stride LDK is an odd number of
   16-byte units: distinct banks);
2. masks keys past the end and, under causal, after the query; the tile's row max joins the LX lanes of a row group
   by a shuffle butterfly; the running sum (kept per lane, joined once at the end) and the outputs are rescaled by
   exp2(old max - new max); the scores' scale 1/sqrt(d) and log2(e) fold into the exponent's fused multiply-add;
3. writes P = exp2(S * scale - max) to shared memory (key-major: a thread's TM rows of one key are one 16-byte
   write), and after a barrier O += P V: per key, its TM probabilities (a broadcast read) times CO values (consecutive
   lanes, consecutive columns).
The epilogue divides by the row sums and writes each thread's CO consecutive columns (16-byte stores where they
allow). With kv_splits > 1 each block walks one contiguous share of the key tiles and writes its float32
unnormalised rows and (max, sum) into workspaces, which flash_attention's combine kernel rescales and sums (a decode
step's few blocks would otherwise leave most SMs idle). Nothing of seq_q x seq_kv is stored.
"""
from __future__ import annotations

from dataclasses import dataclass

from compiler_core.codegen.flash_attention import COMBINE_BODY, COMBINE_THREADS, FlashTiles, scale_log2

# per dtype: the CUDA type, its conversion to float and back
TYPES = {"float32": ("float", "", ""), "float16": ("__half", "__half2float", "__float2half"),
         "bfloat16": ("__nv_bfloat16", "__bfloat162float", "__float2bfloat16")}


def _quad_stride(n: int) -> int:
    """The smallest stride >= n, in floats, that is an odd number of 16-byte units: rows read as float4 by
    consecutive lanes then fall on distinct banks."""
    units = -(-n // 4)
    return 4 * (units if units % 2 else units + 1)


@dataclass(frozen=True)
class SimtFlashConfig(FlashTiles):
    """One kernel: the workload's shape baked in, plus the knobs."""
    lanes: int = 16  # LX: threads sharing a row group's scores and output columns
    rows: int = 64  # BQ: query rows of a block
    thread_rows: int = 4  # TM
    kv_tile: int = 64  # BK
    stages: int = 1
    kv_splits: int = 1  # blocks sharing a block's key tiles, each writing float32 partial rows (FlashDecoding)

    @property
    def threads(self) -> int:
        return self.rows // self.thread_rows * self.lanes

    @property
    def score_columns(self) -> int:  # CS
        return self.kv_tile // self.lanes

    @property
    def out_columns(self) -> int:  # CO: head_dim split over the lanes (the last lanes' columns past it are zeros)
        return -(-self.head_dim // self.lanes)

    @property
    def padded_dim(self) -> int:  # D4: head_dim rounded up to float4s (zeros beyond head_dim)
        return -(-self.head_dim // 4) * 4

    @property
    def async_copy(self) -> bool:
        """Tiles staged by cp.async: float32 rows of whole 16-byte chunks."""
        return self.dtype == "float32" and self.head_dim % 4 == 0

    @property
    def strides(self) -> tuple[int, int, int, int]:
        """Floats per shared row of Q, K, V and P (LDQ, LDK, LDV, LDP)."""
        ldq = _quad_stride(self.padded_dim)
        ldv = max(-(-self.lanes * self.out_columns // 4) * 4, self.padded_dim)
        return ldq, ldq, ldv, _quad_stride(self.rows)

    @property
    def shared_bytes(self) -> int:
        ldq, ldk, ldv, ldp = self.strides
        return 4 * (self.rows * ldq + self.stages * self.kv_tile * (ldk + ldv) + self.kv_tile * ldp)

    @property
    def accumulators(self) -> int:
        """float32 registers a thread holds for its scores and outputs."""
        return self.thread_rows * (self.score_columns + self.out_columns)

    @property
    def units(self) -> int:
        return self.heads * self.q_tiles * self.kv_splits

    @property
    def name(self) -> str:
        return (f"attention_tiled_r{self.rows}m{self.thread_rows}l{self.lanes}t{self.kv_tile}s{self.stages}"
                f"k{self.kv_splits}_{self.dtype}")


def _constants(cfg: SimtFlashConfig) -> str:
    elem, widen, narrow = TYPES[cfg.dtype]
    ldq, ldk, ldv, ldp = cfg.strides
    return f"""typedef {elem} elem;
constexpr int H = {cfg.heads}, SQ = {cfg.seq_q}, SKV = {cfg.seq_kv}, D = {cfg.head_dim}, CAUSAL = {cfg.causal};
constexpr int BQ = {cfg.rows}, TM = {cfg.thread_rows}, LX = {cfg.lanes}, BK = {cfg.kv_tile}, STAGES = {cfg.stages};
constexpr int SPLITS = {cfg.kv_splits}, COMBINE_THREADS = {COMBINE_THREADS};
constexpr int THREADS = BQ / TM * LX, CS = BK / LX, CO = {cfg.out_columns}, D4 = {cfg.padded_dim};
constexpr int LDQ = {ldq}, LDK = {ldk}, LDV = {ldv}, LDP = {ldp}, ASYNC = {int(cfg.async_copy)};
constexpr int Q_TILES = (SQ + BQ - 1) / BQ, KV_TILES = (SKV + BK - 1) / BK;
constexpr float SCALE_LOG2 = {scale_log2(cfg.head_dim)!r}f;
constexpr float LOWEST = -3.4028234663852886e38f;  // a running max's start: exp2(LOWEST - max) is 0, never NaN
static __device__ __forceinline__ float widen(elem x) {{ return {widen}(x); }}
static __device__ __forceinline__ elem narrow(float x) {{ return {narrow}(x); }}
"""


_BODY = r"""
// n consecutive floats of shared memory into registers, in the widest aligned reads n allows
template <int N>
static __device__ __forceinline__ void read(float* dst, const float* src) {
  if (N % 4 == 0) {
    #pragma unroll
    for (int i = 0; i < N; i += 4) *reinterpret_cast<float4*>(dst + i) = *reinterpret_cast<const float4*>(src + i);
  } else if (N % 2 == 0) {
    #pragma unroll
    for (int i = 0; i < N; i += 2) *reinterpret_cast<float2*>(dst + i) = *reinterpret_cast<const float2*>(src + i);
  } else {
    #pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = src[i];
  }
}

// rows [row0, row0 + n) of a head's (rows x D) matrix into shared rows of `ld` floats; zeros past `limit`
static __device__ __forceinline__ void stage(float* dst, const elem* src, int row0, int limit, int n, int ld) {
  if (ASYNC) {
    constexpr int CHUNKS = D / 4;  // 16-byte chunks per row
    for (int c = threadIdx.x; c < n * CHUNKS; c += THREADS) {
      const int r = c / CHUNKS, col = c % CHUNKS * 4;
      if (row0 + r < limit) {
        __pipeline_memcpy_async(dst + r * ld + col, src + (size_t)(row0 + r) * D + col, 16);
      } else {
        *reinterpret_cast<float4*>(dst + r * ld + col) = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
  } else {
    for (int e = threadIdx.x; e < n * D; e += THREADS) {
      const int r = e / D, col = e % D;
      dst[r * ld + col] = row0 + r < limit ? widen(src[(size_t)(row0 + r) * D + col]) : 0.f;
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS) KERNEL_NAME(const elem* __restrict__ Q,
    const elem* __restrict__ K, const elem* __restrict__ V, OUT_PARAMS) {
  extern __shared__ __align__(16) unsigned char smem[];
  float* Qs = reinterpret_cast<float*>(smem);
  float* Ks = Qs + BQ * LDQ;  // STAGES tiles of BK rows
  float* Vs = Ks + STAGES * BK * LDK;
  float* Ps = Vs + STAGES * BK * LDV;  // the tile's probabilities, key-major
  const int ty = threadIdx.x / LX, tx = threadIdx.x % LX;
  // units in order of query tile, last first, then head, then split: under causal the longest blocks of every head
  // start first
  const int split = blockIdx.x % SPLITS, h = blockIdx.x / SPLITS % H;
  const int qt = Q_TILES - 1 - (int)(blockIdx.x / (SPLITS * H)), q0 = qt * BQ;
  // the key tiles some row of this block sees, and this split's contiguous share of them
  const int seen = CAUSAL ? min(KV_TILES, (min(q0 + BQ, SQ) - 1) / BK + 1) : KV_TILES;
  const int per = (seen + SPLITS - 1) / SPLITS, t0 = min(seen, split * per), t1 = min(seen, t0 + per);
  const elem* Qh = Q + (size_t)h * SQ * D;
  const elem* Kh = K + (size_t)h * SKV * D;
  const elem* Vh = V + (size_t)h * SKV * D;

  // the columns past head_dim that the float4 reads cover stay zero: their products vanish
  if (D4 != D || LDV != D) {
    for (int e = threadIdx.x; e < BQ + STAGES * BK; e += THREADS) {
      float* row = e < BQ ? Qs + e * LDQ : Ks + (e - BQ) * LDK;
      for (int c = D; c < D4; ++c) row[c] = 0.f;
    }
    for (int e = threadIdx.x; e < STAGES * BK; e += THREADS)
      for (int c = D; c < LDV; ++c) Vs[e * LDV + c] = 0.f;
  }
  stage(Qs, Qh, q0, SQ, BQ, LDQ);
  if (t0 < t1) {
    stage(Ks, Kh, t0 * BK, SKV, BK, LDK);
    stage(Vs, Vh, t0 * BK, SKV, BK, LDV);
  }
  if (ASYNC) __pipeline_commit();

  float o[TM][CO], mx[TM], sum[TM];
  #pragma unroll
  for (int i = 0; i < TM; ++i) {
    #pragma unroll
    for (int j = 0; j < CO; ++j) o[i][j] = 0.f;
    mx[i] = LOWEST;
    sum[i] = 0.f;
  }

  for (int t = t0; t < t1; ++t) {
    const int buf = STAGES == 2 ? (t - t0) & 1 : 0;
    if (STAGES == 1 && t > t0) {
      stage(Ks, Kh, t * BK, SKV, BK, LDK);
      stage(Vs, Vh, t * BK, SKV, BK, LDV);
      if (ASYNC) __pipeline_commit();
    }
    if (STAGES == 2 && t + 1 < t1) {
      stage(Ks + (buf ^ 1) * BK * LDK, Kh, (t + 1) * BK, SKV, BK, LDK);
      stage(Vs + (buf ^ 1) * BK * LDV, Vh, (t + 1) * BK, SKV, BK, LDV);
      __pipeline_commit();
      __pipeline_wait_prior(1);
    } else if (ASYNC) {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
    const float* Kt = Ks + buf * BK * LDK;
    const float* Vt = Vs + buf * BK * LDV;

    float s[TM][CS];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
      #pragma unroll
      for (int c = 0; c < CS; ++c) s[i][c] = 0.f;
    #pragma unroll 2
    for (int d = 0; d < D4; d += 4) {
      float q[TM][4], k[CS][4];
      #pragma unroll
      for (int i = 0; i < TM; ++i) read<4>(q[i], Qs + (ty * TM + i) * LDQ + d);
      #pragma unroll
      for (int c = 0; c < CS; ++c) read<4>(k[c], Kt + (tx + c * LX) * LDK + d);
      #pragma unroll
      for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int c = 0; c < CS; ++c)
          s[i][c] = fmaf(q[i][0], k[c][0], fmaf(q[i][1], k[c][1], fmaf(q[i][2], k[c][2],
                    fmaf(q[i][3], k[c][3], s[i][c]))));
    }

    // keys past the end (the last tile), or after a query under causal, score -inf
    const bool edge = SKV % BK != 0 && t == KV_TILES - 1;
    const bool diagonal = CAUSAL && (t + 1) * BK - 1 > q0 + ty * TM;
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int qi = q0 + ty * TM + i;
      float m = LOWEST;
      #pragma unroll
      for (int c = 0; c < CS; ++c) {
        const int kj = t * BK + tx + c * LX;
        if ((edge && kj >= SKV) || (diagonal && kj > qi)) s[i][c] = -INFINITY;
        m = fmaxf(m, s[i][c]);
      }
      #pragma unroll
      for (int off = LX / 2; off >= 1; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
      const float next = fmaxf(mx[i], m * SCALE_LOG2);
      const float alpha = exp2f(mx[i] - next);
      mx[i] = next;
      float part = 0.f;
      #pragma unroll
      for (int c = 0; c < CS; ++c) {
        s[i][c] = exp2f(fmaf(s[i][c], SCALE_LOG2, -next));
        part += s[i][c];
      }
      sum[i] = sum[i] * alpha + part;
      #pragma unroll
      for (int j = 0; j < CO; ++j) o[i][j] *= alpha;
    }
    #pragma unroll
    for (int c = 0; c < CS; ++c) {
      float* prow = Ps + (tx + c * LX) * LDP + ty * TM;
      if (TM % 4 == 0) {
        #pragma unroll
        for (int i = 0; i < TM; i += 4)
          *reinterpret_cast<float4*>(prow + i) = make_float4(s[i][c], s[i + 1][c], s[i + 2][c], s[i + 3][c]);
      } else {
        #pragma unroll
        for (int i = 0; i < TM; ++i) prow[i] = s[i][c];
      }
    }
    __syncthreads();  // P complete

    #pragma unroll 4
    for (int kk = 0; kk < BK; ++kk) {
      float p[TM], v[CO];
      read<TM>(p, Ps + kk * LDP + ty * TM);
      read<CO>(v, Vt + kk * LDV + tx * CO);
      #pragma unroll
      for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < CO; ++j) o[i][j] = fmaf(p[i], v[j], o[i][j]);
    }
    __syncthreads();  // every thread is done with this tile's K, V and P before later ones overwrite them
  }

  #pragma unroll
  for (int i = 0; i < TM; ++i) {
    float l = sum[i];
    #pragma unroll
    for (int off = LX / 2; off >= 1; off /= 2) l += __shfl_xor_sync(0xffffffffu, l, off);
    const int qi = q0 + ty * TM + i;
    if (qi >= SQ) continue;
    EPILOGUE
  }
}
"""

# the thread's CO columns of one row: whole float4 stores where every one lies inside a float32 row of D % 4 == 0
_STORE_VECTOR = r"""const float inv = 1.f / l;
    elem* row = O + ((size_t)h * SQ + qi) * D;
    if (tx * CO < D) {
      #pragma unroll
      for (int j = 0; j < CO; j += 4)
        if (tx * CO + j < D)
          *reinterpret_cast<float4*>(row + tx * CO + j) = make_float4(o[i][j] * inv, o[i][j + 1] * inv,
                                                                      o[i][j + 2] * inv, o[i][j + 3] * inv);
    }"""
_STORE_SCALAR = r"""const float inv = 1.f / l;
    elem* row = O + ((size_t)h * SQ + qi) * D;
    #pragma unroll
    for (int j = 0; j < CO; ++j)
      if (tx * CO + j < D) row[tx * CO + j] = narrow(o[i][j] * inv);"""
# a split's unnormalised float32 row and its (max, sum), for the combine kernel
_PARTIAL = r"""const size_t r = ((size_t)split * H + h) * SQ + qi;
    #pragma unroll
    for (int j = 0; j < CO; ++j)
      if (tx * CO + j < D) part[r * D + tx * CO + j] = o[i][j];
    if (tx == 0) stats[r] = make_float2(mx[i], l);"""


def render_kernel(cfg: SimtFlashConfig) -> str:
    """The main kernel's source; with splits it writes partial rows and statistics."""
    split = cfg.kv_splits > 1
    vector = cfg.dtype == "float32" and cfg.head_dim % 4 == 0 and cfg.out_columns % 4 == 0
    out = "float* __restrict__ part, float2* __restrict__ stats" if split else "elem* __restrict__ O"
    epilogue = _PARTIAL if split else _STORE_VECTOR if vector else _STORE_SCALAR
    body = _BODY.replace("KERNEL_NAME", cfg.name).replace("OUT_PARAMS", out).replace("EPILOGUE", epilogue)
    return _constants(cfg) + body


def combine_name(cfg: SimtFlashConfig) -> str:
    return f"{cfg.name}_combine"


def render_combine(cfg: SimtFlashConfig) -> str:
    """The kernel combining the splits' partial rows (flash_attention's, one thread per output element)."""
    return _constants(cfg) + COMBINE_BODY.replace("COMBINE_NAME", combine_name(cfg))


def prelude_blocks() -> tuple:
    return ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda_pipeline.h>\n#include <stdint.h>\n",)
