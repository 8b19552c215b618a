"""A rule read off the 18 shapes of sk_split.py, to be checked on shapes it has not seen before any default uses it:
K-major stream-K in halves (`stream_k`, `sk_split` = 2) where the partial round's tiles, halved, fit in one round
(2 x (tiles mod SMs) <= SMs). The last round then takes half as long: q + 1/2 rounds instead of q + 1. On the 18
shapes it selects exactly the three that won (1.037-1.135) and none that lost. RULE_UNSEEN were drawn (seed 42)
and listed before any ran: 8 the rule selects, 4 controls it does not (where halves overflow a round).

    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_rule.py --dry   # no GPU: what the rule selects
    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_rule.py --out $OUT/rule.json --rounds 5
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402

RULE_UNSEEN = [  # selected: 2 x rest <= 132 on an H100/H200
    "matmul:M=2816,N=4864,K=6144,dtype=float16",
    "matmul:M=5504,N=2368,K=8192,dtype=bfloat16",
    "matmul:M=6144,N=3712,K=6144,dtype=float16",
    "matmul:M=3200,N=1344,K=6144,dtype=float16",
    "matmul:M=3584,N=1216,K=2048,dtype=float16",
    "matmul:M=3584,N=4032,K=3072,dtype=float16",
    "matmul:M=5888,N=4544,K=6144,dtype=bfloat16",
    "matmul:M=1280,N=3456,K=1024,dtype=float16",
]
RULE_CONTROLS = [  # not selected
    "matmul:M=6144,N=1664,K=1024,dtype=bfloat16",
    "matmul:M=2944,N=2560,K=2048,dtype=float16",
    "matmul:M=5376,N=1472,K=6144,dtype=bfloat16",
    "matmul:M=3712,N=3008,K=2048,dtype=float16",
]


def selects(w, config: dict, sms: int) -> bool:
    """Whether the rule takes K-major halves for `config`'s tiles: more tiles than SMs, a partial round, and its
    tiles' halves within one round."""
    tiles = g.cta_tiles(w["M"], w["N"], config)
    rest = tiles % sms
    return tiles > sms and 0 < 2 * rest <= sms


def candidates(w, target) -> dict:
    d = cc.default_config(w, target)
    halves = dict(d, stream_k=True, sk_split=2)
    space = cc.get_space(w, target)
    return {"default": d, **({"halves": halves} if space.is_valid(halves) else {})}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/dev/null")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dry", action="store_true", help="what the rule selects on a 132-SM H100/H200, no GPU")
    args = ap.parse_args()
    if args.dry:
        target = cc.cuda_target("sm_90a", sm_count=132)
        for text in RULE_UNSEEN + RULE_CONTROLS:
            w = parse_case(text)
            d = cc.default_config(w, target)
            print(w.key, (d["bm"], d["bn"]), "tiles", g.cta_tiles(w["M"], w["N"], d), "selected", selects(w, d, 132))
        return
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
    out = []
    for text in RULE_UNSEEN + RULE_CONTROLS:
        w = parse_case(text)
        row = time_candidates(w, candidates(w, target), target, torch, do_bench, args.rounds)
        row["selected"] = selects(w, row["configs"]["default"], target.sm_count)
        if "halves" in row["times"]:
            pair(row, "halves", "default")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
