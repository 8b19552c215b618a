#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <immintrin.h>
typedef _Float16 tf_float16x8 __attribute__((vector_size(16), aligned(2)));
typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));
static void matmul_cpu(const _Float16* __restrict__ in_A, const _Float16* __restrict__ in_B, _Float16* __restrict__ out_C) {
  {
    float Bp[4096] __attribute__((aligned(64)));
    #pragma omp parallel for schedule(static) num_threads(2)
    for (int jp = 0; jp < 4; ++jp) {
      for (int p = 0; p < 64; ++p) {
        for (int jv = 0; jv < 2; ++jv) {
          (*(tf_float32x8*)(&Bp[((((jp * 64) + p) * 16) + (jv * 8))])) = ((tf_float32x8)_mm256_cvtph_ps((__m128i)((*(tf_float16x8*)(&in_B[((p * 64) + ((jp * 16) + (jv * 8)))])))));
        }
      }
    }
    #pragma omp parallel for schedule(static) num_threads(2)
    for (int t = 0; t < 2; ++t) {
      {
        float Ap[2304] __attribute__((aligned(64)));
        {
          float Ct[2304] __attribute__((aligned(64)));
          const int j0 = 0;
          const int nlen = 64;
          for (int ic = 0; ic < (((((64 - (t * 36))) < (36) ? ((64 - (t * 36))) : (36)) + 35) / 36); ++ic) {
            const int i0 = ((t * 36) + (ic * 36));
            const int mlen = ((((((64 - (t * 36))) < (36) ? ((64 - (t * 36))) : (36)) - (ic * 36))) < (36) ? (((((64 - (t * 36))) < (36) ? ((64 - (t * 36))) : (36)) - (ic * 36))) : (36));
            for (int pir = 0; pir < ((mlen + 5) / 6); ++pir) {
              #pragma GCC unroll 6
              for (int pi = 0; pi < 6; ++pi) {
                if ((((i0 + (pir * 6)) + pi) < 64)) {
                  for (int pk = 0; pk < 64; ++pk) {
                    Ap[((((pir * 64) + pk) * 6) + pi)] = ((float)(in_A[((((i0 + (pir * 6)) + pi) * 64) + pk)]));
                  }
                } else {
                  for (int pk = 0; pk < 64; ++pk) {
                    Ap[((((pir * 64) + pk) * 6) + pi)] = 0.0f;
                  }
                }
              }
            }
            for (int jr = 0; jr < ((nlen + 15) / 16); ++jr) {
              for (int ir = 0; ir < ((mlen + 5) / 6); ++ir) {
                {
                  tf_float32x8 acc[12] __attribute__((aligned(64)));
                  {
                    tf_float32x8 bv[2] __attribute__((aligned(64)));
                    acc[0] = ((0.0f) - (tf_float32x8){0});
                    acc[1] = ((0.0f) - (tf_float32x8){0});
                    acc[2] = ((0.0f) - (tf_float32x8){0});
                    acc[3] = ((0.0f) - (tf_float32x8){0});
                    acc[4] = ((0.0f) - (tf_float32x8){0});
                    acc[5] = ((0.0f) - (tf_float32x8){0});
                    acc[6] = ((0.0f) - (tf_float32x8){0});
                    acc[7] = ((0.0f) - (tf_float32x8){0});
                    acc[8] = ((0.0f) - (tf_float32x8){0});
                    acc[9] = ((0.0f) - (tf_float32x8){0});
                    acc[10] = ((0.0f) - (tf_float32x8){0});
                    acc[11] = ((0.0f) - (tf_float32x8){0});
                    for (int p = 0; p < 64; ++p) {
                      bv[0] = (*(tf_float32x8*)(&Bp[(((((j0 / 16) + jr) * 64) * 16) + (p * 16))]));
                      bv[1] = (*(tf_float32x8*)(&Bp[((((((j0 / 16) + jr) * 64) * 16) + (p * 16)) + 8)]));
                      acc[0] = (acc[0] + (((Ap[(((ir * 64) + p) * 6)]) - (tf_float32x8){0}) * bv[0]));
                      acc[1] = (acc[1] + (((Ap[(((ir * 64) + p) * 6)]) - (tf_float32x8){0}) * bv[1]));
                      acc[2] = (acc[2] + (((Ap[((((ir * 64) + p) * 6) + 1)]) - (tf_float32x8){0}) * bv[0]));
                      acc[3] = (acc[3] + (((Ap[((((ir * 64) + p) * 6) + 1)]) - (tf_float32x8){0}) * bv[1]));
                      acc[4] = (acc[4] + (((Ap[((((ir * 64) + p) * 6) + 2)]) - (tf_float32x8){0}) * bv[0]));
                      acc[5] = (acc[5] + (((Ap[((((ir * 64) + p) * 6) + 2)]) - (tf_float32x8){0}) * bv[1]));
                      acc[6] = (acc[6] + (((Ap[((((ir * 64) + p) * 6) + 3)]) - (tf_float32x8){0}) * bv[0]));
                      acc[7] = (acc[7] + (((Ap[((((ir * 64) + p) * 6) + 3)]) - (tf_float32x8){0}) * bv[1]));
                      acc[8] = (acc[8] + (((Ap[((((ir * 64) + p) * 6) + 4)]) - (tf_float32x8){0}) * bv[0]));
                      acc[9] = (acc[9] + (((Ap[((((ir * 64) + p) * 6) + 4)]) - (tf_float32x8){0}) * bv[1]));
                      acc[10] = (acc[10] + (((Ap[((((ir * 64) + p) * 6) + 5)]) - (tf_float32x8){0}) * bv[0]));
                      acc[11] = (acc[11] + (((Ap[((((ir * 64) + p) * 6) + 5)]) - (tf_float32x8){0}) * bv[1]));
                    }
                    (*(tf_float32x8*)(&Ct[(((((i0 + (ir * 6)) - i0) * 64) + (j0 + (jr * 16))) - j0)])) = acc[0];
                    (*(tf_float32x8*)(&Ct[((((((i0 + (ir * 6)) - i0) * 64) + (j0 + (jr * 16))) - j0) + 8)])) = acc[1];
                    (*(tf_float32x8*)(&Ct[((((((i0 + (ir * 6)) - i0) + 1) * 64) + (j0 + (jr * 16))) - j0)])) = acc[2];
                    (*(tf_float32x8*)(&Ct[(((((((i0 + (ir * 6)) - i0) + 1) * 64) + (j0 + (jr * 16))) - j0) + 8)])) = acc[3];
                    (*(tf_float32x8*)(&Ct[((((((i0 + (ir * 6)) - i0) + 2) * 64) + (j0 + (jr * 16))) - j0)])) = acc[4];
                    (*(tf_float32x8*)(&Ct[(((((((i0 + (ir * 6)) - i0) + 2) * 64) + (j0 + (jr * 16))) - j0) + 8)])) = acc[5];
                    (*(tf_float32x8*)(&Ct[((((((i0 + (ir * 6)) - i0) + 3) * 64) + (j0 + (jr * 16))) - j0)])) = acc[6];
                    (*(tf_float32x8*)(&Ct[(((((((i0 + (ir * 6)) - i0) + 3) * 64) + (j0 + (jr * 16))) - j0) + 8)])) = acc[7];
                    (*(tf_float32x8*)(&Ct[((((((i0 + (ir * 6)) - i0) + 4) * 64) + (j0 + (jr * 16))) - j0)])) = acc[8];
                    (*(tf_float32x8*)(&Ct[(((((((i0 + (ir * 6)) - i0) + 4) * 64) + (j0 + (jr * 16))) - j0) + 8)])) = acc[9];
                    (*(tf_float32x8*)(&Ct[((((((i0 + (ir * 6)) - i0) + 5) * 64) + (j0 + (jr * 16))) - j0)])) = acc[10];
                    (*(tf_float32x8*)(&Ct[(((((((i0 + (ir * 6)) - i0) + 5) * 64) + (j0 + (jr * 16))) - j0) + 8)])) = acc[11];
                  }
                }
              }
            }
            for (int ci = 0; ci < mlen; ++ci) {
              for (int cv = 0; cv < (nlen / 8); ++cv) {
                (*(tf_float16x8*)(&out_C[(((i0 + ci) * 64) + (j0 + (cv * 8)))])) = ((tf_float16x8)_mm256_cvtps_ph((__m256)((*(tf_float32x8*)(&Ct[((ci * 64) + (cv * 8))]))), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
              }
              for (int cj = 0; cj < (nlen - ((nlen / 8) * 8)); ++cj) {
                out_C[(((i0 + ci) * 64) + (j0 + (((nlen / 8) * 8) + cj)))] = ((_Float16)(Ct[((ci * 64) + (((nlen / 8) * 8) + cj))]));
              }
            }
          }
        }
      }
    }
  }
}
int tf_entry(_Float16* in_A, _Float16* in_B, _Float16* out_C) {
  matmul_cpu(in_A, in_B, out_C);
  return 0;
}
