"""Where the Hopper conv2d's time goes: the default module (X to NHWC, the filter to KRSC, the implicit-GEMM
kernel) timed whole and kernel by kernel, beside cuDNN (cudnn.benchmark on), `do_bench` with L2 flushed, three
interleaved rounds. Each part runs on the workspaces a full run left, so the main kernel alone reads valid copies.

    python3 benchmarks/results/2026-12-01-sm90-conv-parts/conv_parts.py --out $OUT/parts.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_ops import compile_all  # noqa: E402
from benchmarks.gpu_tuning import Tensors, parse_case  # noqa: E402
from compiler_core.build import build_module  # noqa: E402

CASES = [
    "conv2d:N=32,C=512,H=7,W=7,K=2048,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=2048,H=7,W=7,K=512,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=1024,H=14,W=14,K=256,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=256,H=14,W=14,K=1024,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=16,C=256,H=28,W=28,K=512,R=1,S=1,stride=1,pad=0,dtype=bfloat16",
    "conv2d:N=32,C=64,H=56,W=56,K=256,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=32,C=512,H=7,W=7,K=512,R=3,S=3,stride=1,pad=1,dtype=float16",
    "conv2d:N=32,C=256,H=14,W=14,K=256,R=3,S=3,stride=1,pad=1,dtype=float16",
    "conv2d:N=1,C=512,H=7,W=7,K=2048,R=1,S=1,stride=1,pad=0,dtype=float16",
    "conv2d:N=1,C=256,H=56,W=56,K=64,R=1,S=1,stride=1,pad=0,dtype=float16",
]


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    target = device_target()
    out = []
    for text in CASES:
        w = parse_case(text)
        config = cc.default_config(w, target)
        [(c, module, cubin, err)] = compile_all(w, [config], target, target.arch)
        if module is None:
            print(w.key, "no build:", err, flush=True)
            continue
        kernel = build_module(w, module, target, c, cubin=cubin)
        t = Tensors(w, torch)
        ws = [torch.zeros(b.physical_elems, dtype=t.outputs[0].dtype, device="cuda") for b in module.workspaces]
        pointers = dict(zip(module.args, [x.data_ptr() for x in (*t.inputs, *t.outputs)], strict=True))
        pointers.update(zip(module.workspaces, [x.data_ptr() for x in ws], strict=True))
        full = t.launcher(kernel)
        err = t.error(full)
        launches = kernel._impl._launches  # noqa: SLF001 - a study of the module's own kernels (a CudaModule)
        parts = {"module": full, "torch": t.reference}
        names = [k.name for k in module.kernels]
        ptrs = {b: np.uintp(p) for b, p in pointers.items()}
        for name, launch in zip(names, launches, strict=True):
            launch(ptrs, None)  # in order: the copies the main kernel reads are in place before any part is timed
            parts[name] = (lambda launch=launch, ptrs=ptrs: launch(ptrs, None))
        times = {n: [] for n in parts}
        order = list(parts)
        for r in range(args.rounds):
            for n in order[r % len(order):] + order[:r % len(order)]:
                times[n].append(float(do_bench(parts[n], warmup=25, rep=100, return_mode="median")))
        med = {n: statistics.median(v) for n, v in times.items()}
        print(w.key, {n: f"{v * 1000:.1f}us" for n, v in med.items()},
              f"torch/module {med['torch'] / med['module']:.3f}", f"err {err:.2e}", flush=True)
        out.append({"workload": w.key, "config": c, "device": torch.cuda.get_device_name(), "kernels": names,
                    "times_ms": times, "max_rel_err": err})
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
