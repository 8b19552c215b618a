"""The Hopper GEMM default with `gemm_sm90.wave_tile` (new) against the rule before it (old: SMALL tiles wherever
LARGE ones do not fill a whole wave), PyTorch beside them, five interleaved rounds, each checked against PyTorch.
`UNSEEN` was chosen before this ran; `--all` adds the shapes of wave_candidates.py. Shapes where both defaults are
the same are skipped.

    python3 benchmarks/results/2026-12-01-sm90-one-wave/new_vs_old.py --all --out $OUT/final.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import wave_candidates  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_ops import compile_all  # noqa: E402
from benchmarks.gpu_tuning import TOLERANCE, Tensors, parse_case  # noqa: E402
from compiler_core.build import build_module  # noqa: E402
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
        built = compile_all(w, list(cands.values()), target, target.arch)
        t = Tensors(w, torch)
        launches = {k: t.launcher(build_module(w, m, target, c, cubin=cb))
                    for k, (c, m, cb, _e) in zip(cands, built, strict=True) if m is not None}
        names = [*launches, "torch"]
        times = {n: [] for n in names}
        for r in range(args.rounds):
            for n in names[r % len(names):] + names[:r % len(names)]:
                fn = t.reference if n == "torch" else launches[n]
                times[n].append(float(do_bench(fn, warmup=25, rep=100, return_mode="median")))
        ratios = {n: [a / b for a, b in zip(times["torch"], times[n], strict=True)] for n in launches}
        ratios["new/old"] = [o / n for o, n in zip(times["old"], times["new"], strict=True)]
        tol = TOLERANCE[cc.get_op(w.op).output_specs(w)[0].dtype]
        err = {n: t.error(launches[n]) for n in launches}
        out.append({"workload": w.key, "device": torch.cuda.get_device_name(), "configs": cands, "times": times,
                    "ratios": ratios, "max_rel_err": err, "correct": {n: e <= tol for n, e in err.items()}})
        print(w.key, {n: f"{statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]" for n, v in ratios.items()},
              "" if all(e <= tol for e in err.values()) else f"WRONG {err}", flush=True)
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
