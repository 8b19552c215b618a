"""The Hopper conv2d's epilogue where an output's runs are short (P*Q odd: single elements; P*Q = 196: runs of 4):
16-byte segments per lane, each run a store (vector: the write-out before), against a row at a time with
consecutive lanes on consecutive outputs (element: sm90_gemm_text.ELEMENT_WRITE_OUT), cuDNN beside them, five
interleaved rounds, each checked against PyTorch. `UNSEEN` was listed before any ran.

    python3 benchmarks/results/2026-12-01-sm90-conv-parts/epilogue_runs.py --out $OUT/epilogue.json
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.codegen import sm90_conv  # noqa: E402

CASES = [
    "conv2d:N=32,C=512,H=7,W=7,K=2048,R=1,S=1,stride=1,pad=0,dtype=float16",  # 7^2: runs of 1
    "conv2d:N=32,C=2048,H=7,W=7,K=512,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=512,H=7,W=7,K=512,R=3,S=3,stride=1,pad=1,dtype=float16",
    "conv2d:N=1,C=512,H=7,W=7,K=2048,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=1024,H=14,W=14,K=256,R=1,S=1,stride=1,pad=0,dtype=float16",  # 14^2: runs of 4
    "conv2d:N=32,C=256,H=14,W=14,K=1024,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=256,H=14,W=14,K=256,R=3,S=3,stride=1,pad=1,dtype=float16",
]
UNSEEN = [
    "conv2d:N=8,C=512,H=7,W=7,K=512,R=3,S=3,stride=1,pad=1,dtype=bfloat16",
    "conv2d:N=16,C=1024,H=14,W=14,K=2048,R=1,S=1,stride=2,pad=0,dtype=float16",  # 7^2 outputs
    "conv2d:N=32,C=192,H=35,W=35,K=192,R=3,S=3,stride=1,pad=1,dtype=float16",  # 35^2: runs of 1
    "conv2d:N=64,C=384,H=13,W=13,K=384,R=3,S=3,stride=1,pad=1,dtype=bfloat16",  # 13^2: runs of 1
]


def modules(w, target) -> dict:
    config = cc.default_config(w, target)
    rule = sm90_conv.ELEMENT_RUN_MAX
    out = {}
    try:
        for name, run_max in (("vector", 0), ("element", 4)):
            sm90_conv.ELEMENT_RUN_MAX = run_max
            out[name] = cc.lower(w, config, target)
    finally:
        sm90_conv.ELEMENT_RUN_MAX = rule
    return config, out


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
        config, built = modules(w, target)
        row = time_candidates(w, dict.fromkeys(built, config), target, torch, do_bench, args.rounds, modules=built)
        pair(row, "element", "vector")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
