"""The Hopper GEMM default with `gemm_sm90.one_row_tiles` (new) against the rule before it (old: two rows of 64-row
tiles, the split in a workspace) and PyTorch, in interleaved rounds (the order rotating), each checked against
PyTorch. The shapes were chosen before this ran and were not among those the rule was read from
(`rows_candidates.py`). Where the two defaults agree but M is in (64, 128] with a split (the rule declined the one
row: long K ranges), the one-row form it declined is timed beside the default instead; other shapes are skipped.

    python3 benchmarks/results/2026-12-01-skinny-rows/new_vs_old.py --out $OUT/new_vs_old.json
    python3 benchmarks/results/2026-12-01-skinny-rows/new_vs_old.py --all --out $OUT/final.json  # every shape here
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90  # noqa: E402

UNSEEN = [
    "matmul:M=104,N=4096,K=4096,dtype=float16",
    "matmul:M=128,N=3072,K=3072,dtype=bfloat16",
    "matmul:M=90,N=8192,K=2048,dtype=float16",
    "matmul:M=128,N=5120,K=13824,dtype=bfloat16",
    "matmul:M=77,N=4096,K=11008,dtype=float16",
    "matmul:M=128,N=1536,K=6144,dtype=float16",
    "batch_matmul:batch=2,M=128,N=1024,K=8192,dtype=bfloat16",
    "matmul:M=96,N=2560,K=2560,dtype=float16",
    "matmul:M=125,N=4096,K=1024,dtype=float16",
    "matmul:M=112,N=3584,K=18944,dtype=bfloat16",
    "batch_matmul:batch=3,M=100,N=1536,K=2048,dtype=float16",
    "matmul:M=128,N=4864,K=896,dtype=bfloat16",
]


def defaults(w, target) -> dict:
    new = cc.default_config(w, target)
    rule = gemm_sm90.one_row_tiles
    gemm_sm90.one_row_tiles = lambda *a, **k: None
    try:
        old = cc.default_config(w, target)
    finally:
        gemm_sm90.one_row_tiles = rule
    out = {"new": new, "old": old}
    if new == old and 64 < w["M"] <= 128 and old["split_k"] > 1:  # the rule left it: was that right?
        out["one_row"] = gemm_sm90.cluster_split(dict(old, **gemm_sm90.ONE_ROW))
    return out


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--all", action="store_true", help="also the shapes of rows_candidates.py (CASES and MORE)")
    args = ap.parse_args()
    target = device_target()
    out = []
    cases = UNSEEN
    if args.all:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import rows_candidates

        cases = rows_candidates.CASES + rows_candidates.MORE + UNSEEN
    for text in cases:
        w = parse_case(text)
        cands = defaults(w, target)
        if cands["new"] == cands["old"]:
            if "one_row" not in cands:
                print(w.key, "the same default", cands["new"], flush=True)
                out.append({"workload": w.key, "same": cands["new"]})
                continue
            del cands["new"]  # old is the default; one_row is what the rule declined
        row = time_candidates(w, cands, target, torch, do_bench, args.rounds)
        pair(row, "new" if "new" in cands else "one_row", "old")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
