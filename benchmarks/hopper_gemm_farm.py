"""The Hopper GEMM through the farm's build path, against cuBLAS (torch.matmul): what the tuner's configs of matmul
float16 on sm_90a reach when built by `cc.lower` + the CUDA backend and launched by `Kernel.launch_device` (the
OpaqueKernel launcher: tensor maps from the addresses, params at the cubin's offsets), as the GPU agent times them.

For each shape: the template's default config plus `--sample` seeded configs of its space (or the `--knobs` given);
C is checked against an fp32 torch.matmul of the same inputs, then kernel and torch are timed with
triton.testing.do_bench (L2 flushed, median). benchmarks/hopper_gemm_probe.py measures the bare kernels the same
way, so the two tables compare directly (same knobs, same shapes: the farm path's overhead is the difference).

  On the GPU machine, from the repo root:
    python3 benchmarks/hopper_gemm_farm.py --out $OUT/hopper_farm.json
    python3 benchmarks/hopper_gemm_farm.py --shapes 4096x4096x4096 --knobs '{"bm":128,"bn":256,"stages":4,
      "consumers":2,"persistent":true,"group_m":8,"cluster":1}'
Progress goes to stderr, the table to stdout; exit status 1 when a config is wrong or fails.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_ops import compile_all  # noqa: E402 - the same parallel nvcc build of sampled configs
from compiler_core.build import build_module  # noqa: E402
from compiler_core.errors import BuildError  # noqa: E402

DEFAULT_SHAPES = ("4096x4096x4096", "8192x8192x8192", "1024x1024x1024", "2048x2048x2048", "4096x4096x1000",
                  "128x4096x4096")
TOLERANCE = 2e-3  # max |C - ref| / max |ref| for float16 C (hopper_gemm_probe.TOLERANCE)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def configs_for(w, target, knobs: list[dict], sample: int) -> list[dict]:
    if knobs:
        return [cc.get_space(w, target).validate(k) for k in knobs]
    configs = [cc.default_config(w, target)] + cc.get_space(w, target).sample(random.Random(w.key), sample)
    return list({cc.config_key(c): c for c in configs}.values())


def measure(w, target, config, module, cubin, torch, do_bench, args) -> dict:
    m, n, k = w["M"], w["N"], w["K"]
    kernel = build_module(w, module, target, config, cubin=cubin)
    gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 13 + k)
    a = torch.randn((m, k), device="cuda", generator=gen).half()
    b = torch.randn((k, n), device="cuda", generator=gen).half()
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    args_dev = [a.data_ptr(), b.data_ptr(), c.data_ptr()]
    kernel.launch_device(args_dev, [])
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b.float())
    err = (c.float() - ref).abs().max().item() / (ref.abs().max().item() or 1.0)
    unwritten = int(torch.isnan(c).sum().item())
    del ref
    ms = do_bench(lambda: kernel.launch_device(args_dev, []), warmup=args.warmup, rep=args.rep,
                  return_mode="median")
    c_ref = torch.empty_like(c)
    torch_ms = do_bench(lambda: torch.matmul(a, b, out=c_ref), warmup=args.warmup, rep=args.rep,
                        return_mode="median")
    flops = 2.0 * m * n * k
    return {"ms": ms, "tflops": flops / ms / 1e9, "torch_ms": torch_ms, "torch_tflops": flops / torch_ms / 1e9,
            "ratio": torch_ms / ms, "max_rel_err": err, "unwritten": unwritten,
            "correct": unwritten == 0 and err <= TOLERANCE, "grid": kernel.launch[0]["grid"]}


def short(config: dict) -> str:
    return (f"{config['bm']}x{config['bn']} s{config['stages']} c{config['consumers']} "
            f"{'P' if config['persistent'] else 'NP'} g{config['group_m']} cl{config['cluster']}")


def print_table(rows: list[dict]) -> None:
    print(f"\n{'shape':>16} {'config':32} {'TFLOP/s':>8} {'torch':>7} {'ratio':>6} {'max err':>8}  ok")
    for r in rows:
        if "error" in r:
            print(f"{r['shape']:>16} {short(r['config']):32} ERROR {r['error'][:80]}")
            continue
        print(f"{r['shape']:>16} {short(r['config']):32} {r['tflops']:8.1f} {r['torch_tflops']:7.1f} "
              f"{r['ratio']:6.2f} {r['max_rel_err']:8.1e}  {'yes' if r['correct'] else 'NO'}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", nargs="+", default=list(DEFAULT_SHAPES), help="MxNxK (K and N multiples of 8)")
    p.add_argument("--knobs", action="append", default=[], help="a config as JSON (repeatable)")
    p.add_argument("--sample", type=int, default=7, help="seeded configs of each space besides the default")
    p.add_argument("--warmup", type=int, default=25, help="do_bench warm-up, ms")
    p.add_argument("--rep", type=int, default=100, help="do_bench repetition time, ms")
    p.add_argument("--out", help="write the rows as JSON here (rewritten after each shape)")
    args = p.parse_args(argv)
    try:
        import torch
        from triton.testing import do_bench

        from compiler_core.runtime.cuda_runtime import device_target
        target = device_target()
    except (ImportError, BuildError) as exc:
        raise SystemExit(f"needs an sm_90a GPU with PyTorch, Triton and pycuda: {exc}") from None
    if not target.has_tensor_cores("wgmma"):
        raise SystemExit(f"the Hopper template needs sm_90a; this device is {target.arch}")
    torch.backends.cuda.matmul.allow_tf32 = False
    knobs = [json.loads(k) for k in args.knobs]
    rows = []
    for shape in args.shapes:
        m, n, k = (int(v) for v in shape.lower().split("x"))
        w = cc.make_workload("matmul", dict(M=m, N=n, K=k, dtype="float16"))
        log(f"{w.key}: building")
        for config, module, cubin, err in compile_all(w, configs_for(w, target, knobs, args.sample), target,
                                                      target.arch):
            row = {"shape": shape, "config": config}
            try:
                if module is None:
                    raise BuildError(err.splitlines()[0])
                row.update(measure(w, target, config, module, cubin, torch, do_bench, args))
                log(f"  {short(config)}: {row['tflops']:.0f} TFLOP/s vs torch {row['torch_tflops']:.0f} "
                    f"({row['ratio']:.2f}x) {'ok' if row['correct'] else 'WRONG'}")
            except Exception as exc:  # noqa: BLE001 - a row per failure; the next config still runs
                row["error"] = f"{type(exc).__name__}: {exc}"
                log(f"  {short(config)}: {row['error']}")
            rows.append(row)
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"device": target.to_dict(), "rows": rows}, f, indent=1)
    print_table(rows)
    return 1 if any("error" in r or not r.get("correct") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
