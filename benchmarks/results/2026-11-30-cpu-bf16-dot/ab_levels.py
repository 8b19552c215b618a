"""A/B of the two AVX-512 levels on one host: each case built for `avx512` (x86-64-v3 + AVX-512F) and for
`avx512bf16` (the same + AVX-512 BF16, which brings BW), each with its own default config, checked and timed in
interleaved rounds (benchmarks/cpu_ab.py). A host with AVX-512 BF16 now builds for the second, so every op's
kernels there take its flags: this says what that did to the ops whose source did not change.

    PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-bf16-dot/ab_levels.py \
        "softmax:rows=1024,cols=4096,dtype=bfloat16"

Prints time for avx512 / time for avx512bf16 per case: median [min, max] of 5 rounds (> 1: the new level faster).
"""
import sys

import compiler_core as cc
from benchmarks.cpu_ab import build_variants, case_workload, interleaved_ratios, summary


def main() -> None:
    targets = {isa: cc.cpu_target(isa=isa) for isa in ("avx512", "avx512bf16")}
    for case in sys.argv[1:]:
        w = case_workload(case)
        variants = {isa: (lambda t=t, w=w: cc.build(w, cc.default_config(w, t), t)) for isa, t in targets.items()}
        kernels, inputs, outputs = build_variants(w, None, variants)
        ratios, times = interleaved_ratios(kernels, inputs, outputs, base="avx512")
        print(f"{w.key} {summary(ratios, times, 'avx512')}", flush=True)


if __name__ == "__main__":
    main()
