"""Scores the tiled attention default of this checkout on stored screens: each case's default's screen time over the
screen's best (a screen holds every config of a grid, timed once with do_bench on the H200).

    PYTHONPATH=. python3 benchmarks/results/2026-11-30-attention-wide-heads/eval_rule.py \
        benchmarks/results/2026-11-30-attention-wide-heads/h200-grid288-16shapes.json now
"""
import json
import math
import sys

import compiler_core as cc

TARGET = cc.cuda_target("sm_90a", sm_count=132)
KNOBS = ("threads_per_row", "rows_per_block", "thread_rows", "kv_tile", "stages", "kv_splits")


def key(config: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in config.items() if k != "engine"))


def main() -> None:
    label = sys.argv[2] if len(sys.argv) > 2 else "now"
    ratios = []
    for case in json.load(open(sys.argv[1])):
        params = dict(kv.split("=") for kv in case["workload"][len("attention("):-1].split(","))
        w = cc.make_workload("attention", {k: (v if k == "dtype" else int(v)) for k, v in params.items()})
        screen = {key(r["config"]): r["ms"] for r in case["screen"]}
        config = cc.default_config(w, TARGET)
        ms = screen.get(key(config))
        shown = " ".join(str(config[k]) for k in KNOBS)
        if ms is None:
            print(f"  {label} {w.key}: not screened ({shown})")
            continue
        ratios.append(ms / min(screen.values()))
        print(f"  {label} {w['heads']}x{w['seq_q']}x{w['seq_kv']} d{w['head_dim']} c{w['causal']}: "
              f"{ratios[-1]:.2f}  ({' '.join(KNOBS)}: {shown})")
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"{label} geomean {geomean:.3f} worst {max(ratios):.2f} over {len(ratios)} shapes")


if __name__ == "__main__":
    main()
