#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(256) transpose_cuda(const float* __restrict__ in_X, float* __restrict__ out_Y) {
  const int bx = blockIdx.x;
  const int ty = threadIdx.y;
  const int tx = threadIdx.x;
  {
    __shared__ __align__(16) float tile[1056];
    const int r0 = ((bx / 32) * 32);
    const int c0 = ((bx % 32) * 32);
    #pragma unroll
    for (int p = 0; p < 4; ++p) {
      if ((((r0 + (ty + (p * 8))) < 333) && ((c0 + tx) < 1000))) {
        tile[(((ty + (p * 8)) * 33) + tx)] = in_X[((((r0 + (ty + (p * 8))) * 1000) + c0) + tx)];
      }
    }
    __syncthreads();
    #pragma unroll
    for (int q = 0; q < 4; ++q) {
      if ((((c0 + (ty + (q * 8))) < 1000) && ((r0 + tx) < 333))) {
        out_Y[((((c0 + (ty + (q * 8))) * 333) + r0) + tx)] = tile[((tx * 33) + (ty + (q * 8)))];
      }
    }
  }
}
