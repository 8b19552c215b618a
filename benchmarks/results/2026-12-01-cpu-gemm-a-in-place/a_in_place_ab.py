"""A/B of A packed into mr x kc panels (pack_a 1) against read in place (pack_a 0), the default config otherwise (the
streamed few-rows path, which reads A in place anyway, is skipped); each built and checked, then timed in interleaved
rounds (benchmarks/cpu_ab.py).

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-12-01-cpu-gemm-a-in-place/a_in_place_ab.py \\
        "matmul:M=1024,N=64,K=4096"

Prints packed's time / in place's: median [min, max] of 3 rounds (> 1: in place faster).
"""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main


def variants(w, config, target) -> dict:
    if config.get("b_source") == "streamed":
        return {}
    chosen = {"packed": dict(config, pack_a=1), "in_place": dict(config, pack_a=0)}
    return {name: (lambda c=c: cc.build(w, c, target)) for name, c in chosen.items()}


if __name__ == "__main__":
    ab_main(variants, base="packed", rounds=3)
