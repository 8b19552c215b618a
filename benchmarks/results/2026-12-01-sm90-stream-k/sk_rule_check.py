"""The half-round rule as the library's default now applies it (gemm_sm90_stream_k.halves_pay), on shapes drawn
(seed 11) and listed before any ran: 8 the rule selects, 2 where only its K floor refuses them (the halves' round
condition holds, K too short) and 2 where the round condition fails. Each against the same default with stream_k
off, in interleaved rounds beside PyTorch.

    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_rule_check.py --dry   # no GPU: the draw and its classes
    python3 benchmarks/results/2026-12-01-sm90-stream-k/sk_rule_check.py --out $OUT/rule-check.json --rounds 5
"""
from __future__ import annotations

import argparse
import os
import random
import sys

sys.path.insert(0, os.getcwd())

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_candidates import pair, report, time_candidates  # noqa: E402
from benchmarks.gpu_tuning import parse_case  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90 as g  # noqa: E402
from compiler_core.schedules.cuda import gemm_sm90_stream_k as sk  # noqa: E402

WANT = {"selected": 8, "k_floor": 2, "round": 2}


def classify(w, target) -> str:
    """Which class the default puts `w` in: selected (stream-K halves), k_floor (only the K floor refuses it),
    round (a partly filled round the halves overflow) or other."""
    d = cc.default_config(w, target)
    if d.get("stream_k"):
        return "selected"
    tiles, sms, kb = g.cta_tiles(w["M"], w["N"], d), target.sm_count, -(-w["K"] // g.K_BLOCK)
    if sk.halves_pay(tiles, sms, 1 << 30) and not sk.halves_pay(tiles, sms, kb) and d["persistent"]:
        return "k_floor"
    if tiles > sms and 2 * (tiles % sms) > sms and d["persistent"] and d.get("split_k", 1) == 1:
        return "round"
    return "other"


def draw(target, seed: int = 11) -> list[tuple[str, str]]:
    rng, out, left = random.Random(seed), [], dict(WANT)
    while any(left.values()):
        M, N = rng.randrange(1024, 6145, 64), rng.randrange(1024, 6145, 64)
        K = rng.choice((1024, 1536, 2048, 3072, 4096, 6144, 8192))
        text = f"matmul:M={M},N={N},K={K},dtype={rng.choice(('float16', 'bfloat16'))}"
        kind = classify(parse_case(text), target)
        if left.get(kind, 0) > 0:
            left[kind] -= 1
            out.append((kind, text))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/dev/null")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dry", action="store_true", help="the draw on a 132-SM H100/H200, no GPU")
    args = ap.parse_args()
    if args.dry:
        for kind, text in draw(cc.cuda_target("sm_90a", sm_count=132)):
            print(kind, text)
        return
    import torch
    from triton.testing import do_bench

    from compiler_core.runtime.cuda_runtime import device_target

    target = device_target()
    out = []
    for kind, text in draw(target):
        w = parse_case(text)
        d = cc.default_config(w, target)
        if kind == "selected":
            cands = {"default": d, "no_stream_k": dict(d, stream_k=False, sk_split=0)}
        else:
            cands = {"default": d, "halves": dict(d, stream_k=True, sk_split=2)}
        cands = {k: c for k, c in cands.items() if cc.get_space(w, target).is_valid(c)}
        row = time_candidates(w, cands, target, torch, do_bench, args.rounds)
        row["class"] = kind
        if kind == "selected":
            pair(row, "default", "no_stream_k")
        elif "halves" in row["times"]:
            pair(row, "halves", "default")
        report(row, out, args.out)


if __name__ == "__main__":
    main()
