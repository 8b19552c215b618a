"""Stream-K against the round-cost default on GEMMs whose tiles end in a partly filled round: LARGE, WIDE and MID
tiles, each without `stream_k` and with two regions of stream-K tiles, beside PyTorch (cuBLAS), interleaved rounds,
each checked against PyTorch:
  {tile}_sk    the last partial round and one whole round before it (each CTA at least one tile's K blocks)
  {tile}_sk1   only the tiles of the partial round (the rounds before it stay data-parallel)
The UNSEEN shapes were listed before any of this ran.

    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_candidates.py --out $OUT/sk.json
    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_candidates.py --dry   # no GPU: the candidates
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402

SEEN = [  # the shapes left at 0.80-0.86 of cuBLAS (../2026-12-01-sm90-wide-tiles/)
    "matmul:M=2304,N=2048,K=2048,dtype=bfloat16",
    "matmul:M=1536,N=3072,K=2048,dtype=float16",
    "matmul:M=1536,N=1536,K=1536,dtype=float16",
    "matmul:M=3072,N=3072,K=2048,dtype=float16",
]
UNSEEN = [
    "matmul:M=1920,N=2560,K=4096,dtype=float16",
    "matmul:M=2816,N=1792,K=1024,dtype=bfloat16",
    "matmul:M=3328,N=3328,K=2048,dtype=float16",
    "matmul:M=2000,N=3000,K=1536,dtype=float16",
    "matmul:M=1280,N=5120,K=5120,dtype=bfloat16",
    "matmul:M=4608,N=2304,K=768,dtype=float16",
    "matmul:M=2560,N=1152,K=8192,dtype=float16",
    "matmul:M=6144,N=1536,K=2048,dtype=bfloat16",
]
TILES = {"large": g.LARGE, "wide": g.WIDE, "mid": g.MID}
TWO_TILE = "rest + k.ctas"  # the stream-K region as the kernel text has it; REST_ONLY replaces it in `_sk1`
REST_ONLY = "rest"


def candidates(w, target, space) -> dict:
    d = cc.default_config(w, target)
    out = {"default": d, "default_sk": dict(d, stream_k=True)}
    for name, tile in TILES.items():
        out[name] = dict(d, **tile)
        out[f"{name}_sk"] = dict(d, **tile, stream_k=True)
        out[f"{name}_sk1"] = dict(d, **tile, stream_k=True)
    keep, seen = {}, set()
    for k, c in out.items():  # a tile equal to the default's is timed once, as the default
        key = (cc.config_key(c), k.endswith("_sk1"))
        if space.is_valid(c) and key not in seen:
            keep[k] = c
            seen.add(key)
    return keep


def modules(w, cands: dict, target) -> dict:
    """Each candidate's module; the `_sk1` ones with the stream-K region cut to the partial round's tiles."""
    out = {}
    for name, config in cands.items():
        module = cc.lower(w, config, target)
        if name.endswith("_sk1"):
            kernel = module.kernels[0]
            assert TWO_TILE in kernel.source
            module = module.with_kernels([dataclasses.replace(kernel, source=kernel.source.replace(TWO_TILE,
                                                                                                  REST_ONLY))])
        out[name] = module
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/dev/null")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dry", action="store_true", help="list the candidates for a 132-SM H100/H200, no GPU")
    args = ap.parse_args()
    if args.dry:
        from compiler_core.target import cuda_target

        target = cuda_target("sm_90a", sm_count=132)
        for text in SEEN + UNSEEN:
            w = parse_case(text)
            print(w.key, {k: (c["bm"], c["bn"], c.get("stream_k")) for k, c in
                          candidates(w, target, cc.get_space(w, target)).items()})
        return
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
    out = []
    for text in SEEN + UNSEEN:
        w = parse_case(text)
        cands = candidates(w, target, cc.get_space(w, target))
        row = time_candidates(w, cands, target, torch, do_bench, args.rounds, modules=modules(w, cands, target))
        row["unseen"] = text in UNSEEN
        for name in list(row["times"]):
            base = name.rsplit("_", 1)[0]
            if name.endswith(("_sk", "_sk1")):
                pair(row, name, "default")
                if base in row["times"] and base != "default":
                    pair(row, name, base)
        report(row, out, args.out)


if __name__ == "__main__":
    main()
