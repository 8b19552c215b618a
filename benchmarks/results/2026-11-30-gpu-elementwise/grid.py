"""Every config of the CUDA elementwise template (threads x items) on chains of several shapes and dtypes, with
PyTorch eager, timed by triton's do_bench (L2 flushed between runs), to choose the template's default.

    PYTHONPATH=. python3 benchmarks/results/2026-11-30-gpu-elementwise/grid.py --out grid.json

Prints per case each config's time over the fastest's, and writes every time as JSON; nothing is asserted.
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
    p.add_argument("--out")
    args = p.parse_args()
    target = cc.cuda_target("sm_90a")
    rows_out = []
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
                times = {}
                expected = cc.expect(w, inputs)
                for config, module, cubin, err in built:
                    if module is None:
                        print(f"  {w.key} {config}: {err}", file=sys.stderr)
                        continue
                    kernel = build_module(w, module, target, config, cubin=cubin)
                    out.zero_()
                    kernel.launch_device(ptrs, [])
                    torch.cuda.synchronize()
                    got = out.view(torch.int16).cpu().numpy().view(inputs[0].dtype) if dtype == "bfloat16" \
                        else out.cpu().numpy()
                    if not cc.verify(w, [got], expected).ok:
                        print(f"  {w.key} {config}: wrong answer", file=sys.stderr)
                        continue
                    times[f"{config['threads']}x{config['items']}"] = do_bench(
                        lambda k=kernel, a=ptrs: k.launch_device(a, []), warmup=10, rep=50) * 1e3
                ref = torch_op(w, torch, dev)
                torch_us = do_bench(ref, warmup=10, rep=50) * 1e3
                best = min(times.values())
                default = cc.default_config(w, target)
                d_key = f"{default['threads']}x{default['items']}"
                slow = times.get(d_key, float("nan")) / best
                print(f"{w.key}: best {min(times, key=times.get)} {best:.1f} us, default {d_key} {slow:.2f}x best, "
                      f"torch {torch_us / best:.2f}x best", flush=True)
                rows_out.append({"workload": w.key, "times_us": times, "torch_us": torch_us, "default": d_key})
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows_out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
