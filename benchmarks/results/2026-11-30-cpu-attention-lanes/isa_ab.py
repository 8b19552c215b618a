"""The lanes layout (32-key blocks) against the rows layout's former default, compiled for each x86 ISA and run on
this host (which runs them all): 2 threads, 3 interleaved rounds, median ms. What chose
`attention.LANES_LAYOUT_MAX_HEAD_DIM`.

    python3 benchmarks/results/2026-11-30-cpu-attention-lanes/isa_ab.py
"""
from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.cpu_matmul import median_ns  # noqa: E402

CASES = [(isa, dict(heads=h, seq_q=s, seq_kv=s, head_dim=d, causal=c))
         for isa in ("avx512", "avx2", "sse")
         for h, s, d, c in ((8, 512, 64, 0), (8, 512, 64, 1), (16, 256, 32, 0), (4, 1024, 128, 0))]
CASES += [("avx512", dict(heads=4, seq_q=512, seq_kv=512, head_dim=256)),
          ("avx512", dict(heads=4, seq_q=512, seq_kv=512, head_dim=160)),
          ("avx2", dict(heads=8, seq_q=512, seq_kv=512, head_dim=96)),
          ("sse", dict(heads=16, seq_q=512, seq_kv=512, head_dim=16))]


def pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def main() -> None:
    for isa, params in CASES:
        target = cc.cpu_target(isa=isa, cores=2)
        w = cc.make_workload("attention", dict(params, dtype="float32"))
        inputs = cc.random_inputs(w, 0)
        out = np.zeros(cc.get_op("attention").tensor_specs(w)[-1].shape, np.float32)
        configs = {"lanes": dict(q_tile=1, kv_block=32, vector="explicit", accumulators=1, layout="lanes"),
                   "rows": dict(q_tile=min(4, pow2(w["seq_q"])), kv_block=min(64, max(16, pow2(w["seq_kv"]))),
                                vector="explicit", accumulators=1, layout="rows")}
        kernels = {name: cc.build(w, c, target) for name, c in configs.items()}
        times = {name: [] for name in kernels}
        for r in range(3):
            for name in (["lanes", "rows"] if r % 2 == 0 else ["rows", "lanes"]):
                time.sleep(0.05)
                times[name].append(median_ns(lambda k=kernels[name], x=inputs, o=out: k(*x, o), 3, 0.25, 1) / 1e6)
        ms = {name: statistics.median(v) for name, v in times.items()}
        print(f"{isa:7} {w.key:78} lanes {ms['lanes']:7.3f} ms  rows {ms['rows']:7.3f} ms  "
              f"lanes speed-up {ms['rows'] / ms['lanes']:.2f}  default: {cc.default_config(w, target)['layout']}",
              flush=True)


if __name__ == "__main__":
    main()
