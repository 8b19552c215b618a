"""float32 SIMT GEMM on even and odd shapes vs torch.matmul (cuBLAS, TF32 off), in the same process.

For each shape: the template's default config and the best of up to `--configs` sampled configs of the space
(seeded), timed with triton.testing.do_bench (median, L2 flushed before every run): a screening pass over all
of them, then the fastest few, the default and torch.matmul again with longer runs. The best and the default are
checked against a float64 torch product before they are reported. Ratio = torch time / our time (1.0: as fast
as cuBLAS). Progress goes to stderr, the table to stdout; nothing is asserted.

Run on the device machine, from the repository root:
    python3 benchmarks/gpu_gemm_f32_shapes.py --out $OUT/f32_shapes.json          # 200 configs a shape
    python3 benchmarks/gpu_gemm_f32_shapes.py --quick --out $OUT/f32_shapes.json  # 24 configs, ~3 minutes
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_ops import compile_all  # noqa: E402 - the same parallel nvcc build of sampled configs
from compiler_core.build import build_module  # noqa: E402

SHAPES = [(1000, 1000, 1000), (4097, 4095, 1000), (2048, 2048, 2048), (4096, 4096, 4096),
          (128, 4096, 4096), (16, 4096, 4096)]  # (M, N, K)
FINALISTS = 4  # screened configs timed again, with the default and torch, at full length
MAX_REL_ERR = 5e-5  # ||ours - float64|| / ||float64||: float32 accumulation lands near 1e-6, TF32 near 3e-4


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def bench(fn, quick: bool, final: bool) -> float:
    """Median milliseconds of fn (do_bench flushes L2 before each call)."""
    from triton.testing import do_bench

    warmup, rep = (10, 25) if quick else (25, 60)
    if final:
        warmup, rep = warmup * 2, rep * 4
    return float(do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))


class Case:
    """One shape's device tensors, a float64 reference, and a launcher per built kernel."""

    def __init__(self, w, seed: int) -> None:
        import torch

        gen = torch.Generator(device="cuda").manual_seed(seed)
        M, N, K = w["M"], w["N"], w["K"]
        self.a = torch.randn(M, K, device="cuda", generator=gen)
        self.b = torch.randn(K, N, device="cuda", generator=gen)
        self.c = torch.empty(M, N, device="cuda")
        self.ref = self.a.double() @ self.b.double()
        self.w = w

    def launcher(self, kernel):
        import torch

        ws = [torch.empty(b.physical_elems, dtype=torch.float32, device="cuda") for b in kernel.module.workspaces]
        args, wsp = [self.a.data_ptr(), self.b.data_ptr(), self.c.data_ptr()], [t.data_ptr() for t in ws]
        return lambda: kernel.launch_device(args, wsp), ws

    def error(self, run) -> float:
        """Relative error of one run into a NaN-poisoned output (unwritten elements make it NaN)."""
        import torch

        self.c.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        diff = torch.linalg.vector_norm(self.c.double() - self.ref) / torch.linalg.vector_norm(self.ref)
        return float(diff) if torch.isfinite(diff) else float("inf")

    def torch_run(self):
        import torch

        return lambda: torch.matmul(self.a, self.b, out=self.c)


def run_shape(shape, n_configs: int, seed: int, quick: bool, arch: str) -> dict:
    M, N, K = shape
    w = cc.make_workload("matmul", dict(M=M, N=N, K=K))
    target = cc.cuda_target(arch)
    default = cc.default_config(w, target)
    configs = [default] + [c for c in cc.get_space(w, target).sample(random.Random(seed), n_configs) if c != default]
    t0 = time.time()
    built = compile_all(w, configs, target, arch)
    log(f"{w.key}: {len(configs)} configs compiled in {time.time() - t0:.0f} s")
    case = Case(w, seed)
    screened, failed = [], []
    for i, (config, module, cubin, err) in enumerate(built):
        if module is None:
            failed.append((config, err))
            continue
        run, ws = case.launcher(build_module(w, module, target, config, cubin=cubin))
        screened.append([bench(run, quick, final=False), config, run, ws])
        if (i + 1) % 25 == 0:
            log(f"  {i + 1}/{len(built)} screened, fastest so far {min(s[0] for s in screened):.4f} ms")
    screened.sort(key=lambda s: s[0])
    finalists = screened[:FINALISTS] + [s for s in screened[FINALISTS:] if s[1] == default]
    for s in finalists:
        s[0] = bench(s[2], quick, final=True)
    torch_ms = bench(case.torch_run(), quick, final=True)
    torch_err = case.error(case.torch_run())  # near 1e-6 in float32; near 3e-4 would mean TF32 was on
    best = None
    for ms, config, run, _ in sorted(finalists, key=lambda s: s[0]):
        err = case.error(run)
        if err <= MAX_REL_ERR:
            best = (ms, config, err)
            break
        log(f"  {w.key}: {config} is wrong (relative error {err:.2e}); skipped")
    default_row = next((s for s in finalists if s[1] == default), None)
    default_err = case.error(default_row[2]) if default_row else None
    row = {"shape": f"{M}x{N}x{K}", "workload": w.key, "configs": len(configs), "compile_failures": len(failed),
           "torch_ms": torch_ms, "torch_rel_err": torch_err, "default_config": default,
           "default_ms": default_row[0] if default_row else None, "default_rel_err": default_err,
           "best_ms": best[0] if best else None, "best_config": best[1] if best else None,
           "best_rel_err": best[2] if best else None,
           "tflops_torch": 2 * M * N * K / torch_ms / 1e9}
    row["ratio_best"] = torch_ms / row["best_ms"] if row["best_ms"] else None
    row["ratio_default"] = torch_ms / row["default_ms"] if row["default_ms"] and default_err is not None \
        and default_err <= MAX_REL_ERR else None
    row["top"] = [{"ms": s[0], "config": s[1]} for s in screened[:10]]
    if failed:
        row["first_failure"] = {"config": failed[0][0], "error": failed[0][1].splitlines()[0] if failed[0][1] else ""}
    return row


def short(config: dict) -> str:
    c = config
    return (f"{c['BM']}x{c['BN']}x{c['BK']} t{c['TM']}x{c['TN']} v{c['vec']} db{c['double_buffer']} "
            f"u{c['unroll_k']} s{c['split_k']} p{c['pad']}")


def print_table(rows: list, meta: dict) -> None:
    print(f"\n{meta['device']} ({meta['arch']}), {meta['date']}, torch {meta['torch']}, TF32 off; "
          f"ratio = torch ms / ours")
    print(f"{'shape':<16} {'default ms':>10} {'best ms':>9} {'torch ms':>9} {'def':>5} {'best':>5}  best config")
    for r in rows:
        fmt = lambda x: f"{x:.4f}" if x is not None else "n/a"  # noqa: E731
        rat = lambda x: f"{x:.2f}" if x is not None else "n/a"  # noqa: E731
        cfg = short(r["best_config"]) if r["best_config"] else "none verified"
        print(f"{r['shape']:<16} {fmt(r['default_ms']):>10} {fmt(r['best_ms']):>9} {fmt(r['torch_ms']):>9} "
              f"{rat(r['ratio_default']):>5} {rat(r['ratio_best']):>5}  {cfg}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=200, help="sampled configs per shape (besides the default)")
    parser.add_argument("--quick", action="store_true", help="24 configs a shape and shorter timing runs")
    parser.add_argument("--shapes", default=None, help="comma-separated MxNxK subset, e.g. 1000x1000x1000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    from compiler_core.runtime.cuda_runtime import cuda_available, device_arch

    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available() or not cuda_available():
        raise SystemExit("gpu_gemm_f32_shapes.py needs a CUDA GPU with PyTorch (the reference) and pycuda: "
                         "run it on the GPU machine")

    torch.backends.cuda.matmul.allow_tf32 = False  # cuBLAS in full float32, the arithmetic ours does
    arch = device_arch()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")] if args.shapes else SHAPES
    n_configs = min(args.configs, 24) if args.quick else args.configs
    rows = []
    for shape in shapes:
        rows.append(run_shape(shape, n_configs, args.seed, args.quick, arch))
        log(json.dumps({k: v for k, v in rows[-1].items() if k != "top"}))
    meta = {"device": torch.cuda.get_device_name(), "arch": arch, "date": time.strftime("%Y-%m-%d %H:%M"),
            "torch": torch.__version__, "configs_per_shape": n_configs, "quick": args.quick, "seed": args.seed,
            "codegen_version": cc.codegen_version()}
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print_table(rows, meta)


if __name__ == "__main__":
    main()
