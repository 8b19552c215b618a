#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(256) elementwise_cuda(const float* __restrict__ in_x, const float* __restrict__ in_w, const float* __restrict__ in_b, float* __restrict__ out_Y) {
  const int bx = blockIdx.x;
  const int tx = threadIdx.x;
  const int e = ((bx * 256) + tx);
  if ((e < 8192)) {
    out_Y[e] = ((0.5f * ((in_x[e] * in_w[(e % 128)]) + in_b[(e % 128)])) * (1.0f + erff((((in_x[e] * in_w[(e % 128)]) + in_b[(e % 128)]) * 0.7071067811865475f))));
  }
}
