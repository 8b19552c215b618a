#include <math.h>
#include <stdlib.h>
#include <string.h>
typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));
static void reduce_sum_cpu(const float* __restrict__ in_X, float* __restrict__ out_Y) {
  #pragma omp parallel for schedule(static) num_threads(2)
  for (int rt = 0; rt < 64; ++rt) {
    const int i = rt;
    {
      float r0[1] __attribute__((aligned(64)));
      {
        tf_float32x8 acc1[4] __attribute__((aligned(64)));
        #pragma GCC unroll 4
        for (int a2 = 0; a2 < 4; ++a2) {
          acc1[a2] = ((0.0f) - (tf_float32x8){0});
        }
        for (int jb3 = 0; jb3 < 4; ++jb3) {
          #pragma GCC unroll 4
          for (int a4 = 0; a4 < 4; ++a4) {
            acc1[a4] = (acc1[a4] + (*(tf_float32x8*)(&in_X[((i * 128) + ((jb3 * 32) + (a4 * 8)))])));
          }
        }
        acc1[0] = (acc1[0] + acc1[1]);
        acc1[0] = (acc1[0] + acc1[2]);
        acc1[0] = (acc1[0] + acc1[3]);
        {
          float lane5[8] __attribute__((aligned(64)));
          (*(tf_float32x8*)(&lane5[0])) = acc1[0];
          r0[0] = lane5[0];
          for (int l6 = 0; l6 < 7; ++l6) {
            r0[0] = (r0[0] + lane5[(l6 + 1)]);
          }
        }
      }
      out_Y[i] = r0[0];
    }
  }
}
int tf_entry(float* in_X, float* out_Y) {
  reduce_sum_cpu(in_X, out_Y);
  return 0;
}
