"""What the compiler costs per config before any compiler runs: lowering, rendering the source, and the lowered-IR
features the cost model reads (what the tuner's feature pool and an agent's build spend per candidate).

For each workload: the default config and `--configs` seeded random configs of its space on `--target`; per step the
median over configs of the best of `--repeats` runs, in milliseconds. Nothing here asserts a time.

    python3 benchmarks/lowering_cost.py --target cpu:avx512 --configs 20
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import compiler_core as cc  # noqa: E402
from compiler_core.codegen import generate_source  # noqa: E402
from compiler_core.features import extract_features  # noqa: E402
from compiler_core.lower import default_config, get_space, lower  # noqa: E402
from compiler_core.workload import make_workload  # noqa: E402

WORKLOADS = (
    ("matmul", {"M": 512, "N": 512, "K": 512}),
    ("matmul", {"M": 512, "N": 512, "K": 512, "dtype": "bfloat16"}),
    ("conv2d", {"N": 1, "C": 64, "H": 56, "W": 56, "K": 64, "R": 3, "S": 3, "stride": 1, "pad": 1}),
    ("softmax", {"rows": 1024, "cols": 1024}),
    ("layernorm", {"rows": 1024, "cols": 768}),
)


def parse_target(text: str):
    """'cpu' or 'cpu:ISA' (the host's cores), or 'cuda:sm_NN'."""
    kind, _, detail = text.partition(":")
    if kind == "cpu":
        return cc.cpu_target(isa=detail) if detail else cc.cpu_target()
    if kind == "cuda" and detail:
        return cc.cuda_target(detail)
    raise SystemExit(f"--target: {text!r}; expected cpu, cpu:ISA (sse, avx2, avx512, avx512bf16, amx) or cuda:sm_NN")


def best_ms(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="cpu:avx512")
    parser.add_argument("--configs", type=int, default=20, help="random configs per workload beside the default")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    target = parse_target(args.target)
    cores = f", {target.cores} cores" if target.kind == "c" else ""
    print(f"target {args.target} ({target.arch}{cores}); per config, the median of the best of "
          f"{args.repeats} runs, ms")
    print("| workload | configs | lower | render | features | source chars |")
    print("|---|---:|---:|---:|---:|---:|")
    for op, params in WORKLOADS:
        w = make_workload(op, params)
        try:
            configs = [default_config(w, target)] + get_space(w, target).sample(random.Random(0), args.configs)
        except Exception as exc:  # an op this target has no template for: say so and go on
            print(f"| {w} | - | {type(exc).__name__}: {exc} | | | |")
            continue
        rows = []
        for config in configs:
            module = lower(w, config, target)
            source = generate_source(module, target)
            rows.append((best_ms(lambda c=config, w=w: lower(w, c, target), args.repeats),
                         best_ms(lambda m=module: generate_source(m, target), args.repeats),
                         best_ms(lambda m=module, w=w: extract_features(m, target, w), args.repeats), len(source)))
            print(".", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        med = [statistics.median(r[i] for r in rows) for i in range(4)]
        print(f"| {w} | {len(rows)} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.2f} | {med[3]:.0f} |")


if __name__ == "__main__":
    main()
