"""A/B of B packed once per call (b_source 'packed', the default before) against packed per kc x nc block by
each thread (b_source 'blocks', BLIS's loop order), the default config otherwise; each built and checked, then timed
in interleaved rounds (benchmarks/cpu_ab.py).

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-12-01-cpu-gemm-blocks/blocks_ab.py "matmul:M=64,N=4096,K=4096"

Prints packed's time / blocks': median [min, max] of 3 rounds (> 1: blocks faster).
"""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main


def variants(w, config, target) -> dict:
    fma = {"dot": "fma"} if "dot" in config else {}  # bfloat16: both with FMAs (the pairs pack their own panels)
    chosen = {"packed": dict(config, b_source="packed", **fma), "blocks": dict(config, b_source="blocks", **fma)}
    return {name: (lambda c=c: cc.build(w, c, target)) for name, c in chosen.items()}


if __name__ == "__main__":
    ab_main(variants, base="packed", rounds=3)
