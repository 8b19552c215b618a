"""benchmarks/gpu_tuning.py with the tiled kernel's text changed by VARIANT (env: base, d1 = the score loop over
head_dim unrolled once, kk2 = the P V loop unrolled twice, both), in this process; from the repository root:

    VARIANT=d1 python3 unroll_variant.py --case ... --configs CONFIGS --farm-trials 0
"""
import os
import runpy
import sys

import compiler_core.codegen.flash_attention_simt as fs

V = os.environ.get("VARIANT", "base")
orig = fs.render_kernel


def variant(c):
    s = orig(c)
    if V in ("d1", "both"):
        s = s.replace("#pragma unroll 2\n    for (int d = 0; d < D4; d += 4)",
                      "#pragma unroll 1\n    for (int d = 0; d < D4; d += 4)")
    if V in ("kk2", "both"):
        s = s.replace("#pragma unroll 4\n    for (int kk", "#pragma unroll 2\n    for (int kk")
    return s


fs.render_kernel = variant
sys.argv = ["gpu_tuning.py"] + sys.argv[1:]
runpy.run_path("benchmarks/gpu_tuning.py", run_name="__main__")
