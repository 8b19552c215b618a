"""The implicit-GEMM conv2d on Hopper (conv2d_sm90) with the GEMMs' round-cost tile rule (`fill_wave`: LARGE, WIDE
or MID, whichever takes least time over its rounds of SMs) against its own size rule (LARGE where its tiles fill the
SMs, else SMALL; the conv's default before this study), cuDNN beside them (cudnn.benchmark on), five interleaved
rounds, each checked against PyTorch. Layers where both rules pick the same config are skipped. `UNSEEN` layers were
listed before any ran.

    python3 benchmarks/results/2026-12-01-sm90-wide-tiles/conv_waves.py --out $OUT/conv.json
    python3 benchmarks/results/2026-12-01-sm90-wide-tiles/conv_waves.py --dry --out /dev/null  # the picks only
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import conv2d_sm90, gemm_sm90  # noqa: E402

CASES = [  # ResNet-50's 14x14 and 7x7 stages and a few batch sizes (the implicit GEMM's M = K, N = N*P*Q)
    "conv2d:N=32,C=256,H=14,W=14,K=256,R=3,S=3,stride=1,pad=1,dtype=float16",
    "conv2d:N=32,C=1024,H=14,W=14,K=256,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=256,H=14,W=14,K=1024,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=512,H=7,W=7,K=2048,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=16,C=512,H=14,W=14,K=512,R=3,S=3,stride=1,pad=1,dtype=float16",
    "conv2d:N=64,C=256,H=14,W=14,K=256,R=3,S=3,stride=1,pad=1,dtype=float16",
    "conv2d:N=8,C=512,H=28,W=28,K=512,R=3,S=3,stride=1,pad=1,dtype=float16",
]
UNSEEN = [
    "conv2d:N=16,C=256,H=28,W=28,K=512,R=1,S=1,stride=1,pad=0,dtype=bfloat16",
    "conv2d:N=32,C=384,H=17,W=17,K=384,R=3,S=3,stride=1,pad=1,dtype=float16",
    "conv2d:N=8,C=1024,H=14,W=14,K=2048,R=1,S=1,stride=2,pad=0,dtype=float16",
    "conv2d:N=4,C=256,H=56,W=56,K=256,R=3,S=3,stride=1,pad=1,dtype=bfloat16",
    "conv2d:N=128,C=512,H=7,W=7,K=512,R=3,S=3,stride=1,pad=1,dtype=float16",
]


def defaults(w, target) -> dict:
    M, N, _ = conv2d_sm90.gemm_shape(w)
    space = conv2d_sm90.space(w, target)
    rule = lambda fill: gemm_sm90.size_rule_default(M, N, conv2d_sm90.TILE_M, conv2d_sm90.TILE_N,  # noqa: E731
                                                    target, space, fill_wave=fill)
    return {"new": rule(True), "old": rule(False)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dry", action="store_true", help="print both picks on a 132-SM sm_90a target; time nothing")
    args = ap.parse_args()
    if args.dry:
        target = cc.cuda_target("sm_90a", sm_count=132)
        for text in UNSEEN + CASES:
            d = defaults(parse_case(text), target)
            print(text, *(f"{k}={c['bm']}x{c['bn']}s{c['stages']}c{c['consumers']}" for k, c in d.items()))
        return
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    torch.backends.cudnn.benchmark = True
    target = device_target()
    out = []
    for text in UNSEEN + CASES:
        w = parse_case(text)
        cands = defaults(w, target)
        if cands["new"] == cands["old"]:
            print(w.key, "the same default", cands["new"], flush=True)
            continue
        row = time_candidates(w, cands, target, torch, do_bench, args.rounds)
        pair(row, "new", "old")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
