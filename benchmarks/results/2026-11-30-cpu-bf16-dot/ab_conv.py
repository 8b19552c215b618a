"""A/B of bfloat16 conv2d's paths on an AVX-512 BF16 host: the padded image read in place with FMAs, im2col panels
with FMAs, and im2col panels packed as bfloat16 pairs (gemm_bf16_dot), the default config otherwise, each built,
checked and timed in interleaved rounds (benchmarks/cpu_ab.py): where tuning should take the pairs for conv2d.

    PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-bf16-dot/ab_conv.py \
        "conv2d:N=8,C=128,H=28,W=28,K=128,R=3,S=3,pad=1,dtype=bfloat16"

Prints time padded with FMAs / each other's: median [min, max] of 3 rounds (> 1: the other is faster).
"""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main


def variants(w, config, target) -> dict:
    chosen = {"padded_fma": dict(config, b_source="padded", dot="fma"),
              "im2col_fma": dict(config, b_source="im2col", dot="fma"),
              "im2col_pairs": dict(config, b_source="im2col", dot="bf16")}
    space = cc.get_space(w, target)
    return {name: (lambda c=c: cc.build(w, c, target)) for name, c in chosen.items() if space.is_valid(c)}


if __name__ == "__main__":
    ab_main(variants, base="padded_fma", rounds=3)
