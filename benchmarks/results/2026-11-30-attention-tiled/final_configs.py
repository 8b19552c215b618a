"""The final rounds' configs (the four tiled defaults and each case's SIMT default) written to the file named, and
their --case arguments printed:

    python3 benchmarks/gpu_tuning.py $(python3 final_configs.py /tmp/configs.json) --configs /tmp/configs.json \
        --farm-trials 0
"""
import json
import sys

import compiler_core as cc
from compiler_core.schedules.cuda import attention
from compiler_core.schedules.cuda import attention_tiled as at

T = cc.cuda_target("sm_90a", sm_count=132)
CASES = ["heads=32,seq_q=1024,seq_kv=1024,head_dim=64", "heads=32,seq_q=1024,seq_kv=1024,head_dim=64,causal=1",
         "heads=16,seq_q=2048,seq_kv=2048,head_dim=128", "heads=4,seq_q=1024,seq_kv=1024,head_dim=64",
         "heads=64,seq_q=512,seq_kv=512,head_dim=128", "heads=12,seq_q=1500,seq_kv=1500,head_dim=96",
         "heads=8,seq_q=4096,seq_kv=4096,head_dim=64,causal=1", "heads=4,seq_q=1024,seq_kv=1024,head_dim=256",
         "heads=4,seq_q=2048,seq_kv=2048,head_dim=64,causal=1"] + \
        [f"heads=32,seq_q={q},seq_kv=4096,head_dim={d}" for q in (16, 64, 128) for d in (64, 128)]
configs = [{**c, "engine": "tiled", "kv_splits": 1} for c in (at.WIDE, at.NARROW, at.FEW_BLOCKS, at.SHORT)]
for case in CASES:
    w = cc.make_workload("attention", {k: int(v) for k, v in (kv.split("=") for kv in case.split(","))})
    simt = dict(attention._simt_default(w, T), engine="simt", stages=1, thread_rows=1, kv_splits=1)
    if simt not in configs:
        configs.append(simt)
json.dump(configs, open(sys.argv[1], "w"))
print(" ".join(f"--case attention:{case},dtype=float32" for case in CASES))
