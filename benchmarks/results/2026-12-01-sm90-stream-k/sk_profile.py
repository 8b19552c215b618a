"""One shape's default kernel and its stream-K twin, launched for a profiler: run under ncu to compare their DRAM
traffic, L2 hit rate and tensor-pipe activity (what the speed study's losses come from).

    ncu --kernel-name regex:tf_sm90 --metrics <list> python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_profile.py
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_ops import compile_all  # noqa: E402
from benchmarks.gpu_tuning import Tensors, parse_case  # noqa: E402
from compiler_core.build import build_module  # noqa: E402


def main() -> None:
    import torch

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default="matmul:M=1920,N=2560,K=4096,dtype=float16")
    ap.add_argument("--launches", type=int, default=3)
    args = ap.parse_args()
    target = device_target()
    w = parse_case(args.case)
    default = cc.default_config(w, target)
    configs = [default, dict(default, stream_k=True)]
    t = Tensors(w, torch)
    launchers = [t.launcher(build_module(w, m, target, c, cubin=cb))
                 for c, m, cb, _e in compile_all(w, configs, target, target.arch)]
    for launch in launchers:
        for _ in range(args.launches):
            launch()
        torch.cuda.synchronize()
    print(w.key, [t.error(launch) for launch in launchers])


if __name__ == "__main__":
    main()
