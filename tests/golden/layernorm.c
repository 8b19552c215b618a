#include <math.h>
#include <stdlib.h>
#include <string.h>
typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));
static void layernorm_cpu(const float* __restrict__ in_X, const float* __restrict__ in_gamma, const float* __restrict__ in_beta, float* __restrict__ out_Y) {
  #pragma omp parallel for schedule(static) num_threads(2)
  for (int rt = 0; rt < 64; ++rt) {
    const int i = rt;
    const float shift = in_X[(i * 128)];
    {
      float r0[1] __attribute__((aligned(64)));
      {
        tf_float32x8 acc1[2] __attribute__((aligned(64)));
        #pragma GCC unroll 2
        for (int a2 = 0; a2 < 2; ++a2) {
          acc1[a2] = ((0.0f) - (tf_float32x8){0});
        }
        for (int jb3 = 0; jb3 < 8; ++jb3) {
          #pragma GCC unroll 2
          for (int a4 = 0; a4 < 2; ++a4) {
            acc1[a4] = (acc1[a4] + ((*(tf_float32x8*)(&in_X[((i * 128) + ((jb3 * 16) + (a4 * 8)))])) - ((shift) - (tf_float32x8){0})));
          }
        }
        acc1[0] = (acc1[0] + acc1[1]);
        {
          float lane5[8] __attribute__((aligned(64)));
          (*(tf_float32x8*)(&lane5[0])) = acc1[0];
          r0[0] = lane5[0];
          for (int l6 = 0; l6 < 7; ++l6) {
            r0[0] = (r0[0] + lane5[(l6 + 1)]);
          }
        }
      }
      const float dmean = (r0[0] / 128.0f);
      {
        float r7[1] __attribute__((aligned(64)));
        {
          tf_float32x8 acc8[2] __attribute__((aligned(64)));
          #pragma GCC unroll 2
          for (int a9 = 0; a9 < 2; ++a9) {
            acc8[a9] = ((0.0f) - (tf_float32x8){0});
          }
          for (int jb10 = 0; jb10 < 8; ++jb10) {
            #pragma GCC unroll 2
            for (int a11 = 0; a11 < 2; ++a11) {
              const tf_float32x8 t12 = (((*(tf_float32x8*)(&in_X[((i * 128) + ((jb10 * 16) + (a11 * 8)))])) - ((shift) - (tf_float32x8){0})) - ((dmean) - (tf_float32x8){0}));
              acc8[a11] = (acc8[a11] + (t12 * t12));
            }
          }
          acc8[0] = (acc8[0] + acc8[1]);
          {
            float lane13[8] __attribute__((aligned(64)));
            (*(tf_float32x8*)(&lane13[0])) = acc8[0];
            r7[0] = lane13[0];
            for (int l14 = 0; l14 < 7; ++l14) {
              r7[0] = (r7[0] + lane13[(l14 + 1)]);
            }
          }
        }
        const float rstd = (1.0f / sqrtf(((r7[0] / 128.0f) + 1e-05f)));
        for (int jv15 = 0; jv15 < 16; ++jv15) {
          (*(tf_float32x8*)(&out_Y[((i * 128) + (jv15 * 8))])) = ((((((*(tf_float32x8*)(&in_X[((i * 128) + (jv15 * 8))])) - ((shift) - (tf_float32x8){0})) - ((dmean) - (tf_float32x8){0})) * ((rstd) - (tf_float32x8){0})) * (*(tf_float32x8*)(&in_gamma[(jv15 * 8)]))) + (*(tf_float32x8*)(&in_beta[(jv15 * 8)])));
        }
      }
    }
  }
}
int tf_entry(float* in_X, float* in_gamma, float* in_beta, float* out_Y) {
  layernorm_cpu(in_X, in_gamma, in_beta, out_Y);
  return 0;
}
