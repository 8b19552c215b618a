"""CPU kernels against PyTorch's CPU ops and numpy, in one process, on the same inputs and thread count.

For each case: the template's default config (and with `--search N` the fastest of N sampled configs, screened
once each), then `--rounds` interleaved rounds in which ours, PyTorch and numpy (device_agent.baselines' own
references) each run for at least `--seconds`, the order rotating every round and a pause before each so the
other library's idle threads stop spinning. Ratios are reference time / ours (> 1: ours is faster); the table
gives the median and [min, max] over the rounds. Every kernel is checked against the float64 reference first.
Nothing is asserted.

    python3 benchmarks/cpu_ops.py                     # the CASES below, default configs
    python3 benchmarks/cpu_ops.py --op conv2d --search 24 --json out.json
    python3 benchmarks/cpu_ops.py --case 'conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1'
    python3 benchmarks/cpu_ops.py --case 'conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,dtype=bfloat16' \
        --variant pairs='{"dot": "bf16", "pack_a": 1}'
    python3 benchmarks/cpu_ops.py --case 'matmul:M=512,N=512,K=512,dtype=bfloat16' --default-of avx2
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CASES = [
    "matmul:M=512,N=512,K=512",
    "batch_matmul:batch=8,M=256,N=256,K=256",
    "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,pad=1",  # ResNet's first stage
    "conv2d:N=8,C=128,H=28,W=28,K=128,R=3,S=3,pad=1",
    "conv2d:N=1,C=256,H=14,W=14,K=256,R=1,S=1",
    "conv2d:N=4,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3",  # a stem: three channels, wide taps
    "softmax:rows=1024,cols=4096",
    "layernorm:rows=1024,cols=4096",
    "attention:heads=8,seq_q=512,seq_kv=512,head_dim=64",
    "elementwise:rows=1024,cols=4096,expr=gelu(x*w+b),vectors=w,b",  # against PyTorch eager
    "elementwise:rows=1024,cols=4096,expr=gelu(x*w+b),vectors=w,b,dtype=float16",
]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", action="append", help="op:params (repeatable; float32 unless dtype= is given)")
    p.add_argument("--op", help="only the CASES of this op")
    p.add_argument("--search", type=int, default=0, help="also time the fastest of this many sampled configs")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                   help="also time the default config with these knobs changed (repeatable)")
    p.add_argument("--default-of", action="append", default=[], metavar="ISA",
                   help="also time the default config of this narrower ISA's target (e.g. avx512bf16 on an AMX host)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=0.25, help="least time per measurement")
    p.add_argument("--pause", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", dest="json_out")
    return p.parse_args(argv)


def median_ms(fn, seconds: float) -> float:
    from benchmarks.cpu_matmul import median_ns  # the same timing loop as the matmul benchmark

    return median_ns(fn, min_runs=3, min_seconds=seconds, warmup=1) / 1e6


def run_case(cc, np, torch, text: str, args, target) -> dict:
    from compiler_core.workload import parse_params
    from device_agent.baselines import cpu_baseline, to_torch, torch_op

    op, _, params = text.partition(":")
    w = cc.make_workload(op, {"dtype": "float32", **parse_params(params)})
    inputs = cc.random_inputs(w, seed=args.seed)
    expected = cc.expect(w, inputs)
    outputs = [np.zeros(s.shape, dtype=s.dtype) for s in cc.get_op(w.op).output_specs(w)]

    def launcher(config):
        kernel = cc.build(w, config, target)
        for o in outputs:
            o.fill(np.nan)
        kernel(*inputs, *outputs)
        check = cc.verify(w, outputs, expected)
        if not check.ok:
            raise SystemExit(f"{w.key} {config}: wrong answer: {check.message}")
        return lambda: kernel(*inputs, *outputs)

    configs = {"default": cc.default_config(w, target)}
    for isa in args.default_of:
        configs[f"{isa} default"] = cc.default_config(w, cc.cpu_target(isa=isa, cores=target.cores))
    space = cc.get_space(w, target)
    for variant in args.variant:
        name, _, knobs = variant.partition("=")
        try:
            changed = json.loads(knobs)
            if not isinstance(changed, dict):
                raise ValueError(f"expected a JSON object of knobs, got {knobs!r}")
            configs[name] = dict(configs["default"], **changed)
            space.validate(configs[name])
        except (ValueError, cc.ConfigError) as exc:  # json's JSONDecodeError is a ValueError
            raise SystemExit(f"--variant {variant}: {exc} (the knobs of {w.op} here: "
                             f"{', '.join(k.name for k in space.knobs)})") from None
    if args.search:
        screened = []
        for config in space.sample(random.Random(args.seed), args.search):
            try:
                screened.append((median_ms(launcher(config), args.seconds / 4), config))
            except (cc.BuildError, cc.ConfigError, cc.ResourceError) as exc:
                print(f"  skipped {config}: {exc}", file=sys.stderr)
        if screened:
            configs["searched"] = min(screened, key=lambda s: s[0])[1]
    runs = {name: launcher(config) for name, config in configs.items()}
    tx = [to_torch(torch, x) for x in inputs]  # bfloat16 as its bits, reinterpreted
    reference = torch_op(w, torch, tx)
    if reference is not None:
        runs["torch"] = reference
    baseline = cpu_baseline(w, inputs)
    if baseline is not None:
        runs["numpy"] = baseline.run
    times = {name: [] for name in runs}
    order = list(runs)
    for r in range(args.rounds):
        for name in order[r % len(order):] + order[:r % len(order)]:
            time.sleep(args.pause)
            times[name].append(median_ms(runs[name], args.seconds))
    row = {"workload": w.key, "configs": configs, "ms": times}
    for ours in configs:
        for ref in ("torch", "numpy"):
            if ref in times:
                ratios = [t / o for t, o in zip(times[ref], times[ours], strict=True)]
                row[f"{ref}/{ours}"] = [statistics.median(ratios), min(ratios), max(ratios)]
    return row


def main(argv=None) -> int:
    args = parse_args(argv)
    # the BLAS threads are read at import: set them before numpy and torch load
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    sys.path.insert(0, str(REPO))
    import numpy as np
    import torch

    import compiler_core as cc

    torch.set_num_threads(args.threads)
    target = cc.cpu_target(cores=args.threads)
    cases = args.case or [c for c in CASES if args.op is None or c.startswith(args.op + ":")]
    rows = []
    print(f"{target.arch}, {args.threads} threads, torch {torch.__version__}, {args.rounds} interleaved rounds",
          flush=True)
    for text in cases:
        row = run_case(cc, np, torch, text, args, target)
        rows.append(row)
        cells = [f"{k} {v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]" for k, v in row.items() if "/" in k]
        ms = {k: round(statistics.median(v), 3) for k, v in row["ms"].items()}
        print(f"{row['workload']}\n    ms {ms}\n    {'; '.join(cells)}", flush=True)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps({"arch": target.arch, "threads": args.threads,
                                                       "torch": torch.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
