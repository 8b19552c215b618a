"""README's float32 attention table from the two final rounds (run from the repository root)."""
import json
import re
import statistics
import sys
from pathlib import Path

import compiler_core as cc
from compiler_core.schedules.cuda import attention

T = cc.cuda_target("sm_90a", sm_count=132)
HERE = Path(__file__).parent
# the final rounds: `python3 table.py` reads the first (before the split of the keys), `table.py splits` the second
WHICH = "h200-final-splits-round" if sys.argv[1:] == ["splits"] else "h200-final-default-round"
ROUNDS = [json.load(open(HERE / f"{WHICH}{i}.json")) for i in (1, 2)]


def row(runs: tuple) -> str:
    """One case's line: the loop-IR SIMT default's ratio (mean of the rounds), the tiled default's in each round,
    both TFLOP/s and the default config."""
    p = dict(kv.split("=") for kv in re.search(r"\((.*)\)", runs[0]["workload"])[1].split(","))
    w = cc.make_workload("attention", {k: (v if k == "dtype" else int(v)) for k, v in p.items()})
    simt = dict(attention._simt_default(w, T), engine="simt", stages=1, thread_rows=1)
    ratios, old, ms, torch_ms = [], [], [], []
    for run in runs:
        d = next(f for f in run["finalists"] if f["role"] == "default")
        ratios.append(d["ratio"])
        ms.append(d["ms"])
        torch_ms.append(d["torch_ms"])
        old += [d["torch_ms"] / x["ms"] for x in run["screen"]
                if {k: v for k, v in x["config"].items() if k != "kv_splits"} == simt]
    causal = p.get("causal") == "1"
    flops = 4 * w["heads"] * w["seq_q"] * w["seq_kv"] * w["head_dim"] * (0.5 if causal else 1)
    c = d["config"]
    shape = f'{w["heads"]}×{w["seq_q"]}×{w["seq_kv"]}×{w["head_dim"]}' + (" causal" if causal else "")
    config = ", ".join(str(c.get(k, 1)) for k in ("rows_per_block", "thread_rows", "threads_per_row", "kv_tile",
                                                  "stages", "kv_splits"))
    return (f"| {shape} | {statistics.mean(old):.3f} | {ratios[0]:.3f}, {ratios[1]:.3f} | "
            f"{flops / statistics.mean(ms) / 1e9:.1f} | {flops / statistics.mean(torch_ms) / 1e9:.1f} | {config} |")


print("| case | before: SIMT default | tiled default, rounds 1 and 2 | ours TFLOP/s | PyTorch TFLOP/s | "
      "default config (rows, rows a thread, lanes, keys, stages, splits) |")
print("|---|---|---|---|---|---|")
for runs in zip(*ROUNDS, strict=True):
    print(row(runs))
