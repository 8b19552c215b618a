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

import statistics

import benchmarks.two_threads  # noqa: F401  (first: the thread counts, before numpy and torch load)
import compiler_core as cc
from benchmarks.cpu_ab import case_workload, configs_and_torch_ms, per_isa_main, per_round, spread
from compiler_core.schedules.cpu import conv2d_folded

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


def default_config(w, target, fold: bool) -> dict:
    """The default config with the fold's rule on, or off (the default before it)."""
    saved = conv2d_folded.FOLD_MAX_IMAGE_COLUMNS
    conv2d_folded.FOLD_MAX_IMAGE_COLUMNS = saved if fold else 0
    try:
        return cc.default_config(w, target)
    finally:
        conv2d_folded.FOLD_MAX_IMAGE_COLUMNS = saved


def run_case(case: str, target, rounds: int) -> dict:
    w = case_workload(case)
    configs = {"old": default_config(w, target, False), "new": default_config(w, target, True)}
    times = configs_and_torch_ms(w, target, configs, rounds)
    row = {"workload": w.key, "configs": configs, "ms": times}
    for ref in ("old", "torch"):
        row[f"{ref}/new"] = spread(per_round(times, ref, "new"))
    return row


def show(row: dict) -> str:
    ms = {n: round(statistics.median(v), 3) for n, v in row["ms"].items()}
    cells = "  ".join(f"{k} {v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]" for k, v in row.items() if "/" in k)
    new = row["configs"]["new"]
    return f"  {row['workload']} {new['b_source']}/{new['parallel']}  {cells}  ms {ms}"


if __name__ == "__main__":
    per_isa_main(__doc__, CASES, run_case, show, default_rounds=7)
