#include <math.h>
#include <stdlib.h>
#include <string.h>
typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));
static void conv2d_cpu(const float* __restrict__ in_X, const float* __restrict__ in_Wt, float* __restrict__ out_Y) {
  {
    float Xf[952] __attribute__((aligned(64)));
    {
      int tap[27] __attribute__((aligned(64)));
      {
        float Yw[320] __attribute__((aligned(64)));
        #pragma omp parallel for schedule(static) num_threads(2)
        for (int cab = 0; cab < 12; ++cab) {
          const int c = (cab / 4);
          const int pa = ((cab / 2) % 2);
          const int pb = (cab % 2);
          for (int i = 0; i < 6; ++i) {
            const int h = (((i * 2) + pa) - 1);
            for (int n = 0; n < 2; ++n) {
              const int extent = ((n < 1) ? 6 : 7);
              const int lo = ((((((((1 - pb)) > (0) ? ((1 - pb)) : (0)) + 2) - 1) / 2)) < (extent) ? (((((((1 - pb)) > (0) ? ((1 - pb)) : (0)) + 2) - 1) / 2)) : (extent));
              const int hi = (((0 <= h) && (h < 9)) ? ((((((0 <= (11 - pb)) ? (((11 - pb) / 2) + 1) : 0)) < (extent) ? (((0 <= (11 - pb)) ? (((11 - pb) / 2) + 1) : 0)) : (extent))) > (lo) ? (((((0 <= (11 - pb)) ? (((11 - pb) / 2) + 1) : 0)) < (extent) ? (((0 <= (11 - pb)) ? (((11 - pb) / 2) + 1) : 0)) : (extent))) : (lo)) : lo);
              const int dst = ((((cab * 6) + i) * 13) + (n * 6));
              for (int j = 0; j < lo; ++j) {
                Xf[(dst + j)] = 0.0f;
              }
              #pragma omp simd
              for (int j = 0; j < (hi - lo); ++j) {
                Xf[((dst + lo) + j)] = in_X[((((((((n * 3) + c) * 9) + h) * 11) + pb) - 1) + ((lo + j) * 2))];
              }
              for (int j = 0; j < (extent - hi); ++j) {
                Xf[((dst + hi) + j)] = 0.0f;
              }
            }
          }
        }
        for (int j = 0; j < 16; ++j) {
          Xf[(936 + j)] = 0.0f;
        }
        for (int k = 0; k < 27; ++k) {
          tap[k] = ((((((((k / 9) * 2) + (((k / 3) % 3) % 2)) * 2) + ((k % 3) % 2)) * 78) + ((((k / 3) % 3) / 2) * 13)) + ((k % 3) / 2));
        }
        #pragma omp parallel for schedule(static) num_threads(2)
        for (int t = 0; t < 2; ++t) {
          for (int jc = 0; jc < (((((64 - (t * 32))) < (32) ? ((64 - (t * 32))) : (32)) + 31) / 32); ++jc) {
            const int j0 = ((t * 32) + (jc * 32));
            const int nlen = ((((((64 - (t * 32))) < (32) ? ((64 - (t * 32))) : (32)) - (jc * 32))) < (32) ? (((((64 - (t * 32))) < (32) ? ((64 - (t * 32))) : (32)) - (jc * 32))) : (32));
            const int i0 = 0;
            const int mlen = 5;
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
                    for (int p = 0; p < 27; ++p) {
                      bv[0] = (*(tf_float32x8*)(&Xf[((tap[p] + j0) + (jr * 16))]));
                      bv[1] = (*(tf_float32x8*)(&Xf[(((tap[p] + j0) + (jr * 16)) + 8)]));
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
                    if ((((i0 + (ir * 6)) + 6) <= 5)) {
                      (*(tf_float32x8*)(&Yw[(((i0 + (ir * 6)) * 64) + (j0 + (jr * 16)))])) = acc[0];
                      (*(tf_float32x8*)(&Yw[(((i0 + (ir * 6)) * 64) + ((j0 + (jr * 16)) + 8))])) = acc[1];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 1) * 64) + (j0 + (jr * 16)))])) = acc[2];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 1) * 64) + ((j0 + (jr * 16)) + 8))])) = acc[3];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 2) * 64) + (j0 + (jr * 16)))])) = acc[4];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 2) * 64) + ((j0 + (jr * 16)) + 8))])) = acc[5];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 3) * 64) + (j0 + (jr * 16)))])) = acc[6];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 3) * 64) + ((j0 + (jr * 16)) + 8))])) = acc[7];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 4) * 64) + (j0 + (jr * 16)))])) = acc[8];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 4) * 64) + ((j0 + (jr * 16)) + 8))])) = acc[9];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 5) * 64) + (j0 + (jr * 16)))])) = acc[10];
                      (*(tf_float32x8*)(&Yw[((((i0 + (ir * 6)) + 5) * 64) + ((j0 + (jr * 16)) + 8))])) = acc[11];
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
                            if (((((i0 + (ir * 6)) + ei) < 5) && (((j0 + (jr * 16)) + ej) < 64))) {
                              Yw[((((i0 + (ir * 6)) + ei) * 64) + ((j0 + (jr * 16)) + ej))] = edge[((ei * 16) + ej)];
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
        for (int nk = 0; nk < 10; ++nk) {
          const int n = (nk / 5);
          const int k = (nk % 5);
          for (int p = 0; p < 5; ++p) {
            #pragma omp simd
            for (int q = 0; q < 6; ++q) {
              out_Y[((((nk * 5) + p) * 6) + q)] = Yw[((((k * 64) + (p * 13)) + (n * 6)) + q)];
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
