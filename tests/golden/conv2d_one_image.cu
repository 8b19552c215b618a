#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(256) conv2d_im2col(const float* __restrict__ in_X, float* __restrict__ ws_im2col) {
  const int by = blockIdx.y;
  const int bx = blockIdx.x;
  const int tx = threadIdx.x;
  const int j = ((bx * 256) + tx);
  if ((j < 30)) {
    const int h = (((((j / 6) % 5) * 2) - 1) + ((by / 3) % 3));
    const int x = ((((j % 6) * 2) - 1) + (by % 3));
    ws_im2col[((by * 30) + j)] = (((((0 <= h) && (h < 9)) && (0 <= x)) && (x < 11)) ? in_X[(((((((j / 30) * 3) + (by / 9)) * 9) + h) * 11) + x)] : 0.0f);
  }
}
extern "C" __global__ void __launch_bounds__(256) conv2d_simt(const float* __restrict__ in_Wt, const float* __restrict__ ws_im2col, float* __restrict__ out_Y) {
  const int bz = blockIdx.z;
  const int bx = blockIdx.x;
  const int tid = threadIdx.x;
  const int batch_1 = bz;
  const int m0_2 = ((bx / 2) * 16);
  const int n0_3 = ((bx % 2) * 16);
  const int ty_4 = (tid / 16);
  const int tx_5 = (tid % 16);
  {
    __shared__ __align__(16) float As[640];
    {
      __shared__ __align__(16) float Bs[640];
      {
        float __align__(16) acc[1];
        {
          float __align__(16) a_frag[1];
          {
            float __align__(16) b_frag[1];
            {
              float __align__(16) a_ld[2];
              {
                float __align__(16) b_ld[2];
                acc[0] = 0.0f;
                #pragma unroll
                for (int a_ld_i = 0; a_ld_i < 2; ++a_ld_i) {
                  a_ld[a_ld_i] = (((((a_ld_i * 256) + tid) % 32) < 27) ? in_Wt[(((((m0_2 + (((a_ld_i * 256) + tid) / 32))) < (4) ? ((m0_2 + (((a_ld_i * 256) + tid) / 32))) : (4)) * 27) + (((a_ld_i * 256) + tid) % 32))] : 0.0f);
                }
                #pragma unroll
                for (int b_ld_i = 0; b_ld_i < 2; ++b_ld_i) {
                  b_ld[b_ld_i] = (((((b_ld_i * 256) + tid) / 16) < 27) ? ws_im2col[(((((b_ld_i * 256) + tid) / 16) * 30) + (((n0_3 + (((b_ld_i * 256) + tid) % 16))) < (29) ? ((n0_3 + (((b_ld_i * 256) + tid) % 16))) : (29)))] : 0.0f);
                }
                #pragma unroll
                for (int a_ld_i = 0; a_ld_i < 2; ++a_ld_i) {
                  As[(((((a_ld_i * 256) + tid) % 32) * 20) + (((a_ld_i * 256) + tid) / 32))] = a_ld[a_ld_i];
                }
                #pragma unroll
                for (int b_ld_i = 0; b_ld_i < 2; ++b_ld_i) {
                  Bs[(((((b_ld_i * 256) + tid) / 16) * 20) + (((b_ld_i * 256) + tid) % 16))] = b_ld[b_ld_i];
                }
                __syncthreads();
                for (int ko = 0; ko < 4; ++ko) {
                  #pragma unroll
                  for (int ki = 0; ki < 8; ++ki) {
                    a_frag[0] = As[((((ko * 8) + ki) * 20) + ty_4)];
                    b_frag[0] = Bs[((((ko * 8) + ki) * 20) + tx_5)];
                    acc[0] = (acc[0] + (a_frag[0] * b_frag[0]));
                  }
                }
                __syncthreads();
                if ((((m0_2 + ty_4) < 5) && ((n0_3 + tx_5) < 30))) {
                  out_Y[((((((n0_3 + tx_5) / 30) * 5) + (m0_2 + ty_4)) * 30) + ((n0_3 + tx_5) % 30))] = acc[0];
                }
              }
            }
          }
        }
      }
    }
  }
}
