"""Can a K split summed inside a cluster even out the rounds where the tiles fill them unevenly (the space allows a
split only where the tiles are fewer than the SMs; this study lifts that rule for itself)? Candidates beside the
default (persistent WIDE or LARGE tiles) and PyTorch, three interleaved rounds, each checked against PyTorch:
  <tile>_s<k>   the tile (its own stages), split_k = k summed in a cluster of k CTAs, one unit per CTA

    python3 benchmarks/results/2026-12-01-sm90-wide-tiles/split_rounds.py --out $OUT/split.json
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
    "matmul:M=2304,N=2048,K=2048,dtype=bfloat16",  # WIDE 198 tiles: 2 rounds; LARGE 144 x 2 = 288 CTAs: 3 half rounds
    "matmul:M=1536,N=3072,K=2048,dtype=float16",  # WIDE 192; LARGE 144
    "batch_matmul:batch=8,M=768,N=768,K=768,dtype=float16",  # WIDE 192; LARGE 144
    "matmul:M=1536,N=1536,K=1536,dtype=float16",  # WIDE 96 in one round; LARGE 72 x 4 = 288 CTAs: 3 quarter rounds
]


def candidates(w) -> dict:
    d = cc.default_config(w, cc.cuda_target("sm_90a", sm_count=132))
    split = dict(d, persistent=False, group_m=1, cluster=1, split_cluster=True)
    out = {"default": d}
    for name, tile in (("large", g.LARGE), ("wide", g.WIDE), ("mid", g.MID)):
        for k in (2, 4):
            out[f"{name}_s{k}"] = dict(split, **tile, split_k=k)
    return out


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    g.split_constraints = lambda w, target: ()  # this study's candidates split where the tiles fill the SMs
    target = device_target()
    out = []
    for text in CASES:
        w = parse_case(text)
        space = cc.get_space(w, target)
        cands = {k: c for k, c in candidates(w).items() if space.is_valid(c)}
        report(time_candidates(w, cands, target, torch, do_bench, args.rounds), out, args.out)


if __name__ == "__main__":
    main()
