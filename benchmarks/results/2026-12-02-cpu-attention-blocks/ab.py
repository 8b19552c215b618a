"""The CPU attention template's lanes layout with register blocks of several row vectors and key groups (q_tile,
accumulators; schedules/cpu/attention_lanes.py) against the one-vector, four-key block it had, and PyTorch's
scaled_dot_product_attention, in one process on the same inputs and 2 threads: per ISA in $ISAS (default
"avx512 avx2") and case, every (q_tile, accumulators) the space holds at the default's kv_block (and
kv_block $KV_BLOCKS, default "32 64"), each checked against the float64 reference, then timed in $ROUNDS
interleaved rounds (default 5; the order rotating, a pause before each, every timing the median of calls lasting
>= 0.2 s).

    PYTHONPATH=. python3 benchmarks/results/2026-12-02-cpu-attention-blocks/ab.py [--json out.json] [case ...]

Prints each variant's time over the old block's (q_tile 1, accumulators 1, kv_block 32: < 1 is faster) and
PyTorch's over it (> 1: ours is faster), median [min, max] over the rounds. Nothing is asserted about time.
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

CASES = [
    "attention:heads=8,seq_q=512,seq_kv=512,head_dim=64,causal=0",
    "attention:heads=8,seq_q=512,seq_kv=512,head_dim=64,causal=1",
    "attention:heads=8,seq_q=512,seq_kv=512,head_dim=32,causal=0",
    "attention:heads=8,seq_q=512,seq_kv=512,head_dim=128,causal=0",
    "attention:heads=16,seq_q=1024,seq_kv=1024,head_dim=64,causal=0",
    "attention:heads=4,seq_q=100,seq_kv=300,head_dim=80,causal=0",
]
OLD = {"q_tile": 1, "accumulators": 1, "kv_block": 32}


def variants(w, target) -> dict[str, dict]:
    """The old block, then every lanes config of the space at the chosen kv_blocks (the default's first)."""
    space, default = cc.get_space(w, target), cc.default_config(w, target)
    blocks = [default["kv_block"], *(int(k) for k in os.environ.get("KV_BLOCKS", "32 64").split())]
    out = {"old": dict(default, layout="lanes", **OLD), "default": default}
    for kb in dict.fromkeys(blocks):
        for q in (1, 2, 4, 8):
            for a in (1, 2, 4):
                config = dict(default, layout="lanes", vector="explicit", q_tile=q, accumulators=a, kv_block=kb)
                if space.is_valid(config):
                    out.setdefault(f"q{q}a{a}k{kb}", config)
    return out


def run_case(case: str, target, rounds: int) -> dict:
    w = case_workload(case)
    inputs = cc.random_inputs(w, 0)
    expected = cc.expect(w, inputs)
    outputs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
    configs, runs = variants(w, target), {}
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
    row = {"workload": w.key, "configs": configs, "ms": times, "over_old": {}}
    for n in names:
        ratios = [t / o for t, o in zip(times[n], times["old"], strict=True)]
        row["over_old"][n] = [statistics.median(ratios), min(ratios), max(ratios)]
    return row


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
            old_ms = statistics.median(row["ms"]["old"])
            d = row["configs"]["default"]
            print(f"  {row['workload']}  old {old_ms:.3f} ms  default q{d['q_tile']}a{d['accumulators']}"
                  f"k{d['kv_block']} {d['layout']}", flush=True)
            for n, (med, lo, hi) in sorted(row["over_old"].items(), key=lambda kv: kv[1][0]):
                print(f"    {n:>12} /old {med:.2f} [{lo:.2f}, {hi:.2f}]", flush=True)
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
