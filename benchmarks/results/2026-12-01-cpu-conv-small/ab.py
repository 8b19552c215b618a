"""conv2d's default before and after the batch fold (b_source 'folded', schedules/cpu/conv2d_folded.py), and PyTorch's
convolution (oneDNN), in one process on the same inputs and 2 threads: per ISA in $ISAS (default "avx512 avx2") and
case, the old default (the fold's rule switched off: FOLD_MAX_IMAGE_COLUMNS = 0, so the per-image padded path as
before), the new default and PyTorch, each checked against the float64 reference, then timed in $ROUNDS interleaved
rounds (default 7; the order rotating, a pause before each, every timing the median of calls lasting >= 0.2 s).

    PYTHONPATH=. python3 benchmarks/results/2026-12-01-cpu-conv-small/ab.py [--json out.json] [case ...]

Prints old/new (> 1: the new default is faster) and torch/new (> 1: ours is faster), median [min, max] over the
rounds. Nothing is asserted about time.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "2")
os.environ.setdefault("KMP_BLOCKTIME", "0")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.cpu_ab import case_workload  # noqa: E402
from benchmarks.cpu_matmul import median_ns  # noqa: E402
from compiler_core.schedules.cpu import conv2d_folded  # noqa: E402
from device_agent.baselines import to_torch, torch_op  # noqa: E402

CASES = [
    "conv2d:N=8,C=256,H=14,W=14,K=256,R=3,S=3,pad=1",
    "conv2d:N=8,C=512,H=7,W=7,K=512,R=3,S=3,pad=1",
    "conv2d:N=8,C=128,H=28,W=28,K=128,R=3,S=3,pad=1",
    "conv2d:N=1,C=512,H=7,W=7,K=512,R=3,S=3,pad=1",  # one image: nothing to fold, the same kernel
    "conv2d:N=8,C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
    "conv2d:N=8,C=128,H=56,W=56,K=128,R=3,S=3,stride=2,pad=1",
    "conv2d:N=8,C=512,H=14,W=14,K=512,R=3,S=3,stride=2,pad=1",
    "conv2d:N=8,C=256,H=14,W=14,K=1024,R=1,S=1,pad=0",
    "conv2d:N=8,C=2048,H=7,W=7,K=512,R=1,S=1,pad=0",
    "conv2d:N=3,C=128,H=28,W=28,K=128,R=3,S=3,pad=1",
    "conv2d:N=8,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,dtype=float16",
    "conv2d:N=8,C=512,H=7,W=7,K=512,R=3,S=3,pad=1,dtype=bfloat16",
    "conv2d:N=2,C=64,H=112,W=112,K=64,R=3,S=3,pad=1",  # wide per-image GEMMs: not folded, the same kernel
]


def built(w, target, fold: bool):
    """The default kernel with the fold's rule on, or off (the default before it)."""
    saved = conv2d_folded.FOLD_MAX_IMAGE_COLUMNS
    conv2d_folded.FOLD_MAX_IMAGE_COLUMNS = saved if fold else 0
    try:
        config = cc.default_config(w, target)
        return config, cc.build(w, config, target)
    finally:
        conv2d_folded.FOLD_MAX_IMAGE_COLUMNS = saved


def run_case(case: str, target, rounds: int) -> dict:
    w = case_workload(case)
    inputs = cc.random_inputs(w, 0)
    expected = cc.expect(w, inputs)
    outputs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
    configs, runs = {}, {}
    for name, fold in (("old", False), ("new", True)):
        configs[name], kernel = built(w, target, fold)
        for o in outputs:
            o.fill(np.nan)
        kernel(*inputs, *outputs)
        check = cc.verify(w, outputs, expected)
        assert check.ok, f"{w.key} {name}: {check.message}"
        runs[name] = lambda k=kernel: k(*inputs, *outputs)
    runs["torch"] = torch_op(w, torch, [to_torch(torch, x) for x in inputs])
    times = {n: [] for n in runs}
    names = list(runs)
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            time.sleep(0.05)
            times[n].append(median_ns(runs[n], min_runs=3, min_seconds=0.2, warmup=1) / 1e6)
    row = {"workload": w.key, "configs": configs, "ms": times}
    for ref in ("old", "torch"):
        ratios = [t / o for t, o in zip(times[ref], times["new"], strict=True)]
        row[f"{ref}/new"] = [statistics.median(ratios), min(ratios), max(ratios)]
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", default=CASES)
    p.add_argument("--json", dest="json_out")
    args = p.parse_args()
    torch.set_num_threads(2)
    rounds = int(os.environ.get("ROUNDS", "7"))
    result = {"torch": torch.__version__, "rounds": rounds, "rows": []}
    for isa in os.environ.get("ISAS", "avx512 avx2").split():
        target = cc.cpu_target(isa=isa, cores=2)
        print(f"{target.arch}, 2 threads, torch {torch.__version__}, {rounds} interleaved rounds", flush=True)
        for case in args.cases:
            row = dict(run_case(case, target, rounds), arch=target.arch)
            result["rows"].append(row)
            ms = {n: round(statistics.median(v), 3) for n, v in row["ms"].items()}
            cells = "  ".join(f"{k} {v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]" for k, v in row.items() if "/" in k)
            print(f"  {row['workload']} {row['configs']['new']['b_source']}/{row['configs']['new']['parallel']}"
                  f"  {cells}  ms {ms}", flush=True)
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
