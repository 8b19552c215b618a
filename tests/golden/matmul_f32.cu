#include <cuda_fp16.h>
#include <math_constants.h>

extern "C" __global__ void __launch_bounds__(256) matmul_simt(const float* __restrict__ in_A, const float* __restrict__ in_B, float* __restrict__ out_C) {
  const int bz = blockIdx.z;
  const int bx = blockIdx.x;
  const int tid = threadIdx.x;
  const int batch_1 = bz;
  const int m0_2 = ((bx / 5) * 32);
  const int n0_3 = ((bx % 5) * 32);
  const int ty_4 = (tid / 16);
  const int tx_5 = (tid % 16);
  {
    __shared__ __align__(16) float As[2304];
    {
      __shared__ __align__(16) float Bs[2304];
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
                if ((((m0_2 + 32) <= 67) && ((n0_3 + 32) <= 131))) {
                  #pragma unroll
                  for (int a_ld_i = 0; a_ld_i < 4; ++a_ld_i) {
                    a_ld[a_ld_i] = (((32 + (((a_ld_i * 256) + tid) % 32)) < 45) ? in_A[((((batch_1 * 67) + (m0_2 + (((a_ld_i * 256) + tid) / 32))) * 45) + (32 + (((a_ld_i * 256) + tid) % 32)))] : 0.0f);
                  }
                  #pragma unroll
                  for (int b_ld_i = 0; b_ld_i < 4; ++b_ld_i) {
                    b_ld[b_ld_i] = (((32 + (((b_ld_i * 256) + tid) / 32)) < 45) ? in_B[((((batch_1 * 45) + (32 + (((b_ld_i * 256) + tid) / 32))) * 131) + (n0_3 + (((b_ld_i * 256) + tid) % 32)))] : 0.0f);
                  }
                  #pragma unroll
                  for (int a_ld_i = 0; a_ld_i < 4; ++a_ld_i) {
                    As[(((((a_ld_i * 256) + tid) % 32) * 36) + (((a_ld_i * 256) + tid) / 32))] = a_ld[a_ld_i];
                  }
                  #pragma unroll
                  for (int b_ld_i = 0; b_ld_i < 4; ++b_ld_i) {
                    Bs[(((((b_ld_i * 256) + tid) / 32) * 36) + (((b_ld_i * 256) + tid) % 32))] = b_ld[b_ld_i];
                  }
                  __syncthreads();
                  for (int kt = 0; kt < 2; ++kt) {
                    if (((kt + 1) < 2)) {
                      #pragma unroll
                      for (int a_ld_i = 0; a_ld_i < 4; ++a_ld_i) {
                        a_ld[a_ld_i] = in_A[((((batch_1 * 67) + (m0_2 + (((a_ld_i * 256) + tid) / 32))) * 45) + ((kt * 32) + (((a_ld_i * 256) + tid) % 32)))];
                      }
                      #pragma unroll
                      for (int b_ld_i = 0; b_ld_i < 4; ++b_ld_i) {
                        b_ld[b_ld_i] = in_B[((((batch_1 * 45) + ((kt * 32) + (((b_ld_i * 256) + tid) / 32))) * 131) + (n0_3 + (((b_ld_i * 256) + tid) % 32)))];
                      }
                    }
                    for (int ko = 0; ko < 4; ++ko) {
                      #pragma unroll
                      for (int ki = 0; ki < 8; ++ki) {
                        (*(uint2*)(&a_frag[0])) = (*(uint2*)(&As[((((kt % 2) * 1152) + (((ko * 8) + ki) * 36)) + (ty_4 * 2))]));
                        (*(uint2*)(&b_frag[0])) = (*(uint2*)(&Bs[((((kt % 2) * 1152) + (((ko * 8) + ki) * 36)) + (tx_5 * 2))]));
                        #pragma unroll
                        for (int i = 0; i < 2; ++i) {
                          #pragma unroll
                          for (int j = 0; j < 2; ++j) {
                            acc[((i * 2) + j)] = (acc[((i * 2) + j)] + (a_frag[i] * b_frag[j]));
                          }
                        }
                      }
                    }
                    if (((kt + 1) < 2)) {
                      #pragma unroll
                      for (int a_ld_i = 0; a_ld_i < 4; ++a_ld_i) {
                        As[(((((kt + 1) % 2) * 1152) + ((((a_ld_i * 256) + tid) % 32) * 36)) + (((a_ld_i * 256) + tid) / 32))] = a_ld[a_ld_i];
                      }
                      #pragma unroll
                      for (int b_ld_i = 0; b_ld_i < 4; ++b_ld_i) {
                        Bs[(((((kt + 1) % 2) * 1152) + ((((b_ld_i * 256) + tid) / 32) * 36)) + (((b_ld_i * 256) + tid) % 32))] = b_ld[b_ld_i];
                      }
                    }
                    __syncthreads();
                  }
                  #pragma unroll
                  for (int ei = 0; ei < 2; ++ei) {
                    #pragma unroll
                    for (int ej = 0; ej < 2; ++ej) {
                      out_C[((((batch_1 * 67) + ((m0_2 + (ty_4 * 2)) + ei)) * 131) + ((n0_3 + (tx_5 * 2)) + ej))] = acc[((ei * 2) + ej)];
                    }
                  }
                } else {
                  #pragma unroll
                  for (int a_ld_i = 0; a_ld_i < 4; ++a_ld_i) {
                    a_ld[a_ld_i] = (((32 + (((a_ld_i * 256) + tid) % 32)) < 45) ? in_A[((((batch_1 * 67) + (((m0_2 + (((a_ld_i * 256) + tid) / 32))) < (66) ? ((m0_2 + (((a_ld_i * 256) + tid) / 32))) : (66))) * 45) + (32 + (((a_ld_i * 256) + tid) % 32)))] : 0.0f);
                  }
                  #pragma unroll
                  for (int b_ld_i = 0; b_ld_i < 4; ++b_ld_i) {
                    b_ld[b_ld_i] = (((32 + (((b_ld_i * 256) + tid) / 32)) < 45) ? in_B[((((batch_1 * 45) + (32 + (((b_ld_i * 256) + tid) / 32))) * 131) + (((n0_3 + (((b_ld_i * 256) + tid) % 32))) < (130) ? ((n0_3 + (((b_ld_i * 256) + tid) % 32))) : (130)))] : 0.0f);
                  }
                  #pragma unroll
                  for (int a_ld_i = 0; a_ld_i < 4; ++a_ld_i) {
                    As[(((((a_ld_i * 256) + tid) % 32) * 36) + (((a_ld_i * 256) + tid) / 32))] = a_ld[a_ld_i];
                  }
                  #pragma unroll
                  for (int b_ld_i = 0; b_ld_i < 4; ++b_ld_i) {
                    Bs[(((((b_ld_i * 256) + tid) / 32) * 36) + (((b_ld_i * 256) + tid) % 32))] = b_ld[b_ld_i];
                  }
                  __syncthreads();
                  for (int kt = 0; kt < 2; ++kt) {
                    if (((kt + 1) < 2)) {
                      #pragma unroll
                      for (int a_ld_i = 0; a_ld_i < 4; ++a_ld_i) {
                        a_ld[a_ld_i] = in_A[((((batch_1 * 67) + (((m0_2 + (((a_ld_i * 256) + tid) / 32))) < (66) ? ((m0_2 + (((a_ld_i * 256) + tid) / 32))) : (66))) * 45) + ((kt * 32) + (((a_ld_i * 256) + tid) % 32)))];
                      }
                      #pragma unroll
                      for (int b_ld_i = 0; b_ld_i < 4; ++b_ld_i) {
                        b_ld[b_ld_i] = in_B[((((batch_1 * 45) + ((kt * 32) + (((b_ld_i * 256) + tid) / 32))) * 131) + (((n0_3 + (((b_ld_i * 256) + tid) % 32))) < (130) ? ((n0_3 + (((b_ld_i * 256) + tid) % 32))) : (130)))];
                      }
                    }
                    for (int ko = 0; ko < 4; ++ko) {
                      #pragma unroll
                      for (int ki = 0; ki < 8; ++ki) {
                        (*(uint2*)(&a_frag[0])) = (*(uint2*)(&As[((((kt % 2) * 1152) + (((ko * 8) + ki) * 36)) + (ty_4 * 2))]));
                        (*(uint2*)(&b_frag[0])) = (*(uint2*)(&Bs[((((kt % 2) * 1152) + (((ko * 8) + ki) * 36)) + (tx_5 * 2))]));
                        #pragma unroll
                        for (int i = 0; i < 2; ++i) {
                          #pragma unroll
                          for (int j = 0; j < 2; ++j) {
                            acc[((i * 2) + j)] = (acc[((i * 2) + j)] + (a_frag[i] * b_frag[j]));
                          }
                        }
                      }
                    }
                    if (((kt + 1) < 2)) {
                      #pragma unroll
                      for (int a_ld_i = 0; a_ld_i < 4; ++a_ld_i) {
                        As[(((((kt + 1) % 2) * 1152) + ((((a_ld_i * 256) + tid) % 32) * 36)) + (((a_ld_i * 256) + tid) / 32))] = a_ld[a_ld_i];
                      }
                      #pragma unroll
                      for (int b_ld_i = 0; b_ld_i < 4; ++b_ld_i) {
                        Bs[(((((kt + 1) % 2) * 1152) + ((((b_ld_i * 256) + tid) / 32) * 36)) + (((b_ld_i * 256) + tid) % 32))] = b_ld[b_ld_i];
                      }
                    }
                    __syncthreads();
                  }
                  #pragma unroll
                  for (int ei = 0; ei < 2; ++ei) {
                    #pragma unroll
                    for (int ej = 0; ej < 2; ++ej) {
                      if (((((m0_2 + (ty_4 * 2)) + ei) < 67) && (((n0_3 + (tx_5 * 2)) + ej) < 131))) {
                        out_C[((((batch_1 * 67) + ((m0_2 + (ty_4 * 2)) + ei)) * 131) + ((n0_3 + (tx_5 * 2)) + ej))] = acc[((ei * 2) + ej)];
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
  }
}
