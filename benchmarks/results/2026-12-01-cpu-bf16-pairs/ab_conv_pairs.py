"""conv2d bfloat16 on an AVX-512 BF16 target without AMX: the FMA default (the folded or padded path) against the
same default with pair dot products (what conv2d.PAIRS_DEFAULT now takes where one image's GEMM is wider than a panel),
interleaved rounds (benchmarks/cpu_ab.py). Run before the rule: it patches with_default to pairs.

    PYTHONPATH=. python3 benchmarks/results/2026-12-01-cpu-bf16-pairs/ab_conv_pairs.py
"""
import sys

import compiler_core as cc
from benchmarks.cpu_ab import ab_main
from compiler_core.schedules.cpu import gemm_bf16_dot as bf16_dot

CASES = ["conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,dtype=bfloat16",
         "conv2d:N=8,C=128,H=28,W=28,K=128,R=3,S=3,pad=1,dtype=bfloat16",
         "conv2d:N=1,C=256,H=14,W=14,K=256,R=1,S=1,dtype=bfloat16",
         "conv2d:N=8,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,dtype=bfloat16",
         "conv2d:N=8,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,dtype=bfloat16",
         "conv2d:N=4,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,dtype=bfloat16",
         "conv2d:N=1,C=128,H=56,W=56,K=128,R=3,S=3,stride=2,pad=1,dtype=bfloat16",
         "conv2d:N=2,C=64,H=112,W=112,K=64,R=3,S=3,pad=1,dtype=bfloat16"]

def pairs_default(w, target):
    old = bf16_dot.with_default
    bf16_dot.with_default = lambda config, dtype, t: dict(config, dot="bf16", pack_a=1) if bf16_dot.offered(dtype, t) else config
    try:
        return cc.default_config(w, target)
    finally:
        bf16_dot.with_default = old

def variants_for(w, config, target):
    p = pairs_default(w, target)
    print(" pairs config:", p, file=sys.stderr)
    return {"default": lambda: cc.build(w, config, target), "pairs": lambda: cc.build(w, p, target)}

ab_main(variants_for, base="default", cases=sys.argv[1:] or CASES, rounds=5, seconds=0.2)
