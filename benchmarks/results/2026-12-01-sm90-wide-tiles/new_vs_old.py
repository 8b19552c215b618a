"""The Hopper GEMM default with the round-cost `gemm_sm90.wave_tile` (new: LARGE, WIDE or MID, whichever takes the
least time over its rounds of SMs) against the rule before it (old: LARGE where its tiles fill the SMs, else the
largest of LARGE and MID filling half a wave), PyTorch beside them, five interleaved rounds, each checked against
PyTorch. `UNSEEN` was chosen before this ran; `--all` adds the shapes of tile_candidates.py. Shapes where both
defaults are the same are skipped.

    python3 benchmarks/results/2026-12-01-sm90-wide-tiles/new_vs_old.py --all --out $OUT/final.json
"""
from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tile_candidates  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402

UNSEEN = [  # the new rule's pick in the comments (132 SMs)
    "matmul:M=2048,N=1536,K=1024,dtype=float16",  # WIDE: 128 tiles, one round (LARGE: 96)
    "matmul:M=1664,N=1664,K=1664,dtype=float16",  # WIDE: 117 (LARGE: 91)
    "matmul:M=1200,N=2000,K=2048,dtype=bfloat16",  # WIDE: 110, ragged rows and columns
    "matmul:M=3072,N=2048,K=3072,dtype=float16",  # WIDE: 264, two rounds (LARGE: 192)
    "matmul:M=2304,N=2304,K=2304,dtype=bfloat16",  # WIDE: 216 (LARGE: 162)
    "matmul:M=7168,N=2048,K=2048,dtype=float16",  # WIDE: 616, five rounds against LARGE's four (448 tiles)
    "batch_matmul:batch=12,M=512,N=768,K=1024,dtype=float16",  # WIDE: 192 (LARGE: 144)
    "batch_matmul:batch=4,M=768,N=1024,K=2048,dtype=bfloat16",  # guard: LARGE, 96 in one round (WIDE: 144)
    "matmul:M=1280,N=3840,K=2048,dtype=float16",  # WIDE: 200, two rounds (LARGE: 150)
    "matmul:M=6144,N=1536,K=2048,dtype=float16",  # WIDE: 384, three rounds (LARGE: 288)
    "matmul:M=1920,N=1280,K=4096,dtype=float16",  # WIDE: 105 (LARGE: 75, MID: 150)
    "matmul:M=3584,N=2048,K=2048,dtype=float16",  # guard: LARGE, 224 tiles
    "matmul:M=4096,N=3072,K=2048,dtype=float16",  # guard: LARGE, 384 tiles
]


def old_wave_tile(M: int, N: int, batch: int, sms: int, tile_n: tuple = g.TILE_CHOICES) -> dict:
    """The rule before this one: the largest of LARGE and MID filling half a wave, taken only where LARGE tiles do
    not fill every SM (a whole LARGE wave or more kept LARGE)."""
    if batch * math.prod(g.tiles(M, N, g.LARGE)) >= sms:
        return g.LARGE
    for tile in (g.LARGE, g.MID):
        if batch * math.prod(g.tiles(M, N, tile)) >= g.WAVE_FILL * sms:
            return tile
    return g.SMALL


def defaults(w, target) -> dict:
    new = cc.default_config(w, target)
    rule = g.wave_tile
    g.wave_tile = old_wave_tile
    try:
        old = cc.default_config(w, target)
    finally:
        g.wave_tile = rule
    return {"new": new, "old": old}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--all", action="store_true", help="also the shapes of tile_candidates.py")
    ap.add_argument("--dry", action="store_true", help="print both defaults on a 132-SM sm_90a target; time nothing")
    args = ap.parse_args()
    cases = UNSEEN + (tile_candidates.CASES if args.all else [])
    if args.dry:
        target = cc.cuda_target("sm_90a", sm_count=132)
        for text in cases:
            d = defaults(parse_case(text), target)
            print(text, *(f"{k}={c['bm']}x{c['bn']}s{c['stages']}k{c['split_k']}" for k, c in d.items()))
        return
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
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
