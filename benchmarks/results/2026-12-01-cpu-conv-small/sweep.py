"""A quick sweep for a busy host: each config of one conv2d case (the default's knobs changed by each JSON object in
$CONFIGS, a list) built and verified, then timed in interleaved rounds, each round's time the fastest of a few
calls (the fastest is what contention from other processes leaves least changed); prints each config's best time
and GFLOP/s over the rounds, fastest first. Screening only: the figures in README.md are median ratios (ab.py).

    CONFIGS='[{}, {"b_source": "folded", "parallel": "m"}]' PYTHONPATH=. \
        python3 benchmarks/results/2026-12-01-cpu-conv-small/sweep.py "conv2d:N=8,C=512,H=7,W=7,K=512,R=3,S=3,pad=1"
"""
import json
import os
import sys
import time

import numpy as np

import compiler_core as cc
from benchmarks.cpu_ab import case_workload, env_target
from compiler_core.ops.conv2d import out_size


def best_ns(fn, calls: int = 5) -> float:
    fn()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return min(samples)


def main() -> None:
    target = env_target()
    rounds = int(os.environ.get("ROUNDS", "7"))
    for case in sys.argv[1:]:
        w = case_workload(case)
        P, Q = out_size(w)
        flops = 2 * w["N"] * w["K"] * w["C"] * w["R"] * w["S"] * P * Q
        default = cc.default_config(w, target)
        configs = [dict(default, **k) for k in json.loads(os.environ.get("CONFIGS", "[{}]"))]
        ins = cc.random_inputs(w, 0)
        outs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]
        expected = cc.expect(w, ins)
        kernels = []
        for config in configs:
            bad = cc.get_space(w, target).violations(config)
            assert not bad, f"{config}: {bad}"
            kernels.append(cc.build(w, config, target))
            kernels[-1](*ins, *outs)
            assert cc.verify(w, outs, expected).ok, config
        best = [float("inf")] * len(configs)
        for r in range(rounds):
            for i in list(range(len(configs)))[r % len(configs):] + list(range(len(configs)))[:r % len(configs)]:
                best[i] = min(best[i], best_ns(lambda k=kernels[i], a=ins + outs: k(*a)))
        print(f"{target.arch} {w.key}")
        for i in sorted(range(len(configs)), key=best.__getitem__):
            diff = {k: v for k, v in configs[i].items() if default.get(k) != v}
            print(f"  {best[i] / 1e6:8.3f} ms {flops / best[i]:6.1f} GFLOP/s  {diff or 'default'}", flush=True)


if __name__ == "__main__":
    main()
