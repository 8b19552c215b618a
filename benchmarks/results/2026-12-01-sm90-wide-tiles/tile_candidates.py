"""Hopper GEMM tiles where the default's tile count fills its last wave of SMs badly: 128 x 256 (LARGE) tiles
filling 50-76 % of their last round, where 128 x 192 (WIDE: three B boxes, new in the space) or 128 x 128 (MID)
tiles would fill it better. Candidates beside today's default and PyTorch, interleaved rounds, each checked against
PyTorch (all persistent, grouped raster, two consumer warpgroups):
  large     LARGE, 4 stages
  wide4     128 x 192, 4 stages
  wide5     128 x 192, 5 stages (the most that fit)
  mid       MID, 6 stages

    python3 benchmarks/results/2026-12-01-sm90-wide-tiles/tile_candidates.py --out $OUT/tiles.json
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

CASES = [  # LARGE tiles / rounds on 132 SMs in the comments
    "matmul:M=1536,N=1536,K=1536,dtype=float16",  # 72, 1 round (55 %)
    "matmul:M=1280,N=2048,K=2048,dtype=float16",  # 80 (61 %)
    "matmul:M=1024,N=2560,K=1024,dtype=bfloat16",  # 80 (61 %)
    "matmul:M=1536,N=2048,K=4096,dtype=float16",  # 96 (73 %); 132 WIDE tiles fill it
    "matmul:M=1408,N=1408,K=4096,dtype=float16",  # 66 (50 %); 121 MID tiles
    "batch_matmul:batch=8,M=768,N=768,K=768,dtype=float16",  # 144, 2 rounds (last 9 %)
    "matmul:M=1536,N=3072,K=2048,dtype=float16",  # 144
    "matmul:M=2304,N=2048,K=2048,dtype=bfloat16",  # 144
    "matmul:M=2816,N=2048,K=2048,dtype=float16",  # 176
    "matmul:M=1536,N=4096,K=4096,dtype=float16",  # 192
    "matmul:M=3072,N=3072,K=2048,dtype=float16",  # 288, 3 rounds
    "matmul:M=5120,N=2048,K=2048,dtype=float16",  # 320
    "matmul:M=1792,N=2304,K=2048,dtype=float16",  # 126, 1 round (95 %): guard
    "matmul:M=2560,N=2560,K=2560,dtype=float16",  # 200 (76 % of 2 rounds): WIDE needs 3 rounds
    "matmul:M=4096,N=4096,K=4096,dtype=float16",  # 512: guard
]


def candidates(w, target, space) -> dict:
    d = cc.default_config(w, target)
    base = dict(d, persistent=True, consumers=2, group_m=8, split_k=1, split_cluster=False)
    out = {"default": d,
           "large": dict(base, **g.LARGE),
           "wide4": dict(base, bm=128, bn=192, stages=4),
           "wide5": dict(base, bm=128, bn=192, stages=5),
           "mid": dict(base, **g.MID)}
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
    ap.add_argument("--cases", default="", help="comma-separated indices into CASES (default: all)")
    args = ap.parse_args()
    target = device_target()
    picked = [CASES[int(i)] for i in args.cases.split(",")] if args.cases else CASES
    out = []
    for text in picked:
        w = parse_case(text)
        cands = candidates(w, target, cc.get_space(w, target))
        report(time_candidates(w, cands, target, torch, do_bench, args.rounds), out, args.out)


if __name__ == "__main__":
    main()
