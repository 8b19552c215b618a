#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __FP_FAST_FMAF
#define TF_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define TF_FMA(a, b, c) ((a) * (b) + (c))
#endif
static inline float tf_expf(float v) {
  float c = v > -88.0f ? v : -88.0f;
  c = c < 88.72283f ? c : 88.72283f;
  float n = floorf(c * 1.44269504088896341f + 0.5f);
  float t = TF_FMA(-n, 0.693359375f, c);
  t = TF_FMA(-n, -2.12194440e-4f, t);
  float p = 1.9875691500e-4f;
  p = p * t + 1.3981999507e-3f;
  p = p * t + 8.3334519073e-3f;
  p = p * t + 4.1665795894e-2f;
  p = p * t + 1.6666665459e-1f;
  p = p * t + 5.0000001201e-1f;
  p = p * t * t + t + 1.0f;
  union { int i; float f; } s;
  s.f = p;
  s.i += (int)n * 8388608;  /* n << 23 without shifting a negative int */
  float y = v < -87.33654f ? 0.0f : s.f;
  y = v > 88.72283f ? INFINITY : y;
  return v != v ? v : y;
}
static inline float tf_erff(float x) {
  float a = fabsf(x);
  float x2 = x * x;
  float small = x + x * (0.12837917f + x2 * (-0.3761263f + x2 * (0.11283622f + x2 * (-0.026855282f + x2 * (0.0051906356f + x2 * (-0.00080217235f + x2 * 7.842242e-05f))))));
  float y = 1.0f / a;
  float big = copysignf(1.0f - tf_expf(-x2) * (y * (0.56172556f + y * (0.030705025f + y * (-0.44435173f + y * (0.45194414f + y * (-0.18232492f + y * (-0.042906158f + y * (0.08385408f + y * (-0.036999807f + y * 0.0059373844f))))))))), x);
  return a < 0.875f ? small : big;
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
