"""GPU benchmark: best of N random valid configs per case vs PyTorch (cuBLAS/cuDNN) in the same process.

Run on the device machine:  python3 benchmarks/gpu_ops.py --trials 100 --out results.json
Figures are ratios to references timed in the same run with the same CUDA-event method; nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import compiler_core as cc  # noqa: E402
from compiler_core.build import build_module  # noqa: E402
from compiler_core.codegen import generate_source  # noqa: E402
from compiler_core.errors import BuildError, ResourceError  # noqa: E402
from compiler_core.runtime.nvcc_check import nvcc_compile  # noqa: E402
from device_agent.baselines import torch_op  # noqa: E402 - the reference the agent times

CASES = {
    "matmul_fp32": ("matmul", dict(M=4096, N=4096, K=4096, dtype="float32")),
    "matmul_fp16": ("matmul", dict(M=4096, N=4096, K=4096, dtype="float16")),
    "softmax": ("softmax", dict(rows=8192, cols=8192)),
    "layernorm": ("layernorm", dict(rows=8192, cols=8192)),
    "conv2d": ("conv2d", dict(N=32, C=256, H=14, W=14, K=256, R=3, S=3, stride=1, pad=1)),
    # against PyTorch eager (a kernel per operation), what an unfused chain costs
    "gelu_fp32": ("elementwise", dict(rows=8192, cols=8192, expr="gelu(x*w+b)", vectors="w,b")),
    "gelu_fp16": ("elementwise", dict(rows=8192, cols=8192, expr="gelu(x*w+b)", vectors="w,b", dtype="float16")),
}


def cuda_time(fn, min_ms: float = 30.0, rounds: int = 5) -> float:
    """Median seconds per call: warm-up, then `rounds` batches each long enough to dwarf event overhead."""
    import torch

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    reps = max(1, int(min_ms / max(start.elapsed_time(end), 1e-3)))
    samples = []
    for _ in range(rounds):
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / reps / 1e3)
    return statistics.median(samples)


def compile_all(workload, configs, target, arch):
    def one(config):
        try:
            module = cc.lower(workload, config, target)
            return config, module, nvcc_compile(generate_source(module, target), arch), None
        except (BuildError, ResourceError) as exc:
            return config, None, None, str(exc)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        return list(pool.map(one, configs))


def run_case(name: str, trials: int, seed: int, arch: str) -> dict:
    import torch

    op, params = CASES[name]
    w = cc.make_workload(op, params)
    target = cc.cuda_target(arch)
    space = cc.get_space(w, target)
    configs = space.sample(random.Random(seed), trials)
    default = cc.default_config(w, target)
    if default not in configs:
        configs.append(default)
    t0 = time.time()
    built = compile_all(w, configs, target, arch)
    compile_s = time.time() - t0
    inputs = cc.random_inputs(w, seed)
    specs = cc.get_op(op).tensor_specs(w)
    dev = [torch.from_numpy(a).cuda() for a in inputs]
    dev += [torch.zeros(s.shape, dtype=getattr(torch, s.dtype), device="cuda") for s in specs[len(inputs):]]
    ref_fn = torch_op(w, torch, dev[:len(inputs)])
    timings, errors = [], 0
    for config, module, cubin, _err in built:
        if module is None:
            errors += 1
            continue
        kernel = build_module(w, module, target, config, cubin=cubin)
        ws = [torch.zeros(b.physical_elems, dtype=getattr(torch, b.dtype), device="cuda") for b in module.workspaces]
        args, wsp = [t.data_ptr() for t in dev], [t.data_ptr() for t in ws]
        timings.append((cuda_time(lambda k=kernel, a=args, s=wsp: k.launch_device(a, s)), config, kernel, ws))
    timings.sort(key=lambda t: t[0])
    expected = cc.expect(w, inputs)
    best = None
    for t, config, kernel, ws in timings[:10]:  # fastest candidate that verifies
        for x in dev[len(inputs):]:
            x.zero_()
        kernel.launch_device([x.data_ptr() for x in dev], [x.data_ptr() for x in ws])
        torch.cuda.synchronize()
        outs = [x.cpu().numpy() for x in dev[len(inputs):]]
        result = cc.verify(w, outs, expected)
        if result.ok:
            best = (t, config)
            break
        print(f"  {name}: config {config} failed verification: {result.message}", flush=True)
    default_t = next((t for t, c, *_ in timings if c == default), None)
    if name.startswith("matmul") or name == "conv2d":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    ref_t = cuda_time(ref_fn)
    copy_src = torch.empty(w["rows"] * w["cols"] if op in ("softmax", "layernorm") else 1, device="cuda")
    copy_dst = torch.empty_like(copy_src)
    copy_t = cuda_time(lambda: copy_dst.copy_(copy_src)) if op in ("softmax", "layernorm") else None
    flops, nbytes = cc.get_op(op).flops(w), cc.get_op(op).bytes_moved(w)
    row = {"case": name, "workload": w.key, "trials": len(configs), "compile_errors": errors,
           "compile_s": round(compile_s, 1), "best_s": best[0] if best else None,
           "best_config": best[1] if best else None, "default_s": default_t, "torch_s": ref_t,
           "ratio_vs_torch": (ref_t / best[0]) if best else None}
    if best:
        row["best_tflops"] = flops / best[0] / 1e12
        row["best_gbps"] = nbytes / best[0] / 1e9
        row["torch_tflops"] = flops / ref_t / 1e12
        row["torch_gbps"] = nbytes / ref_t / 1e9
    if copy_t:
        row["copy_gbps"] = 2 * copy_src.numel() * 4 / copy_t / 1e9
        row["ratio_vs_copy_bw"] = row.get("best_gbps", 0) / row["copy_gbps"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of " + ",".join(CASES))
    parser.add_argument("--trials", type=int, default=100, help="random valid configs per case (<= 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    import torch

    from compiler_core.runtime.cuda_runtime import device_arch

    arch = device_arch()
    rows = []
    for name in args.cases.split(","):
        row = run_case(name, min(args.trials, 200), args.seed, arch)
        rows.append(row)
        print(json.dumps(row), flush=True)
    meta = {"device": torch.cuda.get_device_name(), "arch": arch, "date": time.strftime("%Y-%m-%d"),
            "torch": torch.__version__, "numpy": np.__version__}
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print(f"\n{meta['device']} ({arch}), {meta['date']}")
    print(f"{'case':<12} {'best':>10} {'torch':>10} {'ratio':>6}  extra")
    for r in rows:
        extra = f"copy-bw ratio {r['ratio_vs_copy_bw']:.2f}" if "ratio_vs_copy_bw" in r else ""
        if r.get("best_tflops") and r["best_tflops"] > 0.5:
            b, t = f"{r['best_tflops']:.1f}TF/s", f"{r['torch_tflops']:.1f}TF/s"
        else:
            b, t = f"{r.get('best_gbps', 0):.0f}GB/s", f"{r.get('torch_gbps', 0):.0f}GB/s"
        ratio = f"{r['ratio_vs_torch']:.2f}" if r["ratio_vs_torch"] else "n/a"
        print(f"{r['case']:<12} {b:>10} {t:>10} {ratio:>6}  {extra}")


if __name__ == "__main__":
    main()
