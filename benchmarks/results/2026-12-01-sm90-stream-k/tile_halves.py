"""The tile choice that knows the halves: `gemm_sm90.wave_tile` costs a last round the default cuts into K-major
halves at HALVES_LAST_ROUND (0.8) of a whole one (new), against the choice that costs every round whole and then
applies the halves rule to the tile it took (old). Shapes drawn (seed 23) among those where the two choices differ,
listed by --dry before any ran; each pair in interleaved rounds beside PyTorch.

    python3 benchmarks/results/2026-12-01-sm90-stream-k/tile_halves.py --dry
    python3 benchmarks/results/2026-12-01-sm90-stream-k/tile_halves.py --out $OUT/tile-halves.json --rounds 5
"""
from __future__ import annotations

import argparse
import os
import random
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402

SHAPES = 10


def old_default(w, target) -> dict:
    """The default with every round costed whole (the halves rule still applied to the tile it takes)."""
    rule = g.wave_tile
    g.wave_tile = lambda M, N, batch, sms, tile_n=g.TILE_CHOICES, k_blocks=0, halves=False: rule(M, N, batch, sms,
                                                                                                   tile_n)
    try:
        return cc.default_config(w, target)
    finally:
        g.wave_tile = rule


def draw(target, seed: int = 23) -> list[str]:
    rng, out = random.Random(seed), []
    while len(out) < SHAPES:
        M, N = rng.randrange(1024, 8193, 64), rng.randrange(1024, 8193, 64)
        K = rng.choice((2048, 3072, 4096, 6144, 8192))
        text = f"matmul:M={M},N={N},K={K},dtype={rng.choice(('float16', 'bfloat16'))}"
        w = parse_case(text)
        if cc.default_config(w, target) != old_default(w, target):
            out.append(text)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/dev/null")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dry", action="store_true", help="the draw on a 132-SM H100/H200, no GPU")
    args = ap.parse_args()
    if args.dry:
        target = cc.cuda_target("sm_90a", sm_count=132)
        for text in draw(target):
            w = parse_case(text)
            new, old = cc.default_config(w, target), old_default(w, target)
            print(text, "new", (new["bm"], new["bn"], new["stream_k"]), "old", (old["bm"], old["bn"], old["stream_k"]))
        return
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
    out = []
    for text in draw(target):
        w = parse_case(text)
        row = time_candidates(w, {"new": cc.default_config(w, target), "old": old_default(w, target)}, target,
                              torch, do_bench, args.rounds)
        pair(row, "new", "old")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
