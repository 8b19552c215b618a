"""Does tuning reach the space's best, and how far is that from PyTorch? A farm job against a sweep, on one GPU.

For each case (an op and its params):
1. a model-guided farm job of `--farm-trials` trials through a real CUDA agent (an embedded farm: tuner and agent
   processes, SQLite), whose head is what `GET /v1/best` serves;
2. a sweep in this process: the template's default plus seeded samples of its space, `--sweep` configs in all,
   built in parallel with nvcc, each screened with triton's do_bench (L2 flushed before every call);
3. the finalists (the sweep's fastest few, the default and the farm's head) timed again at full length in
   `--rounds` interleaved rounds, the order rotating, beside the PyTorch op on the same tensors (cuBLAS with TF32
   off for float32; cuDNN with benchmark=True), and checked against PyTorch's float32 result.
Ratios are torch time / ours (> 1: ours is faster): the median over the rounds, each round's kept. Nothing is
asserted; the table goes to stdout, JSON to --out.

  On the GPU machine, from the repo root:
    python3 benchmarks/gpu_tuning.py --case 'matmul:M=4096,N=4096,K=4096,dtype=float16' --out $OUT/t.json
    python3 benchmarks/gpu_tuning.py --preset hopper-split-batch --farm-trials 0 --sweep 100 --out $OUT/sb.json
  `--preset` names a list of cases (PRESETS); `--dry-run` prints each case's default config and space size and
  exits without a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_ops import compile_all  # noqa: E402 - the same parallel nvcc build of sampled configs
from compiler_core.build import build_module  # noqa: E402
from compiler_core.workload import parse_params  # noqa: E402
from device_agent.baselines import to_torch, torch_op  # noqa: E402 - the reference the agent times

FINALISTS = 4
PRESETS = {  # named case lists: what a change is measured on
    # split-K where the tiles leave SMs idle (decode- and prefill-like skinny GEMMs) and the batched Hopper kernel
    "hopper-split-batch": [
        *(f"matmul:M={m},N=4096,K=4096,dtype={d}" for m in (16, 128) for d in ("float16", "bfloat16")),
        *(f"batch_matmul:batch={b},M={n},N={n},K={n},dtype={d}" for b, n in ((16, 512), (8, 1024))
          for d in ("float16", "bfloat16")),
    ],
    # README's headline table: one case per op family the farm tunes on a GPU, the GEMMs at the shapes where the
    # default's rules differ (full waves, a partly filled round, skinny M, a batch)
    "headline": [
        "matmul:M=4096,N=4096,K=4096,dtype=float32",
        "matmul:M=4096,N=4096,K=4096,dtype=float16",
        "matmul:M=8192,N=8192,K=8192,dtype=bfloat16",
        "matmul:M=1728,N=2688,K=4096,dtype=float16",
        "matmul:M=128,N=4096,K=4096,dtype=float16",
        "batch_matmul:batch=16,M=512,N=512,K=512,dtype=float16",
        "conv2d:N=32,C=256,H=14,W=14,K=256,R=3,S=3,stride=1,pad=1,dtype=float32",
        "conv2d:N=32,C=256,H=14,W=14,K=256,R=3,S=3,stride=1,pad=1,dtype=float16",
        "softmax:rows=8192,cols=8192",
        "layernorm:rows=8192,cols=8192",
        "elementwise:rows=8192,cols=8192,vectors=w,b,dtype=float16,expr=gelu(x*w+b)",
        "attention:heads=16,seq_q=2048,seq_kv=2048,head_dim=128,dtype=float16",
    ],
    # the SIMT attention template against PyTorch's scaled_dot_product_attention (FlashAttention or cuDNN on tensor
    # cores for the half types, memory-efficient attention for float32): prefill-like, causal, and one decode step
    "attention": [
        "attention:heads=32,seq_q=1024,seq_kv=1024,head_dim=64,dtype=float32",
        "attention:heads=32,seq_q=1024,seq_kv=1024,head_dim=64,causal=1,dtype=float32",
        "attention:heads=16,seq_q=2048,seq_kv=2048,head_dim=128,dtype=float16",
        "attention:heads=16,seq_q=2048,seq_kv=2048,head_dim=128,causal=1,dtype=bfloat16",
        "attention:heads=32,seq_q=1,seq_kv=4096,head_dim=128,dtype=float16",
    ],
}
# max |ours - torch fp32| / max |torch fp32| per output dtype: half outputs round to ~1e-3; float32 accumulation
# orders differ from cuBLAS's by ~1e-6 relative per element.
TOLERANCE = {"float16": 4e-3, "bfloat16": 2e-2, "float32": 5e-5}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_case(text: str) -> cc.Workload:
    op, _, params = text.partition(":")
    return cc.make_workload(op.strip(), parse_params(params))


def farm_job(w: cc.Workload, trials: int, seed: int) -> dict:
    """The farm's head after one model-guided job on cuda:0, with the job's own figures."""
    from tunefarm_cli.embedded import EmbeddedFarm
    from tunefarm_client.client import TunefarmClient

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tunefarm-gpu-tuning-") as tmp, \
            EmbeddedFarm(Path(tmp), devices=["cuda:0"]) as farm, TunefarmClient(farm.url, farm.admin_token) as client:
        job = client.create_job(w.op, w.param_dict, "cuda", trials, seed=seed)
        while job.state not in ("done", "failed", "cancelled"):
            time.sleep(2.0)
            job = client.job(job.id)
            print(f"\r  farm job: {job.progress.completed}/{job.progress.trial_budget} trials, phase {job.phase}, "
                  f"{time.monotonic() - t0:.0f} s", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        if job.state != "done":
            return {"state": job.state, "error": job.error}
        best = client.best(w.op, w.param_dict, job.device_class)
        ok = client.job_trials(job.id, status="OK", limit=trials + 1).items
        return {"state": job.state, "device_class": job.device_class, "head": best.config, "ok_trials": len(ok),
                "seconds": time.monotonic() - t0}


class Tensors:
    """The case's device tensors (inputs, outputs, workspaces per kernel) and the PyTorch op on them."""

    def __init__(self, w: cc.Workload, torch) -> None:
        self.w, self.torch = w, torch
        specs = cc.get_op(w.op).tensor_specs(w)
        inputs = cc.random_inputs(w, 0)
        self.inputs = [to_torch(torch, a).cuda() for a in inputs]
        self.outputs = [torch.empty(s.shape, dtype=_torch_dtype(torch, s.dtype), device="cuda")
                        for s in specs[len(inputs):]]
        self.reference = torch_op(w, torch, self.inputs)
        if self.reference is None:
            raise SystemExit(f"no PyTorch reference for {w.op}")
        self.expected = [t.float() for t in _as_list(self.reference())]

    def launcher(self, kernel):
        ws = [self.torch.zeros(b.physical_elems, dtype=_torch_dtype(self.torch, b.dtype), device="cuda")
              for b in kernel.module.workspaces]
        args, wsp = [t.data_ptr() for t in (*self.inputs, *self.outputs)], [t.data_ptr() for t in ws]
        # the launcher holds the workspaces: freed, their memory would go to the next tensor PyTorch allocates (a
        # reference output, another kernel's workspace), and a kept-zero workspace (stream-K's flags) would not be
        return lambda held=ws: kernel.launch_device(args, wsp)

    def error(self, launch) -> float:
        for o in self.outputs:
            o.fill_(float("nan"))
        launch()
        self.torch.cuda.synchronize()
        worst = 0.0
        for got, ref in zip(self.outputs, self.expected, strict=True):
            scale = ref.abs().max().item() or 1.0
            diff = (got.float() - ref).abs().max().item()
            worst = max(worst, diff / scale if diff == diff else float("inf"))  # NaN: unwritten or wrong
        return worst


def _torch_dtype(torch, dtype) -> object:
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
            "int32": torch.int32}[str(dtype)]


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def sweep_configs(w, target, n: int, seed: int, listed: list | None = None) -> list[dict]:
    """The default, then `listed` configs (those valid for `w`) or else n - 1 seeded samples of the space."""
    space = cc.get_space(w, target)
    default = cc.default_config(w, target)
    if listed is not None:
        return [default, *(c for c in listed if c != default and space.is_valid(c))]
    sampled = [c for c in space.sample(random.Random(seed), max(0, n - 1)) if c != default]
    return [default, *sampled[: n - 1]]


def run_case(w: cc.Workload, args, target, torch, do_bench) -> dict:
    row: dict = {"workload": w.key, "device": torch.cuda.get_device_name()}
    if args.farm_trials:
        log(f"{w.key}: farm job of {args.farm_trials} trials")
        row["farm"] = farm_job(w, args.farm_trials, args.seed)
    tensors = Tensors(w, torch)
    listed = json.loads(Path(args.configs).read_text()) if args.configs else None
    configs = sweep_configs(w, target, args.sweep, args.seed, listed)
    head = row.get("farm", {}).get("head")
    if head is not None and head not in configs:
        configs.append(head)
    log(f"{w.key}: building {len(configs)} configs")
    t0 = time.monotonic()
    built = compile_all(w, configs, target, target.arch)
    row["build_s"] = time.monotonic() - t0
    screened = []
    for i, (config, module, cubin, _err) in enumerate(built):
        if module is None:
            continue
        try:
            launch = tensors.launcher(build_module(w, module, target, config, cubin=cubin))
            ms = float(do_bench(launch, warmup=5, rep=20, return_mode="median"))
        except Exception as exc:  # noqa: BLE001 - one failing config must not end the sweep
            log(f"  {config}: {type(exc).__name__}: {exc}")
            continue
        screened.append((ms, config, launch))
        if i % 20 == 0:
            log(f"  screened {i + 1}/{len(built)}")
    row["built"], row["screened"] = len([b for b in built if b[1] is not None]), len(screened)
    screened.sort(key=lambda s: s[0])
    row["screen"] = [{"ms": ms, "config": config} for ms, config, _launch in screened]  # every screened time
    tol = TOLERANCE[cc.get_op(w.op).output_specs(w)[0].dtype]
    finalists, seen = [], set()
    for _ms, config, launch in screened:
        role = ("default" if config == configs[0] else "") + (" head" if config == head else "")
        if cc.config_key(config) in seen or not (role or len(finalists) < FINALISTS):
            continue
        seen.add(cc.config_key(config))
        finalists.append((config, launch, role.strip()))
    rows = [{"config": config, "role": role, "max_rel_err": tensors.error(launch)}
            for config, launch, role in finalists]
    names = [*range(len(finalists)), "torch"]
    times: dict = {n: [] for n in names}
    for r in range(args.rounds):  # interleaved, the order rotating: a busy or warming GPU weighs on every one alike
        for n in names[r % len(names):] + names[:r % len(names)]:
            fn = tensors.reference if n == "torch" else finalists[n][1]
            times[n].append(float(do_bench(fn, warmup=25, rep=100, return_mode="median")))
    for i, out in enumerate(rows):
        ratios = [t / o for t, o in zip(times["torch"], times[i], strict=True)]
        out.update(ms=statistics.median(times[i]), torch_ms=statistics.median(times["torch"]),
                   ratio=statistics.median(ratios), ratios=ratios, correct=out["max_rel_err"] <= tol)
        verdict = "ok" if out["correct"] else f"WRONG ({out['max_rel_err']:.1e})"
        log(f"  {out['role'] or 'sweep':8} {out['ms']:.4f} ms vs torch {out['torch_ms']:.4f} ms: "
            f"{out['ratio']:.3f}x [{min(ratios):.3f}, {max(ratios):.3f}] {verdict}")
    row["finalists"] = rows
    correct = [r for r in rows if r["correct"]]
    row["sweep_best_ratio"] = max((r["ratio"] for r in correct if r["role"] != "head"), default=None)
    row["default_ratio"] = next((r["ratio"] for r in rows if "default" in r["role"]), None)
    row["head_ratio"] = next((r["ratio"] for r in rows if "head" in r["role"] and r["correct"]), None)
    return row


def dry_run(cases: list[str], target) -> None:
    """Each case's default config and space size on `target` (no GPU): a check of the arguments."""
    for text in cases:
        w = parse_case(text)
        space = cc.get_space(w, target)
        print(f"{w.key}: default {cc.default_config(w, target)}, {sum(1 for _ in space)} configs")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--case", action="append", default=[], help="op:params, e.g. 'matmul:M=1024,N=1024,K=1024'")
    p.add_argument("--preset", action="append", default=[], choices=sorted(PRESETS),
                   help="a named list of cases (added to --case)")
    p.add_argument("--dry-run", action="store_true", help="print each case's default config and space size on "
                                                          "--arch, then exit (no GPU needed)")
    p.add_argument("--arch", default="sm_90a", help="the compile-only target of --dry-run (default sm_90a, 132 SMs)")
    p.add_argument("--sweep", type=int, default=200, help="configs of the sweep, the default included")
    p.add_argument("--farm-trials", type=int, default=128, help="trials of the farm job (0: no farm job)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds of the finalists and PyTorch")
    p.add_argument("--configs", help="a JSON list of configs to sweep instead of --sweep samples (invalid ones "
                                     "for a case are skipped; the default is always timed)")
    p.add_argument("--out", help="write the rows as JSON here (rewritten after each case)")
    args = p.parse_args(argv)
    cases = [*args.case, *(c for name in args.preset for c in PRESETS[name])]
    if not cases:
        p.error("give at least one --case or --preset")
    if args.dry_run:
        dry_run(cases, cc.cuda_target(args.arch, sm_count=132))
        return 0
    try:
        import torch
        from triton.testing import do_bench

        from compiler_core.runtime.cuda_runtime import device_target
        target = device_target()
    except Exception as exc:  # noqa: BLE001 - no GPU, no torch/triton/pycuda: say what is needed
        raise SystemExit(f"needs a CUDA GPU with PyTorch, Triton and pycuda: {type(exc).__name__}: {exc}") from None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    rows = []
    for text in cases:
        rows.append(run_case(parse_case(text), args, target, torch, do_bench))
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1))
    print(f"\n{'workload':58} {'default':>8} {'sweep':>8} {'farm':>8}")
    for r in rows:
        cells = [r.get(k) for k in ("default_ratio", "sweep_best_ratio", "head_ratio")]
        print(f"{r['workload']:58} " + " ".join(f"{c:8.3f}" if c else f"{'-':>8}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
