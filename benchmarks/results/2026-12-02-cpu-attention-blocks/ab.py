"""The CPU attention template's lanes layout with register blocks of several row vectors and key groups (q_tile,
accumulators; schedules/cpu/attention_lanes.py) against the one-vector, four-key block it had, and PyTorch's
scaled_dot_product_attention, in one process on the same inputs and 2 threads: per ISA in $ISAS (default
"avx512 avx2") and case, every (q_tile, accumulators) the space holds at the default's kv_block (and
kv_block $KV_BLOCKS, default "32 64"), each checked against the float64 reference, then timed in $ROUNDS
interleaved rounds (default 5; the order rotating, a pause before each, every timing the median of calls lasting
>= 0.2 s).

    PYTHONPATH=. python3 benchmarks/results/2026-12-02-cpu-attention-blocks/ab.py [--json out.json] [case ...]

Prints each variant's time over the old block's (q_tile 1, accumulators 1, kv_block 32: < 1 is faster) and
PyTorch's over it (> 1: ours is faster), median [min, max] over the rounds. Nothing is asserted about time.
"""
from __future__ import annotations

import os
import statistics

import benchmarks.two_threads  # noqa: F401  (first: the thread counts, before numpy and torch load)
import compiler_core as cc
from benchmarks.cpu_ab import case_workload, configs_and_torch_ms, per_isa_main, per_round, spread

CASES = [
    "attention:heads=8,seq_q=512,seq_kv=512,head_dim=64,causal=0",
    "attention:heads=8,seq_q=512,seq_kv=512,head_dim=64,causal=1",
    "attention:heads=8,seq_q=512,seq_kv=512,head_dim=32,causal=0",
    "attention:heads=8,seq_q=512,seq_kv=512,head_dim=128,causal=0",
    "attention:heads=16,seq_q=1024,seq_kv=1024,head_dim=64,causal=0",
    "attention:heads=4,seq_q=100,seq_kv=300,head_dim=80,causal=0",
]
OLD = {"q_tile": 1, "accumulators": 1, "kv_block": 32}


def variants(w, target) -> dict[str, dict]:
    """The old block, then every lanes config of the space at the chosen kv_blocks (the default's first)."""
    space, default = cc.get_space(w, target), cc.default_config(w, target)
    blocks = [default["kv_block"], *(int(k) for k in os.environ.get("KV_BLOCKS", "32 64").split())]
    out = {"old": dict(default, layout="lanes", **OLD), "default": default}
    for kb in dict.fromkeys(blocks):
        for q in (1, 2, 4, 8):
            for a in (1, 2, 4):
                config = dict(default, layout="lanes", vector="explicit", q_tile=q, accumulators=a, kv_block=kb)
                if space.is_valid(config):
                    out.setdefault(f"q{q}a{a}k{kb}", config)
    return out


def run_case(case: str, target, rounds: int) -> dict:
    w = case_workload(case)
    configs = variants(w, target)
    times = configs_and_torch_ms(w, target, configs, rounds)
    return {"workload": w.key, "configs": configs, "ms": times,
            "over_old": {n: spread(per_round(times, n, "old")) for n in times}}


def show(row: dict) -> str:
    d = row["configs"]["default"]
    lines = [f"  {row['workload']}  old {statistics.median(row['ms']['old']):.3f} ms  default q{d['q_tile']}"
             f"a{d['accumulators']}k{d['kv_block']} {d['layout']}"]
    for n, (med, lo, hi) in sorted(row["over_old"].items(), key=lambda kv: kv[1][0]):
        lines.append(f"    {n:>12} /old {med:.2f} [{lo:.2f}, {hi:.2f}]")
    return "\n".join(lines)


if __name__ == "__main__":
    per_isa_main(__doc__, CASES, run_case, show)
