"""A/B of the CPU GEMM's multiply-adds for bfloat16: float32 FMAs on converted panels (`dot` fma) against AVX-512
BF16 pair dot products (`dot` bf16), the default config otherwise, built for the AVX-512 BF16 target, checked and
timed in interleaved rounds (benchmarks/cpu_ab.py).

    ISA=avx512bf16 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-bf16-dot/ab_dot.py \
        "matmul:M=512,N=512,K=512,dtype=bfloat16"

Prints, per case, time with FMAs / time with pair dot products: median [min, max] of 5 rounds (> 1: pairs faster).
"""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main


def variants(w, config, target) -> dict:
    return {dot: (lambda dot=dot: cc.build(w, dict(config, dot=dot), target)) for dot in ("fma", "bf16")}


if __name__ == "__main__":
    ab_main(variants, base="fma")
