"""A/B of the GEMM's default for very few rows of A: before (the panel microkernel with B read in place, packed where
N is not a multiple of nr: the rule of commit 830367a) / now (B streamed, gemm_streamed), each built and checked,
then timed in interleaved rounds (benchmarks/cpu_ab.py).

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-12-01-cpu-gemm-streamed/default_ab.py \\
        "matmul:M=1,N=4096,K=4096"

Prints before's time / now's: median [min, max] of 5 rounds (> 1: now is faster).
"""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.schedules.cpu import gemm


def variants(w, config, target) -> dict:
    before = gemm.default_config(target, w["M"], w["N"], batch=w.param_dict.get("batch"))
    before["b_source"] = "in_place" if w["N"] % before["nr"] == 0 else "packed"
    if "dot" in config:
        before["dot"] = "fma"
    return {"before": lambda: cc.build(w, before, target), "now": lambda: cc.build(w, config, target)}


if __name__ == "__main__":
    ab_main(variants, base="before", rounds=5)
