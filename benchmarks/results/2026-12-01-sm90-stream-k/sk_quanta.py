"""Stream-K ranges that start at a few K offsets only (`sk_quanta`: halves, quarters or eighths of a tile's K)
against ranges at any K block and against the round-cost default: CTAs that start at the same offsets read the same
A and B panels together. Beside PyTorch (cuBLAS), interleaved rounds, each checked against PyTorch. The UNSEEN
shapes were listed before this ran; the first twelve are sk_candidates.py's.

    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_quanta.py --out $OUT/quanta.json
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from sk_candidates import SEEN, UNSEEN  # noqa: E402

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402

UNSEEN_QUANTA = [
    "matmul:M=2432,N=2176,K=3072,dtype=float16",
    "matmul:M=1664,N=4096,K=2048,dtype=bfloat16",
    "matmul:M=3584,N=1280,K=4096,dtype=float16",
    "matmul:M=2688,N=2688,K=1024,dtype=float16",
    "matmul:M=1792,N=3456,K=6144,dtype=bfloat16",
    "matmul:M=5120,N=1920,K=1536,dtype=float16",
]
QUANTA = (0, 2, 4, 8)
LINE = "constexpr int SK_QUANTA = 0;"


def candidates(w, target, space) -> dict:
    d = cc.default_config(w, target)
    out = {"default": d}
    for tile_name, tile in (("default", {}), ("large", g.LARGE)):
        if tile_name == "large" and all(d[k] == v for k, v in g.LARGE.items()):
            continue
        if tile_name == "large":
            out["large"] = dict(d, **tile)
        for q in QUANTA:
            out[f"{tile_name}_q{q}"] = dict(d, **tile, stream_k=True)
    return {k: c for k, c in out.items() if space.is_valid(c)}


def modules(w, cands: dict, target) -> dict:
    out = {}
    for name, config in cands.items():
        module = cc.lower(w, config, target)
        if "_q" in name:
            kernel = module.kernels[0]
            assert LINE in kernel.source
            q = int(name.rsplit("_q", 1)[1])
            source = kernel.source.replace(LINE, f"constexpr int SK_QUANTA = {q};")
            module = module.with_kernels([dataclasses.replace(kernel, source=source)])
        out[name] = module
    return out


def main() -> None:
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    target = device_target()
    out = []
    for text in SEEN + UNSEEN + UNSEEN_QUANTA:
        w = parse_case(text)
        cands = candidates(w, target, cc.get_space(w, target))
        row = time_candidates(w, cands, target, torch, do_bench, args.rounds, modules=modules(w, cands, target))
        row["unseen"] = text in UNSEEN_QUANTA
        for name in list(row["times"]):
            if "_q" in name:
                pair(row, name, "default")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
