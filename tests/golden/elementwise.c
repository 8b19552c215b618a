#include <math.h>
#include <stdlib.h>
#include <string.h>
static void elementwise_cpu(const float* __restrict__ in_x, const float* __restrict__ in_w, const float* __restrict__ in_b, float* __restrict__ out_Y) {
  #pragma omp parallel for schedule(static) num_threads(2)
  for (int rt = 0; rt < 64; ++rt) {
    if ((rt < 64)) {
      for (int jt = 0; jt < 2; ++jt) {
        for (int ji = 0; ji < 64; ++ji) {
          out_Y[((rt * 128) + ((jt * 64) + ji))] = ((0.5f * ((in_x[((rt * 128) + ((jt * 64) + ji))] * in_w[((jt * 64) + ji)]) + in_b[((jt * 64) + ji)])) * (1.0f + erff((((in_x[((rt * 128) + ((jt * 64) + ji))] * in_w[((jt * 64) + ji)]) + in_b[((jt * 64) + ji)]) * 0.7071067811865475f))));
        }
      }
    }
  }
}
int tf_entry(float* in_x, float* in_w, float* in_b, float* out_Y) {
  elementwise_cpu(in_x, in_w, in_b, out_Y);
  return 0;
}
