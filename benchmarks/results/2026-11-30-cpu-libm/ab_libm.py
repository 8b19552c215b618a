"""A/B of the C backend's scalar math calls: glibc's expf/logf/tanhf/erff (as before 2026-11-30) against the inline
functions of compiler_core/codegen/c_libm.py, kernels of each built in one process and timed in interleaved rounds
(benchmarks/cpu_ab.py).

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-libm/ab_libm.py \
        "elementwise:rows=1024,cols=4096,expr=tanh(x)"

Prints, per case, glibc's time / the inline functions' time: median [min, max] of 5 rounds (> 1: inline faster).
"""
from functools import partial
from unittest.mock import patch

import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.codegen import c as cgen
from compiler_core.codegen.base import CodegenBase
from compiler_core.ir import expr as E

INLINE = cgen.CCodegen.math_call


def glibc_math_call(self, name, args, dtype):
    if E.lanes_of(dtype) > 1:
        return INLINE(self, name, args, dtype)
    return CodegenBase.math_call(self, name, args, dtype)


def built_with(w, config, target, math_call):
    with patch.object(cgen.CCodegen, "math_call", math_call):
        return cc.build(w, config, target)


def main() -> None:
    ab_main(lambda w, config, target: {"glibc": partial(built_with, w, config, target, glibc_math_call),
                                       "inline": partial(built_with, w, config, target, INLINE)}, base="glibc")

if __name__ == "__main__":
    main()
