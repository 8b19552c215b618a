"""bfloat16 conv2d on an AVX-512 BF16 target without AMX: the FMA default (conv2d.fma_default: the folded batch or
the padded / im2col path) against the same path with pair dot products (gemm_bf16_dot.PAIRS), one process,
interleaved rounds (benchmarks/cpu_ab.py), each checked against the float64 reference. From the repository root:

    PYTHONPATH=. python3 benchmarks/results/2026-12-01-cpu-bf16-pairs/ab_conv_pairs.py
"""
from __future__ import annotations

import sys

import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.ops.conv2d import out_size
from compiler_core.schedules.cpu import conv2d, gemm, gemm_bf16_dot

CASES = [
    "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,dtype=bfloat16",
    "conv2d:N=8,C=128,H=28,W=28,K=128,R=3,S=3,pad=1,dtype=bfloat16",
    "conv2d:N=1,C=256,H=14,W=14,K=256,R=1,S=1,dtype=bfloat16",
    "conv2d:N=8,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,dtype=bfloat16",
    "conv2d:N=8,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,dtype=bfloat16",
    "conv2d:N=4,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,dtype=bfloat16",
    "conv2d:N=1,C=128,H=56,W=56,K=128,R=3,S=3,stride=2,pad=1,dtype=bfloat16",
    "conv2d:N=2,C=64,H=112,W=112,K=64,R=3,S=3,pad=1,dtype=bfloat16",
]


def _paths(w, target) -> tuple[dict, dict]:
    """(the FMA default, the same path with pairs), from the padded / im2col config the default starts from."""
    P, Q = out_size(w)
    padded = w["R"] * w["S"] >= w["stride"] ** 2 and conv2d.padded_bytes(w) <= conv2d.PADDED_DEFAULT_MAX_BYTES
    start = dict(gemm.default_config(target, w["K"], P * Q, batch=w["N"], dtype=w.dtype),
                 b_source="padded" if padded else "im2col")
    return conv2d.fma_default(w, target, start), dict(start, **gemm_bf16_dot.PAIRS)


def variants_for(w, config, target):
    fma, pairs = _paths(w, target)
    return {"fma": lambda: cc.build(w, fma, target), "pairs": lambda: cc.build(w, pairs, target)}


if __name__ == "__main__":
    ab_main(variants_for, base="fma", cases=sys.argv[1:] or CASES, rounds=5, seconds=0.2)
