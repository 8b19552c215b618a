#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(128) layernorm_cuda(const float* __restrict__ in_X, const float* __restrict__ in_gamma, const float* __restrict__ in_beta, float* __restrict__ out_Y) {
  const int bx = blockIdx.x;
  const int ty = threadIdx.y;
  const int tx = threadIdx.x;
  {
    float __align__(16) st[3];
    {
      float __align__(16) x0[1];
      st[0] = 0.0f;
      st[1] = 0.0f;
      st[2] = 0.0f;
      x0[0] = 0.0f;
      x0[0] = in_X[(((bx * 32) + ty) * 128)];
      {
        float __align__(16) v[32];
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
          (*(uint4*)(&v[(k * 4)])) = (*(uint4*)(&in_X[((((bx * 32) + ty) * 128) + ((tx + (k * 4)) * 4))]));
        }
        const float v_n = (((4.0f + 4.0f) + (4.0f + 4.0f)) + ((4.0f + 4.0f) + (4.0f + 4.0f)));
        const float v_mean = (((((((v[0] - x0[0]) + (v[1] - x0[0])) + ((v[2] - x0[0]) + (v[3] - x0[0]))) + (((v[4] - x0[0]) + (v[5] - x0[0])) + ((v[6] - x0[0]) + (v[7] - x0[0])))) + ((((v[8] - x0[0]) + (v[9] - x0[0])) + ((v[10] - x0[0]) + (v[11] - x0[0]))) + (((v[12] - x0[0]) + (v[13] - x0[0])) + ((v[14] - x0[0]) + (v[15] - x0[0]))))) + (((((v[16] - x0[0]) + (v[17] - x0[0])) + ((v[18] - x0[0]) + (v[19] - x0[0]))) + (((v[20] - x0[0]) + (v[21] - x0[0])) + ((v[22] - x0[0]) + (v[23] - x0[0])))) + ((((v[24] - x0[0]) + (v[25] - x0[0])) + ((v[26] - x0[0]) + (v[27] - x0[0]))) + (((v[28] - x0[0]) + (v[29] - x0[0])) + ((v[30] - x0[0]) + (v[31] - x0[0])))))) / fmaxf(v_n, 1.0f));
        {
          float __align__(16) st_new[3];
          st_new[0] = (st[0] + v_n);
          st_new[1] = (st[1] + ((v_mean - st[1]) * (v_n / fmaxf((st[0] + v_n), 1.0f))));
          st_new[2] = ((st[2] + ((((((((v[0] - x0[0]) - v_mean) * ((v[0] - x0[0]) - v_mean)) + (((v[1] - x0[0]) - v_mean) * ((v[1] - x0[0]) - v_mean))) + ((((v[2] - x0[0]) - v_mean) * ((v[2] - x0[0]) - v_mean)) + (((v[3] - x0[0]) - v_mean) * ((v[3] - x0[0]) - v_mean)))) + (((((v[4] - x0[0]) - v_mean) * ((v[4] - x0[0]) - v_mean)) + (((v[5] - x0[0]) - v_mean) * ((v[5] - x0[0]) - v_mean))) + ((((v[6] - x0[0]) - v_mean) * ((v[6] - x0[0]) - v_mean)) + (((v[7] - x0[0]) - v_mean) * ((v[7] - x0[0]) - v_mean))))) + ((((((v[8] - x0[0]) - v_mean) * ((v[8] - x0[0]) - v_mean)) + (((v[9] - x0[0]) - v_mean) * ((v[9] - x0[0]) - v_mean))) + ((((v[10] - x0[0]) - v_mean) * ((v[10] - x0[0]) - v_mean)) + (((v[11] - x0[0]) - v_mean) * ((v[11] - x0[0]) - v_mean)))) + (((((v[12] - x0[0]) - v_mean) * ((v[12] - x0[0]) - v_mean)) + (((v[13] - x0[0]) - v_mean) * ((v[13] - x0[0]) - v_mean))) + ((((v[14] - x0[0]) - v_mean) * ((v[14] - x0[0]) - v_mean)) + (((v[15] - x0[0]) - v_mean) * ((v[15] - x0[0]) - v_mean)))))) + (((((((v[16] - x0[0]) - v_mean) * ((v[16] - x0[0]) - v_mean)) + (((v[17] - x0[0]) - v_mean) * ((v[17] - x0[0]) - v_mean))) + ((((v[18] - x0[0]) - v_mean) * ((v[18] - x0[0]) - v_mean)) + (((v[19] - x0[0]) - v_mean) * ((v[19] - x0[0]) - v_mean)))) + (((((v[20] - x0[0]) - v_mean) * ((v[20] - x0[0]) - v_mean)) + (((v[21] - x0[0]) - v_mean) * ((v[21] - x0[0]) - v_mean))) + ((((v[22] - x0[0]) - v_mean) * ((v[22] - x0[0]) - v_mean)) + (((v[23] - x0[0]) - v_mean) * ((v[23] - x0[0]) - v_mean))))) + ((((((v[24] - x0[0]) - v_mean) * ((v[24] - x0[0]) - v_mean)) + (((v[25] - x0[0]) - v_mean) * ((v[25] - x0[0]) - v_mean))) + ((((v[26] - x0[0]) - v_mean) * ((v[26] - x0[0]) - v_mean)) + (((v[27] - x0[0]) - v_mean) * ((v[27] - x0[0]) - v_mean)))) + (((((v[28] - x0[0]) - v_mean) * ((v[28] - x0[0]) - v_mean)) + (((v[29] - x0[0]) - v_mean) * ((v[29] - x0[0]) - v_mean))) + ((((v[30] - x0[0]) - v_mean) * ((v[30] - x0[0]) - v_mean)) + (((v[31] - x0[0]) - v_mean) * ((v[31] - x0[0]) - v_mean)))))))) + ((((v_mean - st[1]) * (v_mean - st[1])) * st[0]) * (v_n / fmaxf((st[0] + v_n), 1.0f))));
          st[0] = st_new[0];
          st[1] = st_new[1];
          st[2] = st_new[2];
        }
        {
          float __align__(16) st_x2[3];
          st_x2[0] = __shfl_xor_sync(0xffffffffu, st[0], 2);
          st_x2[1] = __shfl_xor_sync(0xffffffffu, st[1], 2);
          st_x2[2] = __shfl_xor_sync(0xffffffffu, st[2], 2);
          {
            float __align__(16) st_new[3];
            st_new[0] = (st[0] + st_x2[0]);
            st_new[1] = (st[1] + ((st_x2[1] - st[1]) * (st_x2[0] / fmaxf((st[0] + st_x2[0]), 1.0f))));
            st_new[2] = ((st[2] + st_x2[2]) + ((((st_x2[1] - st[1]) * (st_x2[1] - st[1])) * st[0]) * (st_x2[0] / fmaxf((st[0] + st_x2[0]), 1.0f))));
            st[0] = st_new[0];
            st[1] = st_new[1];
            st[2] = st_new[2];
          }
        }
        {
          float __align__(16) st_x1[3];
          st_x1[0] = __shfl_xor_sync(0xffffffffu, st[0], 1);
          st_x1[1] = __shfl_xor_sync(0xffffffffu, st[1], 1);
          st_x1[2] = __shfl_xor_sync(0xffffffffu, st[2], 1);
          {
            float __align__(16) st_new[3];
            st_new[0] = (st[0] + st_x1[0]);
            st_new[1] = (st[1] + ((st_x1[1] - st[1]) * (st_x1[0] / fmaxf((st[0] + st_x1[0]), 1.0f))));
            st_new[2] = ((st[2] + st_x1[2]) + ((((st_x1[1] - st[1]) * (st_x1[1] - st[1])) * st[0]) * (st_x1[0] / fmaxf((st[0] + st_x1[0]), 1.0f))));
            st[0] = st_new[0];
            st[1] = st_new[1];
            st[2] = st_new[2];
          }
        }
        st[0] = __shfl_sync(0xffffffffu, st[0], ((ty * 4) % 32));
        st[1] = __shfl_sync(0xffffffffu, st[1], ((ty * 4) % 32));
        st[2] = __shfl_sync(0xffffffffu, st[2], ((ty * 4) % 32));
        st[2] = rsqrtf(((st[2] / 128.0f) + 1e-05f));
        #pragma unroll
        for (int k2 = 0; k2 < 8; ++k2) {
          {
            float __align__(16) gb[8];
            (*(uint4*)(&gb[0])) = (*(uint4*)(&in_gamma[((tx + (k2 * 4)) * 4)]));
            (*(uint4*)(&gb[4])) = (*(uint4*)(&in_beta[((tx + (k2 * 4)) * 4)]));
            #pragma unroll
            for (int ln = 0; ln < 4; ++ln) {
              v[((k2 * 4) + ln)] = (((((v[((k2 * 4) + ln)] - x0[0]) - st[1]) * st[2]) * gb[ln]) + gb[(4 + ln)]);
            }
            (*(uint4*)(&out_Y[((((bx * 32) + ty) * 128) + ((tx + (k2 * 4)) * 4))])) = (*(uint4*)(&v[(k2 * 4)]));
          }
        }
      }
    }
  }
}
