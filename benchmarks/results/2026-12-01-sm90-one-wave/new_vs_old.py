"""The Hopper GEMM default with `gemm_sm90.wave_tile` (new) against the rule before it (old: SMALL tiles wherever
LARGE ones do not fill a whole wave), PyTorch beside them, five interleaved rounds, each checked against PyTorch.
`UNSEEN` was chosen before this ran; `--all` adds the shapes of wave_candidates.py. Shapes where both defaults are
the same are skipped.

    python3 benchmarks/results/2026-12-01-sm90-one-wave/new_vs_old.py --all --out $OUT/final.json
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import wave_candidates  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90  # noqa: E402

UNSEEN = [
    "matmul:M=1024,N=1536,K=2048,dtype=float16",  # MID: 96 tiles
    "matmul:M=768,N=2048,K=4096,dtype=bfloat16",  # MID: 96
    "matmul:M=1024,N=2560,K=1024,dtype=float16",  # LARGE: 80
    "matmul:M=2560,N=1536,K=2048,dtype=float16",  # LARGE: 120
    "batch_matmul:batch=3,M=1024,N=1024,K=2048,dtype=bfloat16",  # LARGE: 96
    "matmul:M=896,N=2048,K=2048,dtype=float16",  # MID: 112
    "matmul:M=1280,N=1280,K=5120,dtype=bfloat16",  # MID: 100
    "matmul:M=1792,N=1792,K=1792,dtype=float16",  # LARGE: 98
    "batch_matmul:batch=2,M=768,N=1536,K=1024,dtype=float16",  # LARGE: 72
    "matmul:M=640,N=2048,K=2048,dtype=float16",  # MID: 80
    "matmul:M=512,N=2048,K=2048,dtype=float16",  # unchanged: MID 64 < 66
    "matmul:M=1024,N=1024,K=1024,dtype=float16",  # unchanged
]


def defaults(w, target) -> dict:
    new = cc.default_config(w, target)
    rule = gemm_sm90.wave_tile
    gemm_sm90.wave_tile = lambda *a, **k: gemm_sm90.SMALL
    try:
        old = cc.default_config(w, target)
    finally:
        gemm_sm90.wave_tile = rule
    return {"new": new, "old": old}


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--all", action="store_true", help="also the shapes of wave_candidates.py")
    args = ap.parse_args()
    target = device_target()
    cases = UNSEEN + (wave_candidates.CASES + wave_candidates.BELOW if args.all else [])
    out = []
    for text in cases:
        w = parse_case(text)
        cands = defaults(w, target)
        if cands["new"] == cands["old"]:
            print(w.key, "the same default", cands["new"], flush=True)
            out.append({"workload": w.key, "same": cands["new"]})
            continue
        row = time_candidates(w, cands, target, torch, do_bench, args.rounds)
        pair(row, "new", "old")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
