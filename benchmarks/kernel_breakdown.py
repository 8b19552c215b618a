"""Where a module's time goes: each of its kernels' GPU time (CUPTI, through torch.profiler) over repeated launches.

A template may run several kernels (conv2d on tensor cores: two layout copies, then the GEMM; split-K: the GEMM,
then the sum). This launches the module `--runs` times on the case's tensors (as gpu_tuning does) and prints the
mean and spread of every kernel's device time, and the module's wall time per launch. Nothing is asserted.

  On the GPU machine:
    python3 benchmarks/kernel_breakdown.py --case 'conv2d:N=32,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,dtype=float16'
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_tuning import Tensors, parse_case  # noqa: E402


def main() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from compiler_core.runtime.cuda_runtime import device_arch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True, help="op:params, e.g. 'matmul:M=1024,N=1024,K=1024,dtype=float16'")
    ap.add_argument("--config", help="a JSON config (default: the template's default)")
    ap.add_argument("--runs", type=int, default=50, help="launches profiled (default 50)")
    args = ap.parse_args()
    w = parse_case(args.case)
    target = cc.cuda_target(device_arch())
    config = json.loads(args.config) if args.config else cc.default_config(w, target)
    kernel = cc.build(w, config, target)
    launch = Tensors(w, torch).launcher(kernel)
    for _ in range(5):
        launch()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.runs):
            launch()
        torch.cuda.synchronize()
    times = defaultdict(list)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name].append(event.device_time_total if hasattr(event, "device_time_total")
                                     else event.cuda_time_total)
    print(f"{w.key} on {torch.cuda.get_device_name()}, config {config}")
    for name, us in times.items():
        q = statistics.quantiles(us, n=10) if len(us) > 1 else [us[0]] * 9
        print(f"  {name[:60]:60s} x{len(us) // args.runs:<2d} mean {statistics.mean(us):8.2f} us "
              f"[p10 {q[0]:.2f}, p90 {q[-1]:.2f}]")


if __name__ == "__main__":
    main()
