"""The CPU attention layouts beside each other and PyTorch: the lanes layout at four key blocks, the rows layout at
the default it had before the knob (q_tile 4, kv_block 64 or the keys' power of two), and PyTorch's
scaled_dot_product_attention; 2 threads, 3 interleaved rounds (the order rotating), median ms.

    python3 benchmarks/results/2026-11-30-cpu-attention-lanes/layout_ab.py
"""
from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")
sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402
import torch  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.cpu_matmul import median_ns  # noqa: E402
from device_agent.baselines import torch_op  # noqa: E402

SHAPES = [dict(heads=8, seq_q=512, seq_kv=512, head_dim=64),
          dict(heads=8, seq_q=512, seq_kv=512, head_dim=64, causal=1),
          dict(heads=4, seq_q=1024, seq_kv=1024, head_dim=128), dict(heads=32, seq_q=1, seq_kv=4096, head_dim=128),
          dict(heads=16, seq_q=256, seq_kv=256, head_dim=32)]


def pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def launcher(kernel, inputs, out):
    return lambda: kernel(*inputs, out)


def main() -> None:
    torch.set_num_threads(2)
    target = cc.cpu_target(cores=2)
    for params in SHAPES:
        w = cc.make_workload("attention", dict(params, dtype="float32"))
        inputs = cc.random_inputs(w, 0)
        out = np.zeros(cc.get_op("attention").tensor_specs(w)[-1].shape, np.float32)
        configs = {f"lanes{kb}": dict(q_tile=1, kv_block=kb, vector="explicit", accumulators=1, layout="lanes")
                   for kb in (32, 64, 128, 256)}
        configs["rows (the old default)"] = dict(q_tile=min(4, pow2(w["seq_q"])),
                                                 kv_block=min(64, max(16, pow2(w["seq_kv"]))),
                                                 vector="explicit", accumulators=1, layout="rows")
        space = cc.get_space(w, target)
        runs = {name: launcher(cc.build(w, c, target), inputs, out) for name, c in configs.items()
                if space.is_valid(c)}
        runs["torch"] = torch_op(w, torch, [torch.from_numpy(x) for x in inputs])
        names = list(runs)
        times = {n: [] for n in names}
        for r in range(3):
            for n in names[r:] + names[:r]:
                time.sleep(0.05)
                times[n].append(median_ns(runs[n], 3, 0.25, 1) / 1e6)
        ms = {n: statistics.median(v) for n, v in times.items()}
        best_lanes = min(v for n, v in ms.items() if n.startswith("lanes"))
        print(w.key, {n: round(v, 3) for n, v in ms.items()},
              f"torch/best lanes {ms['torch'] / best_lanes:.2f}, torch/rows {ms['torch'] / ms[names[-2]]:.2f}",
              flush=True)


if __name__ == "__main__":
    main()
