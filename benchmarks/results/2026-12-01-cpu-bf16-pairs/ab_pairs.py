"""bfloat16 GEMMs on an AVX-512 BF16 target without AMX: the default with pair dot products (gemm_bf16_dot.
PAIRS_DEFAULT) against the FMA default before it, same process, interleaved rounds (benchmarks/cpu_ab.py), each
checked against the float64 reference. From the repository root:

    PYTHONPATH=. python3 benchmarks/results/2026-12-01-cpu-bf16-pairs/ab_pairs.py
"""
from __future__ import annotations

import sys

import compiler_core as cc
from benchmarks.cpu_ab import ab_main

CASES = [
    "matmul:M=512,N=512,K=512,dtype=bfloat16",
    "matmul:M=1024,N=1024,K=1024,dtype=bfloat16",
    "matmul:M=500,N=300,K=200,dtype=bfloat16",
    "matmul:M=64,N=4096,K=1024,dtype=bfloat16",
    "matmul:M=33,N=1000,K=777,dtype=bfloat16",  # odd K: a zero-padded last pair
    "matmul:M=256,N=4096,K=1024,dtype=bfloat16",
    "matmul:M=2048,N=128,K=2048,dtype=bfloat16",
    "batch_matmul:batch=8,M=256,N=256,K=256,dtype=bfloat16",
    "batch_matmul:batch=32,M=128,N=128,K=64,dtype=bfloat16",
    "batch_matmul:batch=3,M=100,N=60,K=513,dtype=bfloat16",
]


def variants_for(w, config, target):
    fma = dict(config, dot="fma")
    if config.get("dot") == "bf16":  # the FMA default of before: its b_source and pack_a by the float32 rules
        from compiler_core.schedules.cpu import gemm_b_source
        from compiler_core.schedules.cpu import gemm_bf16_dot as bf16_dot

        pairs, bf16_dot.PAIRS_DEFAULT = bf16_dot.PAIRS_DEFAULT, {"dot": "fma"}
        try:
            fma = gemm_b_source.default_config(w, target)
        finally:
            bf16_dot.PAIRS_DEFAULT = pairs
    return {"fma": lambda: cc.build(w, fma, target), "pairs": lambda: cc.build(w, config, target)}


if __name__ == "__main__":
    ab_main(variants_for, base="fma", cases=sys.argv[1:] or CASES, rounds=5, seconds=0.2)
