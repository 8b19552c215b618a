"""Every config of the half-type attention spaces verified on the GPU against PyTorch, and a farm job's non-OK
trials with their errors."""
import json, sys, os, tempfile, time
from pathlib import Path
sys.path.insert(0, os.getcwd())
import torch
import compiler_core as cc
from benchmarks.gpu_tuning import Tensors, TOLERANCE, parse_case
from benchmarks.gpu_ops import compile_all
from compiler_core.build import build_module
from compiler_core.runtime.cuda_runtime import device_target
torch.backends.cuda.matmul.allow_tf32 = False
target = device_target()
out = {}
cases = ["attention:heads=4,seq_q=333,seq_kv=517,head_dim=64,causal=1,dtype=float16",
         "attention:heads=3,seq_q=100,seq_kv=1000,head_dim=128,dtype=bfloat16",
         "attention:heads=5,seq_q=1,seq_kv=3000,head_dim=256,dtype=float16",
         "attention:heads=2,seq_q=17,seq_kv=77,head_dim=48,causal=1,dtype=bfloat16"]
for text in cases:
    w = parse_case(text)
    configs = list(cc.get_space(w, target))
    t = Tensors(w, torch)
    tol = TOLERANCE[cc.get_op(w.op).output_specs(w)[0].dtype]
    bad = []
    for config, module, cubin, err in compile_all(w, configs, target, target.arch):
        if module is None:
            bad.append((config, f"build: {err}"[:300])); continue
        try:
            e = t.error(t.launcher(build_module(w, module, target, config, cubin=cubin)))
        except Exception as exc:
            bad.append((config, f"{type(exc).__name__}: {exc}"[:300])); continue
        if not e <= tol:
            bad.append((config, f"error {e:.3g} > {tol}"))
    out[w.key] = {"configs": len(configs), "bad": bad}
    print(w.key, len(configs), "configs,", len(bad), "bad", bad[:3], flush=True)
from benchmarks.gpu_tuning import farm_job
from tunefarm_cli.embedded import EmbeddedFarm
from tunefarm_client.client import TunefarmClient
w = parse_case("attention:heads=16,seq_q=2048,seq_kv=2048,head_dim=128,dtype=float16")
with tempfile.TemporaryDirectory() as tmp, EmbeddedFarm(Path(tmp), devices=["cuda:0"]) as farm, \
        TunefarmClient(farm.url, farm.admin_token) as client:
    job = client.create_job(w.op, w.param_dict, "cuda", 32, seed=0)
    while job.state not in ("done", "failed", "cancelled"):
        time.sleep(2.0); job = client.job(job.id)
    trials = client.job_trials(job.id, limit=100).items
    rows = [(tr.status, tr.config, (tr.error or "")[:400]) for tr in trials if tr.status != "OK"]
    print("farm", job.state, len(trials), "trials;", len(rows), "not OK", flush=True)
    for r in rows: print("  ", r)
    out["farm"] = rows
Path(os.environ["OUT"], "verify_all.json").write_text(json.dumps(out, indent=1, default=str))
