"""Shapes nobody picked: seeded random workloads of every op (odd, tiny, skewed sizes, every dtype), each built with
its default config and a few sampled ones and checked as an agent checks a trial (cc.verify against the float64
reference, on the random and the adversarial input set), on this host's CPU or on the CUDA GPU.

    python3 benchmarks/verify_random_shapes.py --target cpu --cases 40 --configs 2 --seed 1
    python3 benchmarks/verify_random_shapes.py --target cpu --isa sse --ops attention,softmax --cases 20
    python3 benchmarks/verify_random_shapes.py --target cuda --cases 200 --configs 3 --out fails.json

Prints one line per workload and every failing run (workload, config, input set, why); exits 1 when any failed.
A draw the op rejects (a conv2d whose filter outgrows its padded image) is drawn again.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import compiler_core as cc  # noqa: E402
from compiler_core.ops import expr_parser  # noqa: E402
from compiler_core.verify import input_sets  # noqa: E402

# sizes where tiles, vectors and warps change: most bugs live one element either side of these
EDGE_SIZES = (1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129)
UNARY = ("relu", "gelu", "sigmoid", "silu", "tanh", "exp", "abs", "erf")
BINARY_OPS = ("+", "-", "*")


def _size(rng: random.Random, hi: int) -> int:
    """An edge size a third of the time, else log-uniform in [1, hi]."""
    if rng.random() < 0.35:
        return min(rng.choice(EDGE_SIZES), hi)
    return max(1, min(hi, int(math.exp(rng.uniform(0, math.log(hi))))))


def _capped(rng: random.Random, his: tuple[int, ...], cap: int) -> list[int]:
    """Sizes drawn until their product is within cap (work, and the float64 reference's memory, stay bounded)."""
    while True:
        sizes = [_size(rng, hi) for hi in his]
        if math.prod(sizes) <= cap:
            return sizes


def _expr(rng: random.Random, names: list[str], depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(names) if rng.random() < 0.85 else f"{rng.uniform(-2, 2):.3f}"
    kind = rng.random()
    if kind < 0.35:
        return f"{rng.choice(UNARY)}({_expr(rng, names, depth - 1)})"
    if kind < 0.5:
        return f"{rng.choice(('max', 'min'))}({_expr(rng, names, depth - 1)},{_expr(rng, names, depth - 1)})"
    return f"({_expr(rng, names, depth - 1)}{rng.choice(BINARY_OPS)}{_expr(rng, names, depth - 1)})"


def draw_params(op: str, rng: random.Random, scale: int) -> dict:
    """Random parameters of one op; scale bounds the work (about scale**3 multiply-adds for the GEMM ops)."""
    dtype = rng.choice(("float32", "float16", "bfloat16"))
    if op == "matmul":
        m, n, k = _capped(rng, (scale * 4, scale * 4, scale * 8), scale ** 3)
        return dict(M=m, N=n, K=k, dtype=dtype)
    if op == "batch_matmul":
        b, m, n, k = _capped(rng, (16, scale * 2, scale * 2, scale * 4), scale ** 3)
        return dict(batch=b, M=m, N=n, K=k, dtype=dtype)
    if op == "conv2d":
        r, s = rng.choice((1, 3, 3, 5, 7)), rng.choice((1, 3, 3, 5, 7))
        if rng.random() < 0.3:
            r, s = rng.randint(1, 7), rng.randint(1, 7)
        n, c, k = _capped(rng, (4, scale // 2, scale // 2), scale ** 2)
        h, w = _capped(rng, (scale // 4, scale // 4), scale ** 2 // 16)
        return dict(N=n, C=c, H=h, W=w, K=k, R=r, S=s, stride=rng.choice((1, 1, 2, 3)),
                    pad=rng.choice((0, r // 2, rng.randint(0, 4))), dtype=dtype)
    if op in ("softmax", "layernorm", "reduce_sum", "transpose"):
        rows, cols = _capped(rng, (scale * 64, scale * 64), scale ** 2 * 16)
        params = dict(rows=rows, cols=cols, dtype=dtype)
        if op == "layernorm" and rng.random() < 0.3:
            params["eps"] = rng.choice(("1e-12", "1e-3", "0.5"))
        return params
    if op == "elementwise":
        rows, cols = _capped(rng, (scale * 32, scale * 32), scale ** 2 * 16)
        names = rng.sample(["a", "b", "c", "x", "w"], rng.randint(1, 4))
        expr = _expr(rng, names, rng.randint(1, 4))
        used = expr_parser.input_names(expr_parser.parse(expr))  # the first stays a matrix: the output's rows
        vectors = [x for x in used[1:] if rng.random() < 0.3]
        return dict(rows=rows, cols=cols, expr=expr, vectors=",".join(vectors), dtype=dtype)
    if op == "attention":
        heads, q, kv = _capped(rng, (8, scale * 2, scale * 2), scale ** 2 * 8)
        return dict(heads=heads, seq_q=q, seq_kv=kv, head_dim=rng.choice((16, 32, 64, 64, 128, _size(rng, 256))),
                    causal=rng.randint(0, 1), dtype=dtype)
    raise SystemExit(f"no shape drawer for op {op!r}")


def draw_workloads(ops: list[str], count: int, seed: int, scale: int) -> list[cc.Workload]:
    rng, out = random.Random(seed), []
    while len(out) < count:
        op = ops[len(out) % len(ops)]
        try:
            out.append(cc.make_workload(op, draw_params(op, rng, scale)))
        except (cc.WorkloadError, ValueError):
            continue  # a draw the op rejects (filter larger than the padded image, an expression it refuses)
    return out


def _configs(w: cc.Workload, target, n: int, seed: int) -> list[dict]:
    configs = [cc.default_config(w, target)]
    for c in cc.get_space(w, target).sample(random.Random(seed), n):
        if c not in configs:
            configs.append(c)
    return configs


def cpu_failures(w: cc.Workload, configs: list[dict], target) -> list[tuple]:
    sets = [(s.name, s.arrays, cc.expect(w, s.arrays)) for s in input_sets(w, seed=0)]
    failing = []
    for config in configs:
        try:
            kernel = cc.build(w, config, target)
        except (cc.BuildError, cc.ResourceError) as exc:
            failing.append((config, "build", str(exc)[:300]))
            continue
        for name, arrays, expected in sets:
            verdict = cc.verify(w, kernel.run(*arrays), expected)
            if not verdict.ok:
                failing.append((config, name, verdict.message[:300]))
    return failing


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--target", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--cases", type=int, default=40, help="workloads drawn, the ops taking turns")
    p.add_argument("--configs", type=int, default=2, help="sampled configs per workload, besides the default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=int, default=0, help="work bound (default: 96 on cpu, 512 on cuda)")
    p.add_argument("--ops", default=",".join(cc.OPS), help="comma-separated ops")
    p.add_argument("--isa", help="cpu: build for this x86 ISA (a name of CPU_ISAS: sse, avx2, avx512, avx512bf16) "
                   "instead of the host's; the host must run it")
    p.add_argument("--out", help="write the failing runs here as JSON")
    args = p.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o]
    unknown = sorted(set(ops) - set(cc.OPS))
    if unknown:
        p.error(f"unknown ops {unknown}; known: {sorted(cc.OPS)}")
    scale = args.scale or (96 if args.target == "cpu" else 512)
    if args.target == "cuda":
        try:
            import torch

            from benchmarks.verify_every_config import failing_runs
            from compiler_core.runtime.cuda_runtime import device_target
            target = device_target()
        except Exception as exc:  # noqa: BLE001 - no GPU, torch or pycuda: say what is needed
            why = f"{type(exc).__name__}: {exc}"
            raise SystemExit(f"--target cuda needs a CUDA GPU with PyTorch and pycuda: {why}") from None
    else:
        try:
            target = cc.cpu_target(isa=args.isa) if args.isa else cc.cpu_target()
        except ValueError as exc:
            p.error(str(exc))
    report, t_start = {}, time.monotonic()
    workloads = draw_workloads(ops, args.cases, args.seed, scale)
    for i, w in enumerate(workloads):
        t0 = time.monotonic()
        configs = _configs(w, target, args.configs, args.seed + i)
        if args.target == "cuda":
            _, failing = failing_runs(w, target, torch, configs=configs)
        else:
            failing = cpu_failures(w, configs, target)
        print(f"[{i + 1}/{len(workloads)}] {w.key}: {len(configs)} configs, {len(failing)} failing runs "
              f"({time.monotonic() - t0:.1f} s)", flush=True)
        for config, name, why in failing:
            print(f"    {name}: {config}: {why}", flush=True)
        if failing:
            report[w.key] = [{"config": c, "inputs": n, "why": why} for c, n, why in failing]
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    print(f"{len(workloads)} workloads, {len(report)} with failing runs, {time.monotonic() - t_start:.0f} s")
    return 1 if report else 0


if __name__ == "__main__":
    sys.exit(main())
