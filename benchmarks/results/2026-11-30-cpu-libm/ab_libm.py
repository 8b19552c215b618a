"""A/B of the C backend's scalar math calls: glibc's expf/logf/tanhf/erff (as before 2026-11-30) against the inline
functions of compiler_core/codegen/c_libm.py, kernels of each built in one process and timed in interleaved rounds.

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-libm/ab_libm.py \
        "elementwise:rows=1024,cols=4096,expr=tanh(x)"

Prints, per case, glibc's time / the inline functions' time: median [min, max] of 5 rounds (> 1: inline faster).
"""
import os
import statistics
import sys
import time

import numpy as np

import compiler_core as cc
from benchmarks.cpu_matmul import median_ns
from compiler_core.codegen import c as cgen
from compiler_core.codegen.base import CodegenBase
from compiler_core.ir import expr as E
from compiler_core.workload import parse_params

INLINE = cgen.CCodegen.math_call


def glibc_math_call(self, name, args, dtype):
    if E.lanes_of(dtype) > 1:
        return INLINE(self, name, args, dtype)
    return CodegenBase.math_call(self, name, args, dtype)


def timed(kernel, ins, outs) -> float:
    return median_ns(lambda: kernel(*ins, *outs), min_runs=3, min_seconds=0.2, warmup=1)


def main() -> None:
    target = cc.cpu_target(isa=os.environ["ISA"]) if os.environ.get("ISA") else cc.cpu_target()
    for case in sys.argv[1:]:
        op, _, params = case.partition(":")
        w = cc.make_workload(op, parse_params(params))
        config = cc.default_config(w, target)
        ins = cc.random_inputs(w, 0)
        outs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
        kernels = {}
        for name, call in (("glibc", glibc_math_call), ("inline", INLINE)):
            cgen.CCodegen.math_call = call
            kernels[name] = cc.build(w, config, target)
            kernels[name](*ins, *outs)
            assert cc.verify(w, outs, cc.expect(w, ins)).ok, name
        cgen.CCodegen.math_call = INLINE
        ratios = []
        for r in range(5):
            times = {}
            for n in (["glibc", "inline"] if r % 2 else ["inline", "glibc"]):
                time.sleep(0.05)
                times[n] = timed(kernels[n], ins, outs)
            ratios.append(times["glibc"] / times["inline"])
        print(f"{target.name if hasattr(target, 'name') else ''} {w.key} glibc/inline {statistics.median(ratios):.2f} "
              f"[{min(ratios):.2f}, {max(ratios):.2f}]  inline {times['inline'] / 1e6:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
