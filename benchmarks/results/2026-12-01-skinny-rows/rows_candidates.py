"""Candidate Hopper GEMM defaults for 64 < M <= 128 rows (prefill chunks, mid-size batches), each beside today's default
and PyTorch in three interleaved rounds (the order rotating), checked against PyTorch.

Today's rule takes SMALL tiles (64 x 128) there: two tile rows, so the split stays in a workspace and a second kernel
sums it (`gemm_sm90.cluster_split` applies to one tile row only). The grid of 2026-11-30 found 128 x 64 tiles, one
row, with the split summed in a cluster, 0.977 of cuBLAS on 128 x 4096^2 against the default's 0.815
(`../2026-11-30-split-cluster/h200-grid-three-shapes.json`). Candidates, from the default `d`:
  r128_c1      bm 128, bn 64, one consumer warpgroup; the workspace rule's split for those tiles, then the default's
               one-row treatment (`cluster_split`: half that split, at least 2, summed in a cluster, 8 stages)
  r128_c2      the same with two consumer warpgroups
  r128_c2_ws   bm 128, bn 64, two consumers, the split left in a workspace (the tile change alone)
  r128_c2_full bm 128, bn 64, two consumers, the workspace rule's whole split (when above 2) summed in a cluster
Shapes with M <= 64 or M > 128 are run too, as guards: there the candidates are the default's own tiles.

    python3 benchmarks/results/2026-12-01-skinny-rows/rows_candidates.py --out $OUT/rows.json
    python3 benchmarks/results/2026-12-01-skinny-rows/rows_candidates.py --more --out $OUT/more.json
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402

CASES = [
    *(f"matmul:M={m},N=4096,K=4096,dtype=float16" for m in (72, 96, 112, 128)),
    "matmul:M=128,N=4096,K=4096,dtype=bfloat16",
    "matmul:M=96,N=14336,K=4096,dtype=bfloat16",  # an MLP's up projection
    "matmul:M=128,N=4096,K=14336,dtype=float16",  # its down projection
    "matmul:M=80,N=8192,K=8192,dtype=float16",
    "matmul:M=128,N=11008,K=4096,dtype=bfloat16",
    "matmul:M=100,N=2048,K=8192,dtype=float16",
    "matmul:M=128,N=1024,K=1024,dtype=float16",
    "batch_matmul:batch=4,M=128,N=1024,K=4096,dtype=float16",
    "matmul:M=64,N=4096,K=4096,dtype=float16",  # guards: the rule is unchanged there
    "matmul:M=200,N=2048,K=8192,dtype=float16",
]
MORE = [  # the second run: shapes the first did not try, chosen before it ran
    *(f"matmul:M={m},N=4096,K=4096,dtype=bfloat16" for m in (65, 80, 120)),
    "matmul:M=100,N=2048,K=8192,dtype=bfloat16",
    "matmul:M=128,N=2048,K=2048,dtype=float16",
    "matmul:M=96,N=3072,K=8192,dtype=float16",
    "matmul:M=128,N=6144,K=4096,dtype=float16",
    "matmul:M=112,N=5120,K=5120,dtype=bfloat16",
    "matmul:M=128,N=2048,K=16384,dtype=float16",
    "batch_matmul:batch=2,M=96,N=2048,K=4096,dtype=bfloat16",
]


def candidates(w, target, space) -> dict:
    d = cc.default_config(w, target)
    out = {"default": d}
    if not 64 < w["M"] <= 128:
        return out
    sms = target.sm_count or g.NOMINAL_SM_COUNT
    k_blocks = -(-w["K"] // g.K_BLOCK)
    for name, consumers in (("r128_c1", 1), ("r128_c2", 2)):
        c = dict(d, bm=128, bn=64, consumers=consumers, split_cluster=False, group_m=1)  # one row: no groups
        c["split_k"] = g.split_k_rule(g.batch_of(w) * g.cta_tiles(w["M"], w["N"], c), k_blocks, sms,
                                      lambda k, c=c: space.is_valid(dict(c, split_k=k)))
        if name == "r128_c2" and space.is_valid(c):
            out["r128_c2_ws"] = dict(c)
        if name == "r128_c2" and c["split_k"] > 2:
            out["r128_c2_full"] = dict(c, split_cluster=True, persistent=False, stages=8)
        if c["split_k"] > 1:
            c = g.cluster_split(c)
        out[name] = c
    return {k: c for k, c in out.items() if space.is_valid(c)}


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--more", action="store_true", help="the second run's shapes (MORE) instead of CASES")
    args = ap.parse_args()
    target = device_target()
    out = []
    for text in MORE if args.more else CASES:
        w = parse_case(text)
        cands = candidates(w, target, cc.get_space(w, target))
        row = time_candidates(w, cands, target, torch, do_bench, args.rounds)
        ratios = row["ratios"]  # the stored files of 2026-12-01 hold these three forms of them
        row.update(ratio_median={n: statistics.median(v) for n, v in ratios.items()},
                   ratio_min={n: min(v) for n, v in ratios.items()}, ratio_max={n: max(v) for n, v in ratios.items()})
        report(row, out, args.out)


if __name__ == "__main__":
    main()
