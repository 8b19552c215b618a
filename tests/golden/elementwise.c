#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __FP_FAST_FMAF
#define TF_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define TF_FMA(a, b, c) ((a) * (b) + (c))
#endif
static inline float tf_erff(float x) {
  float a = fabsf(x);
  float x2 = x * x;
  float small = x + x * (0.12837917f + x2 * (-0.3761263f + x2 * (0.11283622f + x2 * (-0.026855282f + x2 * (0.0051906356f + x2 * (-0.00080217235f + x2 * 7.842242e-05f))))));
  float u = (a < 4.0f ? a : 4.0f) - 2.4375f;
  float big = copysignf(a < 4.0f ? (0.99943346f + u * (0.002965602f + u * (-0.0072290883f + u * (0.010760997f + u * (-0.0107018445f + u * (0.0071960576f + u * (-0.0030033453f + u * (0.00039753795f + u * (0.00041687005f + u * (-0.00032228732f + u * (7.026604e-05f + u * (3.1830674e-05f + u * (-1.77594e-05f + u * (-6.105705e-07f + u * 1.1634526e-06f)))))))))))))) : 1.0f, x);
  return a >= 0.875f ? big : small;
}
static void elementwise_cpu(const float* __restrict__ in_x, const float* __restrict__ in_w, const float* __restrict__ in_b, float* __restrict__ out_Y) {
  #pragma omp parallel for schedule(static) num_threads(2)
  for (int rt = 0; rt < 64; ++rt) {
    if ((rt < 64)) {
      for (int jt = 0; jt < 2; ++jt) {
        for (int ji = 0; ji < 64; ++ji) {
          out_Y[((rt * 128) + ((jt * 64) + ji))] = ((0.5f * ((in_x[((rt * 128) + ((jt * 64) + ji))] * in_w[((jt * 64) + ji)]) + in_b[((jt * 64) + ji)])) * (1.0f + tf_erff((((in_x[((rt * 128) + ((jt * 64) + ji))] * in_w[((jt * 64) + ji)]) + in_b[((jt * 64) + ji)]) * 0.7071067811865475f))));
        }
      }
    }
  }
}
int tf_entry(float* in_x, float* in_w, float* in_b, float* out_Y) {
  elementwise_cpu(in_x, in_w, in_b, out_Y);
  return 0;
}
