"""Per-call cost of a tuned kernel as a PyTorch custom op (tunefarm_client.torch) against a direct launch of the
same kernel, and its speed against the matching torch op. Asserts nothing; prints a table (`--out FILE`: JSON).

    PYTHONPATH=$PWD python3 benchmarks/torch_op_overhead.py --device cpu [--out results.json]
    PYTHONPATH=$PWD python3 benchmarks/torch_op_overhead.py --device cuda   # on the GPU machine (needs pycuda)

Variants, all on the same tensors:
  direct       CPU: Kernel.call_pointers on precomputed pointers (the C library through ctypes, no checks).
               CUDA: StreamModule.launch on precomputed addresses and workspaces (the driver, no checks).
  launch_device  CUDA only: the pycuda path agents time (Kernel.launch_device, default stream).
  op           the functional op `op(a, b)`: checks, torch.empty outputs (and workspaces), launch.
  op_out       `op(a, b, out=c)`: checks (no aliasing too), launch.
  overload     `torch.ops.tunefarm.<name>.default(a, b)`: the dispatcher without KernelOp's Python wrapper.
  torch        the matching torch op (torch.matmul, torch.softmax).
CPU times: rounds of timed loops (perf_counter_ns), variants interleaved round by round, median of rounds.
CUDA times: triton.testing.do_bench when importable, else the same rounds with synchronisation around each loop.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

# Two OpenMP runtimes share the cores here: torch's bundled libgomp and the C kernels' system one. Left spinning
# after each parallel region, each one's idle threads steal the cores the other's next region needs (on two cores a
# 64x48x32 kernel measured 2.2 ms instead of 30 us). Passive waiting, set before either loads, stops that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

import compiler_core as cc  # noqa: E402
from tunefarm_client.torch import custom_op, torch_dtype  # noqa: E402

CASES = {
    "cpu": [("matmul", {"M": 64, "N": 48, "K": 32}), ("matmul", {"M": 256, "N": 256, "K": 256}),
            ("softmax", {"rows": 64, "cols": 100}), ("softmax", {"rows": 1024, "cols": 1024})],
    "cuda": [("matmul", {"M": 256, "N": 192, "K": 128, "dtype": "float16"}),
             ("matmul", {"M": 4096, "N": 4096, "K": 4096, "dtype": "float16"}),
             ("softmax", {"rows": 64, "cols": 100, "dtype": "float16"}),
             ("softmax", {"rows": 8192, "cols": 4096, "dtype": "float16"})],
}


def torch_reference(op: str, inputs):
    if op == "matmul":
        return lambda: torch.matmul(*inputs)
    return lambda: torch.softmax(inputs[0], dim=-1)


def variants(kop, inputs, device: torch.device) -> dict:
    runner = kop.runner
    outputs = runner.empty_outputs(device)
    pointers = [t.data_ptr() for t in (*inputs, *outputs)]
    out = dict()
    if device.type == "cpu":
        call = kop.kernel.call_pointers
        out["direct"] = lambda: call(pointers)
    else:
        module = runner._load(device.index or 0)
        ws = [torch.zeros(max(w.nbytes, 1), dtype=torch.uint8, device=device) for w in kop.kernel.module.workspaces]
        addresses, stream = pointers + [w.data_ptr() for w in ws], torch.cuda.current_stream(device).cuda_stream
        out["direct"] = lambda: module.launch(addresses, stream)
        out["launch_device"] = lambda: kop.kernel.launch_device(pointers, [w.data_ptr() for w in ws])
    default = kop.default
    out["op"] = lambda: kop(*inputs)
    out["op_out"] = lambda: kop(*inputs, out=outputs)
    out["overload"] = lambda: default(*inputs)
    out["torch"] = torch_reference(kop.kernel.workload.op, inputs)
    return out


def time_rounds(fns: dict, device: torch.device, rounds: int, min_s: float) -> dict:
    """Seconds per call, median over rounds; each round times every variant once, in turn."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    counts = {}
    for name, fn in fns.items():  # warm up, then size each variant's loop to about min_s
        for _ in range(5):
            fn()
        sync()
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < min_s / 2:
            fn()
            n += 1
        sync()
        counts[name] = max(5, round(n * min_s / max(time.perf_counter() - start, 1e-9)))
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            sync()
            start = time.perf_counter_ns()
            for _ in range(counts[name]):
                fn()
            sync()
            samples[name].append((time.perf_counter_ns() - start) / 1e9 / counts[name])
    return {name: {"median_s": statistics.median(s), "min_s": min(s), "max_s": max(s), "calls": counts[name]}
            for name, s in samples.items()}


def time_do_bench(fns: dict) -> dict | None:
    try:
        from triton.testing import do_bench
    except ImportError:
        return None
    return {name: {"median_s": do_bench(fn, warmup=50, rep=200, return_mode="median") / 1e3} for name, fn in
            fns.items()}


def build(op: str, params: dict, device: torch.device):
    workload = cc.make_workload(op, params)
    if device.type == "cuda":
        from compiler_core.runtime.cuda_runtime import device_target

        target = device_target(device.index or 0)
    else:
        target = cc.cpu_target()
    return custom_op(cc.build(workload, cc.default_config(workload, target), target))


def run_case(op: str, params: dict, device: torch.device, rounds: int, min_s: float) -> dict:
    kop = build(op, params, device)
    g = torch.Generator(device=device).manual_seed(0)
    inputs = [torch.randn(s.shape, generator=g, device=device).to(torch_dtype(s.dtype))
              for s in kop.runner.input_specs]
    fns = variants(kop, inputs, device)
    timed = (time_do_bench(fns) if device.type == "cuda" else None) or time_rounds(fns, device, rounds, min_s)
    direct = timed["direct"]["median_s"]
    for row in timed.values():
        row["overhead_us"] = (row["median_s"] - direct) * 1e6
    return {"workload": kop.kernel.workload.key, "op": kop.qualname, "config": kop.kernel.config, "times": timed,
            "timer": "do_bench" if device.type == "cuda" and "calls" not in timed["direct"] else "rounds"}


def print_table(results: list[dict]) -> None:
    print(f"{'workload':<46} {'variant':<14} {'median us':>11} {'[min, max] of rounds':>22} {'vs direct us':>13} "
          f"{'torch/this':>11}")
    for r in results:
        torch_s = r["times"]["torch"]["median_s"]
        for name, t in r["times"].items():
            ratio = "" if name == "torch" else f"{torch_s / t['median_s']:.2f}x"
            spread = f"[{t['min_s'] * 1e6:.1f}, {t['max_s'] * 1e6:.1f}]" if "min_s" in t else ""
            print(f"{r['workload']:<46} {name:<14} {t['median_s'] * 1e6:>11.2f} {spread:>22} "
                  f"{t['overhead_us']:>+13.2f} {ratio:>11}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--min-s", type=float, default=0.02, help="seconds per variant per round (about)")
    parser.add_argument("--out", help="write the results as JSON here")
    args = parser.parse_args()
    device = torch.device("cuda", torch.cuda.current_device()) if args.device == "cuda" else torch.device("cpu")
    load_before = os.getloadavg()
    results = [run_case(op, params, device, args.rounds, args.min_s) for op, params in CASES[args.device]]
    print_table(results)
    if args.out:
        meta = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
                or platform.machine(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "loadavg_before": load_before,
                "loadavg_after": os.getloadavg()}
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
