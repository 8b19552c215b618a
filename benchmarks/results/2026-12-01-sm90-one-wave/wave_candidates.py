"""Hopper GEMM tiles where LARGE (128 x 256) tiles number just under one wave of SMs (96-131 on 132 SMs): the size
rule then takes SMALL (64 x 128) tiles, four times as many, over about four rounds of a persistent grid. Candidates
beside today's default and PyTorch, three interleaved rounds, each checked against PyTorch:
  large      LARGE tiles (two consumers, 4 stages), persistent, grouped raster: one round, some SMs idle
  large_np   the same, one CTA per tile
  mid        128 x 128 tiles, two consumers, 6 stages, persistent

    python3 benchmarks/results/2026-12-01-sm90-one-wave/wave_candidates.py --out $OUT/wave.json
    python3 benchmarks/results/2026-12-01-sm90-one-wave/wave_candidates.py --below --out $OUT/below.json
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402

CASES = [
    "batch_matmul:batch=16,M=512,N=512,K=512,dtype=float16",
    "batch_matmul:batch=12,M=512,N=512,K=1024,dtype=bfloat16",
    "matmul:M=2048,N=2048,K=2048,dtype=float16",
    "matmul:M=2048,N=2048,K=8192,dtype=bfloat16",
    "matmul:M=1792,N=2048,K=4096,dtype=float16",
    "matmul:M=2048,N=1792,K=2048,dtype=float16",
    "batch_matmul:batch=8,M=512,N=1024,K=512,dtype=float16",
    "matmul:M=1536,N=2560,K=4096,dtype=float16",
    "matmul:M=1024,N=4096,K=1024,dtype=bfloat16",
    "batch_matmul:batch=4,M=1024,N=1024,K=1024,dtype=float16",
    "matmul:M=2048,N=2048,K=1024,dtype=bfloat16",
    "matmul:M=1920,N=2048,K=2048,dtype=float16",
]
BELOW = [  # the second run: LARGE tiles filling 48-67 % of a wave, and shapes not tried before (73-79 %)
    "matmul:M=1024,N=2048,K=2048,dtype=float16",  # 64 LARGE tiles
    "matmul:M=1152,N=2048,K=4096,dtype=bfloat16",  # 72
    "matmul:M=1280,N=2048,K=2048,dtype=float16",  # 80
    "matmul:M=1408,N=2048,K=8192,dtype=float16",  # 88
    "batch_matmul:batch=5,M=512,N=1024,K=1024,dtype=float16",  # 80
    "batch_matmul:batch=6,M=512,N=1024,K=512,dtype=bfloat16",  # 96
    "matmul:M=1664,N=2048,K=2048,dtype=float16",  # 104
    "matmul:M=2048,N=1280,K=4096,dtype=bfloat16",  # 80
    "matmul:M=1536,N=1536,K=1536,dtype=float16",  # 72
]


def candidates(w, target, space) -> dict:
    d = cc.default_config(w, target)
    out = {"default": d,
           "large": dict(d, **g.LARGE, persistent=True),
           "large_np": dict(d, **g.LARGE, persistent=False),
           "mid": dict(d, bm=128, bn=128, consumers=2, stages=6, persistent=True)}
    for c in out.values():
        if not space.is_valid(c):
            c["group_m"] = 1
    return {k: c for k, c in out.items() if space.is_valid(c)}


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--below", action="store_true", help="the second run's shapes (BELOW) instead of CASES")
    args = ap.parse_args()
    target = device_target()
    out = []
    for text in BELOW if args.below else CASES:
        w = parse_case(text)
        cands = candidates(w, target, cc.get_space(w, target))
        report(time_candidates(w, cands, target, torch, do_bench, args.rounds), out, args.out)


if __name__ == "__main__":
    main()
