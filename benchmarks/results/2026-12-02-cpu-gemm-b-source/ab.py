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
from device_agent.baselines import to_torch, torch_op  # noqa: E402

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
    inputs = cc.random_inputs(w, 0)
    expected = cc.expect(w, inputs)
    outputs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
    space, default = cc.get_space(w, target), cc.default_config(w, target)
    configs = {src: dict(default, b_source=src) for src in SOURCES if space.is_valid(dict(default, b_source=src))}
    runs = {}
    for name, config in configs.items():
        kernel = cc.build(w, config, target)
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

    def ratio(a: str, b: str) -> list[float]:
        values = [x / y for x, y in zip(times[a], times[b], strict=True)]
        return [statistics.median(values), min(values), max(values)]

    base = "in_place" if "in_place" in times else "packed"
    return {"workload": w.key, "default": default, "ms": times, "base": base,
            "over_base": {n: ratio(n, base) for n in names}, "torch_over_default": ratio("torch", default["b_source"])}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", default=CASES)
    p.add_argument("--json", dest="json_out")
    args = p.parse_args()
    torch.set_num_threads(2)
    rounds = int(os.environ.get("ROUNDS", "5"))
    result = {"torch": torch.__version__, "rounds": rounds, "rows": []}
    for isa in os.environ.get("ISAS", "avx512 avx2").split():
        target = cc.cpu_target(isa=isa, cores=2)
        print(f"{target.arch}, 2 threads, torch {torch.__version__}, {rounds} interleaved rounds", flush=True)
        for case in args.cases:
            row = dict(run_case(case, target, rounds), arch=target.arch)
            result["rows"].append(row)
            ms = {n: round(statistics.median(v), 3) for n, v in row["ms"].items()}
            cells = "  ".join(f"{n}/{row['base']} {v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]"
                              for n, v in row["over_base"].items() if n != row["base"])
            t = row["torch_over_default"]
            print(f"  {row['workload']} parallel={row['default']['parallel']} default={row['default']['b_source']}"
                  f"  {cells}  torch/default {t[0]:.2f} [{t[1]:.2f}, {t[2]:.2f}]  ms {ms}", flush=True)
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
