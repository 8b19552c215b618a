#include <cuda_fp16.h>
#include <math_constants.h>
#include <mma.h>
#include <cuda_pipeline.h>

extern "C" __global__ void __launch_bounds__(128) matmul_wmma(const __half* __restrict__ in_A, const __half* __restrict__ in_B, __half* __restrict__ out_C) {
  const int bx = blockIdx.x;
  const int tx = threadIdx.x;
  {
    __shared__ __align__(32) __half As[5120];
    {
      __shared__ __align__(32) __half Bs[4608];
      {
        __shared__ __align__(32) float Cs[1024];
        {
          nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> a_frag[2];
          {
            nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __half, nvcuda::wmma::row_major> b_frag[2];
            {
              nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc[4];
              const int tm = bx;
              const int tn = 0;
              const int m0 = (tm * 64);
              const int n0 = (tn * 64);
              const int warp = (tx / 32);
              const int wrow = ((warp / 2) * 32);
              const int wcol = ((warp % 2) * 32);
              #pragma unroll
              for (int f = 0; f < 4; ++f) {
                nvcuda::wmma::fill_fragment(acc[f], 0.0f);
              }
              #pragma unroll
              for (int ri = 0; ri < 2; ++ri) {
                __pipeline_memcpy_async((&As[(((((ri * 128) + tx) / 4) * 40) + ((((ri * 128) + tx) % 4) * 8))]), (&in_A[(((m0 + (((ri * 128) + tx) / 4)) * 64) + ((((ri * 128) + tx) % 4) * 8))]), 16);
              }
              #pragma unroll
              for (int ri = 0; ri < 2; ++ri) {
                __pipeline_memcpy_async((&Bs[(((((ri * 128) + tx) / 8) * 72) + ((((ri * 128) + tx) % 8) * 8))]), (&in_B[(((((ri * 128) + tx) / 8) * 64) + (n0 + ((((ri * 128) + tx) % 8) * 8)))]), 16);
              }
              __pipeline_commit();
              for (int kt = 0; kt < 2; ++kt) {
                __pipeline_wait_prior(0);
                __syncthreads();
                if (((kt + 1) < 2)) {
                  #pragma unroll
                  for (int ri = 0; ri < 2; ++ri) {
                    __pipeline_memcpy_async((&As[(((((kt + 1) % 2) * 2560) + ((((ri * 128) + tx) / 4) * 40)) + ((((ri * 128) + tx) % 4) * 8))]), (&in_A[(((m0 + (((ri * 128) + tx) / 4)) * 64) + (((kt + 1) * 32) + ((((ri * 128) + tx) % 4) * 8)))]), 16);
                  }
                  #pragma unroll
                  for (int ri = 0; ri < 2; ++ri) {
                    __pipeline_memcpy_async((&Bs[(((((kt + 1) % 2) * 2304) + ((((ri * 128) + tx) / 8) * 72)) + ((((ri * 128) + tx) % 8) * 8))]), (&in_B[(((((kt + 1) * 32) + (((ri * 128) + tx) / 8)) * 64) + (n0 + ((((ri * 128) + tx) % 8) * 8)))]), 16);
                  }
                }
                __pipeline_commit();
                #pragma unroll
                for (int kk = 0; kk < 2; ++kk) {
                  #pragma unroll
                  for (int i = 0; i < 2; ++i) {
                    nvcuda::wmma::load_matrix_sync(a_frag[i], (&As[((((kt % 2) * 2560) + ((wrow + (i * 16)) * 40)) + (kk * 16))]), 40);
                  }
                  #pragma unroll
                  for (int j = 0; j < 2; ++j) {
                    nvcuda::wmma::load_matrix_sync(b_frag[j], (&Bs[((((kt % 2) * 2304) + ((kk * 16) * 72)) + (wcol + (j * 16)))]), 72);
                  }
                  #pragma unroll
                  for (int i = 0; i < 2; ++i) {
                    #pragma unroll
                    for (int j = 0; j < 2; ++j) {
                      nvcuda::wmma::mma_sync(acc[((i * 2) + j)], a_frag[i], b_frag[j], acc[((i * 2) + j)]);
                    }
                  }
                }
              }
              #pragma unroll
              for (int i = 0; i < 2; ++i) {
                #pragma unroll
                for (int j = 0; j < 2; ++j) {
                  nvcuda::wmma::store_matrix_sync((&Cs[(warp * 256)]), acc[((i * 2) + j)], 16, nvcuda::wmma::mem_row_major);
                  __syncthreads();
                  #pragma unroll
                  for (int q = 0; q < 8; ++q) {
                    out_C[(((((m0 + wrow) + (i * 16)) + ((q * 2) + ((tx % 32) / 16))) * 64) + (((n0 + wcol) + (j * 16)) + ((tx % 32) % 16)))] = __float2half(Cs[(((warp * 256) + (((q * 2) + ((tx % 32) / 16)) * 16)) + ((tx % 32) % 16))]);
                  }
                  __syncthreads();
                }
              }
            }
          }
        }
      }
    }
  }
}
