"""A/B of B streamed row by row (gemm_streamed) against B read in place by the panel microkernel, and the streamed
walk's rows of B per step (mr) and columns per step (nr), for GEMMs with few rows of A (benchmarks/cpu_ab.py: each
variant built and checked, then timed in interleaved rounds), with the default config otherwise.

    ISA=avx2 PYTHONPATH=. python3 benchmarks/results/2026-12-01-cpu-gemm-streamed/streamed_ab.py \
        "matmul:M=1,N=4096,K=4096"

Prints the panel path's time / each other's: median [min, max] of 3 rounds (> 1: the other is faster).
"""
import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.schedules.cpu.gemm import _registers_needed


def variants(w, config, target) -> dict:
    base = dict(config, b_source="in_place" if w["N"] % config["nr"] == 0 else "packed")
    if "dot" in base:
        base["dot"] = "fma"
    lanes, registers = target.vector_lanes_f32, target.vector_registers
    chosen = {"panels": base}
    for mr in (2, 4, 6, 8):
        for nv in (1, 2, 4):
            if _registers_needed(mr, nv) <= registers:
                chosen[f"streamed_{mr}x{nv * lanes}"] = dict(base, b_source="streamed", pack_a=0, order="jr_ir", mr=mr,
                                                             nr=nv * lanes, mc=96 if 96 % mr == 0 else 64)
    return {name: (lambda c=c: cc.build(w, c, target)) for name, c in chosen.items()}


if __name__ == "__main__":
    ab_main(variants, base="panels", rounds=3)
