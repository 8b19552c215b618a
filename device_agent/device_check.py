"""Verification on the GPU: outputs are compared with the cached reference where they are, element by element.

Copying a large output to the host and comparing it there in numpy costs more than timing the kernel (an
8192x8192 softmax: 256 MB back, ~1 s of numpy). This kernel applies the same rule as compiler_core.verify (NaN
only where the reference is NaN, infinities equal, finite elements within their own tolerance) and returns the
count of wrong elements and the largest finite error. Only a failing kernel goes to the host, for the message.
"""
from __future__ import annotations

import numpy as np

from compiler_core.dtypes import numpy_dtype, raw_bytes

CHECK_SOURCE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__device__ __forceinline__ double widen(float v) { return (double)v; }
__device__ __forceinline__ double widen(__half v) { return (double)__half2float(v); }
__device__ __forceinline__ double widen(__nv_bfloat16 v) { return (double)__bfloat162float(v); }

template <typename T>
__device__ void check(const T* out, const double* ref, const double* tol, long long n,
                      unsigned long long* bad, unsigned long long* max_error_bits) {
  // each thread keeps its own count and maximum; a warp combines them and its first lane alone touches the
  // global counters: one atomic per element on one address serialises the whole check (50 ms for 64M elements)
  unsigned long long my_bad = 0;
  double my_max = 0.0;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
    double got = widen(out[i]), want = ref[i];
    bool wrong;
    if (isnan(want)) {
      wrong = !isnan(got);
    } else if (isinf(want)) {
      wrong = got != want;
    } else {
      double error = fabs(got - want);
      wrong = !(error <= tol[i]);  // a NaN or infinite result is wrong here too
      if (isfinite(error)) my_max = fmax(my_max, error);
    }
    my_bad += wrong ? 1ULL : 0ULL;
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    my_bad += __shfl_down_sync(0xffffffffu, my_bad, offset);
    my_max = fmax(my_max, __shfl_down_sync(0xffffffffu, my_max, offset));
  }
  if ((threadIdx.x & 31) == 0) {
    if (my_bad) atomicAdd(bad, my_bad);
    // errors are >= 0: their bit patterns order like the numbers
    if (my_max > 0.0) atomicMax(max_error_bits, (unsigned long long)__double_as_longlong(my_max));
  }
}
extern "C" __global__ void tf_check_float32(const float* out, const double* ref, const double* tol, long long n,
                                            unsigned long long* bad, unsigned long long* max_error_bits) {
  check(out, ref, tol, n, bad, max_error_bits);
}

extern "C" __global__ void tf_check_float16(const __half* out, const double* ref, const double* tol, long long n,
                                            unsigned long long* bad, unsigned long long* max_error_bits) {
  check(out, ref, tol, n, bad, max_error_bits);
}

extern "C" __global__ void tf_check_bfloat16(const __nv_bfloat16* out, const double* ref, const double* tol,
                                             long long n, unsigned long long* bad,
                                             unsigned long long* max_error_bits) {
  check(out, ref, tol, n, bad, max_error_bits);
}
"""
DTYPES = ("float32", "float16", "bfloat16")  # one tf_check_<dtype> kernel each
BLOCK = 256
MAX_BLOCKS = 4096


def upload(drv, array: np.ndarray):
    """A device copy of a host array. pycuda's to_device first copies the array into a bytes object (seconds
    for a gigabyte); this copies straight from the array's memory (as raw bytes: bfloat16 has no buffer format)."""
    array = np.ascontiguousarray(array)
    buf = drv.mem_alloc(max(array.nbytes, 1))
    if array.nbytes:
        drv.memcpy_htod(buf, raw_bytes(array))
    return buf


def download(drv, buf, shape: tuple, dtype: str) -> np.ndarray:
    """A host copy of a device array of `dtype` (pycuda's from_device needs the dtype's buffer format)."""
    out = np.empty(shape, numpy_dtype(dtype))
    if out.nbytes:
        drv.memcpy_dtoh(raw_bytes(out), buf)
    return out


class DeviceChecker:
    """Compiled once per worker (nvcc, which a GPU agent has for its builds anyway)."""

    def __init__(self, drv, arch: str) -> None:
        from compiler_core.runtime.nvcc_check import nvcc_compile

        self.drv = drv
        self.module = drv.module_from_buffer(nvcc_compile(CHECK_SOURCE, arch))
        self.kernels = {dtype: self.module.get_function(f"tf_check_{dtype}") for dtype in DTYPES}
        self.counters = drv.mem_alloc(16)

    def supports(self, dtype) -> bool:
        return numpy_dtype(dtype).name in self.kernels

    def upload(self, expected, shapes) -> list[tuple]:
        """Device copies of an Expected's reference and per-element tolerance, broadcast to each output's shape."""
        out = []
        for ref, tol, shape in zip(expected.outputs, expected.tolerance, shapes, strict=True):
            full_tol = np.ascontiguousarray(np.broadcast_to(np.asarray(tol, np.float64), shape))
            out.append((upload(self.drv, np.ascontiguousarray(ref, np.float64)), upload(self.drv, full_tol)))
        return out

    def check(self, output, dtype, size: int, ref_tol: tuple) -> tuple[int, float]:
        """(wrong elements, largest finite error) of one device output against its uploaded reference."""
        self.drv.memset_d8(self.counters, 0, 16)
        blocks = int(min(MAX_BLOCKS, max(1, (size + BLOCK - 1) // BLOCK)))
        self.kernels[numpy_dtype(dtype).name](output, ref_tol[0], ref_tol[1], np.int64(size), self.counters,
                                           np.uintp(int(self.counters) + 8), grid=(blocks, 1, 1), block=(BLOCK, 1, 1))
        counts = np.empty(2, np.uint64)
        self.drv.memcpy_dtoh(counts, self.counters)
        return int(counts[0]), float(counts[1:].view(np.float64)[0])
