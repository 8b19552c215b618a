"""README's float32 attention table from the two final rounds (run from the repository root)."""
import json, re, statistics
from pathlib import Path

import compiler_core as cc
from compiler_core.schedules.cuda import attention
T = cc.cuda_target("sm_90a", sm_count=132)
HERE = Path(__file__).parent
rounds = [json.load(open(HERE / f'h200-final-default-round{i}.json')) for i in (1, 2)]
print("| case | before: SIMT default | tiled default, rounds 1 and 2 | ours TFLOP/s | PyTorch TFLOP/s | default config (rows, rows a thread, lanes, keys, stages) |")
print("|---|---|---|---|---|---|")
for rows in zip(*rounds):
    wk = rows[0]["workload"]
    p = dict(kv.split("=") for kv in re.search(r"\((.*)\)", wk)[1].split(","))
    w = cc.make_workload("attention", {k: (v if k == "dtype" else int(v)) for k, v in p.items()})
    simt = dict(attention._simt_default(w, T), engine="simt", stages=1, thread_rows=1)
    ratios, old, ms, tms = [], [], [], []
    for r in rows:
        d = next(f for f in r["finalists"] if f["role"] == "default")
        ratios.append(d["ratio"]); ms.append(d["ms"]); tms.append(d["torch_ms"])
        s = [x["ms"] for x in r["screen"] if x["config"] == simt]
        old.append(d["torch_ms"] / s[0] if s else float("nan"))
    H, Sq, Skv, D = (int(p[k]) for k in ("heads", "seq_q", "seq_kv", "head_dim"))
    flops = 4 * H * Sq * Skv * D * (0.5 if p.get("causal") == "1" else 1)
    c = d["config"]
    name = f'{H}×{Sq}×{Skv}×{D}' + (" causal" if p.get("causal") == "1" else "")
    print(f"| {name} | {statistics.mean(old):.3f} | {ratios[0]:.3f}, {ratios[1]:.3f} | {flops/statistics.mean(ms)/1e9:.1f} | {flops/statistics.mean(tms)/1e9:.1f} | {c['rows_per_block']}, {c['thread_rows']}, {c['threads_per_row']}, {c['kv_tile']}, {c['stages']} |")
