"""conv2d's B sources on one host: im2col panels against the padded image read in place (b_source), the default
config otherwise, compiled for the ISA in $ISA (the host's when unset), 5 interleaved rounds.

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-conv-padded/ab_b_source.py \
        "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1"

Prints im2col time / padded time (> 1: padded is faster), median [min, max].
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
        kernels = {src: cc.build(w, dict(default, b_source=src), target) for src in ("im2col", "padded")}
        ratios, ms = [], {}
        for r in range(5):
            order = ["im2col", "padded"] if r % 2 else ["padded", "im2col"]
            ms = {src: timed(kernels[src], ins, outs) for src in order}
            ratios.append(ms["im2col"] / ms["padded"])
        print(f"{w.key} parallel={default['parallel']}: im2col/padded {statistics.median(ratios):.2f} "
              f"[{min(ratios):.2f}, {max(ratios):.2f}], padded {ms['padded'] / 1e6:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
