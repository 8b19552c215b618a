"""What turns the Hopper GEMM kernel (codegen/sm90_gemm.py) into an implicit-GEMM conv2d: the text of its producer's
loads, its K loop's length and its output addressing, for one convolution's geometry.

The GEMM it computes: C[m, j] = sum_kk A[m, kk] * B[kk, j] with m the output channel, j = (n, p, q) the output pixel
and kk = (r, s, c) the filter tap and input channel, c innermost. Both operands come from NHWC-ordered copies:
- A is the filter as KRSC, read by a 3-D tiled map (dims C, RS, K): each K block is one tap (r, s) and 64
  channels of it, a BM x 64 box, zeros past C (so C need not be a multiple of 64);
- B is X as NHWC, read by an im2col map (runtime/tensor_map.Im2colMap): the box is BN consecutive output pixels
  from the tile's first one, 64 channels each, shifted by the tap (s, r); pixels of the padding, past C or past
  the last image read as zeros. It lands as BN rows of 64 K-contiguous halves: B K-major, as the GEMM's b_kmajor.
- C is written to Y in NCHW: element (m, j) at n*K*P*Q + m*P*Q + (p*Q + q). A run of j stays inside one image and
  is aligned where its length divides P*Q, so the epilogue stores runs of `run` elements (up to 16 bytes).
"""
from __future__ import annotations

from dataclasses import dataclass

BK = 64  # channels per K block: one 128-byte swizzled row of 16-bit elements


@dataclass(frozen=True)
class ConvGeometry:
    """The convolution the kernel is specialised for (its numbers are compiled in)."""
    C: int
    R: int
    S: int
    P: int  # output rows
    Q: int  # output columns
    stride: int
    pad: int

    @property
    def c_blocks(self) -> int:
        return -(-self.C // BK)

    @property
    def k_blocks(self) -> int:
        """K steps of the kernel: every tap, every 64-channel block."""
        return self.R * self.S * self.c_blocks

    def run(self, vec: int) -> int:
        """Output elements per store: the largest power of two <= vec (one 16-byte vector) dividing P*Q."""
        n = vec
        while (self.P * self.Q) % n:
            n //= 2
        return n

    def tag(self) -> str:
        return f"conv_c{self.C}r{self.R}s{self.S}p{self.P}q{self.Q}st{self.stride}pd{self.pad}"


def constants(g: ConvGeometry, vec: int) -> str:
    return (f"// ---- implicit-GEMM conv2d: C={g.C} R={g.R} S={g.S} P={g.P} Q={g.Q} stride={g.stride} pad={g.pad}\n"
            f"constexpr int CONV_C_BLOCKS = {g.c_blocks}, CONV_S = {g.S}, CONV_Q = {g.Q}, CONV_PQ = {g.P * g.Q};\n"
            f"constexpr int CONV_STRIDE = {g.stride}, CONV_PAD = {g.pad};\n"
            f"constexpr int CONV_K_BLOCKS = {g.k_blocks};  // R*S taps x C_BLOCKS channel blocks\n"
            f"constexpr int CONV_RUN = {g.run(vec)};  // output elements per store (divides P*Q)\n")


K_BLOCKS = "CONV_K_BLOCKS"

# The producer, once per tile: the window origin (input row and column of tap (0, 0)) of the tile's first pixel.
TILE_SETUP = """const int img = t.n0 / CONV_PQ, pix = t.n0 - img * CONV_PQ;
    const int oh = pix / CONV_Q, ow = pix - oh * CONV_Q;
    const int win_h = oh * CONV_STRIDE - CONV_PAD, win_w = ow * CONV_STRIDE - CONV_PAD;"""

# The producer, per K block kb: tap (r, s) = rs and channel block cb.
LOADS = """const int rs = kb / CONV_C_BLOCKS, cb = kb - rs * CONV_C_BLOCKS;
      const int r = rs / CONV_S, s = rs - r * CONV_S;
      tf_tma_load_3d(a, tm_a, bar, cb * BK, rs, t.m0);  // the filter's (c, rs, k) box: BM x 64
      tf_tma_load_im2col_4d(b, tm_b, bar, cb * BK, win_w, win_h, img, uint16_t(s), uint16_t(r));"""

# The epilogue's global write of one lane's 16 staged bytes (VEC outputs from column `col` of row `row`).
STORE = """for (int e = 0; e < VEC; e += CONV_RUN) {
            const int j = col + e;
            if (j >= N) break;  // N (= images * P*Q) is a multiple of CONV_RUN: a run is whole or absent
            out_t* dst = c + conv_out_offset(row, j, M);
            const unsigned char* from = src + e * int(sizeof(out_t));
            if (vec_ok) {
              store_run(dst, from);
            } else {
              for (int u = 0; u < CONV_RUN; ++u) dst[u] = reinterpret_cast<const out_t*>(from)[u];
            }
          }"""

HELPERS = """
// Y is NCHW: output channel `row`, output pixel j = (image, p*Q + q).
__device__ __forceinline__ size_t conv_out_offset(int row, int j, int M) {
  const int img = j / CONV_PQ;
  return static_cast<size_t>(img) * M * CONV_PQ + static_cast<size_t>(row) * CONV_PQ + (j - img * CONV_PQ);
}

// One run of CONV_RUN outputs (2..16 bytes, aligned to its size) from the staging rows.
__device__ __forceinline__ void store_run(out_t* dst, const unsigned char* src) {
  constexpr int BYTES = CONV_RUN * int(sizeof(out_t));
  if constexpr (BYTES == 16) {
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
  } else if constexpr (BYTES == 8) {
    *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(src);
  } else if constexpr (BYTES == 4) {
    *reinterpret_cast<uint32_t*>(dst) = *reinterpret_cast<const uint32_t*>(src);
  } else {
    *reinterpret_cast<uint16_t*>(dst) = *reinterpret_cast<const uint16_t*>(src);
  }
}
"""

# The element-wise write-out (sm90_gemm_text.ELEMENT_WRITE_OUT) is taken where runs are at most this many elements,
# shorter than a 16-byte vector of halves: an odd P*Q (7 x 7, 13 x 13) leaves single-element runs, 14 x 14 runs of 4,
# and a lane's 16-byte segment then became 8 or 2 scattered stores. On an H200 the element-wise write-out was
# 1.09-2.11x faster on the 7 x 7, 13 x 13 and 35 x 35 layers and 1.05-1.17x on 14 x 14 ones, one tie
# (benchmarks/results/2026-12-01-sm90-conv-parts/, epilogue_runs.py). Runs of 8 (a whole vector) keep the vectors.
ELEMENT_RUN_MAX = 4
ELEMENT = "c + conv_out_offset(row, col, M)"


def element_write_out(g: ConvGeometry, vec: int) -> bool:
    """Whether the epilogue writes element by element, a row at a time (ELEMENT_RUN_MAX)."""
    return g.run(vec) <= ELEMENT_RUN_MAX


# Stores need 16-byte aligned staging reads (always) and a Y whose base is aligned to a run.
VEC_OK = "reinterpret_cast<uintptr_t>(c) % (CONV_RUN * sizeof(out_t)) == 0"
