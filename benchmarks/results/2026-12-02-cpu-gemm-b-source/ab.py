"""matmul's and batch_matmul's B sources side by side (b_source packed, in_place, blocks; the default config
otherwise, schedules/cpu/gemm_b_source.py) and PyTorch's matmul, in one process on the same inputs and 2 threads: per
ISA in $ISAS (default "avx512 avx2") and case, each source the space allows, checked against the float64 reference,
then timed in $ROUNDS interleaved rounds (default 5; the order rotating, a pause before each, every timing the
median of calls lasting >= 0.2 s).

    PYTHONPATH=. python3 benchmarks/results/2026-12-02-cpu-gemm-b-source/ab.py [--json out.json] [case ...]

Prints each source's time over in_place's (< 1: faster than B read in place) and PyTorch's over the default's (> 1:
ours is faster), median [min, max] over the rounds. Nothing is asserted about time.
"""
from __future__ import annotations

import statistics

import benchmarks.two_threads  # noqa: F401  (first: the thread counts, before numpy and torch load)
import compiler_core as cc
from benchmarks.cpu_ab import case_workload, configs_and_torch_ms, per_isa_main, per_round, spread

CASES = [  # the cases of ../2026-11-30-cpu-gemm-b-in-place/, where the in-place rule was chosen
    "matmul:M=64,N=64,K=64",
    "matmul:M=256,N=256,K=256",
    "matmul:M=512,N=512,K=512",
    "matmul:M=1024,N=1024,K=1024",
    "matmul:M=128,N=3072,K=1152",
    "matmul:M=2048,N=64,K=2048",
    "batch_matmul:batch=8,M=256,N=256,K=256",
    "batch_matmul:batch=32,M=128,N=64,K=64",
    "batch_matmul:batch=2,M=512,N=1024,K=512",
]
SOURCES = ("in_place", "packed", "blocks")


def run_case(case: str, target, rounds: int) -> dict:
    w = case_workload(case)
    space, default = cc.get_space(w, target), cc.default_config(w, target)
    configs = {src: dict(default, b_source=src) for src in SOURCES if space.is_valid(dict(default, b_source=src))}
    times = configs_and_torch_ms(w, target, configs, rounds)
    base = "in_place" if "in_place" in times else "packed"
    return {"workload": w.key, "default": default, "ms": times, "base": base,
            "over_base": {n: spread(per_round(times, n, base)) for n in times},
            "torch_over_default": spread(per_round(times, "torch", default["b_source"]))}


def show(row: dict) -> str:
    ms = {n: round(statistics.median(v), 3) for n, v in row["ms"].items()}
    cells = "  ".join(f"{n}/{row['base']} {v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]"
                      for n, v in row["over_base"].items() if n != row["base"])
    t = row["torch_over_default"]
    return (f"  {row['workload']} parallel={row['default']['parallel']} default={row['default']['b_source']}"
            f"  {cells}  torch/default {t[0]:.2f} [{t[1]:.2f}, {t[2]:.2f}]  ms {ms}")


if __name__ == "__main__":
    per_isa_main(__doc__, CASES, run_case, show)
