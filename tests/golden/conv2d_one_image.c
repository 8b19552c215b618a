#include <math.h>
#include <stdlib.h>
#include <string.h>
typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));
static void conv2d_cpu(const float* __restrict__ in_X, const float* __restrict__ in_Wt, float* __restrict__ out_Y) {
  {
    float Xp[520] __attribute__((aligned(64)));
    {
      int tap[27] __attribute__((aligned(64)));
      #pragma omp parallel for schedule(static) num_threads(2)
      for (int ncab = 0; ncab < 12; ++ncab) {
        const int nc = (ncab / 4);
        const int pa = ((ncab / 2) % 2);
        const int pb = (ncab % 2);
        const int lo = ((((((((1 - pb)) > (0) ? ((1 - pb)) : (0)) + 2) - 1) / 2)) < (7) ? (((((((1 - pb)) > (0) ? ((1 - pb)) : (0)) + 2) - 1) / 2)) : (7));
        const int end = ((((0 <= (11 - pb)) ? (((11 - pb) / 2) + 1) : 0)) < (7) ? (((0 <= (11 - pb)) ? (((11 - pb) / 2) + 1) : 0)) : (7));
        for (int i = 0; i < 6; ++i) {
          const int h = (((i * 2) + pa) - 1);
          const int hi = (((0 <= h) && (h < 9)) ? ((end) > (lo) ? (end) : (lo)) : lo);
          for (int j = 0; j < lo; ++j) {
            Xp[((((ncab * 6) + i) * 7) + j)] = 0.0f;
          }
          #pragma omp simd
          for (int j = 0; j < (hi - lo); ++j) {
            Xp[(((((ncab * 6) + i) * 7) + lo) + j)] = in_X[((((((nc * 9) + h) * 11) + ((lo + j) * 2)) + pb) - 1)];
          }
          for (int j = 0; j < (7 - hi); ++j) {
            Xp[(((((ncab * 6) + i) * 7) + hi) + j)] = 0.0f;
          }
        }
      }
      for (int j = 0; j < 16; ++j) {
        Xp[(504 + j)] = 0.0f;
      }
      for (int k = 0; k < 27; ++k) {
        tap[k] = ((((((((k / 9) * 2) + (((k / 3) % 3) % 2)) * 2) + ((k % 3) % 2)) * 42) + ((((k / 3) % 3) / 2) * 7)) + ((k % 3) / 2));
      }
      {
        float Yw[170] __attribute__((aligned(64)));
        #pragma omp parallel for schedule(static) num_threads(2)
        for (int t = 0; t < 2; ++t) {
          for (int jc = 0; jc < (((((34 - (t * 32))) < (32) ? ((34 - (t * 32))) : (32)) + 31) / 32); ++jc) {
            const int j0 = ((t * 32) + (jc * 32));
            const int nlen = ((((((34 - (t * 32))) < (32) ? ((34 - (t * 32))) : (32)) - (jc * 32))) < (32) ? (((((34 - (t * 32))) < (32) ? ((34 - (t * 32))) : (32)) - (jc * 32))) : (32));
            const int i0 = 0;
            const int mlen = 5;
            for (int jr = 0; jr < ((nlen + 15) / 16); ++jr) {
              for (int ir = 0; ir < ((mlen + 5) / 6); ++ir) {
                if (((j0 + ((jr + 1) * 16)) <= 34)) {
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
                      for (int p = 0; p < 27; ++p) {
                        bv[0] = (*(tf_float32x8*)(&Xp[((tap[p] + j0) + (jr * 16))]));
                        bv[1] = (*(tf_float32x8*)(&Xp[(((tap[p] + j0) + (jr * 16)) + 8)]));
                        acc[0] = (acc[0] + (((in_Wt[(((((i0 + (ir * 6))) < (4) ? ((i0 + (ir * 6))) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[1] = (acc[1] + (((in_Wt[(((((i0 + (ir * 6))) < (4) ? ((i0 + (ir * 6))) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[1]));
                        acc[2] = (acc[2] + (((in_Wt[((((((i0 + (ir * 6)) + 1)) < (4) ? (((i0 + (ir * 6)) + 1)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[3] = (acc[3] + (((in_Wt[((((((i0 + (ir * 6)) + 1)) < (4) ? (((i0 + (ir * 6)) + 1)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[1]));
                        acc[4] = (acc[4] + (((in_Wt[((((((i0 + (ir * 6)) + 2)) < (4) ? (((i0 + (ir * 6)) + 2)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[5] = (acc[5] + (((in_Wt[((((((i0 + (ir * 6)) + 2)) < (4) ? (((i0 + (ir * 6)) + 2)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[1]));
                        acc[6] = (acc[6] + (((in_Wt[((((((i0 + (ir * 6)) + 3)) < (4) ? (((i0 + (ir * 6)) + 3)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[7] = (acc[7] + (((in_Wt[((((((i0 + (ir * 6)) + 3)) < (4) ? (((i0 + (ir * 6)) + 3)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[1]));
                        acc[8] = (acc[8] + (((in_Wt[((((((i0 + (ir * 6)) + 4)) < (4) ? (((i0 + (ir * 6)) + 4)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[9] = (acc[9] + (((in_Wt[((((((i0 + (ir * 6)) + 4)) < (4) ? (((i0 + (ir * 6)) + 4)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[1]));
                        acc[10] = (acc[10] + (((in_Wt[((((((i0 + (ir * 6)) + 5)) < (4) ? (((i0 + (ir * 6)) + 5)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[11] = (acc[11] + (((in_Wt[((((((i0 + (ir * 6)) + 5)) < (4) ? (((i0 + (ir * 6)) + 5)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[1]));
                      }
                      if (((((i0 + (ir * 6)) + 6) <= 5) && (((j0 + (jr * 16)) + 16) <= 34))) {
                        (*(tf_float32x8*)(&Yw[(((i0 + (ir * 6)) * 34) + (j0 + (jr * 16)))])) = acc[0];
                        (*(tf_float32x8*)(&Yw[(((i0 + (ir * 6)) * 34) + ((j0 + (jr * 16)) + 8))])) = acc[1];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 1) * 34) + (j0 + (jr * 16)))])) = acc[2];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 1) * 34) + ((j0 + (jr * 16)) + 8))])) = acc[3];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 2) * 34) + (j0 + (jr * 16)))])) = acc[4];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 2) * 34) + ((j0 + (jr * 16)) + 8))])) = acc[5];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 3) * 34) + (j0 + (jr * 16)))])) = acc[6];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 3) * 34) + ((j0 + (jr * 16)) + 8))])) = acc[7];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 4) * 34) + (j0 + (jr * 16)))])) = acc[8];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 4) * 34) + ((j0 + (jr * 16)) + 8))])) = acc[9];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 5) * 34) + (j0 + (jr * 16)))])) = acc[10];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 5) * 34) + ((j0 + (jr * 16)) + 8))])) = acc[11];
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
                              if (((((i0 + (ir * 6)) + ei) < 5) && (((j0 + (jr * 16)) + ej) < 34))) {
                                Yw[((((i0 + (ir * 6)) + ei) * 34) + ((j0 + (jr * 16)) + ej))] = edge[((ei * 16) + ej)];
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
                      for (int p = 0; p < 27; ++p) {
                        bv[0] = (*(tf_float32x8*)(&Xp[((tap[p] + j0) + (jr * 16))]));
                        acc[0] = (acc[0] + (((in_Wt[(((((i0 + (ir * 6))) < (4) ? ((i0 + (ir * 6))) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[1] = (acc[1] + (((in_Wt[((((((i0 + (ir * 6)) + 1)) < (4) ? (((i0 + (ir * 6)) + 1)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[2] = (acc[2] + (((in_Wt[((((((i0 + (ir * 6)) + 2)) < (4) ? (((i0 + (ir * 6)) + 2)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[3] = (acc[3] + (((in_Wt[((((((i0 + (ir * 6)) + 3)) < (4) ? (((i0 + (ir * 6)) + 3)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[4] = (acc[4] + (((in_Wt[((((((i0 + (ir * 6)) + 4)) < (4) ? (((i0 + (ir * 6)) + 4)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                        acc[5] = (acc[5] + (((in_Wt[((((((i0 + (ir * 6)) + 5)) < (4) ? (((i0 + (ir * 6)) + 5)) : (4)) * 27) + p)]) - (tf_float32x8){0}) * bv[0]));
                      }
                      if (((((i0 + (ir * 6)) + 6) <= 5) && (((j0 + (jr * 16)) + 8) <= 34))) {
                        (*(tf_float32x8*)(&Yw[(((i0 + (ir * 6)) * 34) + (j0 + (jr * 16)))])) = acc[0];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 1) * 34) + (j0 + (jr * 16)))])) = acc[1];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 2) * 34) + (j0 + (jr * 16)))])) = acc[2];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 3) * 34) + (j0 + (jr * 16)))])) = acc[3];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 4) * 34) + (j0 + (jr * 16)))])) = acc[4];
                        (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 5) * 34) + (j0 + (jr * 16)))])) = acc[5];
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
                              if (((((i0 + (ir * 6)) + ei) < 5) && (((j0 + (jr * 16)) + ej) < 34))) {
                                Yw[((((i0 + (ir * 6)) + ei) * 34) + ((j0 + (jr * 16)) + ej))] = edge[((ei * 8) + ej)];
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
        #pragma omp parallel for schedule(static) num_threads(2)
        for (int nk = 0; nk < 5; ++nk) {
          for (int p = 0; p < 5; ++p) {
            #pragma omp simd
            for (int q = 0; q < 6; ++q) {
              out_Y[((((nk * 5) + p) * 6) + q)] = Yw[(((nk * 34) + (p * 7)) + q)];
            }
          }
        }
      }
    }
  }
}
int tf_entry(float* in_X, float* in_Wt, float* out_Y) {
  conv2d_cpu(in_X, in_Wt, out_Y);
  return 0;
}
