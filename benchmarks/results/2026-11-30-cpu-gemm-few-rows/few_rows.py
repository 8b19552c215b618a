"""A/B of B packed against B read in place for GEMMs with few rows of A (benchmarks/cpu_ab.py: each variant built and
checked, then timed in interleaved rounds), with the default config otherwise. Where the target offers bfloat16
pairs (which need B packed), three variants: pairs on packed B, FMAs on B in place, FMAs on packed B.

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-gemm-few-rows/few_rows.py \
        "matmul:M=16,N=2048,K=2048"

Pairs cases run alone (one base variant per call). Prints the first variant's time / each other's: median
[min, max] of 3 rounds (> 1: the other is faster).
"""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main


def variants(w, config, target) -> dict:
    chosen = {"packed": dict(config, b_source="packed"), "in_place": dict(config, b_source="in_place")}
    if "dot" in config:
        chosen = {"pairs_packed": dict(config, b_source="packed", dot="bf16"),
                  "fma_in_place": dict(config, b_source="in_place", dot="fma"),
                  "fma_packed": dict(config, b_source="packed", dot="fma")}
    return {name: (lambda c=c: cc.build(w, c, target)) for name, c in chosen.items()}


if __name__ == "__main__":
    import sys

    from benchmarks.cpu_ab import env_target
    pairs = env_target().bf16_dot and all("bfloat16" in case for case in sys.argv[1:])  # one base for every case
    ab_main(variants, base="pairs_packed" if pairs else "packed", rounds=3)
