"""Pointwise (1 x 1, stride 1, unpadded) half conv2d on Hopper where H*W is a multiple of 8: the batched GEMM on
the NCHW tensors, one launch (new: `conv2d_sm90.pointwise_module`) against the im2col path with its X copy (old:
the default before, with the 1 x 1 filter already read in place), cuDNN beside them (cudnn.benchmark on), five
interleaved rounds, each checked against PyTorch. `UNSEEN` was listed before any ran.

    python3 benchmarks/results/2026-12-01-sm90-conv-parts/pointwise.py --out $OUT/pointwise.json
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import conv2d_sm90  # noqa: E402

CASES = [  # ResNet-50's pointwise layers at 56^2 and 28^2
    "conv2d:N=32,C=64,H=56,W=56,K=256,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=256,H=56,W=56,K=64,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=256,H=28,W=28,K=128,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=128,H=28,W=28,K=512,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=16,C=256,H=28,W=28,K=512,R=1,S=1,stride=1,pad=0,dtype=bfloat16",
    "conv2d:N=1,C=256,H=56,W=56,K=64,R=1,S=1,stride=1,pad=0,dtype=float16",
]
UNSEEN = [
    "conv2d:N=8,C=128,H=32,W=32,K=256,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=1,C=512,H=28,W=28,K=128,R=1,S=1,stride=1,pad=0,dtype=bfloat16",
    "conv2d:N=64,C=64,H=56,W=56,K=64,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=16,C=1024,H=16,W=16,K=256,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=4,C=256,H=40,W=40,K=512,R=1,S=1,stride=1,pad=0,dtype=bfloat16",
    "conv2d:N=32,C=512,H=28,W=28,K=128,R=1,S=1,stride=1,pad=0,dtype=float16",
]


def modules(w, target) -> dict:
    """{name: (config, lowered module)}: the pointwise GEMM and the im2col path, each with its own default."""
    new = cc.default_config(w, target)
    rule = conv2d_sm90.pointwise
    conv2d_sm90.pointwise = lambda w: False
    try:
        old = cc.default_config(w, target)
        old_module = cc.lower(w, old, target)
    finally:
        conv2d_sm90.pointwise = rule
    return {"new": (new, cc.lower(w, new, target)), "old": (old, old_module)}


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    target = device_target()
    out = []
    for text in UNSEEN + CASES:
        w = parse_case(text)
        built = modules(w, target)
        row = time_candidates(w, {k: c for k, (c, _m) in built.items()}, target, torch, do_bench, args.rounds,
                              modules={k: m for k, (_c, m) in built.items()})
        pair(row, "new", "old")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
