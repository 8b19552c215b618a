#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(128) reduce_sum_cuda(const float* __restrict__ in_X, float* __restrict__ out_Y) {
  const int bx = blockIdx.x;
  const int ty = threadIdx.y;
  const int tx = threadIdx.x;
  {
    float __align__(16) acc[1];
    acc[0] = 0.0f;
    for (int t_g = 0; t_g < 2; ++t_g) {
      {
        float __align__(16) t[16];
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
          (*(uint4*)(&t[(i * 4)])) = (*(uint4*)(&in_X[((((bx * 32) + ty) * 128) + ((tx + (((t_g * 4) + i) * 4)) * 4))]));
        }
        acc[0] = (acc[0] + ((((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]))) + (((t[8] + t[9]) + (t[10] + t[11])) + ((t[12] + t[13]) + (t[14] + t[15])))));
      }
    }
    {
      float __align__(16) acc_x2[1];
      acc_x2[0] = __shfl_xor_sync(0xffffffffu, acc[0], 2);
      acc[0] = (acc[0] + acc_x2[0]);
    }
    {
      float __align__(16) acc_x1[1];
      acc_x1[0] = __shfl_xor_sync(0xffffffffu, acc[0], 1);
      acc[0] = (acc[0] + acc_x1[0]);
    }
    acc[0] = __shfl_sync(0xffffffffu, acc[0], ((ty * 4) % 32));
    if ((tx == 0)) {
      out_Y[((bx * 32) + ty)] = acc[0];
    }
  }
}
