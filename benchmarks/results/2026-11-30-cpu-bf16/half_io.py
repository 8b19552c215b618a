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
from benchmarks.cpu_ab import ab_main, case_workload, env_target


def variants(w, config, target) -> dict:
    choices = {k.name: k.choices for k in cc.get_space(w, target).knobs}["half_io"]
    return {v: partial(cc.build, w, dict(config, half_io=v), target) for v in choices}


def main() -> None:
    for case in sys.argv[1:]:  # the base: the knob's first choice, which differs between the half types
        w = case_workload(case)
        ab_main(variants, base={k.name: k.choices for k in cc.get_space(w, env_target()).knobs}["half_io"][0],
                cases=[case])

if __name__ == "__main__":
    main()
