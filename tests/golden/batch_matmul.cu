#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(256) batch_matmul_simt(const float* __restrict__ in_A, const float* __restrict__ in_B, float* __restrict__ out_C) {
  const int bz = blockIdx.z;
  const int bx = blockIdx.x;
  const int tid = threadIdx.x;
  const int batch_1 = bz;
  const int m0_2 = (bx * 32);
  const int n0_3 = 0;
  const int ty_4 = (tid / 16);
  const int tx_5 = (tid % 16);
  {
    __shared__ __align__(16) float As[1152];
    {
      __shared__ __align__(16) float Bs[1152];
      {
        float __align__(16) acc[4];
        {
          float __align__(16) a_frag[2];
          {
            float __align__(16) b_frag[2];
            {
              float __align__(16) a_ld[4];
              {
                float __align__(16) b_ld[4];
                #pragma unroll
                for (int i = 0; i < 4; ++i) {
                  acc[i] = 0.0f;
                }
                (*(uint4*)(&a_ld[0])) = (*(uint4*)(&in_A[((((batch_1 * 32) + (m0_2 + (tid / 8))) * 32) + ((tid % 8) * 4))]));
                (*(uint4*)(&b_ld[0])) = (*(uint4*)(&in_B[((((batch_1 * 32) + (tid / 8)) * 32) + (n0_3 + ((tid % 8) * 4)))]));
                #pragma unroll
                for (int e = 0; e < 4; ++e) {
                  As[(((((tid % 8) * 4) + e) * 36) + (tid / 8))] = a_ld[e];
                }
                (*(uint4*)(&Bs[(((tid / 8) * 36) + ((tid % 8) * 4))])) = (*(uint4*)(&b_ld[0]));
                __syncthreads();
                for (int ko = 0; ko < 4; ++ko) {
                  #pragma unroll
                  for (int ki = 0; ki < 8; ++ki) {
                    (*(uint2*)(&a_frag[0])) = (*(uint2*)(&As[((((ko * 8) + ki) * 36) + (ty_4 * 2))]));
                    (*(uint2*)(&b_frag[0])) = (*(uint2*)(&Bs[((((ko * 8) + ki) * 36) + (tx_5 * 2))]));
                    #pragma unroll
                    for (int i = 0; i < 2; ++i) {
                      #pragma unroll
                      for (int j = 0; j < 2; ++j) {
                        acc[((i * 2) + j)] = (acc[((i * 2) + j)] + (a_frag[i] * b_frag[j]));
                      }
                    }
                  }
                }
                __syncthreads();
                #pragma unroll
                for (int ei = 0; ei < 2; ++ei) {
                  #pragma unroll
                  for (int ej = 0; ej < 2; ++ej) {
                    out_C[((((batch_1 * 32) + ((m0_2 + (ty_4 * 2)) + ei)) * 32) + ((n0_3 + (tx_5 * 2)) + ej))] = acc[((ei * 2) + ej)];
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}
