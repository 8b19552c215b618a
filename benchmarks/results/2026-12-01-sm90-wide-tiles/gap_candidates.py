"""Where the round-cost default (WIDE tiles) still stays at 0.80-0.86 of cuBLAS: knobs the rule does not set, beside
the default and PyTorch, three interleaved rounds, each checked against PyTorch:
  wide_cl2    the default with a cluster of two CTAs along M sharing B boxes (TMA multicast)
  wide_np     one CTA per tile (the hardware's block scheduler, not the persistent stride)
  wide_g4/16  other raster groups
  tall        256 x 128 tiles (two consumers of 128 rows): LARGE's area, other tile counts
  large_cl2   LARGE with a cluster of two

    python3 benchmarks/results/2026-12-01-sm90-wide-tiles/gap_candidates.py --out $OUT/gap.json
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
    "matmul:M=2304,N=2048,K=2048,dtype=bfloat16",
    "matmul:M=1536,N=3072,K=2048,dtype=float16",
    "matmul:M=1536,N=1536,K=1536,dtype=float16",
    "batch_matmul:batch=8,M=768,N=768,K=768,dtype=float16",
]


def candidates(w, target, space) -> dict:
    d = cc.default_config(w, target)
    out = {"default": d,
           "wide_cl2": dict(d, cluster=2),
           "wide_np": dict(d, persistent=False),
           "wide_g4": dict(d, group_m=4),
           "wide_g16": dict(d, group_m=16),
           "tall": dict(d, bm=256, bn=128, stages=4),
           "large_cl2": dict(d, **g.LARGE, cluster=2)}
    return {k: c for k, c in out.items() if space.is_valid(c)}


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    target = device_target()
    out = []
    for text in CASES:
        w = parse_case(text)
        report(time_candidates(w, candidates(w, target, cc.get_space(w, target)), target, torch, do_bench,
                               args.rounds), out, args.out)


if __name__ == "__main__":
    main()
