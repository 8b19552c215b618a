#include <math.h>
#include <stdlib.h>
#include <string.h>
typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));
static void conv2d_cpu(const float* __restrict__ in_X, const float* __restrict__ in_Wt, float* __restrict__ out_Y) {
  #pragma omp parallel for schedule(static) num_threads(2)
  for (int t = 0; t < 2; ++t) {
    {
      float Bp[864] __attribute__((aligned(64)));
      {
        float Ap[162] __attribute__((aligned(64)));
        const int bt = t;
        if ((bt < 2)) {
          for (int jp = 0; jp < 2; ++jp) {
            for (int p = 0; p < 27; ++p) {
              const int p0 = ((jp * 16) / 6);
              for (int run = 0; run < 4; ++run) {
                const int lo = (((((((p0 + run) * 6) - (jp * 16))) < (16) ? ((((p0 + run) * 6) - (jp * 16))) : (16))) > (0) ? ((((((p0 + run) * 6) - (jp * 16))) < (16) ? ((((p0 + run) * 6) - (jp * 16))) : (16))) : (0));
                const int hi = ((((((((((p0 + run) + 1) * 6)) < (30) ? ((((p0 + run) + 1) * 6)) : (30)) - (jp * 16))) < (16) ? (((((((p0 + run) + 1) * 6)) < (30) ? ((((p0 + run) + 1) * 6)) : (30)) - (jp * 16))) : (16))) > ((((((((p0 + run) * 6) - (jp * 16))) < (16) ? ((((p0 + run) * 6) - (jp * 16))) : (16))) > (0) ? ((((((p0 + run) * 6) - (jp * 16))) < (16) ? ((((p0 + run) * 6) - (jp * 16))) : (16))) : (0))) ? (((((((((p0 + run) + 1) * 6)) < (30) ? ((((p0 + run) + 1) * 6)) : (30)) - (jp * 16))) < (16) ? (((((((p0 + run) + 1) * 6)) < (30) ? ((((p0 + run) + 1) * 6)) : (30)) - (jp * 16))) : (16))) : ((((((((p0 + run) * 6) - (jp * 16))) < (16) ? ((((p0 + run) * 6) - (jp * 16))) : (16))) > (0) ? ((((((p0 + run) * 6) - (jp * 16))) < (16) ? ((((p0 + run) * 6) - (jp * 16))) : (16))) : (0))));
                const int copy_lo = ((((((((p0 + run) * 6) + ((0 < (1 - (p % 3))) ? ((((1 - (p % 3)) + 2) - 1) / 2) : 0)) - (jp * 16))) < (hi) ? (((((p0 + run) * 6) + ((0 < (1 - (p % 3))) ? ((((1 - (p % 3)) + 2) - 1) / 2) : 0)) - (jp * 16))) : (hi))) > (lo) ? (((((((p0 + run) * 6) + ((0 < (1 - (p % 3))) ? ((((1 - (p % 3)) + 2) - 1) / 2) : 0)) - (jp * 16))) < (hi) ? (((((p0 + run) * 6) + ((0 < (1 - (p % 3))) ? ((((1 - (p % 3)) + 2) - 1) / 2) : 0)) - (jp * 16))) : (hi))) : (lo));
                const int copy_hi = (((0 <= ((((p0 + run) * 2) + ((p / 3) % 3)) - 1)) && (((((p0 + run) * 2) + ((p / 3) % 3)) - 1) < 9)) ? ((((((((p0 + run) * 6) + ((((0 <= (11 - (p % 3))) ? (((11 - (p % 3)) / 2) + 1) : 0)) < (6) ? (((0 <= (11 - (p % 3))) ? (((11 - (p % 3)) / 2) + 1) : 0)) : (6))) - (jp * 16))) < (hi) ? (((((p0 + run) * 6) + ((((0 <= (11 - (p % 3))) ? (((11 - (p % 3)) / 2) + 1) : 0)) < (6) ? (((0 <= (11 - (p % 3))) ? (((11 - (p % 3)) / 2) + 1) : 0)) : (6))) - (jp * 16))) : (hi))) > (copy_lo) ? (((((((p0 + run) * 6) + ((((0 <= (11 - (p % 3))) ? (((11 - (p % 3)) / 2) + 1) : 0)) < (6) ? (((0 <= (11 - (p % 3))) ? (((11 - (p % 3)) / 2) + 1) : 0)) : (6))) - (jp * 16))) < (hi) ? (((((p0 + run) * 6) + ((((0 <= (11 - (p % 3))) ? (((11 - (p % 3)) / 2) + 1) : 0)) < (6) ? (((0 <= (11 - (p % 3))) ? (((11 - (p % 3)) / 2) + 1) : 0)) : (6))) - (jp * 16))) : (hi))) : (copy_lo)) : copy_lo);
                for (int j = 0; j < (copy_lo - lo); ++j) {
                  Bp[(((((jp * 27) + p) * 16) + lo) + j)] = 0.0f;
                }
                #pragma omp simd
                for (int j = 0; j < (copy_hi - copy_lo); ++j) {
                  Bp[(((((jp * 27) + p) * 16) + copy_lo) + j)] = in_X[(((((((((bt * 3) + (p / 9)) * 9) + ((((p0 + run) * 2) + ((p / 3) % 3)) - 1)) * 11) + (((jp * 16) - ((p0 + run) * 6)) * 2)) + (p % 3)) - 1) + ((copy_lo + j) * 2))];
                }
                for (int j = 0; j < (hi - copy_hi); ++j) {
                  Bp[(((((jp * 27) + p) * 16) + copy_hi) + j)] = 0.0f;
                }
              }
              for (int j = 0; j < (((((jp * 16) + 16) - 30)) > (0) ? ((((jp * 16) + 16) - 30)) : (0)); ++j) {
                Bp[((((((jp * 27) + p) * 16) + 16) - 1) - j)] = 0.0f;
              }
            }
          }
          const int j0 = 0;
          const int nlen = 30;
          const int i0 = 0;
          const int mlen = 5;
          for (int pir = 0; pir < ((mlen + 5) / 6); ++pir) {
            #pragma GCC unroll 6
            for (int pi = 0; pi < 6; ++pi) {
              if ((((i0 + (pir * 6)) + pi) < 5)) {
                for (int pk = 0; pk < 27; ++pk) {
                  Ap[((((pir * 27) + pk) * 6) + pi)] = in_Wt[((((i0 + (pir * 6)) + pi) * 27) + pk)];
                }
              } else {
                for (int pk = 0; pk < 27; ++pk) {
                  Ap[((((pir * 27) + pk) * 6) + pi)] = 0.0f;
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
                  for (int p = 0; p < 27; ++p) {
                    bv[0] = (*(tf_float32x8*)(&Bp[(((((j0 / 16) + jr) * 27) * 16) + (p * 16))]));
                    bv[1] = (*(tf_float32x8*)(&Bp[((((((j0 / 16) + jr) * 27) * 16) + (p * 16)) + 8)]));
                    acc[0] = (acc[0] + (((Ap[(((ir * 27) + p) * 6)]) - (tf_float32x8){0}) * bv[0]));
                    acc[1] = (acc[1] + (((Ap[(((ir * 27) + p) * 6)]) - (tf_float32x8){0}) * bv[1]));
                    acc[2] = (acc[2] + (((Ap[((((ir * 27) + p) * 6) + 1)]) - (tf_float32x8){0}) * bv[0]));
                    acc[3] = (acc[3] + (((Ap[((((ir * 27) + p) * 6) + 1)]) - (tf_float32x8){0}) * bv[1]));
                    acc[4] = (acc[4] + (((Ap[((((ir * 27) + p) * 6) + 2)]) - (tf_float32x8){0}) * bv[0]));
                    acc[5] = (acc[5] + (((Ap[((((ir * 27) + p) * 6) + 2)]) - (tf_float32x8){0}) * bv[1]));
                    acc[6] = (acc[6] + (((Ap[((((ir * 27) + p) * 6) + 3)]) - (tf_float32x8){0}) * bv[0]));
                    acc[7] = (acc[7] + (((Ap[((((ir * 27) + p) * 6) + 3)]) - (tf_float32x8){0}) * bv[1]));
                    acc[8] = (acc[8] + (((Ap[((((ir * 27) + p) * 6) + 4)]) - (tf_float32x8){0}) * bv[0]));
                    acc[9] = (acc[9] + (((Ap[((((ir * 27) + p) * 6) + 4)]) - (tf_float32x8){0}) * bv[1]));
                    acc[10] = (acc[10] + (((Ap[((((ir * 27) + p) * 6) + 5)]) - (tf_float32x8){0}) * bv[0]));
                    acc[11] = (acc[11] + (((Ap[((((ir * 27) + p) * 6) + 5)]) - (tf_float32x8){0}) * bv[1]));
                  }
                  if (((((i0 + (ir * 6)) + 6) <= 5) && (((j0 + (jr * 16)) + 16) <= 30))) {
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + (i0 + (ir * 6))) * 30) + (j0 + (jr * 16)))])) = acc[0];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + (i0 + (ir * 6))) * 30) + ((j0 + (jr * 16)) + 8))])) = acc[1];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 1)) * 30) + (j0 + (jr * 16)))])) = acc[2];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 1)) * 30) + ((j0 + (jr * 16)) + 8))])) = acc[3];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 2)) * 30) + (j0 + (jr * 16)))])) = acc[4];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 2)) * 30) + ((j0 + (jr * 16)) + 8))])) = acc[5];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 3)) * 30) + (j0 + (jr * 16)))])) = acc[6];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 3)) * 30) + ((j0 + (jr * 16)) + 8))])) = acc[7];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 4)) * 30) + (j0 + (jr * 16)))])) = acc[8];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 4)) * 30) + ((j0 + (jr * 16)) + 8))])) = acc[9];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 5)) * 30) + (j0 + (jr * 16)))])) = acc[10];
                    (*(tf_float32x8*)(&out_Y[((((bt * 5) + ((i0 + (ir * 6)) + 5)) * 30) + ((j0 + (jr * 16)) + 8))])) = acc[11];
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
                          if (((((i0 + (ir * 6)) + ei) < 5) && (((j0 + (jr * 16)) + ej) < 30))) {
                            out_Y[((((bt * 5) + ((i0 + (ir * 6)) + ei)) * 30) + ((j0 + (jr * 16)) + ej))] = edge[((ei * 16) + ej)];
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
int tf_entry(float* in_X, float* in_Wt, float* out_Y) {
  conv2d_cpu(in_X, in_Wt, out_Y);
  return 0;
}
