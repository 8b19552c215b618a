#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(128) softmax_cuda(const float* __restrict__ in_X, float* __restrict__ out_Y) {
  const int bx = blockIdx.x;
  const int ty = threadIdx.y;
  const int tx = threadIdx.x;
  {
    float __align__(16) v[6];
    #pragma unroll
    for (int k = 0; k < 6; ++k) {
      if (((tx + (k * 64)) < 333)) {
        v[k] = in_X[((((bx * 2) + ty) * 333) + (tx + (k * 64)))];
      } else {
        v[k] = (-CUDART_INF_F);
      }
    }
    {
      float __align__(16) mx[1];
      mx[0] = fmaxf(fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3])), fmaxf(v[4], v[5]));
      {
        float __align__(16) mx_x16[1];
        mx_x16[0] = __shfl_xor_sync(0xffffffffu, mx[0], 16);
        mx[0] = fmaxf(mx[0], mx_x16[0]);
      }
      {
        float __align__(16) mx_x8[1];
        mx_x8[0] = __shfl_xor_sync(0xffffffffu, mx[0], 8);
        mx[0] = fmaxf(mx[0], mx_x8[0]);
      }
      {
        float __align__(16) mx_x4[1];
        mx_x4[0] = __shfl_xor_sync(0xffffffffu, mx[0], 4);
        mx[0] = fmaxf(mx[0], mx_x4[0]);
      }
      {
        float __align__(16) mx_x2[1];
        mx_x2[0] = __shfl_xor_sync(0xffffffffu, mx[0], 2);
        mx[0] = fmaxf(mx[0], mx_x2[0]);
      }
      {
        float __align__(16) mx_x1[1];
        mx_x1[0] = __shfl_xor_sync(0xffffffffu, mx[0], 1);
        mx[0] = fmaxf(mx[0], mx_x1[0]);
      }
      {
        __shared__ __align__(16) float mx_red[4];
        if (((tx % 32) == 0)) {
          mx_red[((ty * 2) + (tx / 32))] = mx[0];
        }
        __syncthreads();
        mx[0] = mx_red[((ty * 2) + ((tx % 32) % 2))];
        {
          float __align__(16) mx_x1[1];
          mx_x1[0] = __shfl_xor_sync(0xffffffffu, mx[0], 1);
          mx[0] = fmaxf(mx[0], mx_x1[0]);
        }
      }
      mx[0] = __shfl_sync(0xffffffffu, mx[0], 0);
      const float shift = ((mx[0] == (-CUDART_INF_F)) ? 0.0f : mx[0]);
      #pragma unroll
      for (int j = 0; j < 6; ++j) {
        v[j] = expf((v[j] - shift));
      }
    }
    {
      float __align__(16) den[1];
      den[0] = (((v[0] + v[1]) + (v[2] + v[3])) + (v[4] + v[5]));
      {
        float __align__(16) den_x16[1];
        den_x16[0] = __shfl_xor_sync(0xffffffffu, den[0], 16);
        den[0] = (den[0] + den_x16[0]);
      }
      {
        float __align__(16) den_x8[1];
        den_x8[0] = __shfl_xor_sync(0xffffffffu, den[0], 8);
        den[0] = (den[0] + den_x8[0]);
      }
      {
        float __align__(16) den_x4[1];
        den_x4[0] = __shfl_xor_sync(0xffffffffu, den[0], 4);
        den[0] = (den[0] + den_x4[0]);
      }
      {
        float __align__(16) den_x2[1];
        den_x2[0] = __shfl_xor_sync(0xffffffffu, den[0], 2);
        den[0] = (den[0] + den_x2[0]);
      }
      {
        float __align__(16) den_x1[1];
        den_x1[0] = __shfl_xor_sync(0xffffffffu, den[0], 1);
        den[0] = (den[0] + den_x1[0]);
      }
      {
        __shared__ __align__(16) float den_red[4];
        if (((tx % 32) == 0)) {
          den_red[((ty * 2) + (tx / 32))] = den[0];
        }
        __syncthreads();
        den[0] = den_red[((ty * 2) + ((tx % 32) % 2))];
        {
          float __align__(16) den_x1[1];
          den_x1[0] = __shfl_xor_sync(0xffffffffu, den[0], 1);
          den[0] = (den[0] + den_x1[0]);
        }
      }
      den[0] = __shfl_sync(0xffffffffu, den[0], 0);
      const float inv = (1.0f / den[0]);
      #pragma unroll
      for (int j2 = 0; j2 < 6; ++j2) {
        v[j2] = (v[j2] * inv);
      }
    }
    #pragma unroll
    for (int k2 = 0; k2 < 6; ++k2) {
      if (((tx + (k2 * 64)) < 333)) {
        out_Y[((((bx * 2) + ty) * 333) + (tx + (k2 * 64)))] = v[k2];
      }
    }
  }
}
