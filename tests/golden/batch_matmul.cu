#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(256) batch_matmul_simt(const float* __restrict__ in_A, const float* __restrict__ in_B, float* __restrict__ out_C) {
  const int bz = blockIdx.z;
  const int bx = blockIdx.x;
  const int tid = threadIdx.x;
  const int batch_1 = bz;
  const int split_2 = 0;
  const int m0_3 = ((bx / 2) * 16);
  const int n0_4 = ((bx % 2) * 16);
  const int ty_5 = (tid / 16);
  const int tx_6 = (tid % 16);
  {
    __shared__ __align__(16) float As[320];
    {
      __shared__ __align__(16) float Bs[320];
      {
        float __align__(16) acc[1];
        {
          float __align__(16) a_frag[1];
          {
            float __align__(16) b_frag[1];
            {
              float __align__(16) a_ld[4];
              {
                float __align__(16) b_ld[4];
                acc[0] = 0.0f;
                if ((tid < 32)) {
                  (*(uint4*)(&a_ld[0])) = (*(uint4*)(&in_A[((((batch_1 * 32) + (m0_3 + (tid / 2))) * 32) + (((split_2 * 4) * 8) + ((tid % 2) * 4)))]));
                }
                if ((tid < 32)) {
                  (*(uint4*)(&b_ld[0])) = (*(uint4*)(&in_B[((((batch_1 * 32) + (((split_2 * 4) * 8) + (tid / 4))) * 32) + (n0_4 + ((tid % 4) * 4)))]));
                }
                if ((tid < 32)) {
                  #pragma unroll
                  for (int e = 0; e < 4; ++e) {
                    As[(((((tid % 2) * 4) + e) * 20) + (tid / 2))] = a_ld[e];
                  }
                }
                if ((tid < 32)) {
                  (*(uint4*)(&Bs[(((tid / 4) * 20) + ((tid % 4) * 4))])) = (*(uint4*)(&b_ld[0]));
                }
                __syncthreads();
                for (int kt = 0; kt < 4; ++kt) {
                  if (((kt + 1) < 4)) {
                    if ((tid < 32)) {
                      (*(uint4*)(&a_ld[0])) = (*(uint4*)(&in_A[((((batch_1 * 32) + (m0_3 + (tid / 2))) * 32) + ((((split_2 * 4) + (kt + 1)) * 8) + ((tid % 2) * 4)))]));
                    }
                    if ((tid < 32)) {
                      (*(uint4*)(&b_ld[0])) = (*(uint4*)(&in_B[((((batch_1 * 32) + ((((split_2 * 4) + (kt + 1)) * 8) + (tid / 4))) * 32) + (n0_4 + ((tid % 4) * 4)))]));
                    }
                  }
                  #pragma unroll
                  for (int ki = 0; ki < 8; ++ki) {
                    a_frag[0] = As[((((kt % 2) * 160) + (ki * 20)) + ty_5)];
                    b_frag[0] = Bs[((((kt % 2) * 160) + (ki * 20)) + tx_6)];
                    acc[0] = (acc[0] + (a_frag[0] * b_frag[0]));
                  }
                  if (((kt + 1) < 4)) {
                    if ((tid < 32)) {
                      #pragma unroll
                      for (int e = 0; e < 4; ++e) {
                        As[(((((kt + 1) % 2) * 160) + ((((tid % 2) * 4) + e) * 20)) + (tid / 2))] = a_ld[e];
                      }
                    }
                    if ((tid < 32)) {
                      (*(uint4*)(&Bs[(((((kt + 1) % 2) * 160) + ((tid / 4) * 20)) + ((tid % 4) * 4))])) = (*(uint4*)(&b_ld[0]));
                    }
                  }
                  __syncthreads();
                }
                out_C[((((batch_1 * 32) + (m0_3 + ty_5)) * 32) + (n0_4 + tx_6))] = acc[0];
              }
            }
          }
        }
      }
    }
  }
}
