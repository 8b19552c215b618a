"""The tiled float32 attention default before the wide-head rule (2026-11-30) against the default of this commit and
PyTorch's scaled_dot_product_attention (TF32 off), on one GPU: each case's two configs built, checked against PyTorch,
then timed with triton's do_bench (L2 flushed) in `--rounds` interleaved rounds, the order rotating.

    python3 benchmarks/results/2026-11-30-attention-wide-heads/defaults_ab.py --out rows.json \
        "heads=8,seq_q=1024,seq_kv=1024,head_dim=256" ...

The configs before are in BEFORE (written by `--write-before`, which needs no GPU, from the rule as it was: each case's
default under commit 67c9af8).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import compiler_core as cc
from benchmarks.gpu_tuning import TOLERANCE, Tensors

BEFORE = Path(__file__).with_name("before-defaults.json")


def workload(case: str):
    params = {k: int(v) for k, v in (kv.split("=") for kv in case.split(","))}
    return cc.make_workload("attention", {**params, "dtype": "float32"})


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("cases", nargs="+")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out")
    p.add_argument("--write-before", action="store_true")
    p.add_argument("--before", type=Path, default=BEFORE, help="the configs before (default: BEFORE)")
    args = p.parse_args()
    target = cc.cuda_target("sm_90a", sm_count=132)
    if args.write_before:
        args.before.write_text(json.dumps({c: cc.default_config(workload(c), target) for c in args.cases}, indent=1))
        return 0
    import torch
    from triton.testing import do_bench

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
    before = json.loads(args.before.read_text())
    rows = []
    for case in args.cases:
        w = workload(case)
        tensors = Tensors(w, torch)
        configs = {"before": before[case], "now": cc.default_config(w, target)}
        runs = {name: tensors.launcher(cc.build(w, c, target)) for name, c in configs.items()}
        errors = {name: tensors.error(run) for name, run in runs.items()}
        runs["torch"] = tensors.reference
        times = {name: [] for name in runs}
        order = list(runs)
        for r in range(args.rounds):
            for name in order[r % len(order):] + order[:r % len(order)]:
                times[name].append(float(do_bench(runs[name], warmup=25, rep=100, return_mode="median")))
        ms = {name: statistics.median(t) for name, t in times.items()}
        row = {"case": case, "configs": configs, "ms": times, "max_rel_err": errors,
               "correct": {n: e <= TOLERANCE["float32"] for n, e in errors.items()},
               "torch/before": ms["torch"] / ms["before"], "torch/now": ms["torch"] / ms["now"],
               "before/now": ms["before"] / ms["now"]}
        rows.append(row)
        print(f"{case}: torch/before {row['torch/before']:.3f}  torch/now {row['torch/now']:.3f}  "
              f"before/now {row['before/now']:.2f}  {'ok' if all(row['correct'].values()) else 'WRONG'}  "
              f"now {configs['now']}", flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
