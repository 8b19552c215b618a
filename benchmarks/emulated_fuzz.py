"""Fuzzes the CUDA loop-IR templates on CPU: random ops, shapes and dtypes, the default and sampled configs of each,
lowered for an sm_80 target and run by the numpy device double (tests/ir_blocks.py) against the op's reference.
Kernels rendered as CUDA text (the Hopper, mma.sync and tiled attention engines) are counted and skipped. A
mismatch or crash is printed with its workload and config, and the exit status is 1.

    python3 benchmarks/emulated_fuzz.py --seconds 240 --seed 7
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from compiler_core.ir import stmt as S  # noqa: E402
from tests.ir_blocks import run_module  # noqa: E402

TARGET = cc.cuda_target("sm_80", sm_count=108)
TOLERANCE = {"float32": 1e-5, "float16": 3e-2, "bfloat16": 3e-2}  # the double does not round half stores


def random_case(rng: random.Random) -> tuple[str, dict]:
    op = rng.choice(["matmul", "batch_matmul", "conv2d", "softmax", "layernorm", "reduce_sum", "attention",
                     "transpose"])
    if op == "matmul":
        p = dict(M=rng.randint(1, 70), N=rng.randint(1, 70), K=rng.randint(1, 70))
    elif op == "batch_matmul":
        p = dict(batch=rng.randint(1, 3), M=rng.randint(1, 40), N=rng.randint(1, 40), K=rng.randint(1, 40))
    elif op == "conv2d":
        r = rng.choice([1, 3, 5])
        p = dict(N=rng.randint(1, 2), C=rng.randint(1, 17), H=rng.randint(r, 11), W=rng.randint(r, 11),
                 K=rng.randint(1, 20), R=r, S=r, stride=rng.choice([1, 2]), pad=rng.randint(0, r - 1))
    elif op == "transpose":
        p = dict(rows=rng.randint(1, 80), cols=rng.randint(1, 80))
    elif op == "attention":
        p = dict(heads=rng.randint(1, 3), seq_q=rng.randint(1, 20), seq_kv=rng.randint(1, 70),
                 head_dim=rng.choice([8, 16, 24, 32, 40]), causal=rng.randint(0, 1))
    else:
        p = dict(rows=rng.randint(1, 9), cols=rng.randint(1, 300))
    return op, dict(p, dtype=rng.choice(list(TOLERANCE)))


def error(outputs: list, expected: list) -> float:
    worst = 0.0
    for got, want in zip(outputs, expected, strict=True):
        want = np.asarray(want).astype(np.float64).ravel()
        worst = max(worst, float(np.abs(got[:want.size] - want).max()) / max(float(np.abs(want).max()), 1e-30))
    return worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=240, help="how long to fuzz")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--configs", type=int, default=3, help="sampled configs per workload, beside the default")
    args = ap.parse_args()
    rng, counts, failures, start = random.Random(args.seed), collections.Counter(), [], time.time()
    warnings.simplefilter("ignore", RuntimeWarning)  # masked threads compute on NaN padding
    while time.time() - start < args.seconds:
        op, params = random_case(rng)
        try:
            w = cc.make_workload(op, params)
        except cc.WorkloadError:
            counts["workload refused"] += 1
            continue
        inputs = cc.random_inputs(w, 0)
        expected = cc.reference(w, inputs)
        configs = [cc.default_config(w, TARGET), *cc.get_space(w, TARGET).sample(random.Random(rng.random()),
                                                                                   args.configs)]
        for config in configs:
            module = cc.lower(w, config, TARGET)
            if not all(isinstance(k, S.PrimFunc) for k in module.kernels):
                counts["rendered as CUDA text: skipped"] += 1
                continue
            try:
                err = error(run_module(module, [np.asarray(a).astype(np.float64) for a in inputs]), expected)
            except Exception as exc:  # noqa: BLE001 - a crash is a finding, printed with its case
                failures.append((w.key, config, f"{type(exc).__name__}: {exc}"))
                continue
            if err < TOLERANCE[params["dtype"]]:
                counts["correct"] += 1
            else:
                failures.append((w.key, config, f"relative error {err:.2e}"))
        if sum(counts.values()) % 200 < len(configs):
            print(f"{time.time() - start:5.0f} s  {dict(counts)}  failures {len(failures)}", flush=True)
    print(f"done in {time.time() - start:.0f} s: {dict(counts)}, failures {len(failures)}")
    for key, config, what in failures[:20]:
        print("FAIL", key, config, what)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
