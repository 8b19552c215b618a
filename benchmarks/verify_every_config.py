"""Every config of a space verified on the GPU with the farm's own check: cc.verify against the float64 reference and
the op's error bound, on each of the verifier's input sets (random and adversarial), as an agent verifies a trial.

    python3 benchmarks/verify_every_config.py --case 'attention:heads=16,seq_q=2048,seq_kv=2048,head_dim=128'
    python3 benchmarks/verify_every_config.py --engine wgmma --case 'attention:heads=3,seq_q=333,seq_kv=517,...'

Prints each case's failing runs (config, input set, why) and writes them as JSON with --out. Needs a CUDA GPU with
PyTorch and pycuda; the configs are built in parallel by nvcc (benchmarks/gpu_ops.compile_all).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import compiler_core as cc  # noqa: E402
from benchmarks.gpu_ops import compile_all  # noqa: E402
from benchmarks.gpu_tuning import _torch_dtype, parse_case  # noqa: E402
from compiler_core.build import build_module  # noqa: E402
from compiler_core.verify import input_sets  # noqa: E402
from device_agent.baselines import to_torch  # noqa: E402


def failing_runs(w: cc.Workload, target, torch, engine: str | None = None,
                 configs: list[dict] | None = None) -> tuple[int, list]:
    """(configs checked, [(config, input set, why)] for every run that fails): the configs given, else every config
    of the space, or those of one `engine` where the space has that knob."""
    sets = [(s.name, s.arrays, cc.expect(w, s.arrays)) for s in input_sets(w, seed=0)]
    specs = cc.get_op(w.op).tensor_specs(w)
    if configs is None:
        configs = [c for c in cc.get_space(w, target) if engine is None or c.get("engine") == engine]
    failing = []
    for config, module, cubin, err in compile_all(w, configs, target, target.arch):
        if module is None:
            failing.append((config, "build", str(err)[:300]))
            continue
        kernel = build_module(w, module, target, config, cubin=cubin)
        for name, arrays, expected in sets:
            ins = [to_torch(torch, a).cuda() for a in arrays]
            outs = [torch.full(s.shape, float("nan"), dtype=_torch_dtype(torch, s.dtype), device="cuda")
                    for s in specs[len(arrays):]]
            ws = [torch.zeros(b.physical_elems, dtype=_torch_dtype(torch, b.dtype), device="cuda")
                  for b in kernel.module.workspaces]
            kernel.launch_device([t.data_ptr() for t in (*ins, *outs)], [t.data_ptr() for t in ws])
            torch.cuda.synchronize()
            verdict = cc.verify(w, [o.float().cpu().numpy() for o in outs], expected)
            if not verdict.ok:
                failing.append((config, name, verdict.message[:300]))
    return len(configs), failing


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--case", action="append", required=True, help="op:params, e.g. 'softmax:rows=333,cols=1000'")
    p.add_argument("--out", help="write {workload: {configs, failing}} here as JSON")
    p.add_argument("--engine", help="only the configs whose `engine` knob is this (e.g. attention's wgmma)")
    args = p.parse_args(argv)
    try:
        import torch

        from compiler_core.runtime.cuda_runtime import device_target
        target = device_target()
    except Exception as exc:  # noqa: BLE001 - no GPU, torch or pycuda: say what is needed
        raise SystemExit(f"needs a CUDA GPU with PyTorch and pycuda: {type(exc).__name__}: {exc}") from None
    out = {}
    for text in args.case:
        w, t0 = parse_case(text), time.monotonic()
        n, failing = failing_runs(w, target, torch, args.engine)
        print(f"{w.key}: {n} configs, {len(failing)} failing runs ({time.monotonic() - t0:.0f} s)", flush=True)
        for config, name, why in failing[:12]:
            print(f"  {name}: {config}: {why}")
        out[w.key] = {"configs": n, "failing": failing}
        if args.out:
            Path(args.out).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
