#include <math.h>
#include <stdlib.h>
#include <string.h>
static void transpose_cpu(const float* __restrict__ in_X, float* __restrict__ out_Y) {
  #pragma omp parallel for schedule(static) num_threads(2)
  for (int t = 0; t < 352; ++t) {
    const int i0 = ((t / 32) * 32);
    const int j0 = ((t % 32) * 32);
    if ((((i0 + 32) <= 333) && ((j0 + 32) <= 1000))) {
      for (int jj = 0; jj < 32; ++jj) {
        for (int ii = 0; ii < 32; ++ii) {
          out_Y[(((j0 + jj) * 333) + (i0 + ii))] = in_X[(((i0 + ii) * 1000) + (j0 + jj))];
        }
      }
    } else {
      for (int jj = 0; jj < (((1000 - j0)) < (32) ? ((1000 - j0)) : (32)); ++jj) {
        for (int ii = 0; ii < (((333 - i0)) < (32) ? ((333 - i0)) : (32)); ++ii) {
          out_Y[(((j0 + jj) * 333) + (i0 + ii))] = in_X[(((i0 + ii) * 1000) + (j0 + jj))];
        }
      }
    }
  }
}
int tf_entry(float* in_X, float* out_Y) {
  transpose_cpu(in_X, out_Y);
  return 0;
}
