"""A screen of the bfloat16 pair GEMM's blocking around its default on this host: each config of a small grid
(mr x nr, kc, mc) built, checked and timed once (median of runs over at least 0.2 s), fastest first, against the
default's time in the same pass. What the default rule rests on; the winners are then A/B'd interleaved.

    PYTHONPATH=. python3 benchmarks/results/2026-11-30-cpu-bf16-dot/screen.py "matmul:M=512,N=512,K=512,dtype=bfloat16"
"""
import itertools
import sys

import numpy as np

import compiler_core as cc
from benchmarks.cpu_ab import case_workload, env_target
from benchmarks.cpu_matmul import median_ns


def main() -> None:
    target = env_target()
    for case in sys.argv[1:]:
        w = case_workload(case)
        space = cc.get_space(w, target)
        default = cc.default_config(w, target)
        inputs = cc.random_inputs(w, 0)
        expected = cc.expect(w, inputs)
        outputs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
        grid = [dict(default, mr=mr, nr=nr, kc=kc, mc=mc) for (mr, nr), kc, mc in
                itertools.product(((4, 64), (6, 64), (8, 48), (6, 48), (8, 32)), (128, 256, 512, 768), (48, 96, 192))]
        times = []
        for config in [default] + [c for c in grid if space.is_valid(c) and c != default]:
            kernel = cc.build(w, config, target)
            kernel(*inputs, *outputs)
            assert cc.verify(w, outputs, expected).ok, config
            ns = median_ns(lambda k=kernel, i=inputs, o=outputs: k(*i, *o), min_runs=3, min_seconds=0.2, warmup=1)
            times.append((ns, {k: config[k] for k in ("mr", "nr", "kc", "mc")}))
        base = times[0][0]
        print(w.key, f"default {times[0][1]} {base / 1e6:.3f} ms", flush=True)
        for ns, config in sorted(times)[:8]:
            print(f"    {base / ns:.3f}  {config}", flush=True)


if __name__ == "__main__":
    main()
