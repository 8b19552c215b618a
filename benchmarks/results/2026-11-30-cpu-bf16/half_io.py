"""Half-typed elementwise chains at each `half_io` choice of the default config (bfloat16: cast, staged; float16
without F16C: bits, staged), built in one process and timed in interleaved rounds (benchmarks/cpu_ab.py): what the
default rules rest on.

    ISA=sse PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-bf16/half_io.py \
        "elementwise:rows=1024,cols=4096,expr=x*2,dtype=bfloat16"

Prints, per case, the first choice's time / staged's: median [min, max] of 5 rounds (> 1: staged is faster).
"""
import sys
from functools import partial

import compiler_core as cc
from benchmarks.cpu_ab import build_variants, case_workload, env_target, interleaved_ratios, summary


def main() -> None:
    target = env_target()
    for case in sys.argv[1:]:
        w = case_workload(case)
        config = cc.default_config(w, target)
        choices = {k.name: k.choices for k in cc.get_space(w, target).knobs}["half_io"]
        variants = {v: partial(cc.build, w, dict(config, half_io=v), target) for v in choices}
        kernels, ins, outs = build_variants(w, target, variants)
        ratios, times = interleaved_ratios(kernels, ins, outs, base=choices[0])
        print(f"{target.arch} {w.key} default {config['half_io']}: {summary(ratios, times, choices[0])}", flush=True)


if __name__ == "__main__":
    main()
