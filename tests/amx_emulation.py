"""Test double for AMX: the tile intrinsics the generated C calls (c_amx), as scalar C on thread-local tiles, so the
AMX GEMM's packing, tile addressing and write-back run and are verified on a host without AMX (any with AVX-512 BF16,
which the rest of an AMX target's code may use). It follows Intel's definition of TDPBF16PS: per C element, each
pair of K steps adds its two products in order, in float32. Hosts with AMX run the real instructions as well
(tests/cpu/test_gemm_amx.py)."""
from __future__ import annotations

import compiler_core as cc
from compiler_core.build import Kernel
from compiler_core.codegen import generate_source
from compiler_core.runtime.c_runtime import CLibrary, compile_shared_library

EMULATED_TILES = r"""
static _Thread_local unsigned char tf_emu_tile[8][16][64];
static inline float tf_emu_bf16(unsigned short v) {
  union { unsigned u; float f; } x = { (unsigned)v << 16 };
  return x.f;
}
static inline void tf_emu_load(int t, const char *base, long stride) {
  for (int r = 0; r < 16; r++) memcpy(tf_emu_tile[t][r], base + r * stride, 64);
}
static inline void tf_emu_store(int t, char *base, long stride) {
  for (int r = 0; r < 16; r++) memcpy(base + r * stride, tf_emu_tile[t][r], 64);
}
static inline void tf_emu_dp(int c, int a, int b) {
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      float acc;
      memcpy(&acc, &tf_emu_tile[c][m][4 * n], 4);
      for (int k = 0; k < 16; k++) {
        unsigned short a0, a1, b0, b1;
        memcpy(&a0, &tf_emu_tile[a][m][4 * k], 2); memcpy(&a1, &tf_emu_tile[a][m][4 * k + 2], 2);
        memcpy(&b0, &tf_emu_tile[b][k][4 * n], 2); memcpy(&b1, &tf_emu_tile[b][k][4 * n + 2], 2);
        acc += tf_emu_bf16(a0) * tf_emu_bf16(b0);
        acc += tf_emu_bf16(a1) * tf_emu_bf16(b1);
      }
      memcpy(&tf_emu_tile[c][m][4 * n], &acc, 4);
    }
}
#define _tile_loadconfig(cfg) ((void)(cfg))
#define _tile_release() ((void)0)
#define _tile_zero(t) memset(tf_emu_tile[t], 0, sizeof tf_emu_tile[t])
#define _tile_loadd(t, base, stride) tf_emu_load(t, (const char *)(base), stride)
#define _tile_stored(t, base, stride) tf_emu_store(t, (char *)(base), stride)
#define _tile_dpbf16ps(c, a, b) tf_emu_dp(c, a, b)
"""


def emulated_source(source: str) -> str:
    """The generated source of an AMX target with the tile intrinsics emulated (after its includes)."""
    marker = "#include <immintrin.h>\n"
    if marker not in source:
        raise ValueError("the source calls no AMX intrinsics (no immintrin.h)")
    return source.replace(marker, marker + "#include <string.h>\n" + EMULATED_TILES, 1)


def emulated_kernel(workload, config: dict, target) -> Kernel:
    """The kernel of `config` for the AMX `target`, built for AVX-512 BF16 with emulated tiles, loaded."""
    module = cc.lower(workload, config, target)
    source = emulated_source(generate_source(module, target))
    kernel = Kernel(workload, config, target, module, source)
    march = cc.cpu_target(isa="avx512bf16").march_flags
    kernel._impl = CLibrary(compile_shared_library(source, march=march), len(module.args))
    return kernel
