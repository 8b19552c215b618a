"""Split-K summed inside a cluster (`split_cluster`: one launch, the partials added through distributed shared
memory) against split-K through a float32 workspace and a second kernel, and against PyTorch, on skinny Hopper
GEMMs (decode- and small-batch shapes, where the tiles alone leave SMs idle).

For each case:
1. a grid of configs of both kinds (tiles, consumer warpgroups, ring stages, splits; the workspace kind persistent
   or not), every one the space takes, built in parallel with nvcc and screened with triton's do_bench (L2
   flushed before every call);
2. the `--finalists` fastest of each kind, the template's default and PyTorch, timed at full length in `--rounds`
   interleaved rounds (the order rotates each round), each checked against PyTorch's float32 result.
Ratios are PyTorch time / ours (> 1: ours is faster); the spread over rounds is reported. Nothing is asserted.

  On the GPU machine, from the repo root:
    python3 benchmarks/gpu_split_cluster.py --out $OUT/split-cluster.json
    python3 benchmarks/gpu_split_cluster.py --case 'matmul:M=16,N=4096,K=4096,dtype=float16' --rounds 5
  `--dry-run` prints each case's grid size per kind without a GPU.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_ops import compile_all  # noqa: E402
from benchmarks.gpu_tuning import TOLERANCE, Tensors, log, parse_case  # noqa: E402
from compiler_core.build import build_module  # noqa: E402

CASES = [
    *(f"matmul:M={m},N=4096,K=4096,dtype=float16" for m in (1, 16, 64, 128)),
    "matmul:M=16,N=4096,K=4096,dtype=bfloat16",
    "matmul:M=128,N=4096,K=4096,dtype=bfloat16",
    "matmul:M=32,N=4096,K=14336,dtype=float16",  # an MLP's down projection at a small batch
    "matmul:M=64,N=8192,K=8192,dtype=float16",
    "batch_matmul:batch=4,M=64,N=1024,K=4096,dtype=float16",
]
GRID = dict(bm=(64, 128), bn=(64, 128, 256), consumers=(1, 2), stages=(4, 6, 8), split_k=(1, 2, 4, 8, 16))


def kind(config: dict) -> str:
    return "cluster" if config.get("split_cluster") else "workspace"


def grid(w, target) -> list[dict]:
    """Every config of GRID the space takes: cluster splits (one unit per CTA), workspace splits and no split
    (persistent or not), without raster groups or the B-sharing cluster."""
    space = cc.get_space(w, target)
    out = []
    for bm, bn, consumers, stages, split in itertools.product(*GRID.values()):
        base = dict(bm=bm, bn=bn, stages=stages, consumers=consumers, group_m=1, cluster=1, split_k=split,
                    stream_k=False, sk_split=0)
        for persistent, in_cluster in ((True, False), (False, False), (False, True)):
            config = dict(base, persistent=persistent, split_cluster=in_cluster)
            if space.is_valid(config):
                out.append(config)
    return out


def screen(w, configs, target, tensors, do_bench) -> list[tuple[float, dict, object]]:
    built = compile_all(w, configs, target, target.arch)
    out = []
    for i, (config, module, cubin, err) in enumerate(built):
        if module is None:
            log(f"  not built: {config}: {err}")
            continue
        launch = tensors.launcher(build_module(w, module, target, config, cubin=cubin))
        out.append((float(do_bench(launch, warmup=5, rep=20, return_mode="median")), config, launch))
        if i % 50 == 0:
            log(f"  screened {i + 1}/{len(built)}")
    return sorted(out, key=lambda r: r[0])


def run_case(w, args, target, torch, do_bench) -> dict:
    tensors = Tensors(w, torch)
    default = cc.default_config(w, target)
    configs = grid(w, target)
    if default not in configs:
        configs.append(default)
    log(f"{w.key}: screening {len(configs)} configs")
    t0 = time.monotonic()
    screened = screen(w, configs, target, tensors, do_bench)
    row = {"workload": w.key, "device": torch.cuda.get_device_name(), "screen_s": time.monotonic() - t0,
           "screen": [{"ms": ms, "config": c} for ms, c, _launch in screened]}
    finalists = {}  # name -> (config, launch)
    for k in ("cluster", "workspace"):
        for rank, (_ms, config, launch) in enumerate([s for s in screened if kind(s[1]) == k][:args.finalists]):
            finalists[f"{k}#{rank + 1}"] = (config, launch)
    finalists["default"] = next((c, launch) for _ms, c, launch in screened if c == default)
    tol = TOLERANCE[cc.get_op(w.op).output_specs(w)[0].dtype]
    errors = {name: tensors.error(launch) for name, (_c, launch) in finalists.items()}
    times = {name: [] for name in [*finalists, "torch"]}
    order = list(times)
    for r in range(args.rounds):
        for name in order[r % len(order):] + order[:r % len(order)]:  # rotate: no kind always runs first
            fn = tensors.reference if name == "torch" else finalists[name][1]
            times[name].append(float(do_bench(fn, warmup=25, rep=100, return_mode="median")))
    rows = []
    for name, (config, _launch) in finalists.items():
        ratios = [t / o for t, o in zip(times["torch"], times[name], strict=True)]
        rows.append({"name": name, "config": config, "ms": times[name], "torch_ms": times["torch"],
                     "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                     "max_rel_err": errors[name], "correct": errors[name] <= tol})
        log(f"  {name:12} {statistics.median(times[name]):.4f} ms  ratio {statistics.median(ratios):.3f} "
            f"[{min(ratios):.3f}, {max(ratios):.3f}]  {'ok' if errors[name] <= tol else 'WRONG'}  {config}")
    row["finalists"] = rows
    best = {k: max((r["ratio_median"] for r in rows if r["name"].startswith(k) and r["correct"]), default=None)
            for k in ("cluster", "workspace")}
    row["best_cluster_ratio"], row["best_workspace_ratio"] = best["cluster"], best["workspace"]
    row["default_ratio"] = next(r["ratio_median"] for r in rows if r["name"] == "default")
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", action="append", help="op:params (repeatable); default: CASES")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved full-length rounds of the finalists")
    ap.add_argument("--finalists", type=int, default=2, help="fastest screened configs of each kind timed again")
    ap.add_argument("--out", help="JSON of every screen time and finalist")
    ap.add_argument("--dry-run", action="store_true", help="grid sizes per kind, no GPU")
    args = ap.parse_args(argv)
    cases = [parse_case(c) for c in (args.case or CASES)]
    if args.dry_run:
        target = cc.cuda_target("sm_90a", sm_count=132)
        for w in cases:
            configs = grid(w, target)
            print(w.key, {k: sum(kind(c) == k for c in configs) for k in ("cluster", "workspace")},
                  "default:", cc.default_config(w, target))
        return 0
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    torch.backends.cuda.matmul.allow_tf32 = False
    target = device_target()
    rows = []
    for w in cases:
        rows.append(run_case(w, args, target, torch, do_bench))
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1))
    print(f"\n{'case':48} {'default':>8} {'workspace':>10} {'cluster':>8}")
    for r in rows:
        print(f"{r['workload']:48} {r['default_ratio']:8.3f} {r['best_workspace_ratio'] or 0:10.3f} "
              f"{r['best_cluster_ratio'] or 0:8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
