"""The two B sources of a CPU GEMM template on one host (knob b_source: conv2d's im2col / padded, matmul's and
batch_matmul's packed / in_place), the default config otherwise, compiled for the ISA in $ISA (the host's when
unset), 5 interleaved rounds.

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-conv-padded/ab_b_source.py \
        "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1" "matmul:M=512,N=512,K=512"

Prints the first source's time / the second's (> 1: the second is faster), median [min, max].
"""
import os
import statistics
import sys
import time

import numpy as np

import compiler_core as cc
from benchmarks.cpu_matmul import median_ns
from compiler_core.workload import parse_params


def timed(kernel, ins, outs) -> float:
    time.sleep(0.05)
    return median_ns(lambda: kernel(*ins, *outs), min_runs=3, min_seconds=0.2, warmup=1)


def main() -> None:
    target = cc.cpu_target(isa=os.environ["ISA"]) if os.environ.get("ISA") else cc.cpu_target()
    print(f"{target.arch}, {target.cores} threads")
    for case in sys.argv[1:]:
        op, _, params = case.partition(":")
        w = cc.make_workload(op, parse_params(params))
        ins = cc.random_inputs(w, 0)
        outs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
        default = cc.default_config(w, target)
        first, second = next(k.choices for k in cc.get_space(w, target).knobs if k.name == "b_source")
        kernels = {src: cc.build(w, dict(default, b_source=src), target) for src in (first, second)}
        ratios, ms = [], {}
        for r in range(5):
            order = [first, second] if r % 2 else [second, first]
            ms = {src: timed(kernels[src], ins, outs) for src in order}
            ratios.append(ms[first] / ms[second])
        print(f"{w.key} parallel={default['parallel']} default={default['b_source']}: {first}/{second} "
              f"{statistics.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}], {second} "
              f"{ms[second] / 1e6:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
