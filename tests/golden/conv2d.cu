#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(256) conv2d_simt(const float* __restrict__ in_X, const float* __restrict__ in_Wt, float* __restrict__ out_Y) {
  const int bz = blockIdx.z;
  const int bx = blockIdx.x;
  const int tid = threadIdx.x;
  const int batch_1 = bz;
  const int split_2 = 0;
  const int m0_3 = ((bx / 4) * 16);
  const int n0_4 = ((bx % 4) * 16);
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
              float __align__(16) a_ld[1];
              {
                float __align__(16) b_ld[1];
                acc[0] = 0.0f;
                if ((tid < 128)) {
                  a_ld[0] = ((((m0_3 + (tid / 8)) < 5) && ((((split_2 * 4) * 8) + (tid % 8)) < 27)) ? in_Wt[(((m0_3 + (tid / 8)) * 27) + (((split_2 * 4) * 8) + (tid % 8)))] : 0.0f);
                }
                if ((tid < 128)) {
                  b_ld[0] = (((((n0_4 + (tid % 16)) < 60) && ((((split_2 * 4) * 8) + (tid / 16)) < 27)) && ((((0 <= ((((((n0_4 + (tid % 16)) / 6) % 5) * 2) + (((((split_2 * 4) * 8) + (tid / 16)) / 3) % 3)) - 1)) && (((((((n0_4 + (tid % 16)) / 6) % 5) * 2) + (((((split_2 * 4) * 8) + (tid / 16)) / 3) % 3)) - 1) < 9)) && (0 <= (((((n0_4 + (tid % 16)) % 6) * 2) + ((((split_2 * 4) * 8) + (tid / 16)) % 3)) - 1))) && ((((((n0_4 + (tid % 16)) % 6) * 2) + ((((split_2 * 4) * 8) + (tid / 16)) % 3)) - 1) < 11))) ? in_X[((((((((n0_4 + (tid % 16)) / 30) * 3) + ((((split_2 * 4) * 8) + (tid / 16)) / 9)) * 9) + ((((((n0_4 + (tid % 16)) / 6) % 5) * 2) + (((((split_2 * 4) * 8) + (tid / 16)) / 3) % 3)) - 1)) * 11) + (((((n0_4 + (tid % 16)) % 6) * 2) + ((((split_2 * 4) * 8) + (tid / 16)) % 3)) - 1))] : 0.0f);
                }
                if ((tid < 128)) {
                  As[(((tid % 8) * 20) + (tid / 8))] = a_ld[0];
                }
                if ((tid < 128)) {
                  Bs[(((tid / 16) * 20) + (tid % 16))] = b_ld[0];
                }
                __syncthreads();
                for (int kt = 0; kt < 4; ++kt) {
                  if (((kt + 1) < 4)) {
                    if ((tid < 128)) {
                      a_ld[0] = ((((m0_3 + (tid / 8)) < 5) && (((((split_2 * 4) + (kt + 1)) * 8) + (tid % 8)) < 27)) ? in_Wt[(((m0_3 + (tid / 8)) * 27) + ((((split_2 * 4) + (kt + 1)) * 8) + (tid % 8)))] : 0.0f);
                    }
                    if ((tid < 128)) {
                      b_ld[0] = (((((n0_4 + (tid % 16)) < 60) && (((((split_2 * 4) + (kt + 1)) * 8) + (tid / 16)) < 27)) && ((((0 <= ((((((n0_4 + (tid % 16)) / 6) % 5) * 2) + ((((((split_2 * 4) + (kt + 1)) * 8) + (tid / 16)) / 3) % 3)) - 1)) && (((((((n0_4 + (tid % 16)) / 6) % 5) * 2) + ((((((split_2 * 4) + (kt + 1)) * 8) + (tid / 16)) / 3) % 3)) - 1) < 9)) && (0 <= (((((n0_4 + (tid % 16)) % 6) * 2) + (((((split_2 * 4) + (kt + 1)) * 8) + (tid / 16)) % 3)) - 1))) && ((((((n0_4 + (tid % 16)) % 6) * 2) + (((((split_2 * 4) + (kt + 1)) * 8) + (tid / 16)) % 3)) - 1) < 11))) ? in_X[((((((((n0_4 + (tid % 16)) / 30) * 3) + (((((split_2 * 4) + (kt + 1)) * 8) + (tid / 16)) / 9)) * 9) + ((((((n0_4 + (tid % 16)) / 6) % 5) * 2) + ((((((split_2 * 4) + (kt + 1)) * 8) + (tid / 16)) / 3) % 3)) - 1)) * 11) + (((((n0_4 + (tid % 16)) % 6) * 2) + (((((split_2 * 4) + (kt + 1)) * 8) + (tid / 16)) % 3)) - 1))] : 0.0f);
                    }
                  }
                  #pragma unroll
                  for (int ki = 0; ki < 8; ++ki) {
                    a_frag[0] = As[((((kt % 2) * 160) + (ki * 20)) + ty_5)];
                    b_frag[0] = Bs[((((kt % 2) * 160) + (ki * 20)) + tx_6)];
                    acc[0] = (acc[0] + (a_frag[0] * b_frag[0]));
                  }
                  if (((kt + 1) < 4)) {
                    if ((tid < 128)) {
                      As[(((((kt + 1) % 2) * 160) + ((tid % 8) * 20)) + (tid / 8))] = a_ld[0];
                    }
                    if ((tid < 128)) {
                      Bs[(((((kt + 1) % 2) * 160) + ((tid / 16) * 20)) + (tid % 16))] = b_ld[0];
                    }
                  }
                  __syncthreads();
                }
                if ((((m0_3 + ty_5) < 5) && ((n0_4 + tx_6) < 60))) {
                  out_Y[((((((n0_4 + tx_6) / 30) * 5) + (m0_3 + ty_5)) * 30) + ((n0_4 + tx_6) % 30))] = acc[0];
                }
              }
            }
          }
        }
      }
    }
  }
}
