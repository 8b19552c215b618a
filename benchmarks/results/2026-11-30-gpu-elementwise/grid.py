"""Every config of the CUDA elementwise template (threads x items) on chains of several shapes and dtypes, with
PyTorch eager, timed by triton's do_bench (L2 flushed between runs), to choose the template's default.

    PYTHONPATH=. python3 benchmarks/results/2026-11-30-gpu-elementwise/grid.py --out grid.json

Prints per case the fastest config, the default's and PyTorch's time over it, and appends every time to a JSON-lines
file as it goes; the fastest config and the default are verified against the float64 reference. Nothing is asserted.
"""
import argparse
import json
import sys

import compiler_core as cc
from benchmarks.gpu_ops import compile_all
from compiler_core.build import build_module
from device_agent.baselines import to_torch, torch_op

SHAPES = [(8192, 8192), (4096, 4096), (1024, 4096), (4096, 333), (256, 1024), (64, 768)]
CHAINS = [("gelu(x*w+b)", "w,b"), ("x*w+b", "w,b"), ("tanh(x)*y", "")]
DTYPES = ["float32", "float16", "bfloat16"]


def main() -> int:
    import torch
    from triton.testing import do_bench

    p = argparse.ArgumentParser()
    p.add_argument("--out", help="JSON lines, appended case by case")
    args = p.parse_args()
    target = cc.cuda_target("sm_90a")
    for rows, cols in SHAPES:
        for expr, vectors in CHAINS:
            for dtype in DTYPES:
                w = cc.make_workload("elementwise", dict(rows=rows, cols=cols, expr=expr, vectors=vectors, dtype=dtype))
                configs = list(cc.get_space(w, target))
                built = compile_all(w, configs, target, "sm_90a")
                inputs = cc.random_inputs(w, 0)
                dev = [to_torch(torch, a).cuda() for a in inputs]
                out = torch.empty((rows, cols), dtype=dev[0].dtype, device="cuda")
                ptrs = [t.data_ptr() for t in (*dev, out)]
                times, kernels = {}, {}
                for config, module, cubin, err in built:
                    if module is None:
                        print(f"  {w.key} {config}: {err}", file=sys.stderr)
                        continue
                    key = f"{config['threads']}x{config['items']}"
                    kernels[key] = build_module(w, module, target, config, cubin=cubin)
                    times[key] = do_bench(lambda k=kernels[key], a=ptrs: k.launch_device(a, []), warmup=5, rep=15) * 1e3
                ref = torch_op(w, torch, dev)
                torch_us = do_bench(ref, warmup=5, rep=15) * 1e3
                best_key = min(times, key=times.get)
                default = cc.default_config(w, target)
                d_key = f"{default['threads']}x{default['items']}"
                expected = cc.expect(w, inputs)
                for key in {best_key, d_key}:
                    out.zero_()
                    kernels[key].launch_device(ptrs, [])
                    torch.cuda.synchronize()
                    got = out.view(torch.int16).cpu().numpy().view(inputs[0].dtype) if dtype == "bfloat16" \
                        else out.cpu().numpy()
                    assert cc.verify(w, [got], expected).ok, f"{w.key} {key}: wrong answer"
                best = times[best_key]
                print(f"{w.key}: best {best_key} {best:.1f} us, default {d_key} {times[d_key] / best:.2f}x best, "
                      f"torch {torch_us / best:.2f}x best", flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps({"device": torch.cuda.get_device_name(), "workload": w.key,
                                            "times_us": times, "torch_us": torch_us, "default": d_key}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
