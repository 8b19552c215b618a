"""The emulated CUDA device: C++ text that generated CUDA kernels compile against on the CPU
(tests/cpu/cuda_emulation.py builds and runs them).

Each CUDA thread of a block is a fiber (ucontext) with its own stack, resumed in turn by one OS thread;
`__syncthreads()` hands control back until every thread of the block waits there; `__shared__` arrays are statics
(blocks run one after another), and 128-bit moves are 16-byte-aligned structs; `__half` and `__nv_bfloat16` are
16-bit storage with CUDA's conversions (round to nearest even). A barrier that some threads of a block never reach is
reported as such (a GPU would hang). Between two barriers the warps run one after another, each until all its lanes
reach the barrier (its shuffles resolve on the way), in ascending warp order and then descending in the next phase;
a warp's lanes run in ascending order, then descending at the next meeting. So a missing barrier makes a thread read
shared memory before another thread's write (or after its next one): a wrong result (tests/cpu/test_cuda_emulation.py
drops each barrier of a GEMM in turn). A warp runs ahead of the others through its meetings: a missing barrier
between warps shows even where every read is a meeting of a warp (WMMA loads, ldmatrix). Fibers replaced a
std::thread per CUDA thread, whose barriers cost most of a run and made the order of a race a matter of luck.
Warp shuffles (`__shfl_xor_sync`, `__shfl_down_sync`, `__shfl_sync`, full mask) are meetings of a warp's 32 lanes:
each lane's value is read by its source lane once all have arrived, and a shuffle only some lanes of a warp reach is
reported. WMMA 16x16x16 fragments: every lane holds the whole tile, and a store writes the lane's own accumulator
elements (the tensor cores' layout), so a missing barrier after a store shows. mma.sync m16n8k16 and ldmatrix .x4
(plain and .trans), which the mma.sync kernels call through device functions of their prelude, are meetings of the
warp placing each lane's registers as PTX's fragment layouts do. cp.async copies land at the `__pipeline_wait_prior`
that covers their group, not before. The sm_90a instructions (TMA, wgmma, mbarriers) are not emulated here:
tests/cpu/sm90_unit_emulation.py runs their scheduling text."""
from __future__ import annotations

PRELUDE = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <ucontext.h>
#include <vector>
struct tf_dim3 { int x, y, z; };
static tf_dim3 threadIdx;  // set by the scheduler before it resumes a thread
static tf_dim3 blockIdx;
#define __syncthreads() tf_sync()
#define __global__
#define __launch_bounds__(n)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define CUDART_INF_F INFINITY
#define __device__
#define __forceinline__ inline
#define TUNEFARM_EMULATED_MMA  // the mma.sync kernels' warp-level helpers come from here (below), not from PTX
using std::min;
using std::max;
struct __attribute__((aligned(8))) float2 { float x, y; };
static inline float2 make_float2(float x, float y) { return {x, y}; }
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
// The half types are storage: kernels convert to float32 to compute. Narrowing rounds to nearest even, as CUDA's.
struct __half { uint16_t x; };
struct __nv_bfloat16 { uint16_t x; };
static inline float __half2float(__half h) { _Float16 v; memcpy(&v, &h.x, 2); return (float)v; }
static inline __half __float2half(float f) { const _Float16 v = (_Float16)f; __half h; memcpy(&h.x, &v, 2); return h; }
static inline float __bfloat162float(__nv_bfloat16 b) {
  const uint32_t u = (uint32_t)b.x << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {(uint16_t)((u >> 16) | 0x40u)};  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return {(uint16_t)(u >> 16)};
}
// Each CUDA thread of a block is a fiber (ucontext) with its own stack; one OS thread resumes them in turn. A thread
// runs until its next __syncthreads() (or its end); once every thread waits at the barrier, all go on. Turns run
// in ascending thread order, then descending at the next barrier, and so on: a thread that reads shared memory
// another thread writes without a barrier between them reads it before that write in one of the two orders.
// A warp shuffle is a meeting of the warp's lanes: each leaves its value in a slot and waits until every lane of the
// warp has; then each reads its source lane's slot. Slots alternate by shuffle (a lane can be one shuffle ahead of
// another's read, never two).
enum { TF_RUNNING, TF_AT_BARRIER, TF_AT_SHUFFLE, TF_DONE };
struct tf_copy { void* dst; const void* src; size_t bytes; };
struct tf_fiber {
  ucontext_t ctx;
  int state;
  unsigned shuffles;
  std::vector<tf_copy> open_copies;  // cp.async copies issued since the last commit
  std::vector<std::vector<tf_copy>> copy_groups;  // committed, not yet waited for: they land at the wait
};
static ucontext_t tf_scheduler;
static std::vector<tf_fiber> tf_fibers;
static int tf_current;
static void (*tf_body)(void*);
static void* tf_body_arg;
static unsigned char tf_slots[2][1024][16];
static void tf_wait(int state) {
  tf_fibers[tf_current].state = state;
  swapcontext(&tf_fibers[tf_current].ctx, &tf_scheduler);
}
static void tf_sync() { tf_wait(TF_AT_BARRIER); }
template <class T> static T tf_shuffle(T v, int src_lane) {
  static_assert(sizeof(T) <= 16, "a shuffled value fits a slot");
  const int t = tf_current, gen = tf_fibers[t].shuffles++ & 1;
  memcpy(tf_slots[gen][t], &v, sizeof v);
  tf_wait(TF_AT_SHUFFLE);
  T out;
  memcpy(&out, tf_slots[gen][(t & ~31) + src_lane], sizeof out);
  return out;
}
template <class T> static T __shfl_xor_sync(unsigned, T v, int mask) { return tf_shuffle(v, (tf_current & 31) ^ mask); }
template <class T> static T __shfl_down_sync(unsigned, T v, unsigned delta) {
  const unsigned lane = (tf_current & 31) + delta;
  return tf_shuffle(v, lane < 32 ? (int)lane : tf_current & 31);
}
template <class T> static T __shfl_sync(unsigned, T v, int lane) { return tf_shuffle(v, lane & 31); }
// A wider meeting for the tensor-core instructions: each lane leaves up to 64 bytes, and reads all 32 lanes'.
static unsigned char tf_wide[2][1024][64];
static void tf_meet(const void* mine, size_t bytes, unsigned char (*all)[64]) {
  const int t = tf_current, gen = tf_fibers[t].shuffles++ & 1;
  memcpy(tf_wide[gen][t], mine, bytes);
  tf_wait(TF_AT_SHUFFLE);
  for (int l = 0; l < 32; ++l) memcpy(all[l], tf_wide[gen][(t & ~31) + l], 64);
}
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// cp.async: a copy lands when a wait covers its group, not before, so shared memory read before the wait is stale.
static void __pipeline_memcpy_async(void* dst, const void* src, size_t bytes) {
  tf_fibers[tf_current].open_copies.push_back({dst, src, bytes});
}
static void __pipeline_commit() {
  tf_fiber& f = tf_fibers[tf_current];
  f.copy_groups.push_back(std::move(f.open_copies));
  f.open_copies.clear();
}
static void __pipeline_wait_prior(size_t newest_pending) {
  std::vector<std::vector<tf_copy>>& groups = tf_fibers[tf_current].copy_groups;
  while (groups.size() > newest_pending) {
    for (const tf_copy& c : groups.front()) memcpy(c.dst, c.src, c.bytes);
    groups.erase(groups.begin());
  }
}
static inline float tf_float(float x) { return x; }
static inline float tf_float(__half x) { return __half2float(x); }
static inline float tf_float(__nv_bfloat16 x) { return __bfloat162float(x); }
static inline void tf_assign(float& dst, float v) { dst = v; }
static inline void tf_assign(__half& dst, float v) { dst = __float2half(v); }
// wmma (16x16x16): every lane holds the whole tile (CUDA leaves which lane holds which element unsaid), loads and
// multiplies it; a store writes the lane's own 8 elements, as the tensor cores' accumulator layout places them (rows
// lane/4 and lane/4 + 8, columns 2 (lane % 4) + {0, 1} and those + 8), so a lane that reads what another stored
// without a barrier between reads it before it is written.
namespace nvcuda { namespace wmma {
struct matrix_a {}; struct matrix_b {}; struct accumulator {}; struct row_major {}; struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the 16x16x16 shape");
  float v[256];
};
template <class U, class T, class L> static void fill_fragment(fragment<U, 16, 16, 16, T, L>& f, float value) {
  for (float& e : f.v) e = value;
}
template <class U, class T, class L, class P>
static void load_matrix_sync(fragment<U, 16, 16, 16, T, L>& f, const P* p, unsigned ldm) {
  const bool col = std::is_same<L, col_major>::value;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) f.v[r * 16 + c] = tf_float(col ? p[c * ldm + r] : p[r * ldm + c]);
}
template <class TA, class LA, class TB, class LB, class TC>
static void mma_sync(fragment<accumulator, 16, 16, 16, TC>& d, const fragment<matrix_a, 16, 16, 16, TA, LA>& a,
                     const fragment<matrix_b, 16, 16, 16, TB, LB>& b, const fragment<accumulator, 16, 16, 16, TC>& c) {
  float out[256];
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      float acc = c.v[m * 16 + n];
      for (int k = 0; k < 16; ++k) acc += a.v[m * 16 + k] * b.v[k * 16 + n];
      out[m * 16 + n] = acc;
    }
  memcpy(d.v, out, sizeof out);
}
template <class T, class P>
static void store_matrix_sync(P* p, const fragment<accumulator, 16, 16, 16, T>& f, unsigned ldm, layout_t layout) {
  const int lane = tf_current & 31;
  for (int i = 0; i < 8; ++i) {
    const int r = lane / 4 + (i & 4 ? 8 : 0), c = 2 * (lane % 4) + (i & 1) + (i & 2 ? 8 : 0);
    tf_assign(p[layout == mem_row_major ? r * ldm + c : c * ldm + r], f.v[r * 16 + c]);
  }
}
} }
// mma.sync m16n8k16 (A row-major 16x16, B column-major 16x8, float32 C) and ldmatrix .x4: meetings of the warp,
// each lane's registers placed as PTX's fragment layouts say (g = lane / 4, t = lane % 4: A's registers hold
// (g, 2t..2t+1), (g + 8, 2t..), (g, 2t + 8..), (g + 8, 2t + 8..); B's (k 2t..2t+1, n g), (k 2t + 8.., n g); C's
// (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1)), the lower half of a register the lower index.
static float tf_bits(uint16_t b, bool bf) {
  if (bf) return __bfloat162float(__nv_bfloat16{b});
  return __half2float(__half{b});
}
static void tf_mma(float* d, const uint32_t* a, uint32_t b0, uint32_t b1, bool bf) {
  const uint32_t mine[6] = {a[0], a[1], a[2], a[3], b0, b1};
  unsigned char all[32][64];
  tf_meet(mine, sizeof mine, all);
  float A[16][16], B[16][8];
  for (int l = 0; l < 32; ++l) {
    uint32_t r[6];
    memcpy(r, all[l], sizeof r);
    const int g = l / 4, t = l % 4;
    for (int e = 0; e < 2; ++e) {
      A[g][2 * t + e] = tf_bits(r[0] >> 16 * e, bf);
      A[g + 8][2 * t + e] = tf_bits(r[1] >> 16 * e, bf);
      A[g][2 * t + 8 + e] = tf_bits(r[2] >> 16 * e, bf);
      A[g + 8][2 * t + 8 + e] = tf_bits(r[3] >> 16 * e, bf);
      B[2 * t + e][g] = tf_bits(r[4] >> 16 * e, bf);
      B[2 * t + 8 + e][g] = tf_bits(r[5] >> 16 * e, bf);
    }
  }
  const int lane = tf_current & 31, g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i & 2 ? 8 : 0), col = 2 * t + (i & 1);
    for (int k = 0; k < 16; ++k) d[i] += A[row][k] * B[k][col];
  }
}
static void tf_mma_f16(float* d, const uint32_t* a, uint32_t b0, uint32_t b1) { tf_mma(d, a, b0, b1, false); }
static void tf_mma_bf16(float* d, const uint32_t* a, uint32_t b0, uint32_t b1) { tf_mma(d, a, b0, b1, true); }
// ldmatrix .x4: lanes 8j .. 8j + 7 give the row addresses of matrix j; register j of lane l holds (row l / 4,
// columns 2 (l % 4), + 1) of matrix j, or with .trans of its transpose. Shared memory is read at the meeting.
static void tf_ldsm(uint32_t* r, const void* row, bool trans) {
  unsigned char all[32][64];
  tf_meet(&row, sizeof row, all);
  const int lane = tf_current & 31;
  for (int j = 0; j < 4; ++j) {
    uint16_t e[2];
    for (int i = 0; i < 2; ++i) {
      const uint16_t* p;
      memcpy(&p, all[8 * j + (trans ? 2 * (lane % 4) + i : lane / 4)], sizeof p);
      e[i] = p[trans ? lane / 4 : 2 * (lane % 4) + i];
    }
    r[j] = (uint32_t)e[0] | (uint32_t)e[1] << 16;
  }
}
static void tf_ldsm_x4(uint32_t* r, const void* row) { tf_ldsm(r, row, false); }
static void tf_ldsm_x4_t(uint32_t* r, const void* row) { tf_ldsm(r, row, true); }
static void tf_fiber_main() {
  tf_body(tf_body_arg);
  tf_fibers[tf_current].state = TF_DONE;
  swapcontext(&tf_fibers[tf_current].ctx, &tf_scheduler);  // never resumed
}
template <class F> static void tf_call(void* f) { (*static_cast<F*>(f))(); }
template <class F> static void tf_launch(F kernel, tf_dim3 grid, tf_dim3 block) {
  const int n = block.x * block.y * block.z;
  const size_t stack_bytes = 256 << 10;
  const std::unique_ptr<char[]> stacks(new char[(size_t)n * stack_bytes]);  // not zeroed: up to 256 MiB a launch
  tf_fibers.assign(n, tf_fiber{});
  tf_body = tf_call<F>;
  tf_body_arg = &kernel;
  for (int bz = 0; bz < grid.z; ++bz) for (int by = 0; by < grid.y; ++by) for (int bx = 0; bx < grid.x; ++bx) {
    blockIdx = {bx, by, bz};
    for (int t = 0; t < n; ++t) {
      tf_fiber& f = tf_fibers[t];
      f.shuffles = 0;
      f.open_copies.clear();
      f.copy_groups.clear();
      getcontext(&f.ctx);
      f.ctx.uc_stack.ss_sp = &stacks[(size_t)t * stack_bytes];
      f.ctx.uc_stack.ss_size = stack_bytes;
      f.ctx.uc_link = nullptr;
      makecontext(&f.ctx, tf_fiber_main, 0);
      f.state = TF_RUNNING;
    }
    const int warps = (n + 31) / 32;
    for (int phase = 0, round = 0;; ++phase) {
      // Between two barriers the warps run one after another (ascending, then descending in the next phase): each
      // runs until all its lanes wait at the barrier or have ended, its shuffles resolving as its lanes meet, so a
      // warp that reads what another warp writes without a barrier between them reads it before that write in one
      // of the two orders. Lanes of a warp run in ascending order, then descending at its next meeting.
      for (int wi = 0; wi < warps; ++wi) {
        const int base = 32 * (phase % 2 == 0 ? wi : warps - 1 - wi), lanes = n - base < 32 ? n - base : 32;
        for (;; ++round) {
          for (int i = 0; i < lanes; ++i) {
            const int t = base + (round % 2 == 0 ? i : lanes - 1 - i);
            if (tf_fibers[t].state != TF_RUNNING) continue;
            threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
            tf_current = t;
            swapcontext(&tf_scheduler, &tf_fibers[t].ctx);
          }
          // Each lane now waits (at a barrier or a shuffle) or has ended. If all lanes met at a shuffle they go on;
          // a shuffle only some lanes reach would hang on a GPU (or read lanes that never wrote): reported.
          int shuffling = 0, in_step = 0;
          for (int l = 0; l < lanes; ++l) {
            shuffling += tf_fibers[base + l].state == TF_AT_SHUFFLE;
            in_step += tf_fibers[base + l].shuffles == tf_fibers[base].shuffles;
          }
          if (0 < shuffling && (shuffling < lanes || in_step < lanes)) {
            fprintf(stderr, "shuffle divergence in block (%d, %d, %d): of the %d lanes of warp %d, %d wait at a "
                    "shuffle and %d are at lane 0's shuffle count; the others are elsewhere\n", bx, by, bz, lanes,
                    base / 32, shuffling, in_step);
            exit(3);
          }
          if (!shuffling) break;
          for (int l = 0; l < lanes; ++l) tf_fibers[base + l].state = TF_RUNNING;
        }
      }
      // Every thread now waits at a barrier or has ended: a barrier all threads wait at opens; anything else would
      // hang on a GPU, so it is reported instead.
      int done = 0;
      for (const tf_fiber& f : tf_fibers) done += f.state == TF_DONE;
      if (done == n) break;
      if (done > 0) {
        fprintf(stderr, "barrier divergence in block (%d, %d, %d): %d of %d threads ended while the others wait at "
                "__syncthreads()\n", bx, by, bz, done, n);
        exit(3);
      }
      for (tf_fiber& f : tf_fibers) f.state = TF_RUNNING;  // all n wait at the barrier
    }
  }
}
struct tf_buffer {  // a tensor's memory, passed as whatever pointer type the kernel's parameter has
  void* p;
  template <class T> operator T*() const { return static_cast<T*>(p); }
};
static tf_buffer tf_alloc(size_t bytes) {  // 256-byte aligned like cudaMalloc, exact size: red zones right after
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes) != 0) { fprintf(stderr, "out of memory\n"); exit(2); }
  return {p};
}
static void tf_read(const char* path, tf_buffer dst, size_t bytes) {
  FILE* f = fopen(path, "rb");
  if (!f || fread(dst.p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
  fclose(f);
}
static void tf_write(const char* path, tf_buffer src, size_t bytes) {
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(src.p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot write %s\n", path); exit(2); }
  fclose(f);
}
template <class T> static void tf_fill(tf_buffer dst, size_t elems, T value) {
  for (size_t e = 0; e < elems; ++e) static_cast<T*>(dst.p)[e] = value;
}
"""
