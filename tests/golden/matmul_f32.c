#include <math.h>
#include <stdlib.h>
#include <string.h>
typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));
static void matmul_cpu(const float* __restrict__ in_A, const float* __restrict__ in_B, float* __restrict__ out_C) {
  #pragma omp parallel for schedule(static) num_threads(2)
  for (int t = 0; t < 2; ++t) {
    {
      float Bb[3600] __attribute__((aligned(64)));
      for (int jc = 0; jc < (((((131 - (t * 80))) < (80) ? ((131 - (t * 80))) : (80)) + 79) / 80); ++jc) {
        const int j0 = ((t * 80) + (jc * 80));
        const int nlen = ((((((131 - (t * 80))) < (80) ? ((131 - (t * 80))) : (80)) - (jc * 80))) < (80) ? (((((131 - (t * 80))) < (80) ? ((131 - (t * 80))) : (80)) - (jc * 80))) : (80));
        for (int jl = 0; jl < ((nlen + 15) / 16); ++jl) {
          for (int p = 0; p < 45; ++p) {
            if ((((((j0 / 16) + jl) * 16) + 16) <= 131)) {
              #pragma omp simd
              for (int j = 0; j < 16; ++j) {
                Bb[((((jl * 45) + p) * 16) + j)] = in_B[((p * 131) + ((((j0 / 16) + jl) * 16) + j))];
              }
            } else {
              for (int j = 0; j < 16; ++j) {
                Bb[((((jl * 45) + p) * 16) + j)] = ((((((j0 / 16) + jl) * 16) + j) < 131) ? in_B[((p * 131) + ((((((j0 / 16) + jl) * 16) + j)) < (130) ? (((((j0 / 16) + jl) * 16) + j)) : (130)))] : 0.0f);
              }
            }
          }
        }
        const int i0 = 0;
        const int mlen = 67;
        for (int jr = 0; jr < ((nlen + 15) / 16); ++jr) {
          for (int ir = 0; ir < ((mlen + 5) / 6); ++ir) {
            if (((j0 + ((jr + 1) * 16)) <= 131)) {
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
                  for (int p = 0; p < 45; ++p) {
                    bv[0] = (*(tf_float32x8*)(&Bb[(((jr * 45) * 16) + (p * 16))]));
                    bv[1] = (*(tf_float32x8*)(&Bb[((((jr * 45) * 16) + (p * 16)) + 8)]));
                    acc[0] = (acc[0] + (((in_A[(((((i0 + (ir * 6))) < (66) ? ((i0 + (ir * 6))) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[1] = (acc[1] + (((in_A[(((((i0 + (ir * 6))) < (66) ? ((i0 + (ir * 6))) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[1]));
                    acc[2] = (acc[2] + (((in_A[((((((i0 + (ir * 6)) + 1)) < (66) ? (((i0 + (ir * 6)) + 1)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[3] = (acc[3] + (((in_A[((((((i0 + (ir * 6)) + 1)) < (66) ? (((i0 + (ir * 6)) + 1)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[1]));
                    acc[4] = (acc[4] + (((in_A[((((((i0 + (ir * 6)) + 2)) < (66) ? (((i0 + (ir * 6)) + 2)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[5] = (acc[5] + (((in_A[((((((i0 + (ir * 6)) + 2)) < (66) ? (((i0 + (ir * 6)) + 2)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[1]));
                    acc[6] = (acc[6] + (((in_A[((((((i0 + (ir * 6)) + 3)) < (66) ? (((i0 + (ir * 6)) + 3)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[7] = (acc[7] + (((in_A[((((((i0 + (ir * 6)) + 3)) < (66) ? (((i0 + (ir * 6)) + 3)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[1]));
                    acc[8] = (acc[8] + (((in_A[((((((i0 + (ir * 6)) + 4)) < (66) ? (((i0 + (ir * 6)) + 4)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[9] = (acc[9] + (((in_A[((((((i0 + (ir * 6)) + 4)) < (66) ? (((i0 + (ir * 6)) + 4)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[1]));
                    acc[10] = (acc[10] + (((in_A[((((((i0 + (ir * 6)) + 5)) < (66) ? (((i0 + (ir * 6)) + 5)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[11] = (acc[11] + (((in_A[((((((i0 + (ir * 6)) + 5)) < (66) ? (((i0 + (ir * 6)) + 5)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[1]));
                  }
                  if (((((i0 + (ir * 6)) + 6) <= 67) && (((j0 + (jr * 16)) + 16) <= 131))) {
                    (*(tf_float32x8*)(&out_C[(((i0 + (ir * 6)) * 131) + (j0 + (jr * 16)))])) = acc[0];
                    (*(tf_float32x8*)(&out_C[(((i0 + (ir * 6)) * 131) + ((j0 + (jr * 16)) + 8))])) = acc[1];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 1) * 131) + (j0 + (jr * 16)))])) = acc[2];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 1) * 131) + ((j0 + (jr * 16)) + 8))])) = acc[3];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 2) * 131) + (j0 + (jr * 16)))])) = acc[4];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 2) * 131) + ((j0 + (jr * 16)) + 8))])) = acc[5];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 3) * 131) + (j0 + (jr * 16)))])) = acc[6];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 3) * 131) + ((j0 + (jr * 16)) + 8))])) = acc[7];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 4) * 131) + (j0 + (jr * 16)))])) = acc[8];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 4) * 131) + ((j0 + (jr * 16)) + 8))])) = acc[9];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 5) * 131) + (j0 + (jr * 16)))])) = acc[10];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 5) * 131) + ((j0 + (jr * 16)) + 8))])) = acc[11];
                  } else {
                    {
                      float edge[96] __attribute__((aligned(64)));
                      (*(tf_float32x8*)(&edge[0])) = acc[0];
                      (*(tf_float32x8*)(&edge[8])) = acc[1];
                      (*(tf_float32x8*)(&edge[16])) = acc[2];
                      (*(tf_float32x8*)(&edge[24])) = acc[3];
                      (*(tf_float32x8*)(&edge[32])) = acc[4];
                      (*(tf_float32x8*)(&edge[40])) = acc[5];
                      (*(tf_float32x8*)(&edge[48])) = acc[6];
                      (*(tf_float32x8*)(&edge[56])) = acc[7];
                      (*(tf_float32x8*)(&edge[64])) = acc[8];
                      (*(tf_float32x8*)(&edge[72])) = acc[9];
                      (*(tf_float32x8*)(&edge[80])) = acc[10];
                      (*(tf_float32x8*)(&edge[88])) = acc[11];
                      for (int ei = 0; ei < 6; ++ei) {
                        for (int ej = 0; ej < 16; ++ej) {
                          if (((((i0 + (ir * 6)) + ei) < 67) && (((j0 + (jr * 16)) + ej) < 131))) {
                            out_C[((((i0 + (ir * 6)) + ei) * 131) + ((j0 + (jr * 16)) + ej))] = edge[((ei * 16) + ej)];
                          }
                        }
                      }
                    }
                  }
                }
              }
            } else {
              {
                tf_float32x8 acc[6] __attribute__((aligned(64)));
                {
                  tf_float32x8 bv[1] __attribute__((aligned(64)));
                  acc[0] = ((0.0f) - (tf_float32x8){0});
                  acc[1] = ((0.0f) - (tf_float32x8){0});
                  acc[2] = ((0.0f) - (tf_float32x8){0});
                  acc[3] = ((0.0f) - (tf_float32x8){0});
                  acc[4] = ((0.0f) - (tf_float32x8){0});
                  acc[5] = ((0.0f) - (tf_float32x8){0});
                  for (int p = 0; p < 45; ++p) {
                    bv[0] = (*(tf_float32x8*)(&Bb[(((jr * 45) * 16) + (p * 16))]));
                    acc[0] = (acc[0] + (((in_A[(((((i0 + (ir * 6))) < (66) ? ((i0 + (ir * 6))) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[1] = (acc[1] + (((in_A[((((((i0 + (ir * 6)) + 1)) < (66) ? (((i0 + (ir * 6)) + 1)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[2] = (acc[2] + (((in_A[((((((i0 + (ir * 6)) + 2)) < (66) ? (((i0 + (ir * 6)) + 2)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[3] = (acc[3] + (((in_A[((((((i0 + (ir * 6)) + 3)) < (66) ? (((i0 + (ir * 6)) + 3)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[4] = (acc[4] + (((in_A[((((((i0 + (ir * 6)) + 4)) < (66) ? (((i0 + (ir * 6)) + 4)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                    acc[5] = (acc[5] + (((in_A[((((((i0 + (ir * 6)) + 5)) < (66) ? (((i0 + (ir * 6)) + 5)) : (66)) * 45) + p)]) - (tf_float32x8){0}) * bv[0]));
                  }
                  if (((((i0 + (ir * 6)) + 6) <= 67) && (((j0 + (jr * 16)) + 8) <= 131))) {
                    (*(tf_float32x8*)(&out_C[(((i0 + (ir * 6)) * 131) + (j0 + (jr * 16)))])) = acc[0];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 1) * 131) + (j0 + (jr * 16)))])) = acc[1];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 2) * 131) + (j0 + (jr * 16)))])) = acc[2];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 3) * 131) + (j0 + (jr * 16)))])) = acc[3];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 4) * 131) + (j0 + (jr * 16)))])) = acc[4];
                    (*(tf_float32x8*)(&out_C[((((i0 + (ir * 6)) + 5) * 131) + (j0 + (jr * 16)))])) = acc[5];
                  } else {
                    {
                      float edge[48] __attribute__((aligned(64)));
                      (*(tf_float32x8*)(&edge[0])) = acc[0];
                      (*(tf_float32x8*)(&edge[8])) = acc[1];
                      (*(tf_float32x8*)(&edge[16])) = acc[2];
                      (*(tf_float32x8*)(&edge[24])) = acc[3];
                      (*(tf_float32x8*)(&edge[32])) = acc[4];
                      (*(tf_float32x8*)(&edge[40])) = acc[5];
                      for (int ei = 0; ei < 6; ++ei) {
                        for (int ej = 0; ej < 8; ++ej) {
                          if (((((i0 + (ir * 6)) + ei) < 67) && (((j0 + (jr * 16)) + ej) < 131))) {
                            out_C[((((i0 + (ir * 6)) + ei) * 131) + ((j0 + (jr * 16)) + ej))] = edge[((ei * 8) + ej)];
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}
int tf_entry(float* in_A, float* in_B, float* out_C) {
  matmul_cpu(in_A, in_B, out_C);
  return 0;
}
