"""Stream-K kernels on random shapes and tiles, checked against PyTorch launch after launch (flags back at zero
after each), and for the wrong ones, which output tiles are wrong and by how much (got / expected: 0.5 where half
of a tile's K blocks are missing). `--rest-only` runs the variant whose stream-K region is the partial round
alone, `--quanta` ranges that start at multiples of 1/quanta of a tile's K.

    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_fuzz.py --cases 60 --out $OUT/fuzz.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sk_split  # noqa: E402

import compiler_core as cc  # noqa: E402
from compiler_core.build import build_module  # noqa: E402
from compiler_core.codegen import generate_source  # noqa: E402
from compiler_core.runtime.nvcc_check import nvcc_compile  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402

TILES = (g.LARGE, g.WIDE, g.MID, g.SMALL)


def draw(rng, target):
    """A matmul whose tiles leave the last round partly filled, with a tile the space takes with stream_k."""
    while True:
        k = 8 * (rng.randint(1, 2) if rng.random() < 0.2 else rng.randint(3, 1024))
        w = cc.make_workload("matmul", dict(M=rng.randint(64, 6000), N=8 * rng.randint(8, 750), K=k,
                                            dtype=rng.choice(("float16", "bfloat16"))))
        base = dict(cc.default_config(w, target), split_k=1, split_cluster=False, persistent=True, cluster=1)
        config = dict(base, **rng.choice(TILES), stream_k=True, group_m=rng.choice((1, 8)))
        if cc.get_space(w, target).is_valid(config):
            return w, config


def named_case(text: str, target):
    from benchmarks.gpu_tuning import parse_case

    case, tile = text.split(";")
    w = parse_case(case)
    base = dict(cc.default_config(w, target), split_k=1, split_cluster=False, persistent=True, cluster=1)
    return w, dict(base, **{"large": g.LARGE, "wide": g.WIDE, "mid": g.MID, "small": g.SMALL}[tile], stream_k=True)


def tile_errors(got, ref, bm: int, bn: int) -> list:
    """[(tile row, tile column, max rel error, got/expected median)] of tiles off by more than 1 %."""
    out = []
    scale = ref.abs().max().item() or 1.0
    for i in range(0, ref.shape[0], bm):
        for j in range(0, ref.shape[1], bn):
            r, x = ref[i:i + bm, j:j + bn], got[i:i + bm, j:j + bn]
            err = ((x - r).abs().max().item()) / scale
            if not err <= 0.01:
                ratio = (x.abs().sum() / r.abs().sum()).item()
                out.append((i // bm, j // bn, round(err, 4), round(ratio, 3)))
    return out


def main() -> None:
    import torch

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--rest-only", action="store_true")
    ap.add_argument("--quanta", type=int, default=0, help="SK_QUANTA of the kernels (0: ranges at any K block)")
    ap.add_argument("--split", type=int, default=0, help="K-major pieces, this many K ranges per tile (sk_split.py)")
    ap.add_argument("--out", default="/dev/null")
    ap.add_argument("--case", action="append", default=[],
                    help="'matmul:M=..,N=..,K=..,dtype=..;large|wide|mid|small' instead of random draws")
    args = ap.parse_args()
    target = device_target()
    rng = random.Random(args.seed)
    rows = []
    named = [named_case(text, target) for text in args.case]
    for case in range(len(named) or args.cases):
        w, config = named[case] if named else draw(rng, target)
        module = sk_split.lower(w, config, target, args.split)
        k = module.kernels[0]
        source = k.source.replace("constexpr int SK_QUANTA = 0;", f"constexpr int SK_QUANTA = {args.quanta};")
        if args.rest_only:
            source = source.replace("rest + k.ctas", "rest")
        module = module.with_kernels([dataclasses.replace(k, source=source)])
        cubin = nvcc_compile(generate_source(module, target), target.arch)
        kernel = build_module(w, module, target, config, cubin=cubin)
        dt = getattr(torch, w.dtype)
        a = torch.randn(w["M"], w["K"], device="cuda").to(dt)
        b = torch.randn(w["K"], w["N"], device="cuda").to(dt)
        ref = (a.float() @ b.float())
        c = torch.empty(w["M"], w["N"], device="cuda", dtype=dt)
        partials = torch.empty(module.workspaces[0].physical_elems, device="cuda", dtype=torch.float32)
        flags = torch.zeros(module.workspaces[1].physical_elems, device="cuda", dtype=torch.int32)
        wrong, flags_left = [], []
        for i in range(args.launches):
            c.fill_(float("nan"))
            partials.fill_(float("nan"))
            kernel.launch_device([a.data_ptr(), b.data_ptr(), c.data_ptr()], [partials.data_ptr(), flags.data_ptr()])
            torch.cuda.synchronize()
            bad = tile_errors(c.float(), ref, config["bm"], config["bn"])
            if bad:
                wrong.append((i, bad[:12], len(bad)))
            flags_left.append(int(torch.count_nonzero(flags).item()))
        tiles = -(-w["M"] // config["bm"]) * -(-w["N"] // config["bn"])
        row = dict(workload=w.key, config=config, tiles=tiles, k_blocks=-(-w["K"] // 64), wrong=wrong,
                   flags_left=flags_left, ok=not wrong and not any(flags_left))
        rows.append(row)
        print(f"{case + 1}/{len(named) or args.cases} {w.key} {config['bm']}x{config['bn']} tiles={tiles} "
              f"kb={row['k_blocks']} {'ok' if row['ok'] else 'WRONG ' + str(wrong[:1]) + ' flags ' + str(flags_left)}",
              flush=True)
        json.dump(rows, open(args.out, "w"), indent=1)
    print(f"{sum(r['ok'] for r in rows)}/{len(rows)} ok")


if __name__ == "__main__":
    main()
