"""Candidate defaults for split_cluster, each beside the workspace default and PyTorch in three interleaved rounds
(the order rotates each round), checked against PyTorch: what chose `gemm_sm90.cluster_split`.

Candidates, from the default `d` of the space as it was (the workspace split rule's split s):
  cl            d summed in a cluster at the same split (one unit per CTA)
  cl_s8         the same with an 8-stage ring
  cl_s8_half    an 8-stage ring at half the split (at least 2): the rule kept, for one-row tiles
  cl_s8_double  an 8-stage ring at twice the split (at most 8)

  python3 benchmarks/results/2026-11-30-split-cluster/default_candidates.py --out $OUT/nine.json
  python3 benchmarks/results/2026-11-30-split-cluster/default_candidates.py --more --only cl_s8_half \
      --out $OUT/five.json
Run on 2026-11-30 with the workspace default of that day (split_cluster False); today's default is cl_s8_half
where the tiles form one row, so rerunning it now compares that default with its own variants.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_ops import compile_all  # noqa: E402
from benchmarks.gpu_split_cluster import CASES  # noqa: E402
from benchmarks.gpu_tuning import Tensors, parse_case  # noqa: E402
from compiler_core.build import build_module  # noqa: E402

MORE = ["matmul:M=8,N=8192,K=8192,dtype=float16", "matmul:M=32,N=14336,K=4096,dtype=bfloat16",
        "matmul:M=96,N=4096,K=4096,dtype=bfloat16", "batch_matmul:batch=8,M=32,N=2048,K=2048,dtype=float16",
        "matmul:M=200,N=2048,K=8192,dtype=float16"]


def candidates(d: dict) -> dict:
    s = d["split_k"]
    cl = dict(d, split_cluster=True, persistent=False)
    return {"default": d, "cl": cl, "cl_s8": dict(cl, stages=8),
            "cl_s8_half": dict(cl, stages=8, split_k=max(2, s // 2)),
            "cl_s8_double": dict(cl, stages=8, split_k=min(8, 2 * s))}


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--more", action="store_true", help="the five shapes of the second run instead of CASES")
    ap.add_argument("--only", help="one candidate beside the default")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    target = device_target()
    out = []
    for text in MORE if args.more else CASES:
        w = parse_case(text)
        space = cc.get_space(w, target)
        cands = {k: c for k, c in candidates(cc.default_config(w, target)).items()
                 if space.is_valid(c) and (args.only is None or k in ("default", args.only))}
        built = compile_all(w, list(cands.values()), target, target.arch)
        t = Tensors(w, torch)
        launches = {k: t.launcher(build_module(w, m, target, c, cubin=cb))
                    for k, (c, m, cb, _e) in zip(cands, built, strict=True) if m is not None}
        names = [*launches, "torch"]
        times = {n: [] for n in names}
        for r in range(3):
            for n in names[r:] + names[:r]:
                fn = t.reference if n == "torch" else launches[n]
                times[n].append(float(do_bench(fn, warmup=10, rep=40, return_mode="median")))
        ratio = {n: statistics.median(a / b for a, b in zip(times["torch"], times[n], strict=True)) for n in launches}
        out.append({"workload": w.key, "configs": cands, "times": times, "ratio": ratio,
                    "err": {n: t.error(launches[n]) for n in launches}})
        print(w.key, {n: round(v, 3) for n, v in ratio.items()}, flush=True)
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
