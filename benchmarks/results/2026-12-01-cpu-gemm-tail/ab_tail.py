"""The CPU GEMM's narrow last column tile (`gemm_fma.tail_vectors`) against a full-width one, same config, one process,
interleaved rounds (benchmarks/cpu_ab.py): 'full' builds with the tail kernel switched off. ISA=avx2 (or sse, avx512)
builds for that ISA. From the repository root:

    PYTHONPATH=. python3 benchmarks/results/2026-12-01-cpu-gemm-tail/ab_tail.py
"""
from __future__ import annotations

import sys
from contextlib import contextmanager

import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.schedules.cpu import gemm_fma

CASES = [
    "conv2d:N=8,C=512,H=7,W=7,K=512,R=3,S=3,pad=1",  # folded: 453 columns, the last panel 5 of 64
    "conv2d:N=8,C=256,H=14,W=14,K=256,R=3,S=3,pad=1",
    "conv2d:N=1,C=512,H=7,W=7,K=512,R=3,S=3,pad=1",  # one image, padded: 63 columns
    "matmul:M=512,N=1000,K=512",
    "matmul:M=256,N=100,K=1024",
    "batch_matmul:batch=8,M=128,N=840,K=1152",
    "matmul:M=384,N=200,K=384",
]


@contextmanager
def full_width():
    rule = gemm_fma.tail_vectors
    gemm_fma.tail_vectors = lambda ops, plan: 0
    try:
        yield
    finally:
        gemm_fma.tail_vectors = rule


def variants_for(w, config, target):
    def full():
        with full_width():
            return cc.build(w, config, target)

    return {"full": full, "tail": lambda: cc.build(w, config, target)}


if __name__ == "__main__":
    ab_main(variants_for, base="full", cases=sys.argv[1:] or CASES, rounds=7, seconds=0.2)
