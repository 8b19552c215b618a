#include <math.h>
#include <stdlib.h>
#include <string.h>
typedef float tf_float32x8 __attribute__((vector_size(32), aligned(4)));
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
static inline tf_float32x8 tf_exp_float32x8(tf_float32x8 x) {
  tf_float32x8 r;
  for (int l = 0; l < 8; ++l) r[l] = tf_expf(x[l]);
  return r;
}
static void softmax_cpu(const float* __restrict__ in_X, float* __restrict__ out_Y) {
  #pragma omp parallel for schedule(static) num_threads(2)
  for (int rt = 0; rt < 1000; ++rt) {
    const int i = rt;
    {
      float r0[1] __attribute__((aligned(64)));
      {
        tf_float32x8 acc1[2] __attribute__((aligned(64)));
        #pragma GCC unroll 2
        for (int a2 = 0; a2 < 2; ++a2) {
          acc1[a2] = (((-INFINITY)) - (tf_float32x8){0});
        }
        for (int jb3 = 0; jb3 < 20; ++jb3) {
          #pragma GCC unroll 2
          for (int a4 = 0; a4 < 2; ++a4) {
            acc1[a4] = ({ tf_float32x8 tf_a = (acc1[a4]), tf_b = ((*(tf_float32x8*)(&in_X[((i * 333) + ((jb3 * 16) + (a4 * 8)))]))); __typeof__(tf_a > tf_b) tf_m = tf_a > tf_b; (tf_float32x8)((tf_m & (__typeof__(tf_m))tf_a) | (~tf_m & (__typeof__(tf_m))tf_b)); });
          }
        }
        acc1[0] = ({ tf_float32x8 tf_a = (acc1[0]), tf_b = ((*(tf_float32x8*)(&in_X[((i * 333) + 320)]))); __typeof__(tf_a > tf_b) tf_m = tf_a > tf_b; (tf_float32x8)((tf_m & (__typeof__(tf_m))tf_a) | (~tf_m & (__typeof__(tf_m))tf_b)); });
        acc1[0] = ({ tf_float32x8 tf_a = (acc1[0]), tf_b = (acc1[1]); __typeof__(tf_a > tf_b) tf_m = tf_a > tf_b; (tf_float32x8)((tf_m & (__typeof__(tf_m))tf_a) | (~tf_m & (__typeof__(tf_m))tf_b)); });
        {
          float lane6[8] __attribute__((aligned(64)));
          (*(tf_float32x8*)(&lane6[0])) = acc1[0];
          r0[0] = lane6[0];
          for (int l7 = 0; l7 < 7; ++l7) {
            r0[0] = ((r0[0] < lane6[(l7 + 1)]) ? lane6[(l7 + 1)] : r0[0]);
          }
        }
      }
      for (int jt8 = 0; jt8 < 5; ++jt8) {
        r0[0] = ((r0[0] < in_X[((i * 333) + (328 + jt8))]) ? in_X[((i * 333) + (328 + jt8))] : r0[0]);
      }
      {
        float r9[1] __attribute__((aligned(64)));
        {
          tf_float32x8 acc10[2] __attribute__((aligned(64)));
          #pragma GCC unroll 2
          for (int a11 = 0; a11 < 2; ++a11) {
            acc10[a11] = ((0.0f) - (tf_float32x8){0});
          }
          for (int jb12 = 0; jb12 < 20; ++jb12) {
            #pragma GCC unroll 2
            for (int a13 = 0; a13 < 2; ++a13) {
              const tf_float32x8 t14 = tf_exp_float32x8(((*(tf_float32x8*)(&in_X[((i * 333) + ((jb12 * 16) + (a13 * 8)))])) - ((r0[0]) - (tf_float32x8){0})));
              (*(tf_float32x8*)(&out_Y[((i * 333) + ((jb12 * 16) + (a13 * 8)))])) = t14;
              acc10[a13] = (acc10[a13] + t14);
            }
          }
          const tf_float32x8 t16 = tf_exp_float32x8(((*(tf_float32x8*)(&in_X[((i * 333) + 320)])) - ((r0[0]) - (tf_float32x8){0})));
          (*(tf_float32x8*)(&out_Y[((i * 333) + 320)])) = t16;
          acc10[0] = (acc10[0] + t16);
          acc10[0] = (acc10[0] + acc10[1]);
          {
            float lane17[8] __attribute__((aligned(64)));
            (*(tf_float32x8*)(&lane17[0])) = acc10[0];
            r9[0] = lane17[0];
            for (int l18 = 0; l18 < 7; ++l18) {
              r9[0] = (r9[0] + lane17[(l18 + 1)]);
            }
          }
        }
        for (int jt19 = 0; jt19 < 5; ++jt19) {
          const float t20 = tf_expf((in_X[((i * 333) + (328 + jt19))] - r0[0]));
          out_Y[((i * 333) + (328 + jt19))] = t20;
          r9[0] = (r9[0] + t20);
        }
        const float inv21 = (1.0f / r9[0]);
        for (int jv22 = 0; jv22 < 41; ++jv22) {
          (*(tf_float32x8*)(&out_Y[((i * 333) + (jv22 * 8))])) = ((*(tf_float32x8*)(&out_Y[((i * 333) + (jv22 * 8))])) * ((inv21) - (tf_float32x8){0}));
        }
        for (int jt23 = 0; jt23 < 5; ++jt23) {
          out_Y[((i * 333) + (328 + jt23))] = (out_Y[((i * 333) + (328 + jt23))] * inv21);
        }
      }
    }
  }
}
int tf_entry(float* in_X, float* out_Y) {
  softmax_cpu(in_X, out_Y);
  return 0;
}
