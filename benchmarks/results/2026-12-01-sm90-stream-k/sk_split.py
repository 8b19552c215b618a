"""K-major stream-K pieces (`sk_split` s: each tile of the partial round cut into s K ranges, the pieces ordered by
K range first, so the CTAs running together share A and B panels as a data-parallel round does) against the
ranges over K blocks and the round-cost default, beside PyTorch (cuBLAS), interleaved rounds, each checked against
PyTorch. Each row records `best_split`, the split the balance formula picks for the default's tile; `large_best`
times LARGE tiles at their own pick.

    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_split.py --out $OUT/split.json
    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_split.py --dry   # no GPU: the candidates
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sk_candidates import SEEN, UNSEEN  # noqa: E402
from sk_quanta import UNSEEN_QUANTA  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90_stream_k  # noqa: E402

SPLITS = (2, 3, 4, 6, 8)
PIECE_OVERHEAD = 0.05  # a piece's ring fill and epilogue, in tiles of K work (an estimate, not fitted)


def best_split(tiles: int, ctas: int, k_blocks: int) -> int:
    """The split whose longest run (data-parallel rounds plus ceil(pieces / CTAs) pieces) is shortest."""
    rest = tiles % ctas

    def cost(s: int) -> float:
        runs = -(-rest * s // ctas)
        return runs / s + runs * PIECE_OVERHEAD

    return min((s for s in SPLITS if s <= k_blocks), key=lambda s: (cost(s), s), default=0)


def lower(w, config: dict, target, split: int):
    """cc.lower with the kernel's sk_split set (a study parameter the space does not have)."""
    plain = g.hopper_config
    g.hopper_config = lambda c, batch=1: dataclasses.replace(plain(c, batch), sk_split=split)
    try:
        return cc.lower(w, config, target)
    finally:
        g.hopper_config = plain


def candidates(w, target) -> dict:
    """{name: (config, split)}."""
    space = cc.get_space(w, target)
    d = cc.default_config(w, target)
    sk = dict(d, stream_k=True)
    out = {"default": (d, 0)}
    if not space.is_valid(sk):
        return out
    ctas, k_blocks = gemm_sm90_stream_k.stream_k_ctas(target), -(-w["K"] // g.K_BLOCK)
    out["default_k"] = (sk, 0)
    for s in SPLITS:
        if s <= k_blocks:
            out[f"default_s{s}"] = (sk, s)
    large = dict(d, **g.LARGE, stream_k=True)
    if space.is_valid(large) and large != sk:
        out["large_best"] = (large, best_split(g.cta_tiles(w["M"], w["N"], large), ctas, k_blocks))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/dev/null")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dry", action="store_true", help="list the candidates for a 132-SM H100/H200, no GPU")
    args = ap.parse_args()
    if args.dry:
        target = cc.cuda_target("sm_90a", sm_count=132)
        for text in SEEN + UNSEEN + UNSEEN_QUANTA:
            w = parse_case(text)
            cands = candidates(w, target)
            for config, split in cands.values():
                lower(w, config, target, split)
            print(w.key, {k: (c["bm"], c["bn"], s) for k, (c, s) in cands.items()})
        return
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
    out = []
    for text in SEEN + UNSEEN + UNSEEN_QUANTA:
        w = parse_case(text)
        cands = candidates(w, target)
        modules = {k: lower(w, c, target, s) for k, (c, s) in cands.items()}
        row = time_candidates(w, {k: c for k, (c, _s) in cands.items()}, target, torch, do_bench, args.rounds,
                              modules=modules)
        row["splits"] = {k: s for k, (_c, s) in cands.items()}
        if "default_k" in cands:
            d = cands["default"][0]
            row["best_split"] = best_split(g.cta_tiles(w["M"], w["N"], d), gemm_sm90_stream_k.stream_k_ctas(target),
                                           -(-w["K"] // g.K_BLOCK))
        for name in list(row["times"]):
            if name not in ("default", "torch"):
                pair(row, name, "default")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
